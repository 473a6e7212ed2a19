"""Unit tests of pytest_fsbench.targets.safety: no root, no device is ever opened or written.

Most tests point check_devices at a FAKE sysfs tree built under tmp_path. The device paths they
pass are real block device nodes from /dev, used only for stat(2) -- their device numbers are
wired into the fake tree, a recording `run` stands in for blkid/wipefs, and the exclusive
open (the one check that opens the device) is replaced, so no real device is ever opened.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from pytest_fsbench.targets import safety
from pytest_fsbench.targets.mounts import parse_mountinfo
from pytest_fsbench.errors import CommandError, UnsafeDevice
from pytest_fsbench.system.commands import Completed

MiB = 1024 * 1024


def _block_devices() -> list[str]:
    found = []
    for name in sorted(os.listdir("/dev")):
        try:
            if stat.S_ISBLK(os.stat(f"/dev/{name}").st_mode):
                found.append(f"/dev/{name}")
        except OSError:
            continue
    return found


#: a major number Linux leaves for local and experimental use: no driver of this machine has it
LOCAL_MAJOR = 240


@pytest.fixture
def blockdevs() -> Iterator[list[str]]:
    """Two block device nodes (stat only) whose numbers the fake sysfs reuses: made in /dev (a
    mount's source names its device there) under a major no driver uses, where the tests may make
    nodes (root), so that no other job's use of a real device (a loop device it holds) can reach
    these tests, and removed after; else the first two real nodes of /dev."""
    nodes: list[Path] = []
    if os.geteuid() == 0:
        for minor in (0, 1):
            node = Path(f"/dev/fsbench-test-{os.getpid()}-{minor}")
            try:
                os.mknod(node, stat.S_IFBLK | 0o600, os.makedev(LOCAL_MAJOR, minor))
            except OSError:
                break
            nodes.append(node)
    try:
        if len(nodes) == 2:
            yield [str(node) for node in nodes]
            return
        found = _block_devices()
        if len(found) < 2:
            pytest.skip("needs two block device nodes in /dev to stat")
        yield found[:2]
    finally:
        for node in nodes:
            node.unlink(missing_ok=True)


class FakeSysfs:
    """A minimal sysfs layout: devices/virtual/block/<disk>[/<partition>], class/block/<name>
    and dev/block/<major>:<minor> symlinks, with dev, size, ro, holders/ and slaves/."""

    def __init__(self, root: Path):
        self.root = root
        self.next_minor = 0

    def add(self, name: str, *, rdev: int | None = None, disk: str | None = None,
            sectors: int = 2048, holders: tuple[str, ...] = (), slaves: tuple[str, ...] = (),
            ro: bool = False) -> Path:
        if rdev is None:  # numbers no real device node in this test uses
            rdev, self.next_minor = os.makedev(259, 900 + self.next_minor), self.next_minor + 1
        base = self.root / "devices" / "virtual" / "block"
        path = base / disk / name if disk else base / name
        for sub in ("holders", "slaves"):
            (path / sub).mkdir(parents=True)
        (path / "dev").write_text(f"{os.major(rdev)}:{os.minor(rdev)}\n")
        (path / "size").write_text(f"{sectors}\n")
        (path / "ro").write_text("1\n" if ro else "0\n")
        if disk:
            (path / "partition").write_text("1\n")
        for holder in holders:
            (path / "holders" / holder).symlink_to(base / holder)
        for slave in slaves:
            (path / "slaves" / slave).symlink_to(self.root / "class" / "block" / slave)
        self._link(self.root / "class" / "block" / name, path)
        self._link(self.root / "dev" / "block" / f"{os.major(rdev)}:{os.minor(rdev)}", path)
        return path

    @staticmethod
    def _link(link: Path, target: Path) -> None:
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(target)


class Recorder:
    """Stands in for system.execute: answers blkid/wipefs from a table and records every call."""

    def __init__(self, blkid: tuple[int, str] = (2, ""), wipefs: str = ""):
        self.blkid, self.wipefs = blkid, wipefs
        self.calls: list[list[str]] = []

    def __call__(self, argv, *, timeout=600.0, check=True, input=None) -> Completed:
        self.calls.append(list(argv))
        if argv[0] == "blkid":
            return Completed(tuple(argv), self.blkid[0], self.blkid[1], "", 0.0)
        if argv[0] == "wipefs" and "--no-act" in argv:
            return Completed(tuple(argv), 0, self.wipefs, "", 0.0)
        raise AssertionError(f"unexpected command {argv}")


@pytest.fixture(autouse=True)
def never_open_devices(monkeypatch) -> list[str]:
    opened: list[str] = []
    monkeypatch.setattr(safety, "_check_not_busy", lambda t: opened.append(t.path))
    return opened


@pytest.fixture
def fake(tmp_path: Path) -> FakeSysfs:
    return FakeSysfs(tmp_path / "sys")


def _mountinfo(tmp_path: Path, *lines: str) -> str:
    path = tmp_path / "mountinfo"
    path.write_text("22 27 0:21 / /proc rw,relatime - proc proc rw\n" + "".join(f"{l}\n" for l in lines))
    return str(path)


def _swaps(tmp_path: Path, *names: str) -> str:
    path = tmp_path / "swaps"
    header = "Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority\n"
    path.write_text(header + "".join(f"{n}\tpartition\t1048572\t0\t-2\n" for n in names))
    return str(path)


def _refusal(paths, tmp_path, fake, *, mounts=(), swaps=(), wipe=False, execute=None) -> str:
    recorder = execute or Recorder()
    with pytest.raises(UnsafeDevice) as caught:
        safety.check_devices(paths, wipe=wipe, execute=recorder, sysfs=str(fake.root),
                             mountinfo=_mountinfo(tmp_path, *mounts), swaps=_swaps(tmp_path, *swaps))
    message = str(caught.value)
    assert "\n" not in message
    return message


def _numbers(path: str) -> str:
    rdev = os.stat(path).st_rdev
    return f"{os.major(rdev)}:{os.minor(rdev)}"


# --- holders (fake: this kernel has no md and no device-mapper, so real holders cannot exist) ---


def test_disk_with_holders_is_refused_even_with_wipe(tmp_path, fake, blockdevs):
    # FAKE sysfs: the kernel here lacks md and dm, so a real holder (md0 on the disk) can't be made.
    dev = blockdevs[0]
    fake.add("md0", slaves=("sdx",))
    fake.add("sdx", rdev=os.stat(dev).st_rdev, holders=("md0",))
    execute = Recorder()
    message = _refusal([dev], tmp_path, fake, wipe=True, execute=execute)
    assert message.startswith(f"{dev} (sdx) is held by md0")
    assert "stop md0 first" in message
    assert execute.calls == []  # refused before any probing


def test_partition_with_holders_is_refused(tmp_path, fake, blockdevs):
    # FAKE sysfs: no device-mapper in this kernel, so dm-0 on sdx1 exists only in this tree.
    dev = blockdevs[0]
    fake.add("sdx", rdev=os.stat(dev).st_rdev)
    fake.add("sdx1", disk="sdx", holders=("dm-0",))
    fake.add("dm-0", slaves=("sdx1",))
    message = _refusal([dev], tmp_path, fake, wipe=True)
    assert "has partition sdx1 held by dm-0" in message


def test_root_on_lvm_over_this_disk_is_refused_even_with_wipe(tmp_path, fake, blockdevs):
    # FAKE sysfs: / on dm-3 (an LV) built on sdx2; the kernel here cannot create dm devices.
    dev = blockdevs[0]
    fake.add("sdx", rdev=os.stat(dev).st_rdev)
    fake.add("sdx2", disk="sdx", holders=("dm-3",))
    fake.add("dm-3", rdev=os.makedev(253, 3), slaves=("sdx2",))
    root = "27 1 253:3 / / rw,relatime - ext4 /dev/mapper/vg-root rw"
    message = _refusal([dev], tmp_path, fake, mounts=[root], wipe=True)
    assert message.startswith(f"{dev} (sdx) holds the root filesystem (/)")
    assert "even with --wipe-devices" in message


def test_partition_of_the_root_disk_is_refused(tmp_path, fake, blockdevs):
    part = blockdevs[0]
    fake.add("sdx")
    fake.add("sdx1", disk="sdx", rdev=os.stat(part).st_rdev)
    fake.add("sdx2", disk="sdx", rdev=os.makedev(8, 2))
    message = _refusal([part], tmp_path, fake, wipe=True,
                       mounts=["40 27 8:2 / /home rw - xfs /dev/sdx2 rw"])
    assert message.startswith(f"{part} (sdx1) is on sdx, which holds the /home filesystem")


def test_active_swap_disk_is_refused(tmp_path, fake, blockdevs):
    dev = blockdevs[0]
    fake.add("sdx", rdev=os.stat(dev).st_rdev)
    message = _refusal([dev], tmp_path, fake, swaps=[dev], wipe=True)
    assert f"holds active swap ({dev})" in message


def test_btrfs_anonymous_device_number_is_resolved_through_the_source(tmp_path, fake, blockdevs):
    dev = blockdevs[0]
    fake.add("sdx", rdev=os.stat(dev).st_rdev)
    message = _refusal([dev], tmp_path, fake, mounts=[f"27 1 0:45 / / rw - btrfs {dev} rw"])
    assert "holds the root filesystem (/)" in message


# --- mounts ---


def test_mounted_disk_is_refused_by_device_number_even_with_wipe(tmp_path, fake, blockdevs):
    dev = blockdevs[0]
    fake.add("sdx", rdev=os.stat(dev).st_rdev)
    # the source name is deliberately wrong: only major:minor counts
    line = rf"50 27 {_numbers(dev)} / /mnt/my\040data rw - ext4 /dev/somethingelse rw"
    message = _refusal([dev], tmp_path, fake, mounts=[line], wipe=True)
    assert message == f"{dev} (sdx) is mounted at /mnt/my data; unmount it first"


def test_mounted_partition_is_refused(tmp_path, fake, blockdevs):
    dev = blockdevs[0]
    fake.add("sdx", rdev=os.stat(dev).st_rdev)
    fake.add("sdx1", disk="sdx", rdev=os.makedev(8, 17))
    message = _refusal([dev], tmp_path, fake, mounts=["50 27 8:17 / /srv rw - ext4 /dev/sdx1 rw"])
    assert "has partition sdx1 mounted at /srv; unmount it first" in message


def test_parse_mountinfo_handles_optional_fields_and_escapes():
    text = ("36 35 98:0 /mnt1 /mnt/with\\040space rw,noatime master:1 shared:2 - ext3 /dev/root rw\n"
            "27 1 254:0 / / rw,relatime - ext4 /dev/vda rw\n"
            "garbage line\n")
    mounts = parse_mountinfo(text)
    assert [(os.major(m.rdev), os.minor(m.rdev), m.target, m.source) for m in mounts] == [
        (98, 0, "/mnt/with space", "/dev/root"), (254, 0, "/", "/dev/vda")]


def test_parse_swaps_skips_the_header():
    text = "Filename\tType\tSize\tUsed\tPriority\n/dev/sda3  partition 100 0 -2\n/swap\\040file file 1 0 -3\n"
    assert safety._parse_swaps(text) == ["/dev/sda3", "/swap file"]


# --- read-only, size, names ---


def test_read_only_device_is_refused(tmp_path, fake, blockdevs):
    dev = blockdevs[0]
    fake.add("sdx", rdev=os.stat(dev).st_rdev, ro=True)
    message = _refusal([dev], tmp_path, fake, wipe=True)
    assert message.startswith(f"{dev} (sdx) is read-only;")


def test_empty_device_is_refused(tmp_path, fake, blockdevs):
    dev = blockdevs[0]
    fake.add("sdx", rdev=os.stat(dev).st_rdev, sectors=0)
    assert "has size 0" in _refusal([dev], tmp_path, fake)


def test_same_device_twice_is_refused(tmp_path, fake, blockdevs):
    dev = blockdevs[0]
    fake.add("sdx", rdev=os.stat(dev).st_rdev)
    alias = tmp_path / "alias"
    alias.symlink_to(dev)
    message = _refusal([dev, str(alias)], tmp_path, fake)
    assert message.startswith(f"{alias} (sdx) and {dev} (sdx) are the same device")
    assert message.endswith("list each device once")


def test_disk_and_its_own_partition_are_refused(tmp_path, fake, blockdevs):
    disk, part = blockdevs
    fake.add("sdx", rdev=os.stat(disk).st_rdev)
    fake.add("sdx1", disk="sdx", rdev=os.stat(part).st_rdev)
    message = _refusal([disk, part], tmp_path, fake)
    assert message.startswith(f"{part} (sdx1) is a partition of {disk} (sdx), which is also listed")


@pytest.mark.parametrize("kind", ["regular file", "directory", "character device", "missing"])
def test_non_block_devices_are_refused(tmp_path, fake, kind):
    paths = {"regular file": tmp_path / "image", "directory": tmp_path,
             "character device": Path("/dev/null"), "missing": tmp_path / "nope"}
    paths["regular file"].write_bytes(b"\0" * 4096)
    message = _refusal([str(paths[kind])], tmp_path, fake, wipe=True)
    assert message.startswith(str(paths[kind]))
    expected = "does not exist" if kind == "missing" else f"is a {kind}, not a block device"
    assert expected in message


def test_device_missing_from_sysfs_is_refused(tmp_path, fake, blockdevs):
    (fake.root / "dev" / "block").mkdir(parents=True)
    message = _refusal([blockdevs[0]], tmp_path, fake)
    assert "has no entry under" in message


def test_unreadable_mountinfo_refuses_everything(tmp_path, fake, blockdevs):
    fake.add("sdx", rdev=os.stat(blockdevs[0]).st_rdev)
    with pytest.raises(UnsafeDevice, match="cannot tell what is mounted"):
        safety.check_devices([blockdevs[0]], execute=Recorder(), sysfs=str(fake.root),
                             mountinfo=str(tmp_path / "absent"), swaps=str(tmp_path / "absent"))


# --- signatures ---


def test_signature_is_refused_without_wipe(tmp_path, fake, blockdevs):
    dev = blockdevs[0]
    fake.add("sdx", rdev=os.stat(dev).st_rdev)
    execute = Recorder(blkid=(0, "DEVNAME=x\nUUID=1\nTYPE=ext4\nUSAGE=filesystem\n"),
                   wipefs=json.dumps({"signatures": [{"type": "ext4", "offset": "0x438"}]}))
    message = _refusal([dev], tmp_path, fake, execute=execute)
    assert message == (f"{dev} (sdx) holds an ext4 filesystem signature; pass --wipe-devices to let "
                       "fsbench overwrite it, or pick another device")
    assert execute.calls[0] == ["blkid", "-p", "-o", "export", dev]
    assert execute.calls[1] == ["wipefs", "--no-act", "--json", dev]


def test_partition_table_is_described(tmp_path, fake, blockdevs):
    dev = blockdevs[0]
    fake.add("sdx", rdev=os.stat(dev).st_rdev)
    wipefs = {"signatures": [{"type": "gpt"}, {"type": "gpt"}, {"type": "PMBR"}]}
    execute = Recorder(blkid=(0, "PTUUID=abc\nPTTYPE=gpt\n"), wipefs=json.dumps(wipefs))
    message = _refusal([dev], tmp_path, fake, execute=execute)
    assert "holds a gpt partition table (signatures found: gpt, PMBR); pass --wipe-devices" in message


def test_ambivalent_blkid_result_uses_the_wipefs_list(tmp_path, fake, blockdevs):
    dev = blockdevs[0]
    fake.add("sdx", rdev=os.stat(dev).st_rdev)
    wipefs = {"signatures": [{"type": "zfs_member"}, {"type": "linux_raid_member"}]}
    execute = Recorder(blkid=(8, ""), wipefs=json.dumps(wipefs))
    message = _refusal([dev], tmp_path, fake, execute=execute)
    assert "holds a zfs_member signature (signatures found: zfs_member, linux_raid_member)" in message


def test_failed_probe_refuses(tmp_path, fake, blockdevs):
    dev = blockdevs[0]
    fake.add("sdx", rdev=os.stat(dev).st_rdev)
    execute = Recorder(blkid=(4, "blkid: error: /dev/x: Permission denied\n"))
    message = _refusal([dev], tmp_path, fake, execute=execute, wipe=True)
    assert "cannot be probed for signatures (blkid: blkid: error: /dev/x: Permission denied)" in message


def test_missing_blkid_refuses(tmp_path, fake, blockdevs):
    dev = blockdevs[0]
    fake.add("sdx", rdev=os.stat(dev).st_rdev)

    def missing(argv, **kwargs):
        raise CommandError(argv, None, "", f"program not found: {argv[0]}")

    message = _refusal([dev], tmp_path, fake, execute=missing, wipe=True)
    assert "cannot be probed for signatures (blkid: program not found: blkid); install util-linux" in message


def test_parsers():
    assert safety._parse_blkid_export("DEVNAME=/dev/x\nTYPE=linux_raid_member\nUSAGE=raid\n") == {
        "linux_raid_member": "raid"}
    assert safety._parse_blkid_export("") == {}
    assert safety._parse_wipefs_json("") == []
    assert safety._parse_wipefs_json('{"signatures": []}') == []


# --- real sysfs via pyudev agrees with the plain tree reader ---


def test_pyudev_and_tree_reader_agree_on_real_sysfs():
    for name in sorted(os.listdir("/sys/class/block")):
        via_tree = safety._tree_node(Path("/sys/class/block", name).resolve())
        via_udev = safety._lookup("/sys", via_tree.rdev)
        assert via_udev == via_tree


# --- wipe and plan ---


def test_format_plan():
    sdb = safety.DeviceInfo("/dev/sdb", "sdb", 300 * 10**9, "ST300DM", os.makedev(8, 16), ())
    sdc = safety.DeviceInfo("/dev/sdc", "sdc", 64 * MiB, "", os.makedev(8, 32), ("ext4",))
    assert safety.format_plan([("btrfs-raid10", [sdb, sdc]), ("xfs", [])]) == (
        "btrfs-raid10: /dev/sdb (300.0 GB, ST300DM), /dev/sdc (67.1 MB, holds ext4) — will be overwritten\n"
        "xfs: no devices")


def test_accepted_device_info(tmp_path, fake, blockdevs, never_open_devices):
    dev = blockdevs[0]
    fake.add("sdx", rdev=os.stat(dev).st_rdev, sectors=4096)
    (fake.root / "devices" / "virtual" / "block" / "sdx" / "device").mkdir()
    (fake.root / "devices" / "virtual" / "block" / "sdx" / "device" / "model").write_text("ST300DM  \n")
    execute = Recorder(blkid=(0, "TYPE=ext4\nUSAGE=filesystem\n"), wipefs='{"signatures": [{"type": "ext4"}]}')
    [info] = safety.check_devices([dev], wipe=True, execute=execute, sysfs=str(fake.root),
                                  mountinfo=_mountinfo(tmp_path), swaps=_swaps(tmp_path))
    assert info == safety.DeviceInfo(dev, "sdx", 4096 * 512, "ST300DM", os.stat(dev).st_rdev, ("ext4",))
    assert never_open_devices == [dev]

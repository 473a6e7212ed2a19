"""pytest_fsbench.targets.safety against real loop devices made to look dangerous (needs root).

Every loop device here is attached by this module, used only by the name `losetup -f --show`
returned, and detached (after unmounting) in the fixture teardown even when a test fails; the
teardown then checks that `losetup -a` and /proc/mounts no longer show any of them.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from pytest_fsbench.targets import safety
from pytest_fsbench.errors import UnsafeDevice
from pytest_fsbench.system.commands import execute

pytestmark = [
    pytest.mark.root,
    pytest.mark.skipif(os.geteuid() != 0, reason="needs root to attach loop devices"),
]

MiB = 1024 * 1024
SIZE = 64 * MiB


class Loops:
    """Loop devices and mounts made by one test, all undone by cleanup()."""

    def __init__(self, tmp_path: Path):
        self.tmp = tmp_path
        self.devices: list[str] = []
        self.mounts: list[Path] = []

    def attach(self, *, read_only: bool = False, partscan: bool = False, table: str = "") -> str:
        image = self.tmp / f"image{len(self.devices)}"
        with open(image, "wb") as f:
            f.truncate(SIZE)  # sparse
        if table:  # written to the image before attaching: this kernel cannot re-read tables
            execute(["sfdisk", "-q", str(image)], input=table)
        flags = (["-r"] if read_only else []) + (["-P"] if partscan else [])
        device = execute(["losetup", "-f", "--show", *flags, str(image)]).stdout.strip()
        assert device.startswith("/dev/loop"), device
        self.devices.append(device)
        return device

    def mount(self, device: str) -> Path:
        point = self.tmp / f"mnt{len(self.mounts)}"
        point.mkdir()
        execute(["mount", device, str(point)])
        self.mounts.append(point)
        return point

    def cleanup(self) -> None:
        for point in reversed(self.mounts):
            execute(["umount", str(point)], check=False)
        for device in reversed(self.devices):
            _detach(device)
        leftovers = [d for d in self.devices if not _gone(d, self.tmp)]
        mounted = [str(p) for p in self.mounts if str(p) in Path("/proc/mounts").read_text()]
        assert not leftovers and not mounted, f"left behind: {leftovers} {mounted}"


def _detach(device: str) -> None:
    for _ in range(20):  # a transient opener (blkid, the kernel) can make losetup -d fail briefly
        if execute(["losetup", "-d", device], check=False).returncode == 0:
            return
        time.sleep(0.1)


def _gone(device: str, tmp: Path) -> bool:
    """Wait until `losetup -a` no longer shows `device` on one of our images. losetup -d only
    marks a device still open (e.g. by a filesystem being torn down) for autoclear, and the
    name may meanwhile be reused by someone else's image -- that does not count."""
    for _ in range(50):
        if str(tmp) not in _backing_file(device):
            return True
        time.sleep(0.1)
    return False


def _backing_file(device: str) -> str:
    """What `losetup -a` says `device` is attached to ('' when it is not listed)."""
    for line in execute(["losetup", "-a"]).stdout.splitlines():
        if line.startswith(f"{device}:"):
            return line
    return ""


@pytest.fixture
def loops(tmp_path: Path):
    made = Loops(tmp_path)
    try:
        yield made
    finally:
        made.cleanup()


def _refused(paths: list[str], **kwargs) -> str:
    with pytest.raises(UnsafeDevice) as caught:
        safety.check_devices(paths, **kwargs)
    message = str(caught.value)
    assert "\n" not in message
    return message


def _blkid(device: str) -> int:
    return execute(["blkid", "-p", device], check=False).returncode


def test_ext4_signature_refused_then_accepted_with_wipe_and_wiped(loops):
    device = loops.attach()
    execute(["mkfs.ext4", "-q", device])
    message = _refused([device])
    assert message == (f"{device} holds an ext4 filesystem signature; pass --wipe-devices to let "
                       "fsbench overwrite it, or pick another device")
    assert _blkid(device) == 0  # the refusal wrote nothing

    [info] = safety.check_devices([device], wipe=True)
    assert info.signatures == ("ext4",)
    execute(["wipefs", "--all", "--quiet", device])  # what the device provider does when a case ends
    assert _blkid(device) == 2  # blkid: nothing found
    assert safety.check_devices([device])[0].signatures == ()


def test_mounted_loop_refused_even_with_wipe(loops):
    device = loops.attach()
    execute(["mkfs.ext4", "-q", device])
    point = loops.mount(device)
    assert _refused([device], wipe=True) == f"{device} is mounted at {point}; unmount it first"


def test_mount_invisible_to_mountinfo_is_caught_by_exclusive_open(loops, tmp_path):
    # as if mounted in another mount namespace: mountinfo does not list it, the kernel holds it
    device = loops.attach()
    execute(["mkfs.ext4", "-q", device])
    loops.mount(device)
    empty = tmp_path / "empty-mountinfo"
    empty.write_text("")
    message = _refused([device], wipe=True, mountinfo=str(empty))
    assert message.startswith(f"{device} is in use (the kernel holds it exclusively")


def test_mounted_partition_refused_even_with_wipe(loops):
    device = loops.attach(partscan=True, table="label: gpt\n,\n")
    # this kernel has no partition-table parsers; partx adds the partition with BLKPG instead
    execute(["partx", "-a", device])
    partition = f"{device}p1"
    execute(["mkfs.ext4", "-q", partition])
    point = loops.mount(partition)
    message = _refused([device], wipe=True)
    name = Path(partition).name
    assert message == f"{device} has partition {name} mounted at {point}; unmount it first"
    # pyudev (real /sys) and the plain tree reader (fake sysfs) see the same disk and partition
    node = safety._lookup("/sys", os.stat(device).st_rdev)
    assert [p.name for p in node.partitions] == [name]
    assert node == safety._tree_node(node.sys_path)


@pytest.mark.parametrize("label, names", [("gpt", "gpt, PMBR"), ("dos", "dos")])
def test_partition_table_refused(loops, label, names):
    device = loops.attach(table=f"label: {label}\n,\n")
    message = _refused([device])
    assert message.startswith(f"{device} holds a {label} partition table")
    assert ("signatures found: " + names in message) == ("," in names)
    assert safety.check_devices([device], wipe=True)[0].signatures[0] == label


@pytest.mark.parametrize("kind", ["regular file", "character device", "missing"])
def test_not_a_block_device_refused(tmp_path, kind):
    image = tmp_path / "image"
    image.write_bytes(b"\0" * 4096)
    path = {"regular file": str(image), "character device": "/dev/null",
            "missing": str(tmp_path / "no-such-device")}[kind]
    message = _refused([path], wipe=True)
    assert message.startswith(path)
    assert ("does not exist" if kind == "missing" else f"is a {kind}, not a block device") in message


def _root_disk() -> str:
    """The whole disk under / according to /proc/self/mountinfo and sysfs (here /dev/vda)."""
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        fields = line.split()
        if fields[4] == "/":
            node = Path("/sys/dev/block", fields[2]).resolve()
            if (node / "partition").exists():
                node = node.parent
            return f"/dev/{node.name}"
    pytest.skip("no / in mountinfo")


def test_root_disk_refused_even_with_wipe():
    disk = _root_disk()
    if not os.path.exists(disk):
        pytest.skip(f"/ is not on a block device node ({disk})")
    message = _refused([disk], wipe=True)
    assert message.startswith(f"{disk} holds the root filesystem (/)")
    assert "even with --wipe-devices" in message


def test_clean_loop_accepted(loops):
    device = loops.attach()
    [info] = safety.check_devices([device])
    assert info == safety.DeviceInfo(
        path=device, name=Path(device).name, size_bytes=SIZE, model=info.model,
        rdev=os.stat(device).st_rdev, signatures=())
    assert info.model.startswith("loop of ") and info.model.endswith("image0")
    assert safety.format_plan([("ext4", [info])]) == (
        f"ext4: {device} (67.1 MB, {info.model}) — will be overwritten")


def test_same_loop_twice_refused(loops, tmp_path):
    device = loops.attach()
    alias = tmp_path / "alias"
    alias.symlink_to(device)
    message = _refused([device, str(alias)])
    name = Path(device).name
    assert message.startswith(f"{alias} ({name}) and {device} are the same device")


def test_read_only_loop_refused(loops):
    device = loops.attach(read_only=True)
    assert _refused([device], wipe=True).startswith(f"{device} is read-only;")


def test_two_clean_loops_accepted_in_order(loops):
    first, second = loops.attach(), loops.attach()
    assert [i.path for i in safety.check_devices([first, second])] == [first, second]


@pytest.fixture
def held_open():
    """Hold a device open for reading and writing in a child process (as a backup or another
    job's dd would), until the test ends; yields a function that starts the holder."""
    import subprocess
    import sys

    holders: list[subprocess.Popen] = []

    def hold(device: str) -> int:
        child = subprocess.Popen([sys.executable, "-c", "import os, sys, time\nfd = os.open(sys.argv[1], os.O_RDWR)\n"
                                  "print('open', flush=True)\ntime.sleep(600)", device], stdout=subprocess.PIPE,
                                 text=True)
        holders.append(child)
        assert child.stdout.readline().strip() == "open"
        return child.pid

    try:
        yield hold
    finally:
        for child in holders:
            child.kill()
            child.wait()


def test_a_loop_another_process_holds_open_is_refused_naming_it(loops, held_open):
    """Issue 34: a plain open takes no exclusive hold, so the exclusive open let it through."""
    device = loops.attach()
    pid = held_open(device)
    name = Path(f"/proc/{pid}/comm").read_text().strip()
    assert _refused([device], wipe=True) == (f"{device} is open in {name} (pid {pid}); stop that program first, or "
                                             "pick another device")

"""Checks made before fsbench writes to real block devices the user names with --devices.

`check_devices` only reads: stat(2), sysfs, /proc/self/mountinfo, /proc/swaps, `blkid -p`,
`wipefs --no-act` and a read-only exclusive open. It refuses a device with UnsafeDevice (one line:
the device, what is wrong, what to do) when writing to it could destroy something:

  never allowed   missing or not a block device, size 0, listed twice (or disk and its own
                  partition), a system disk (/, /boot, /usr, /var, /home, active swap -- also
                  through md/dm/lvm "slaves"), mounted (itself or a partition), held by md/dm/
                  bcache (itself or a partition), read-only, busy (open exclusively by the kernel),
                  open in another process (itself or a partition: /proc/*/fd names it)
  only with wipe  a partition table or a filesystem/raid/crypto/zfs signature

Device topology comes from pyudev when `sysfs` is the real /sys. libudev cannot be pointed at
another root, so a fake sysfs tree (tests) is read directly with the same layout rules.
"""

from __future__ import annotations

import errno
import functools
import json
import os
import re
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pyudev

from ..system import commands as system
from ..system.processes import openers
from .mounts import Mount, parse_mountinfo, unescape
from ..errors import CommandError, UnsafeDevice

SYSTEM_MOUNTPOINTS = ("/", "/boot", "/boot/efi", "/usr", "/var", "/home")

_NEVER = "fsbench never writes to a system disk, even with --wipe-devices; pick another device"
_WIPE_HINT = "pass --wipe-devices to let fsbench overwrite it, or pick another device"
_PROBE_TIMEOUT = 120.0


@dataclass(frozen=True)
class DeviceInfo:
    """A block device that passed every check: what fsbench shows before overwriting it."""

    path: str
    name: str
    size_bytes: int
    model: str
    rdev: int
    signatures: tuple[str, ...]


@dataclass(frozen=True)
class _Node:
    """One block device as sysfs describes it."""

    name: str
    sys_path: Path
    rdev: int
    is_partition: bool
    size_bytes: int
    disk: str | None  # the parent disk's name, for a partition
    partitions: tuple[_Node, ...]


@dataclass(frozen=True)
class _Target:
    """A path the user named, resolved to its sysfs node."""

    path: str
    node: _Node

    @property
    def label(self) -> str:
        if os.path.basename(self.path) == self.node.name:
            return self.path
        return f"{self.path} ({self.node.name})"


@dataclass(frozen=True)
class _Context:
    """What every per-device check needs, read once per check_devices call."""

    sysfs: str
    system_names: dict[str, str]  # kernel name -> what system filesystem or swap it holds
    mounted: dict[int, str]  # device number -> a mount point
    wipe: bool
    execute: system.Executor


# ---------------------------------------------------------------------------------------------
# public API


def check_devices(
    paths: list[str],
    *,
    wipe: bool = False,
    execute: system.Executor = system.execute,
    sysfs: str = "/sys",
    mountinfo: str = "/proc/self/mountinfo",
    swaps: str = "/proc/swaps",
) -> list[DeviceInfo]:
    """Check every device in `paths` before anything is written to any of them.

    Raises UnsafeDevice (one line) for the first problem found; returns one DeviceInfo per path,
    in order, when all are safe. `wipe=True` only lifts the refusal of devices that hold
    signatures or a partition table. Never writes to any device.
    """
    targets = [_locate(path, sysfs) for path in paths]
    _check_distinct(targets)
    mounts = parse_mountinfo(_read_mountinfo(mountinfo, paths))
    system_rdevs = _system_rdevs(mounts, _parse_swaps(_read_optional(swaps)))
    ctx = _Context(sysfs, _system_names(sysfs, system_rdevs), _mounted_rdevs(mounts), wipe, execute)
    return [_check_one(t, ctx) for t in targets]


def format_plan(assignments: list[tuple[str, list[DeviceInfo]]]) -> str:
    """One line per case naming the devices it will overwrite, for the user to confirm."""
    return "\n".join(_plan_line(case, devices) for case, devices in assignments)


# ---------------------------------------------------------------------------------------------
# the checks, in the order they are made


def _check_one(t: _Target, ctx: _Context) -> DeviceInfo:
    if t.node.size_bytes == 0:
        raise _refuse(t.label, "has size 0 (an unattached loop device or a drive without media?)",
                      "pick a device with storage behind it")
    _check_system(t, ctx)
    _check_mounted(t, ctx.mounted)
    _check_holders(t)
    if _read_sysfs(t.node.sys_path / "ro") == "1":
        raise _refuse(t.label, "is read-only",
                      "make it writable (blockdev --setrw) or pick another device")
    _check_not_busy(t)
    _check_not_open(t)
    signatures = _probe_signatures(t, ctx.execute)
    if signatures and not ctx.wipe:
        raise _refuse(t.label, f"holds {_describe_signatures(signatures)}", _WIPE_HINT)
    return DeviceInfo(t.path, t.node.name, t.node.size_bytes, _model(t.node), t.node.rdev,
                      tuple(signatures))


def _locate(path: str, sysfs: str) -> _Target:
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise _refuse(path, "does not exist",
                      "check the name (ls -l /dev/disk/by-id lists disks by model)") from None
    except OSError as exc:
        raise _refuse(path, f"cannot be examined ({exc.strerror})", "check the name") from None
    if not stat.S_ISBLK(st.st_mode):
        raise _refuse(path, f"is {_file_kind(st.st_mode)}, not a block device",
                      "name a disk or partition such as /dev/sdb")
    node = _lookup(sysfs, st.st_rdev)
    if node is None:
        raise _refuse(path, f"(block device {_numbers(st.st_rdev)}) has no entry under {sysfs}",
                      "check that the device is still attached")
    return _Target(path, node)


def _check_distinct(targets: list[_Target]) -> None:
    seen: dict[int, _Target] = {}
    for t in targets:
        if t.node.rdev in seen:
            raise UnsafeDevice(f"{t.label} and {seen[t.node.rdev].label} are the same device "
                               f"({t.node.name}, {_numbers(t.node.rdev)}); list each device once")
        seen[t.node.rdev] = t
    by_name = {t.node.name: t for t in targets}
    for t in targets:
        if t.node.disk in by_name:
            disk = by_name[t.node.disk].label
            raise UnsafeDevice(f"{t.label} is a partition of {disk}, which is also listed; "
                               "list either the disk or its partitions")


def _check_system(t: _Target, ctx: _Context) -> None:
    for name in _lower_names(ctx.sysfs, t.node, set()):
        what = ctx.system_names.get(name)
        if what and name == t.node.name:
            raise _refuse(t.label, f"holds {what}", _NEVER)
        if what:
            raise _refuse(t.label, f"is on {name}, which holds {what}", _NEVER)


def _check_mounted(t: _Target, mounted: dict[int, str]) -> None:
    for node in (t.node, *t.node.partitions):
        if node.rdev in mounted:
            where = mounted[node.rdev]
            raise _refuse(t.label, f"{_subject(t, node)} mounted at {where}", "unmount it first")


def _check_holders(t: _Target) -> None:
    for node in (t.node, *t.node.partitions):
        holders = _listdir(node.sys_path / "holders")
        if holders:
            held_by = ", ".join(holders)
            problem = f"{_subject(t, node)} held by {held_by} (md raid, device-mapper/lvm or bcache)"
            raise _refuse(t.label, problem, f"stop {held_by} first, or pick another device")


def _check_not_busy(t: _Target) -> None:
    """Open read-only with O_EXCL: the kernel refuses (EBUSY) while a filesystem, md, dm, swap,
    btrfs/zfs pool or another program holds the device exclusively -- including mounts in other
    mount namespaces and multi-device btrfs members that mountinfo does not list."""
    try:
        fd = os.open(t.path, os.O_RDONLY | os.O_EXCL | os.O_CLOEXEC)
    except OSError as exc:
        if exc.errno == errno.EBUSY:
            raise _refuse(t.label, "is in use (the kernel holds it exclusively: mounted elsewhere, "
                          "a btrfs/zfs member, swap, or open by another program)",
                          "stop using it first, or pick another device") from None
        denied = exc.errno in (errno.EACCES, errno.EPERM)
        advice = "run fsbench as root" if denied else "check the device"
        raise _refuse(t.label, f"cannot be opened ({exc.strerror})", advice) from None
    os.close(fd)


def _check_not_open(t: _Target) -> None:
    """Another program's plain open (dd, a backup, a VM's disk) takes no exclusive hold, so the
    exclusive open above lets it through; its file descriptors name it."""
    for node in (t.node, *t.node.partitions):
        found = openers(node.rdev)
        if found:
            raise _refuse(t.label, f"{_subject(t, node)} open in {', '.join(found)}",
                          "stop that program first, or pick another device")


# ---------------------------------------------------------------------------------------------
# signatures: blkid -p (low-level probing, no udev database needed) and wipefs for the full list


def _probe_signatures(t: _Target, execute: system.Executor) -> dict[str, str]:
    """{signature: kind ('' when unknown)} on the device itself; raises UnsafeDevice when
    probing fails."""
    from_blkid = _blkid_signatures(t, execute)
    found = dict(from_blkid or {})
    for name in _wipefs_signatures(t, execute):
        found.setdefault(name, "")
    if from_blkid is None and not found:
        found["ambivalent"] = "several conflicting signatures"
    return found


def _blkid_signatures(t: _Target, execute: system.Executor) -> dict[str, str] | None:
    """{signature: kind} from `blkid -p`, which exits 2 when it finds nothing, and 8 (None here)
    when several filesystems claim the device -- wipefs then lists them."""
    done = _probe(t, execute, ["blkid", "-p", "-o", "export", t.path], ok=(0, 2, 8))
    if done.returncode == 8:
        return None
    return _parse_blkid_export(done.stdout)


def _parse_blkid_export(text: str) -> dict[str, str]:
    values = dict(line.split("=", 1) for line in text.splitlines() if "=" in line)
    found: dict[str, str] = {}
    if values.get("PTTYPE"):
        found[values["PTTYPE"]] = "partition table"
    if values.get("TYPE"):
        found[values["TYPE"]] = values.get("USAGE", "")
    return found


def _wipefs_signatures(t: _Target, execute: system.Executor) -> list[str]:
    done = _probe(t, execute, ["wipefs", "--no-act", "--json", t.path], ok=(0,))
    return _parse_wipefs_json(done.stdout)


def _parse_wipefs_json(text: str) -> list[str]:
    if not text.strip():
        return []
    names: list[str] = []
    for entry in json.loads(text).get("signatures", []):
        if entry.get("type") and entry["type"] not in names:
            names.append(entry["type"])
    return names


def _probe(
    t: _Target, execute: system.Executor, argv: list[str], ok: tuple[int, ...]
) -> system.Completed:
    try:
        done = execute(argv, timeout=_PROBE_TIMEOUT, check=False)
    except CommandError as exc:
        raise _refuse(t.label, f"cannot be probed for signatures ({argv[0]}: {exc.reason})",
                      "install util-linux (blkid, wipefs)") from None
    if done.returncode not in ok:
        detail = " ".join(done.output.split()) or f"exit status {done.returncode}"
        raise _refuse(t.label, f"cannot be probed for signatures ({argv[0]}: {detail})",
                      "check the device and run fsbench as root")
    return done


def _describe_signatures(found: dict[str, str]) -> str:
    """'an ext4 filesystem signature', plus the full list when there are several."""
    name, kind = next(iter(found.items()))
    if kind == "partition table":
        text = f"a {name} partition table"
    elif kind == "several conflicting signatures":
        text = kind
    else:
        article = "an" if name[:1].lower() in "aeiox" else "a"
        text = f"{article} {name} {kind + ' ' if kind and kind != 'other' else ''}signature"
    return text if len(found) == 1 else f"{text} (signatures found: {', '.join(found)})"


# ---------------------------------------------------------------------------------------------
# system disks: what holds /, /boot, /usr, /var, /home and active swap, down through slaves


def _system_rdevs(mounts: list[Mount], swaps: list[str]) -> dict[int, str]:
    found: dict[int, str] = {}
    for m in mounts:
        if m.target in SYSTEM_MOUNTPOINTS:
            what = "the root filesystem (/)" if m.target == "/" else f"the {m.target} filesystem"
            for rdev in _mount_rdevs(m):
                found.setdefault(rdev, what)
    for name in swaps:
        rdev = _swap_rdev(name)
        if rdev is not None:
            found.setdefault(rdev, f"active swap ({name})")
    return found


def _system_names(sysfs: str, rdevs: dict[int, str]) -> dict[str, str]:
    """{kernel name: what it holds} for every device a system filesystem or swap lives on."""
    names: dict[str, str] = {}
    for rdev, what in rdevs.items():
        node = _lookup(sysfs, rdev)
        if node is not None:
            for name in _lower_names(sysfs, node, set()):
                names.setdefault(name, what)
    return names


def _lower_names(sysfs: str, node: _Node, seen: set[str]) -> Iterator[str]:
    """The node, its disk, and recursively every device it is built on (sysfs `slaves`)."""
    if node.name in seen:
        return
    seen.add(node.name)
    yield node.name
    if node.disk:
        yield node.disk
    for slave in _listdir(node.sys_path / "slaves"):
        below = _lookup_name(sysfs, slave)
        if below is not None:
            yield from _lower_names(sysfs, below, seen)


def _swap_rdev(name: str) -> int | None:
    """A swap partition's device number, or for a swap file that of the device it lives on."""
    try:
        st = os.stat(name)
    except OSError:
        return None
    return st.st_rdev if stat.S_ISBLK(st.st_mode) else st.st_dev


# ---------------------------------------------------------------------------------------------
# /proc parsing


def _parse_swaps(text: str) -> list[str]:
    """Active swap areas from /proc/swaps (first line is a header)."""
    return [unescape(line.split()[0]) for line in text.splitlines()[1:] if line.strip()]


def _mount_rdevs(m: Mount) -> list[int]:
    """btrfs (and others) report an anonymous 0:N in mountinfo; their source names the device."""
    rdevs = [m.rdev]
    if os.major(m.rdev) == 0 and m.source.startswith("/dev/"):
        try:
            st = os.stat(m.source)
        except OSError:
            return rdevs
        if stat.S_ISBLK(st.st_mode):
            rdevs.append(st.st_rdev)
    return rdevs


def _mounted_rdevs(mounts: list[Mount]) -> dict[int, str]:
    mounted: dict[int, str] = {}
    for m in mounts:
        for rdev in _mount_rdevs(m):
            mounted.setdefault(rdev, m.target)
    return mounted


def _read_mountinfo(path: str, devices: list[str]) -> str:
    try:
        return Path(path).read_text()
    except OSError as exc:
        raise UnsafeDevice(f"cannot check {', '.join(devices)}: {path} is unreadable "
                           f"({exc.strerror}), so fsbench cannot tell what is mounted; "
                           "run it where /proc is mounted") from None


def _read_optional(path: str) -> str:
    try:
        return Path(path).read_text()
    except FileNotFoundError:  # a kernel without swap support has no /proc/swaps
        return ""


# ---------------------------------------------------------------------------------------------
# sysfs: pyudev for the real /sys, a plain directory walk for a fake root


@functools.lru_cache(maxsize=1)
def _udev() -> pyudev.Context:
    return pyudev.Context()


def _is_real_sysfs(sysfs: str) -> bool:
    return os.path.realpath(sysfs) == os.path.realpath(_udev().sys_path)


def _lookup(sysfs: str, rdev: int) -> _Node | None:
    """The block device with this device number, or None when sysfs has no such device."""
    if _is_real_sysfs(sysfs):
        try:
            return _udev_node(pyudev.Devices.from_device_number(_udev(), "block", rdev))
        except pyudev.DeviceNotFoundError:
            return None
    link = Path(sysfs, "dev", "block", _numbers(rdev))
    return _tree_node(link.resolve()) if link.exists() else None


def _lookup_name(sysfs: str, name: str) -> _Node | None:
    if _is_real_sysfs(sysfs):
        try:
            return _udev_node(pyudev.Devices.from_name(_udev(), "block", name))
        except pyudev.DeviceNotFoundError:
            return None
    link = Path(sysfs, "class", "block", name)
    return _tree_node(link.resolve()) if link.exists() else None


def _udev_node(device: pyudev.Device) -> _Node:
    is_partition = device.device_type == "partition"
    disk = device.find_parent("block", "disk") if is_partition else None
    children = (c for c in device.children if c.device_type == "partition")
    partitions = () if is_partition else tuple(
        sorted((_udev_node(c) for c in children), key=lambda n: n.name))
    return _Node(device.sys_name, Path(device.sys_path), device.device_number, is_partition,
                 device.attributes.asint("size") * 512,  # sysfs counts 512-byte sectors
                 None if disk is None else disk.sys_name, partitions)


def _tree_node(path: Path) -> _Node:
    is_partition = (path / "partition").exists()
    partitions = () if is_partition else tuple(
        _tree_node(p) for p in sorted(path.iterdir())
        if p.is_dir() and not p.is_symlink() and (p / "partition").exists())
    major, minor = _read_sysfs(path / "dev").split(":")
    return _Node(path.name, path, os.makedev(int(major), int(minor)), is_partition,
                 int(_read_sysfs(path / "size") or 0) * 512,  # sysfs counts 512-byte sectors
                 path.parent.name if is_partition else None, partitions)


def _model(node: _Node) -> str:
    disk = node.sys_path.parent if node.is_partition else node.sys_path
    backing = _read_sysfs(disk / "loop" / "backing_file")
    if backing:
        return f"loop of {backing}"
    return " ".join(_read_sysfs(disk / "device" / "model").split())


def _read_sysfs(path: Path) -> str:
    try:
        return path.read_text().strip()
    except OSError:
        return ""


def _listdir(path: Path) -> list[str]:
    try:
        return sorted(os.listdir(path))
    except OSError:
        return []


# ---------------------------------------------------------------------------------------------
# wording


def _refuse(label: str, problem: str, advice: str) -> UnsafeDevice:
    return UnsafeDevice(re.sub(r"\s*\n\s*", " ", f"{label} {problem}; {advice}").strip())


def _subject(t: _Target, node: _Node) -> str:
    return "is" if node is t.node else f"has partition {node.name}"


def _numbers(rdev: int) -> str:
    return f"{os.major(rdev)}:{os.minor(rdev)}"


def _file_kind(mode: int) -> str:
    if stat.S_ISREG(mode):
        return "a regular file"
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISCHR(mode):
        return "a character device"
    return "a special file"


def _plan_line(case: str, devices: list[DeviceInfo]) -> str:
    if not devices:
        return f"{case}: no devices"
    listed = ", ".join(f"{d.path} ({_plan_details(d)})" for d in devices)
    return f"{case}: {listed} — will be overwritten"


def _plan_details(d: DeviceInfo) -> str:
    details = [_human_size(d.size_bytes)]
    if d.model:
        details.append(d.model)
    if d.signatures:
        details.append(f"holds {', '.join(d.signatures)}")
    return ", ".join(details)


def _human_size(size: int) -> str:
    for unit, factor in (("TB", 10**12), ("GB", 10**9), ("MB", 10**6), ("kB", 10**3)):
        if size >= factor:
            return f"{size / factor:.1f} {unit}"
    return f"{size} B"

"""The work a target did in a run, counted where the kernel keeps it (issue 41): what reached its
member devices (/sys/block/DEV/stat: requests, sectors, discards, flushes) and what its filesystem
committed (ext4's jbd2 transactions, XFS's log writes, Btrfs's transaction commits, OpenZFS's
transaction groups), read after the run and a syncfs of the target, so a run's count holds all
the work it caused and none of the next's. Per byte the workload moved they are the figures a
busy machine cannot blur: write amplification, requests per MB, flushes and commits per GB.

Inside a guest kernel (User-mode Linux, a virtual machine) the counts are the guest's, of its own
disks, never the host's image files. Parsers are pure, the readers read files only.
"""

from __future__ import annotations

import ctypes
import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import CommandError
from ..metrics import MB, Direction, Metric
from .cache_check import io_parts

#: /sys/block/DEV/stat's fields in order (Documentation/block/stat.rst); kernels before 4.18 have
#: the first 11, before 5.5 the first 15
BLOCK_STAT_FIELDS = ("read_ios", "read_merges", "read_sectors", "read_ticks", "write_ios", "write_merges",
                     "write_sectors", "write_ticks", "in_flight", "io_ticks", "time_in_queue", "discard_ios",
                     "discard_merges", "discard_sectors", "discard_ticks", "flush_ios", "flush_ticks")
#: the block layer counts sectors of 512 bytes whatever the device's own sector size
SECTOR = 512
GB = 1000 * MB

SYS_BLOCK = Path("/sys/block")

#: a filesystem's commit counter: what it counts, as the views name it
COMMIT_COUNTERS = {"jbd2": "jbd2 transactions", "xfs-log": "XFS log writes", "btrfs": "Btrfs transaction commits",
                   "zfs-txgs": "ZFS transaction groups"}

#: the raw counts of a run (name, unit) and the figures per byte the workload moved; all "lower is better"
RAW = {"work.written": "MB", "work.read": "MB", "work.write_requests": "req", "work.read_requests": "req",
       "work.flushes": "req", "work.discards": "req", "work.commits": "commits"}
PER_BYTE = {"work.write_amp": "x", "work.read_amp": "x", "work.requests_per_mb": "req/MB",
            "work.flushes_per_gb": "/GB", "work.commits_per_gb": "/GB"}
#: how a view names each in a short "work" part: write_amp 1.03x
SHORT = {"work.write_amp": "bytes/B", "work.read_amp": "read/B", "work.requests_per_mb": "req/MB",
         "work.flushes_per_gb": "flush/GB", "work.commits_per_gb": "commit/GB"}


def parse_block_stat(text: str) -> dict[str, int]:
    """/sys/block/DEV/stat: each field the kernel gives, by name."""
    values = text.split()
    if len(values) < 11 or not all(v.isdigit() for v in values):
        raise ValueError(f"not a block device's stat line: {text.strip()[:120]!r}")
    return dict(zip(BLOCK_STAT_FIELDS, map(int, values)))


def parse_jbd2_info(text: str) -> int:
    """/proc/fs/jbd2/DEV-8/info: the journal's transactions since the mount."""
    match = re.match(r"\s*(\d+) transactions", text)
    if match is None:
        raise ValueError(f"no transaction count in jbd2's info: {text.strip()[:120]!r}")
    return int(match.group(1))


def parse_xfs_stats(text: str) -> int:
    """/sys/fs/xfs/DEV/stats/stats: the log's writes (the first number of its "log" line)."""
    for line in text.splitlines():
        fields = line.split()
        if fields[:1] == ["log"] and len(fields) >= 2:
            return int(fields[1])
    raise ValueError("no log line in XFS's stats")


def parse_btrfs_commit_stats(text: str) -> int:
    """/sys/fs/btrfs/FSID/commit_stats: the transactions committed since the mount."""
    match = re.search(r"^commits (\d+)$", text, re.MULTILINE)
    if match is None:
        raise ValueError(f"no commits line in Btrfs's commit_stats: {text.strip()[:120]!r}")
    return int(match.group(1))


def parse_zfs_txgs(text: str) -> int:
    """/proc/spl/kstat/zfs/POOL/txgs: the newest transaction group synced to the disks (state C).
    Transaction groups are numbered on the pool, so the difference of two is how many were synced
    between, across an export and import."""
    synced = [int(fields[0]) for fields in (line.split() for line in text.splitlines())
              if len(fields) > 2 and fields[0].isdigit() and fields[2] == "C"]
    if not synced:
        raise ValueError("no synced transaction group in the pool's txgs")
    return max(synced)


@dataclass(frozen=True)
class Place:
    """Where a target's work is counted: its member devices' kernel names, the file of its
    filesystem's commit counter (with its kind, or why there is none) and the kernel it is counted
    in (host, uml, vm)."""

    devices: tuple[str, ...]
    commits: tuple[str, Path] | None = None  # (kind of COMMIT_COUNTERS, its file)
    no_commits: str = ""  # why nothing counts commits here
    kernel: str = "host"
    journal_less: bool = False  # a journaling filesystem made without its journal: no commits, counted as 0

    def record(self) -> dict[str, str]:
        """Where the counts came from, as a case's manifest keeps it and the views say it."""
        where = {"host": "the host's", "uml": "the User-mode Linux guest's", "vm": "the virtual machine's"}
        found = {"devices": f"{where.get(self.kernel, self.kernel)} block devices {', '.join(self.devices)} "
                            "(/sys/block/DEV/stat)"}
        if self.commits is not None:
            found["commits"] = f"{COMMIT_COUNTERS[self.commits[0]]} ({self.commits[1]})"
        elif self.journal_less:
            found["commits"] = f"none: {self.no_commits}"
        else:
            found["commits"] = f"not counted: {self.no_commits}"
        return found


_LIBC = ctypes.CDLL(None, use_errno=True)


def syncfs(path: str) -> None:
    """syncfs(2) of the filesystem path is on: its dirty data and metadata written, its journal
    committed (Python's os has sync and fsync, not syncfs). A CommandError, as a command's, when the
    kernel refuses it (the filesystem failed its writes, or the mount is gone)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    except OSError as exc:
        raise CommandError(["syncfs", path], None, "", f"cannot open it: {exc.strerror}") from None
    try:
        if _LIBC.syncfs(fd) != 0:
            raise CommandError(["syncfs", path], None, "", os.strerror(ctypes.get_errno()))
    finally:
        os.close(fd)


def device_name(path: str) -> str:
    """The kernel's name of a block device node: /dev/loop3 -> loop3, /dev/md/NAME -> md127."""
    return Path(os.path.realpath(path)).name


def mount_device(mountpoint: str, sys_dev: Path = Path("/sys/dev/block")) -> str | None:
    """The kernel's name of the block device a filesystem is mounted from (None: an anonymous
    device, as a Btrfs or FUSE mount has)."""
    try:
        dev = os.stat(mountpoint).st_dev
    except OSError:
        return None
    node = sys_dev / f"{os.major(dev)}:{os.minor(dev)}"
    return node.resolve().name if node.exists() else None


#: what commit_file says of an ext4 or ext3 made without a journal (-O ^has_journal): it commits nothing
NO_JOURNAL = "the filesystem has no journal (no /proc/fs/jbd2 entry for its device), so it commits nothing"


def commit_file(kind: str, mountpoint: str, devices: Sequence[str], pool: str = "",
                proc: Path = Path("/proc"), sys_fs: Path = Path("/sys/fs")) -> Path | str:
    """The file of the filesystem's commit counter, or why there is none here (NO_JOURNAL: none to
    count)."""
    if kind in ("jbd2", "xfs-log"):
        name = mount_device(mountpoint)
        if name is None:
            return f"{mountpoint} is mounted from no block device"
        path = proc / "fs/jbd2" / f"{name}-8/info" if kind == "jbd2" else sys_fs / "xfs" / name / "stats/stats"
        if kind == "jbd2" and path.parent.parent.is_dir() and not path.exists():
            return NO_JOURNAL
    elif kind == "btrfs":
        fsids = [d for d in (sys_fs / "btrfs").glob("*/devices") if any((d / dev).exists() for dev in devices)]
        if not fsids:
            return "no Btrfs filesystem under /sys/fs/btrfs holds the target's devices"
        path = fsids[0].parent / "commit_stats"
    elif kind == "zfs-txgs":
        path = proc / "spl/kstat/zfs" / pool / "txgs"
    else:
        return "this filesystem keeps no commit counter fsbench reads"
    return path if path.exists() else f"this kernel has no {path}"


def place_of(devices: Sequence[str], kind: str, mountpoint: str, pool: str = "", kernel: str = "host",
             none_reason: str = "") -> Place:
    """Where a target's work is counted (kind: its driver's commit counter; "" for none, and
    none_reason says why)."""
    names = tuple(device_name(d) for d in devices)
    found = commit_file(kind, mountpoint, names, pool) if kind else none_reason
    if isinstance(found, Path):
        return Place(names, (kind, found), kernel=kernel)
    return Place(names, None, found, kernel, journal_less=found == NO_JOURNAL)


@dataclass(frozen=True)
class Counters:
    """The counters at one moment: each member device's stat fields, the commit count."""

    devices: dict[str, dict[str, int]] = field(default_factory=dict)
    commits: int | None = None


PARSERS = {"jbd2": parse_jbd2_info, "xfs-log": parse_xfs_stats, "btrfs": parse_btrfs_commit_stats,
           "zfs-txgs": parse_zfs_txgs}


def read_counters(place: Place, sys_block: Path = SYS_BLOCK) -> Counters:
    """The counters now (a device or counter that went away is left out, and so not counted)."""
    devices = {}
    for name in place.devices:
        try:
            devices[name] = parse_block_stat((sys_block / name / "stat").read_text())
        except (OSError, ValueError):
            continue
    commits = 0 if place.journal_less else None
    if place.commits is not None:
        kind, path = place.commits
        try:
            commits = PARSERS[kind](path.read_text())
        except (OSError, ValueError):
            commits = None
    return Counters(devices, commits)


def differences(intervals: Iterable[tuple[Counters, Counters]]) -> tuple[dict[str, int], int | None]:
    """The stat fields' increases summed over devices and intervals, and the commits' (None when
    any interval could not count them)."""
    sums: dict[str, int] = {}
    commits: int | None = 0
    for before, after in intervals:
        for name, now in after.devices.items():
            then = before.devices.get(name)
            if then is None:
                continue
            for key, value in now.items():
                if key != "in_flight":
                    sums[key] = sums.get(key, 0) + max(0, value - then.get(key, value))
        if commits is not None and before.commits is not None and after.commits is not None:
            commits += max(0, after.commits - before.commits)
        else:
            commits = None
    return sums, commits


def moved_bytes(metrics: Iterable[Metric]) -> tuple[int, int]:
    """(read, written) bytes the workload says it moved: every figure's io, a figure that shares
    another's bytes (same_io_as) counted once."""
    moved = {"read": 0, "write": 0}
    for metric in metrics:
        if metric.same_io_as is None:
            for kind, nbytes in io_parts(metric.io):
                moved[kind] += max(0, int(nbytes))
    return moved["read"], moved["write"]


def work_metrics(intervals: Sequence[tuple[Counters, Counters]], read: int, written: int) -> list[Metric]:
    """The run's work: the raw counts (RAW), and per byte the workload moved (PER_BYTE) where it
    says how much it moved: device bytes per byte written or read, requests per MB moved, flushes
    and commits per GB written. None without a device counted."""
    if not intervals or not any(after.devices for _, after in intervals):
        return []
    sums, commits = differences(intervals)
    raw = {"work.written": sums.get("write_sectors", 0) * SECTOR / MB,
           "work.read": sums.get("read_sectors", 0) * SECTOR / MB,
           "work.write_requests": sums.get("write_ios", 0), "work.read_requests": sums.get("read_ios", 0)}
    if "flush_ios" in sums:
        raw["work.flushes"] = sums["flush_ios"]
    if "discard_ios" in sums:
        raw["work.discards"] = sums["discard_ios"]
    if commits is not None:
        raw["work.commits"] = commits
    found = [Metric(name, float(value), RAW[name], Direction.LOWER) for name, value in raw.items()]
    per_byte = {}
    if written > 0:
        per_byte["work.write_amp"] = raw["work.written"] * MB / written
        if "work.flushes" in raw:
            per_byte["work.flushes_per_gb"] = raw["work.flushes"] / (written / GB)
        if commits is not None:
            per_byte["work.commits_per_gb"] = commits / (written / GB)
    if read > 0:
        per_byte["work.read_amp"] = raw["work.read"] * MB / read
    if read + written > 0:
        per_byte["work.requests_per_mb"] = (raw["work.write_requests"] + raw["work.read_requests"]) / (
            (read + written) / MB)
    return found + [Metric(name, value, PER_BYTE[name], Direction.LOWER) for name, value in per_byte.items()]


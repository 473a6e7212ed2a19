"""CPU and disk counters around a measured run (psutil), as metrics of the case.

The counters are read just before and just after the measured command; their differences give
the exact means over the run (system-wide CPU user/system/iowait in percent of all CPUs, bytes
and operations on the target's member devices), which is what the compression study compared,
and the CPU of the measured command's own processes (cpu.tool), which other jobs do not touch.

What else used the machine meanwhile is measured too (issue 32), so a gate can tell a slower
filesystem from a busier machine: cpu.others, the CPU everything but fsbench and the measured
command used (the machine's busy time minus this process's and its children's, minus the
kernel's threads', which do the target's writeback, journal and loop I/O as much as anyone's: a
configuration that moves work into them must not look like a busier machine, and minus the
processes that serve the target: fsbench's live children, such as the storage-pacing FUSE
daemon, and its filesystem's daemons, such as zfs-fuse: issue 41, an idle machine's ZFS cases
read 23-37 % "others"), and disk.others, the rate of the bytes other processes moved on the disk
under the images. Two counts bound it from above, and it is the smaller: the backing disk's
bytes less the target's member devices' (which also holds the target's own overhead there, such
as the image files' allocation and the journal commits of the filesystem that holds them), and
the bytes every other process read and wrote (/proc/PID/io, on any disk; never a kernel
thread's, which is where loop devices and writeback do the target's I/O: issue 41). A rate, not
an amount: a slower run lasts longer and would see more of the same steady I/O.
"""

from __future__ import annotations

import os
import resource
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import psutil

from ..metrics import MB, Direction, Metric
from ..system.throttle import DAEMON_MODULE


@dataclass(frozen=True)
class Snapshot:
    cpu: psutil._common.scputimes  # type: ignore[name-defined]
    disks: dict[str, tuple[int, int, int, int]]  # name -> read_bytes, write_bytes, reads, writes
    children: float = 0.0  # CPU seconds (user + system) of this process's finished children
    wall: float = 0.0  # time.monotonic()
    own: float = 0.0  # CPU seconds of this process itself (fsbench's own share of the machine)
    #: the disks under the images: name -> read, write bytes
    under: dict[str, tuple[int, int]] = field(default_factory=dict)
    kernel: float = 0.0  # CPU seconds of the kernel's threads (kworkers, jbd2, loop workers)
    serving: float = 0.0  # CPU seconds of the live processes that serve the target (Processes.serving)
    others_io: int | None = None  # bytes other processes have read and written (Processes.others_io)


@dataclass(frozen=True)
class Processes:
    """What the machine's processes have used, from /proc, split by whose work it is: the kernel's
    threads' CPU, the CPU of the processes that serve the target (the daemons fsbench started for
    it, SERVING_MODULES, and those of the target's filesystem, by program), and the bytes every
    other process has read and written to storage (fsbench's own processes' are the target's). A
    process gone since is left out, as one that came is counted whole."""

    kernel: float = 0.0
    serving: float = 0.0
    others_io: int = 0


#: a task's flag that marks a kernel thread (include/linux/sched.h)
PF_KTHREAD = 0x00200000


def _stat_fields(text: str) -> tuple[str, list[str]]:
    """(comm, the fields after it) of a /proc/PID/stat line."""
    head, _, rest = text.rpartition(")")
    return head.partition("(")[2], rest.split()


def _io_bytes(text: str) -> int:
    """read_bytes + write_bytes of a /proc/PID/io."""
    found = dict(line.split(": ", 1) for line in text.splitlines() if ": " in line)
    return int(found.get("read_bytes", 0)) + int(found.get("write_bytes", 0))


def processes(daemons: Iterable[str] = (), me: int | None = None, proc: Path = Path("/proc")) -> Processes:
    """The machine's processes now, as Processes splits them; daemons: the programs whose processes
    serve the target (zfs-fuse)."""
    ticks = os.sysconf("SC_CLK_TCK")
    me = os.getpid() if me is None else me
    table: dict[int, tuple[str, int, bool, int, Path]] = {}  # pid -> comm, ppid, kernel thread, CPU ticks, dir
    for stat in proc.glob("[0-9]*/stat"):
        try:
            comm, fields = _stat_fields(stat.read_text())
            table[int(stat.parent.name)] = (comm, int(fields[1]), bool(int(fields[6]) & PF_KTHREAD),
                                            int(fields[11]) + int(fields[12]), stat.parent)
        except (OSError, IndexError, ValueError):
            continue  # exited while listed
    ours = descendants(me, {pid: row[1] for pid, row in table.items()})
    names = set(daemons)
    kernel = serving = 0
    others_io = 0
    for pid, (comm, _, kthread, cpu, directory) in table.items():
        if kthread:
            kernel += cpu
        elif pid == me or (pid in ours and _runs(directory, SERVING_MODULES)):
            serving += cpu if pid != me else 0
        elif comm in names:
            serving += cpu
        elif pid not in ours:
            try:
                others_io += _io_bytes((directory / "io").read_text())
            except (OSError, ValueError):
                continue
    return Processes(kernel / ticks, serving / ticks, others_io)


#: the programs fsbench starts that serve a target while it is measured (the storage-pacing FUSE
#: daemon of --storage-rate), by the module their command line runs
SERVING_MODULES = (DAEMON_MODULE,)


def _runs(directory: Path, modules: Iterable[str]) -> bool:
    """Whether the process's command line runs one of the modules."""
    try:
        argv = (directory / "cmdline").read_bytes().split(b"\0")
    except OSError:
        return False
    return any(module.encode() in argv for module in modules)


def descendants(pid: int, parents: dict[int, int]) -> set[int]:
    """pid and every process under it (parents: pid -> its parent's pid)."""
    children: dict[int, list[int]] = {}
    for child, parent in parents.items():
        children.setdefault(parent, []).append(child)
    found, todo = set(), [pid]
    while todo:
        current = todo.pop()
        if current not in found:
            found.add(current)
            todo += children.get(current, [])
    return found


def snapshot(devices: list[str], under: Iterable[str] = (), daemons: Iterable[object] = ()) -> Snapshot:
    """The counters now: CPU, the member devices', the disks' under the images (under: their names);
    daemons: those that serve the target (system.daemons.Daemon, or their programs' names)."""
    names = {Path(d).resolve().name for d in devices}
    counters = psutil.disk_io_counters(perdisk=True) or {}
    disks = {n: (c.read_bytes, c.write_bytes, c.read_count, c.write_count)
             for n, c in counters.items() if n in names}
    backing = {n: (c.read_bytes, c.write_bytes) for n, c in counters.items() if n in set(under)}
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    own = resource.getrusage(resource.RUSAGE_SELF)
    seen = processes(getattr(d, "program", d) for d in daemons)
    return Snapshot(psutil.cpu_times(), disks, children.ru_utime + children.ru_stime, time.monotonic(),
                    own.ru_utime + own.ru_stime, backing, seen.kernel, seen.serving, seen.others_io)


def kernel_threads_cpu(proc: Path = Path("/proc")) -> float:
    """CPU seconds (user + system) the kernel's threads have used, from /proc/PID/stat."""
    return processes(proc=proc).kernel


def disk_under(path: str, sys_block: Path = Path("/sys/dev/block")) -> str | None:
    """The kernel's name of the whole disk that holds path (vda for a file on /dev/vda1), None when
    no block device does (tmpfs, overlay, a btrfs subvolume's anonymous device)."""
    try:
        dev = os.stat(path).st_dev
    except OSError:
        return None
    node = sys_block / f"{os.major(dev)}:{os.minor(dev)}"
    if not node.exists():
        return None
    real = node.resolve()
    return real.parent.name if (real / "partition").exists() else real.name


def disks_under(backing_files: Iterable[str | None]) -> list[str]:
    """The disks under a target's image files (none for real devices, which have no backing file)."""
    return sorted({name for f in backing_files if f for name in [disk_under(f)] if name})


def tool_cpu(intervals: list[tuple[Snapshot, Snapshot]]) -> list[Metric]:
    """cpu.tool: the CPU the measured command's own processes used (the children it waited for),
    in % of all CPUs over its wall time; other jobs on the machine do not count. A daemon that
    does the work for it (zfs-fuse) is not its child and is left out."""
    seconds = sum(end.children - start.children for start, end in intervals)
    wall = sum(end.wall - start.wall for start, end in intervals)
    if wall <= 0:
        return []
    return [Metric("cpu.tool", 100.0 * seconds / wall / (psutil.cpu_count() or 1), "%", Direction.LOWER)]


Interval = tuple[Snapshot, Snapshot]


def cpu_metrics(before: Snapshot, after: Snapshot, intervals: list[Interval] | None = None) -> list[Metric]:
    """Mean CPU shares from before to after, or over the intervals (a phased run's commands)."""
    deltas: dict[str, float] = {}
    for start, end in intervals or [(before, after)]:
        for f in start.cpu._fields:
            deltas[f] = deltas.get(f, 0.0) + getattr(end.cpu, f) - getattr(start.cpu, f)
    total = sum(deltas.values())
    if total <= 0:
        return []
    return [Metric(f"cpu.{name}", 100.0 * deltas.get(name, 0.0) / total, "%", Direction.LOWER)
            for name in ("user", "system", "iowait")]


def disk_metrics(before: Snapshot, after: Snapshot, intervals: list[Interval] | None = None) -> list[Metric]:
    """Bytes and operations on the member devices from before to after, or over the intervals."""
    if not after.disks:
        return []
    sums = [0, 0, 0, 0]
    for start, end in intervals or [(before, after)]:
        for name, now in end.disks.items():
            then = start.disks.get(name, (0, 0, 0, 0))
            sums = [s + (n - t) for s, n, t in zip(sums, now, then)]
    read_bytes, write_bytes, reads, writes = sums
    return [
        Metric("disk.read", read_bytes / MB, "MB", Direction.LOWER),
        Metric("disk.write", write_bytes / MB, "MB", Direction.LOWER),
        Metric("disk.read_ops", float(reads), "ops", Direction.LOWER),
        Metric("disk.write_ops", float(writes), "ops", Direction.LOWER),
    ]


#: the fields of psutil.cpu_times() that are time the CPUs spent (guest time is inside user already)
_COUNTED = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal")
_IDLE = ("idle", "iowait")
_KERNEL = ("irq", "softirq")


def others_cpu(intervals: list[Interval]) -> list[Metric]:
    """cpu.others: the CPU other processes used over the intervals, in % of all CPUs: the machine's
    busy time (steal included: a hypervisor's other guests took it; interrupts left out, as the
    kernel's threads, for they serve the target too) minus this process's, its finished children's
    (the measured command's) and that of the processes serving the target (its live children, the
    filesystem's daemons)."""
    total = busy = not_others = 0.0
    for start, end in intervals:
        spent = {f: getattr(end.cpu, f, 0.0) - getattr(start.cpu, f, 0.0) for f in _COUNTED}
        total += sum(spent.values())
        busy += sum(v for f, v in spent.items() if f not in _IDLE + _KERNEL)
        not_others += ((end.children - start.children) + (end.own - start.own) + (end.kernel - start.kernel)
                       + (end.serving - start.serving))
    if total <= 0:
        return []
    return [Metric("cpu.others", 100.0 * max(0.0, busy - not_others) / total, "%", Direction.LOWER)]


def others_disk(intervals: list[Interval]) -> list[Metric]:
    """disk.others: MB/s other processes read and wrote on the disks under the images, over the
    intervals' wall time: the smaller of two upper bounds, the disks' bytes less the member
    devices' and every other process's bytes (when read); none when the target has no disk under
    images."""
    wall = sum(end.wall - start.wall for start, end in intervals)
    if not intervals or not intervals[-1][1].under or wall <= 0:
        return []
    moved = 0
    processes_moved: int | None = 0
    for start, end in intervals:
        for name, now in end.under.items():
            then = start.under.get(name, now)
            moved += (now[0] - then[0]) + (now[1] - then[1])
        for name, now in end.disks.items():
            then = start.disks.get(name, now)
            moved -= (now[0] - then[0]) + (now[1] - then[1])
        if processes_moved is not None and start.others_io is not None and end.others_io is not None:
            processes_moved += max(0, end.others_io - start.others_io)
        else:
            processes_moved = None
    if processes_moved is not None:
        moved = min(moved, processes_moved)
    return [Metric("disk.others", max(0, moved) / MB / wall, "MB/s", Direction.LOWER)]

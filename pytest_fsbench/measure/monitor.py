"""CPU and disk counters around a measured run (psutil), as metrics of the case.

The counters are read just before and just after the measured command; their differences give
the exact means over the run (system-wide CPU user/system/iowait in percent of all CPUs, bytes
and operations on the target's member devices), which is what the compression study compared,
and the CPU of the measured command's own processes (cpu.tool), which other jobs do not touch.
"""

from __future__ import annotations

import resource
import time
from dataclasses import dataclass
from pathlib import Path

import psutil

from ..metrics import MB, Direction, Metric


@dataclass(frozen=True)
class Snapshot:
    cpu: psutil._common.scputimes  # type: ignore[name-defined]
    disks: dict[str, tuple[int, int, int, int]]  # name -> read_bytes, write_bytes, reads, writes
    children: float = 0.0  # CPU seconds (user + system) of this process's finished children
    wall: float = 0.0  # time.monotonic()


def snapshot(devices: list[str]) -> Snapshot:
    names = {Path(d).resolve().name for d in devices}
    counters = psutil.disk_io_counters(perdisk=True) or {}
    disks = {n: (c.read_bytes, c.write_bytes, c.read_count, c.write_count)
             for n, c in counters.items() if n in names}
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return Snapshot(psutil.cpu_times(), disks, usage.ru_utime + usage.ru_stime, time.monotonic())


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

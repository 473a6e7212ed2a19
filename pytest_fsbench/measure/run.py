"""One measured run of a workload on a target: unmeasured preparation, cache policy, the measured command
with CPU and disk counters around it, parsing, and the filesystem's achieved compression.
A failing, killed or unparsable tool raises; it never yields a number."""

from __future__ import annotations

import mmap
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from . import cache_check, monitor, work
from ..workloads import datagen
from ..errors import FsbenchError, UsageError
from ..metrics import MB, Direction, Metric
from ..system.commands import Completed, Executor
from ..targets.target import Target
from ..workloads.base import Workload

CACHE_POLICIES = ("drop", "remount", "direct", "warm")
DROP_CACHES = Path("/proc/sys/vm/drop_caches")
DATASETS = "datasets"  # in the session's scratch: input data generated once per session


class Unsupported(FsbenchError):
    """The workload cannot run under this case's parameters (e.g. no O_DIRECT mode)."""


@dataclass(frozen=True)
class Measurement:
    metrics: list[Metric]
    completed: Completed
    cache: str
    prepare_seconds: float = 0.0  # unmeasured set-up: files, prepare and staging commands
    cache_seconds: float = 0.0  # applying the cache policy
    count_seconds: float = 0.0  # counting the run's work: the target's syncfs and its counters read after it
    counted: dict[str, str] | None = None  # where the work was counted (work.Place.record)


def check_cache_policy(policy: str) -> str:
    if policy not in CACHE_POLICIES:
        raise UsageError(f"cache policy {policy!r}: choose from {', '.join(CACHE_POLICIES)}")
    return policy


def empty_page_cache(execute: Executor, drop_caches: Path = DROP_CACHES) -> str:
    """Write dirty pages back, then drop the kernel's clean page, dentry and inode caches."""
    execute(["sync"])
    drop_caches.write_text("3\n")
    return "sync+drop_caches"


def apply_cache_policy(policy: str, target: Target, execute: Executor, drop_caches: Path = DROP_CACHES) -> str:
    """Empty caches as the policy says; return what was done, for the record."""
    if policy == "warm":
        return "warm: caches left as they were"
    done = []
    if policy == "remount" or target.driver.evict_on_every_run:
        # written back first: zfs-fuse hangs when the kernel flushes a FUSE mount's dirty pages to
        # it while its pool is being exported
        execute(["sync"])
        target.evict_caches(execute)
        done.append(target.driver.evict_description)
    done.append(empty_page_cache(execute, drop_caches))
    if policy == "direct":
        done.append("O_DIRECT")
    return f"{policy}: " + " + ".join(done)


def for_policy(workload: Workload, policy: str) -> Workload:
    """The workload as the policy runs it: with O_DIRECT for 'direct'."""
    if policy != "direct":
        return workload
    direct = getattr(workload, "direct_io", None)
    if direct is None:
        raise Unsupported(f"{workload.name} has no O_DIRECT mode, so cache policy 'direct' does not apply")
    return direct()


def compression_ratio(target: Target, execute: Executor) -> list[Metric]:
    ratio = target.compression_ratio(execute)
    return [] if ratio is None else [Metric("fs.compressratio", ratio, "x", Direction.HIGHER)]


def ensure_datasets(workload: Workload, target: Target, scratch: Path) -> None:
    """The workload's input data sets, each generated once per session into the session's scratch
    (keyed by size, compressibility and seed), held in memory, and linked into this run's scratch
    under its name."""
    for name, shared in dataset_files(workload, target.scratch).items():
        hold(shared)
        (scratch / name).symlink_to(shared)


def dataset_files(workload: Workload, session_scratch: Path) -> dict[str, Path]:
    """The workload's data sets by name, each generated into the session's scratch unless it is
    there already (a guest's host generates them before its request, at the host CPU's speed)."""
    files = {}
    for name, dataset in getattr(workload, "datasets", dict)().items():
        shared = session_scratch / DATASETS / dataset.filename
        if not shared.exists():
            shared.parent.mkdir(parents=True, exist_ok=True)
            partial = shared.with_name(shared.name + ".partial")
            datagen.write_data(str(partial), dataset.size, datagen.parse_data(dataset.data), dataset.seed)
            partial.rename(shared)
        files[name] = shared
    return files


#: data sets mapped into this process: the kernel does not drop a mapped page when the cache policy
#: empties the page cache, so a measured command reads its input from memory without reading it
#: back each run; the pages stay reclaimable when memory runs short
_HELD: dict[str, mmap.mmap] = {}


def hold(path: Path) -> None:
    """Map the file and touch every page of it, once."""
    if str(path) in _HELD or path.stat().st_size == 0:
        return
    with open(path, "rb") as file:
        mapped = mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ)
    pages = np.frombuffer(mapped, dtype=np.uint8)[::mmap.PAGESIZE]
    int(pages.sum())
    del pages
    _HELD[str(path)] = mapped


def release_datasets(directory: Path) -> None:
    """Unmap the data sets held under directory (the session's scratch, before it is removed)."""
    for key in [k for k in _HELD if Path(k).is_relative_to(directory)]:
        _HELD.pop(key).close()


def prepare(workload: Workload, target: Target, execute: Executor, workdir: Path, scratch: Path) -> None:
    """Unmeasured set-up: the workload's files and data sets, its commands for every run, and those
    it needs once on a target (e.g. the file a read test re-reads), not again on later runs."""
    for filename, text in workload.files().items():
        (scratch / filename).write_text(text)
    ensure_datasets(workload, target, scratch)
    for argv in workload.prepare_argvs(workdir, scratch):
        execute(argv, timeout=workload.timeout)
    once = getattr(workload, "prepare_once_argvs", lambda *_: [])(workdir, scratch)
    key = (workload.name, tuple(sorted(workload.params().items())))
    if once and key not in target.prepared:
        for argv in once:
            execute(argv, timeout=workload.timeout)
        target.prepared.add(key)


@dataclass(frozen=True)
class PhaseResult:
    completed: Completed
    metrics: list[Metric]
    before: monitor.Snapshot
    after: monitor.Snapshot
    work: tuple[work.Counters, work.Counters]  # the target's work counters before it and after its syncfs
    count_seconds: float  # the syncfs and the counters read after the phase


def _phases(workload: Workload) -> list[Workload]:
    return list(getattr(workload, "phases", lambda: [workload])())


def work_place(target: Target, kernel: str) -> work.Place:
    """Where the target's work is counted: its member devices, its filesystem's commit counter."""
    return work.place_of(target.member_devices(), target.driver.commits_counted(), str(target.mountpoint),
                         target.context.name, kernel, target.driver.commits_not_counted())


def _measure_phase(phase: Workload, target: Target, execute: Executor, workdir: Path, scratch: Path,
                   place: work.Place) -> PhaseResult:
    devices = target.member_devices()
    under = monitor.disks_under(d.backing_file for d in target.devices)
    serving = target.driver.needed_daemons()
    counted = work.read_counters(place)
    before = monitor.snapshot(devices, under, serving)
    completed = execute(phase.argv(workdir, scratch), timeout=phase.timeout)
    after = monitor.snapshot(devices, under, serving)
    start = time.monotonic()
    settle = target.driver.settle_argv(target.spec, target.context)
    if settle is None:
        work.syncfs(str(target.mountpoint))
    else:
        execute(list(settle), timeout=phase.timeout)
    settled = work.read_counters(place)
    return PhaseResult(completed, phase.parse(completed.output), before, after, (counted, settled),
                       time.monotonic() - start)


def _combined(results: list[PhaseResult]) -> Completed:
    """One Completed for the measured commands of every phase: their seconds added up."""
    if len(results) == 1:
        return results[0].completed
    first = results[0].completed
    return Completed(first.argv, 0, "".join(r.completed.stdout for r in results),
                     "".join(r.completed.stderr for r in results), sum(r.completed.seconds for r in results))


def _checked(workload: Workload, results: list[PhaseResult], ratio: list[Metric]) -> list[Metric]:
    """Each phase's figures with their disk.share (not for zeros: they may be stored as holes)."""
    if workload.params().get("data") == "zeros":
        return []
    value = ratio[0].value if ratio else None
    found = []
    for r in results:
        disk = {m.name: m.value * MB for m in monitor.disk_metrics(r.before, r.after)}
        if disk:
            found += cache_check.shares(r.metrics, disk["disk.read"], disk["disk.write"], value)
    return found


def measure_run(workload: Workload, target: Target, execute: Executor, cache: str = "drop",
                drop_caches: Path = DROP_CACHES, below: Callable[[], str] | None = None,
                kernel: str = "host") -> Measurement:
    """Prepare, then for each phase of the workload (most have one) apply the cache policy and run
    its measured command with the disk and CPU counters around it; parse, and check each figure
    against what reached the disks.

    below: in a guest kernel, empties the caches of the machine under it (after the guest's
    own, unless the policy is warm) and says what it did, for the record. kernel: the kernel the
    run's work is counted in (host, uml, vm: a guest counts its own disks).

    The measured files live in the target's work directory; scratch (workload definitions, links
    to the session's data sets) in a private directory of the session's scratch, off the target.
    """
    workload = for_policy(workload, cache)
    workdir = target.workdir()
    target.check_holds(workdir, execute)
    target.scratch.mkdir(parents=True, exist_ok=True)
    prepare_seconds = cache_seconds = 0.0
    results: list[PhaseResult] = []
    place = work_place(target, kernel)
    with tempfile.TemporaryDirectory(prefix="run-", dir=target.scratch) as name:
        scratch = Path(name)
        start = time.monotonic()
        prepare(workload, target, execute, workdir, scratch)
        prepare_seconds += time.monotonic() - start
        for phase in _phases(workload):
            start = time.monotonic()
            done = apply_cache_policy(cache, target, execute, drop_caches)
            if below is not None and cache != "warm":
                done += " + " + below()
            cache_seconds += time.monotonic() - start
            results.append(_measure_phase(phase, target, execute, workdir, scratch, place))
        cleaning = time.monotonic()
    prepare_seconds += time.monotonic() - cleaning  # the run's scratch directory removed
    if len(results) > 1:
        done += f" (before each of {len(results)} phases)"
    metrics = [m for r in results for m in r.metrics]
    ratio = compression_ratio(target, execute)
    metrics += _checked(workload, results, ratio)
    intervals = [(r.before, r.after) for r in results]
    metrics += monitor.cpu_metrics(results[0].before, results[-1].after, intervals)
    metrics += monitor.tool_cpu(intervals)
    metrics += monitor.others_cpu(intervals)
    metrics += monitor.disk_metrics(results[0].before, results[-1].after, intervals)
    metrics += monitor.others_disk(intervals)
    figures = [m for r in results for m in r.metrics]
    counted = work.work_metrics([r.work for r in results], *work.moved_bytes(figures))
    where = place.record() if counted else {
        "devices": f"not counted: no stat of {', '.join(place.devices) or 'a member device'} could be read under "
                   "/sys/block", "commits": "not counted"}
    return Measurement(metrics + counted + ratio, _combined(results), done, prepare_seconds, cache_seconds,
                       sum(r.count_seconds for r in results), where)

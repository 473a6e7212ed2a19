"""Run one workload on a target: unmeasured preparation, cache policy, the measured command
with CPU and disk counters around it, parsing, and the filesystem's achieved compression.
A failing, killed or unparsable tool raises; it never yields a number."""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from . import monitor
from .errors import FsbenchError, UsageError
from .metrics import Direction, Metric
from .system import Completed, Runner
from .target import Target
from .workloads.base import Workload

CACHE_POLICIES = ("drop", "remount", "direct", "warm")
DROP_CACHES = Path("/proc/sys/vm/drop_caches")


class Unsupported(FsbenchError):
    """The workload cannot run under this case's parameters (e.g. no O_DIRECT mode)."""


@dataclass(frozen=True)
class Measurement:
    metrics: list[Metric]
    completed: Completed
    cache: str
    prepare_seconds: float = 0.0  # unmeasured set-up: files, prepare and staging commands
    cache_seconds: float = 0.0  # applying the cache policy


def check_cache_policy(policy: str) -> str:
    if policy not in CACHE_POLICIES:
        raise UsageError(f"cache policy {policy!r}: choose from {', '.join(CACHE_POLICIES)}")
    return policy


def empty_page_cache(run: Runner, drop_caches: Path = DROP_CACHES) -> str:
    """Write dirty pages back, then drop the kernel's clean page, dentry and inode caches."""
    run(["sync"])
    drop_caches.write_text("3\n")
    return "sync+drop_caches"


def apply_cache_policy(policy: str, target: Target, run: Runner, drop_caches: Path = DROP_CACHES) -> str:
    """Empty caches as the policy says; return what was done, for the record."""
    if policy == "warm":
        return "warm: caches left as they were"
    done = []
    if policy == "remount" or target.driver.evict_on_every_run:
        # written back first: zfs-fuse hangs when the kernel flushes a FUSE mount's dirty pages to
        # it while its pool is being exported
        run(["sync"])
        target.evict_caches(run)
        done.append(target.driver.evict_description)
    done.append(empty_page_cache(run, drop_caches))
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


def compression_ratio(target: Target, run: Runner) -> list[Metric]:
    ratio = target.compression_ratio(run)
    return [] if ratio is None else [Metric("fs.compressratio", ratio, "x", Direction.HIGHER)]


def execute(workload: Workload, target: Target, run: Runner, cache: str = "drop",
            drop_caches: Path = DROP_CACHES, below: Callable[[], str] | None = None) -> Measurement:
    """Prepare, apply the cache policy, run the measured command and parse its output.

    below: in a guest kernel, empties the caches of the machine under it (after the guest's
    own, unless the policy is warm) and says what it did, for the record.

    The measured files live in the target's work directory; scratch (workload definitions, data
    staged for the run) in a private directory of the session's scratch, off the target. Staged
    input is read back after the cache policy, so the measured command reads it from memory.
    """
    workload = for_policy(workload, cache)
    workdir = target.workdir()
    target.check_holds(workdir, run)
    target.scratch.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="run-", dir=target.scratch) as name:
        scratch = Path(name)
        start = time.monotonic()
        for filename, text in workload.files().items():
            (scratch / filename).write_text(text)
        for argv in workload.prepare_argvs(workdir, scratch):
            run(argv, timeout=workload.timeout)
        prepared = time.monotonic()
        done = apply_cache_policy(cache, target, run, drop_caches)
        if below is not None and cache != "warm":
            done += " + " + below()
        cached = time.monotonic()
        for argv in getattr(workload, "staged_argvs", lambda _: [])(scratch):
            run(argv, timeout=workload.timeout)
        staged = time.monotonic()
        devices = target.member_devices()
        before = monitor.snapshot(devices)
        completed = run(workload.argv(workdir, scratch), timeout=workload.timeout)
        after = monitor.snapshot(devices)
        measured = time.monotonic()
    cleaned = time.monotonic()  # the staged data removed with the run's scratch directory
    metrics = workload.parse(completed.output)
    metrics += monitor.cpu_metrics(before, after) + monitor.disk_metrics(before, after)
    metrics += compression_ratio(target, run)
    return Measurement(metrics, completed, done, (prepared - start) + (staged - cached) + (cleaned - measured),
                       cached - prepared)

"""Run one workload on a target: unmeasured preparation, cache policy, the measured command,
parsing. A failing, killed or unparsable tool raises; it never yields a number."""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path

from .errors import UsageError
from .metrics import Metric
from .system import Completed, Runner
from .target import Target
from .workloads.base import Workload

CACHE_POLICIES = ("drop", "remount", "warm")
DROP_CACHES = Path("/proc/sys/vm/drop_caches")


@dataclass(frozen=True)
class Measurement:
    metrics: list[Metric]
    completed: Completed
    cache: str


def check_cache_policy(policy: str) -> str:
    if policy not in CACHE_POLICIES:
        raise UsageError(f"cache policy {policy!r}: choose from {', '.join(CACHE_POLICIES)}")
    return policy


def apply_cache_policy(policy: str, target: Target, run: Runner, drop_caches: Path = DROP_CACHES) -> str:
    """Empty caches as the policy says; return what was done, for the record."""
    if policy == "warm":
        return "warm: caches left as they were"
    run(["sync"])
    done = []
    # ZFS's ARC does not obey drop_caches: only exporting the pool empties it
    if policy == "remount" or target.spec.fs == "zfs":
        target.evict_caches(run)
        done.append("pool export/import" if target.spec.fs == "zfs" else "umount/mount")
    drop_caches.write_text("3\n")
    done.append("sync+drop_caches")
    return f"{policy}: " + " + ".join(done)


def execute(workload: Workload, target: Target, run: Runner, cache: str = "drop") -> Measurement:
    """Prepare, apply the cache policy, run the measured command and parse its output."""
    workdir = target.mountpoint / "fsbench"
    workdir.mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="fsbench-scratch-") as name:
        scratch = Path(name)
        for filename, text in workload.files().items():
            (scratch / filename).write_text(text)
        for argv in workload.prepare_argvs(workdir, scratch):
            run(argv, timeout=workload.timeout)
        done = apply_cache_policy(cache, target, run)
        completed = run(workload.argv(workdir, scratch), timeout=workload.timeout)
    return Measurement(workload.parse(completed.output), completed, done)

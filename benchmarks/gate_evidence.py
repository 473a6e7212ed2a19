"""Measure the regression gate itself, on a real loop target (run as root; not a pytest test).

    .venv/bin/python benchmarks/gate_evidence.py --trials 20 --runs 6 --effect 20

Each trial measures dd (direct I/O writes) in three groups of --runs runs, interleaved A A' B:
A and A' are the same configuration (an A/A comparison: any alarm is false), B is the same
device throttled to (100 - effect) % of A's pilot median throughput with the cgroup blkio
controller (an A/B comparison with a real effect of known size). It reports how often fsbench's
gate (a change worse than --threshold AND significant at --alpha) and pytest-benchmark's rule
(the mean changed by more than --threshold) fire in each. Needs cgroup v1's blkio controller.
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pytest_fsbench.case import CaseSpec  # noqa: E402
from pytest_fsbench.host import probe  # noqa: E402
from pytest_fsbench.metrics import Direction  # noqa: E402
from pytest_fsbench.runner import execute  # noqa: E402
from pytest_fsbench.session import FsbenchSession  # noqa: E402
from pytest_fsbench.settings import Settings  # noqa: E402
from pytest_fsbench.stats import compare, regression  # noqa: E402
from pytest_fsbench.system import run  # noqa: E402
from pytest_fsbench.workloads.dd import DdWrite  # noqa: E402

BLKIO = Path("/sys/fs/cgroup/blkio")


def naive_alarm(base: list[float], new: list[float], threshold: float) -> bool:
    """pytest-benchmark's --benchmark-compare-fail=mean:N%: the mean got worse by more than N %."""
    return (statistics.mean(new) - statistics.mean(base)) / statistics.mean(base) * 100 < -threshold


def gate_alarm(base: list[float], new: list[float], threshold: float, alpha: float) -> bool:
    return regression(compare(base, new, Direction.HIGHER, alpha), threshold)


class Throttle:
    """A blkio cgroup that caps write bandwidth on one device; this process moves in and out."""

    def __init__(self, device: str, bytes_per_s: int) -> None:
        self.group = BLKIO / f"fsbench-evidence-{os.getpid()}"
        self.group.mkdir()
        rdev = os.stat(device).st_rdev
        (self.group / "blkio.throttle.write_bps_device").write_text(f"{os.major(rdev)}:{os.minor(rdev)} {bytes_per_s}\n")

    def enter(self) -> None:
        (self.group / "cgroup.procs").write_text(str(os.getpid()))

    def leave(self) -> None:
        (BLKIO / "cgroup.procs").write_text(str(os.getpid()))

    def remove(self) -> None:
        self.leave()
        self.group.rmdir()


def measure(target, workload, n: int) -> list[float]:
    return [next(m.value for m in execute(workload, target, run, "drop").metrics if m.name == "dd.write")
            for _ in range(n)]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=20)
    parser.add_argument("--runs", type=int, default=6, help="runs per side (fsbench's default)")
    parser.add_argument("--effect", type=float, default=20.0,
                        help="the throttle, in %% below A's median; blk-throttle lets short bursts through, "
                             "so the real effect is smaller: it is measured and printed")
    parser.add_argument("--threshold", type=float, default=5.0, help="%% allowed (both rules)")
    parser.add_argument("--alpha", type=float, default=0.05)
    parser.add_argument("--fs", default="ext4")
    parser.add_argument("--size", default="512M", help="bytes dd writes per run (long enough to be throttled)")
    args = parser.parse_args()
    if not (BLKIO / "blkio.throttle.write_bps_device").exists():
        print("gate_evidence: needs cgroup v1's blkio controller at /sys/fs/cgroup/blkio", file=sys.stderr)
        return 2
    work = Path("/var/tmp/fsbench-evidence")
    settings = Settings((args.fs,), ("single",), (), image_dir=work / "images")
    session = FsbenchSession(settings, probe(), run, run_root=work / "run")
    # zeros: ext4 stores them as written, and generating random data would dominate each run
    workload = DdWrite(total_size=args.size, data="zeros").direct_io()
    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))
    try:
        with session.target(CaseSpec(args.fs, "single")) as target:
            measure(target, workload, 2)  # warm-up
            pilot = statistics.median(measure(target, workload, 2 * args.runs))
            throttle = Throttle(target.devices[0].path, int(pilot * 1e6 * (1 - args.effect / 100)))
            counts = {"aa_gate": 0, "aa_naive": 0, "ab_gate": 0, "ab_naive": 0}
            ratios = []
            try:
                for trial in range(args.trials):
                    a1, a2, b = [], [], []
                    for _ in range(args.runs):  # interleaved run by run: drift hits all three alike
                        a1 += measure(target, workload, 1)
                        a2 += measure(target, workload, 1)
                        throttle.enter()
                        b += measure(target, workload, 1)
                        throttle.leave()
                    ratios.append(statistics.median(b) / statistics.median(a1))
                    counts["aa_gate"] += gate_alarm(a1, a2, args.threshold, args.alpha)
                    counts["aa_naive"] += naive_alarm(a1, a2, args.threshold)
                    counts["ab_gate"] += gate_alarm(a1, b, args.threshold, args.alpha)
                    counts["ab_naive"] += naive_alarm(a1, b, args.threshold)
                    print(f"trial {trial + 1}/{args.trials}: A/A alarms gate {counts['aa_gate']} naive "
                          f"{counts['aa_naive']}; A/B detections gate {counts['ab_gate']} naive {counts['ab_naive']}",
                          flush=True)
            finally:
                throttle.remove()
    finally:
        session.close()
    t = args.trials
    print(f"\n{args.fs} on a loop device, dd {args.size} direct writes, {args.runs} runs a side, {t} trials, "
          f"pilot median {pilot:.0f} MB/s, threshold {args.threshold:g}%, alpha {args.alpha:g}")
    print(f"real effect (median B/A): {100 * (statistics.median(ratios) - 1):+.1f}%")
    print(f"false alarms (A/A):  fsbench gate {counts['aa_gate'] / t:.0%}   mean changed > {args.threshold:g}% "
          f"{counts['aa_naive'] / t:.0%}")
    print(f"detections (A/B):    fsbench gate {counts['ab_gate'] / t:.0%}   mean changed > {args.threshold:g}% "
          f"{counts['ab_naive'] / t:.0%}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

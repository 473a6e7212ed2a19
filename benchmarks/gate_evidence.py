"""Evidence for the regression gate: how often it raises false alarms and how often it detects a
real change, next to the rules other tools use. Not a pytest test.

    .venv/bin/python benchmarks/gate_evidence.py --simulate [--trials 2000] [--jobs 2]
    .venv/bin/python benchmarks/gate_evidence.py --real --trials 20 [--record sessions.jsonl]
    .venv/bin/python benchmarks/gate_evidence.py --across sessions.jsonl

--simulate (pure computation): lognormal run-to-run noise of CV 3/10/30 % and a "mix" (CV 3 %
with 10 % of runs slowed by 20-50 %), n = 6/10/20 runs, true change 0/-5/-10/-20 %, allowed 5 %.
Scenarios: "within" (baseline and new runs from one session), "rounds" (one session whose speed
drifts round by round, sd 10 %: fsbench's --paired against unpaired tests of the same runs),
"across" (every session offset by a lognormal factor of sd --session-sd: one saved baseline
session against a baseline of 3 or 5 sessions). Every fsbench rule runs fsbench's own code
(stats.compare, gate.verdict, the sequential levels). Rates carry 95 % Wilson intervals; each
row is also printed as one JSON line.

--real: dd direct writes on a loop target, in trials of rounds A A' B / B A' A (the order
alternates, so neither drift nor a position in the round favours one group), where B is the
same device throttled with cgroup v1 blkio to (100 - --effect) % of A's pilot throughput (a real
effect of known cause; its measured size is printed). A/A' gives false alarms within a session,
A/B detections, each for the unpaired gate, the paired gate and pytest-benchmark's rule.
--record appends the session's A runs to a file; --across reads such files of several sessions
and gives A/A false alarms across sessions (one baseline session vs the spread of several).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import signal
import statistics
import sys
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pytest_fsbench import gate  # noqa: E402
from pytest_fsbench.metrics import Direction  # noqa: E402
from pytest_fsbench.sequential import looks, nominal_alpha  # noqa: E402
from pytest_fsbench.stats import PAIRED, SESSIONS, compare  # noqa: E402

ALLOWED = 5.0
ALPHA = 0.05
MAX_RUNS = 30
NOISES = ("cv3", "cv10", "cv30", "mix")
SIZES = (6, 10, 20)
CHANGES = (0.0, -0.05, -0.10, -0.20)
ROUND_DRIFT_SD = 0.10


# ---- rules ------------------------------------------------------------------------------------


def fsbench_verdict(base, new, level: float = ALPHA) -> str:
    return gate.verdict(compare(base, new, Direction.HIGHER, level), ALLOWED)


def pytest_benchmark_alarm(base, new) -> bool:
    """pytest-benchmark --benchmark-compare-fail=mean:5%: the mean got worse by more than 5 %."""
    return (np.mean(new) - np.mean(base)) / np.mean(base) * 100 < -ALLOWED


def fsperf_alarm(base, new) -> bool:
    """fsperf: a regression when the new mean is below the baseline mean - 1.96 sigma."""
    return np.mean(new) < np.mean(base) - 1.96 * np.std(base, ddof=1)


def welch_alarm(base, new) -> bool:
    """Welch's t test on log values, one-sided at alpha, and the mean change beyond 5 %."""
    from scipy import stats

    lb, ln = np.log(base), np.log(new)
    p = stats.ttest_ind(ln, lb, equal_var=False, alternative="less").pvalue
    return p <= ALPHA and math.expm1(ln.mean() - lb.mean()) * 100 < -ALLOWED


# ---- noise ------------------------------------------------------------------------------------


def draw(rng: np.random.Generator, noise: str, size) -> np.ndarray:
    if noise == "mix":
        runs = rng.lognormal(0.0, _sigma(0.03), size)
        slowed = rng.random(size) < 0.10
        return np.where(slowed, runs * (1 - rng.uniform(0.20, 0.50, size)), runs)
    return rng.lognormal(0.0, _sigma(int(noise[2:]) / 100), size)


def _sigma(cv: float) -> float:
    return math.sqrt(math.log(1 + cv * cv))


# ---- one condition ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Condition:
    scenario: str
    noise: str
    n: int
    change: float
    trials: int
    session_sd: float = 0.05


def simulate(cond: Condition) -> list[dict]:
    """Every rule's outcomes over cond.trials trials; one dict per rule."""
    rng = np.random.default_rng(abs(hash((cond.scenario, cond.noise, cond.n, cond.change))) % 2**32)
    tallies: dict[str, dict[str, float]] = {}

    def tally(rule: str, alarm: bool, verdict: str | None = None, runs: int | None = None) -> None:
        t = tallies.setdefault(rule, {"alarms": 0, "inconclusive": 0, "within": 0, "runs": 0})
        t["alarms"] += alarm
        t["inconclusive"] += verdict == gate.INCONCLUSIVE
        t["within"] += verdict == gate.WITHIN
        t["runs"] += runs or 0

    factor = 1 + cond.change
    points = looks(cond.n, max(cond.n, MAX_RUNS))
    level = nominal_alpha(ALPHA, cond.n, points)
    for _ in range(cond.trials):
        if cond.scenario == "within":
            base = 100 * draw(rng, cond.noise, cond.n)
            more = 100 * factor * draw(rng, cond.noise, points[-1])
            new = more[: cond.n]
            v = fsbench_verdict(base, new)
            tally("fsbench fixed", v == gate.REGRESSION, v, cond.n)
            for used in points:
                v = fsbench_verdict(base, more[:used], level)
                if v != gate.INCONCLUSIVE:
                    break
            tally("fsbench sequential", v == gate.REGRESSION, v, used)
            tally("pytest-benchmark mean:5%", pytest_benchmark_alarm(base, new))
            tally("fsperf mean-1.96sd", fsperf_alarm(base, new))
            tally("welch+5%", welch_alarm(base, new))
        elif cond.scenario == "rounds":
            drift = rng.lognormal(0.0, ROUND_DRIFT_SD, cond.n)
            a = 100 * drift * draw(rng, cond.noise, cond.n)
            b = 100 * factor * drift * draw(rng, cond.noise, cond.n)
            v = gate.verdict(compare(a, b, Direction.HIGHER, ALPHA, method=PAIRED), ALLOWED)
            tally("fsbench paired", v == gate.REGRESSION, v, cond.n)
            v = fsbench_verdict(a, b)
            tally("fsbench unpaired", v == gate.REGRESSION, v, cond.n)
            tally("pytest-benchmark mean:5%", pytest_benchmark_alarm(a, b))
        else:  # across sessions
            def session(scale: float) -> np.ndarray:
                return 100 * scale * rng.lognormal(0.0, cond.session_sd) * draw(rng, cond.noise, cond.n)

            sessions = [session(1.0) for _ in range(5)]
            new = session(factor)
            v = fsbench_verdict(sessions[-1], new)
            tally("fsbench 1 baseline session", v == gate.REGRESSION, v, cond.n)
            for k in (3, 5):
                v = gate.verdict(compare(sessions[-k:], new, Direction.HIGHER, ALPHA, method=SESSIONS), ALLOWED)
                tally(f"fsbench {k} baseline sessions", v == gate.REGRESSION, v, cond.n)
            tally("pytest-benchmark mean:5%", pytest_benchmark_alarm(sessions[-1], new))
    rows = []
    for rule, t in tallies.items():
        low, high = wilson(int(t["alarms"]), cond.trials)
        rows.append({"scenario": cond.scenario, "noise": cond.noise, "n": cond.n, "change": cond.change,
                     "session_sd": cond.session_sd if cond.scenario == "across" else None, "rule": rule,
                     "rate": t["alarms"] / cond.trials, "ci95": [low, high], "trials": cond.trials,
                     "inconclusive": t["inconclusive"] / cond.trials if rule.startswith("fsbench") else None,
                     "within_bounds": t["within"] / cond.trials if rule.startswith("fsbench") else None,
                     "mean_runs": t["runs"] / cond.trials if rule.startswith("fsbench") else None})
    return rows


def wilson(hits: int, trials: int, z: float = 1.96) -> tuple[float, float]:
    """95 % Wilson score interval of a binomial rate."""
    p = hits / trials
    centre = (p + z * z / (2 * trials)) / (1 + z * z / trials)
    half = z * math.sqrt(p * (1 - p) / trials + z * z / (4 * trials * trials)) / (1 + z * z / trials)
    return max(0.0, centre - half), min(1.0, centre + half)


def conditions(trials: int, session_sds: tuple[float, ...]) -> list[Condition]:
    grid = [Condition("within", noise, n, change, trials) for noise in NOISES for n in SIZES for change in CHANGES]
    grid += [Condition("rounds", noise, n, change, trials) for noise in NOISES for n in SIZES for change in CHANGES]
    grid += [Condition("across", noise, 10, change, trials, sd) for sd in session_sds for noise in NOISES
             for change in (0.0, -0.10, -0.20)]
    return grid


def print_table(rows: list[dict]) -> None:
    def pct(x: float | None) -> str:
        return "" if x is None else f"{x * 100:.0f}%"

    header = f"{'scenario':<8} {'noise':<5} {'n':>3} {'change':>6}  {'rule':<30} {'rate':>5}  {'95% CI':<11} " \
             f"{'inconcl':>7} {'runs':>5}"
    print(header)
    for r in rows:
        scen = r["scenario"] + (f"{r['session_sd'] * 100:.0f}" if r["session_sd"] else "")
        low, high = r["ci95"]
        runs = "" if r["mean_runs"] is None else f"{r['mean_runs']:.1f}"
        print(f"{scen:<8} {r['noise']:<5} {r['n']:>3} {r['change'] * 100:>+5.0f}%  {r['rule']:<30} "
              f"{pct(r['rate']):>5}  {pct(low) + '-' + pct(high):<11} {pct(r['inconclusive']):>7} {runs:>5}")


def main_simulate(args: argparse.Namespace) -> int:
    grid = conditions(args.trials, tuple(args.session_sd))
    with ProcessPoolExecutor(max_workers=args.jobs) as pool:
        results = list(pool.map(simulate, grid))
    rows = [row for rows in results for row in rows]
    print(f"gate evidence by simulation: {args.trials} trials per row, allowed {ALLOWED:g}%, alpha {ALPHA:g}, "
          f"sequential looks {looks(6, MAX_RUNS)} (from n), round drift sd {ROUND_DRIFT_SD:.0%}")
    print("rate: share of trials that fail as a regression (a false alarm when change = 0); "
          "inconcl: fsbench's inconclusive share; runs: mean new runs used")
    print_table(rows)
    print()
    for row in rows:
        print(json.dumps(row))
    return 0


# ---- real targets -----------------------------------------------------------------------------

BLKIO = Path("/sys/fs/cgroup/blkio")


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


def main_real(args: argparse.Namespace) -> int:
    from pytest_fsbench.case import CaseSpec
    from pytest_fsbench.host import probe
    from pytest_fsbench.runner import execute
    from pytest_fsbench.session import FsbenchSession
    from pytest_fsbench.settings import Settings
    from pytest_fsbench.system import run
    from pytest_fsbench.workloads.dd import DdWrite

    if not (BLKIO / "blkio.throttle.write_bps_device").exists():
        print("gate_evidence: --real needs cgroup v1's blkio controller at /sys/fs/cgroup/blkio", file=sys.stderr)
        return 2
    work = Path(f"/var/tmp/fsbench-evidence-{os.getpid()}")
    settings = Settings((args.fs,), ("single",), (), image_dir=work / "images")
    session = FsbenchSession(settings, probe(), run, run_root=work / "run")
    # zeros: ext4 stores them as written, and generating random data would dominate each run
    workload = DdWrite(total_size=args.size, data="zeros").direct_io()
    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))

    def measure(target, n: int) -> list[float]:
        return [next(m.value for m in execute(workload, target, run, "drop").metrics if m.name == "dd.write")
                for _ in range(n)]

    rows: dict[str, list[bool]] = {}
    ratios, a_runs = [], []
    try:
        with session.target(CaseSpec(args.fs, "single")) as target:
            measure(target, 2)  # warm-up
            pilot = statistics.median(measure(target, 2 * args.runs))
            throttle = Throttle(target.devices[0].path, int(pilot * 1e6 * (1 - args.effect / 100)))
            try:
                for trial in range(args.trials):
                    a1, a2, b = [], [], []
                    for round_ in range(args.runs):  # rounds A A' B, then B A' A: drift and position cancel
                        for group in (("a1", "a2", "b") if round_ % 2 == 0 else ("b", "a2", "a1")):
                            if group == "b":
                                throttle.enter()
                                b += measure(target, 1)
                                throttle.leave()
                            else:
                                (a1 if group == "a1" else a2).extend(measure(target, 1))
                    a_runs.append(a1)
                    ratios.append(statistics.median(b) / statistics.median(a1))
                    for kind, new in (("A/A", a2), ("A/B", b)):
                        unpaired = fsbench_verdict(a1, new)
                        paired = gate.verdict(compare(a1, new, Direction.HIGHER, ALPHA, method=PAIRED), ALLOWED)
                        rows.setdefault(f"{kind} fsbench unpaired", []).append(unpaired == gate.REGRESSION)
                        rows.setdefault(f"{kind} fsbench unpaired inconclusive", []).append(unpaired == gate.INCONCLUSIVE)
                        rows.setdefault(f"{kind} fsbench paired", []).append(paired == gate.REGRESSION)
                        rows.setdefault(f"{kind} fsbench paired inconclusive", []).append(paired == gate.INCONCLUSIVE)
                        rows.setdefault(f"{kind} pytest-benchmark mean:5%", []).append(pytest_benchmark_alarm(a1, new))
                    print(f"trial {trial + 1}/{args.trials} done", flush=True)
            finally:
                throttle.remove()
    finally:
        session.close()
        for leftover in (work / "images", work / "run", work):
            if leftover.exists() and not any(leftover.iterdir()):
                leftover.rmdir()
    t = args.trials
    print(f"\n{args.fs} on a loop device, dd {args.size} direct writes, {args.runs} rounds of A A' B / B A' A, {t} trials, "
          f"pilot median {pilot:.0f} MB/s, allowed {ALLOWED:g}%, alpha {ALPHA:g}")
    print(f"real effect of the throttle (median B/A): {100 * (statistics.median(ratios) - 1):+.1f}%")
    for name, hits in rows.items():
        low, high = wilson(sum(hits), t)
        print(f"{name:<40} {sum(hits) / t:>5.0%}  95% CI {low:.0%}-{high:.0%}")
        print(json.dumps({"real": True, "fs": args.fs, "rounds": args.runs, "row": name, "rate": sum(hits) / t,
                          "ci95": [low, high], "trials": t}))
    if args.record:
        with open(args.record, "a") as record:
            record.write(json.dumps({"fs": args.fs, "size": args.size, "runs": a_runs}) + "\n")
    return 0


def main_across(args: argparse.Namespace) -> int:
    """A/A across recorded sessions: every session in turn is the new one; its first trial's runs
    against the first trial of one other session (a saved baseline of one session) and against
    the spread of three others."""
    sessions = [json.loads(line)["runs"][0] for line in Path(args.across).read_text().splitlines() if line.strip()]
    if len(sessions) < 4:
        print(f"gate_evidence: --across needs at least 4 recorded sessions, {args.across} has {len(sessions)}",
              file=sys.stderr)
        return 2
    one, three, medians = [], [], [statistics.median(s) for s in sessions]
    for i, new in enumerate(sessions):
        others = sessions[:i] + sessions[i + 1:]
        for j, base in enumerate(others):
            one.append(fsbench_verdict(base, new) == gate.REGRESSION)
        for j in range(len(others) - 2):
            verdict = gate.verdict(compare(others[j:j + 3], new, Direction.HIGHER, ALPHA, method=SESSIONS), ALLOWED)
            three.append(verdict == gate.REGRESSION)
    print(f"{len(sessions)} sessions, medians {', '.join(f'{m:.0f}' for m in medians)} MB/s")
    for name, hits in (("A/A across, 1 baseline session", one), ("A/A across, 3 baseline sessions", three)):
        low, high = wilson(sum(hits), len(hits))
        print(f"{name:<40} {sum(hits) / len(hits):>5.0%}  95% CI {low:.0%}-{high:.0%}  ({len(hits)} comparisons)")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--simulate", action="store_true", help="pure computation")
    mode.add_argument("--real", action="store_true", help="on a real loop target (root, cgroup v1 blkio)")
    mode.add_argument("--across", metavar="FILE", help="A/A across the sessions --record wrote to FILE")
    parser.add_argument("--trials", type=int, default=2000)
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="--simulate: processes")
    parser.add_argument("--session-sd", type=float, nargs="+", default=[0.05, 0.20],
                        help="--simulate: sd of the session-to-session offsets")
    parser.add_argument("--runs", type=int, default=6, help="--real: rounds per trial")
    parser.add_argument("--effect", type=float, default=20.0, help="--real: the throttle, %% below A's pilot median")
    parser.add_argument("--fs", default="ext4")
    parser.add_argument("--size", default="256M", help="--real: bytes dd writes per run")
    parser.add_argument("--record", help="--real: append this session's A runs to this file")
    args = parser.parse_args()
    if args.simulate:
        return main_simulate(args)
    if args.real:
        return main_real(args)
    return main_across(args)


if __name__ == "__main__":
    sys.exit(main())

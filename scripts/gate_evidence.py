"""Evidence for the regression gate: how often a case fails when nothing changed and when it got
slower, through the plugin's own decision path. Not a pytest test.

    .venv/bin/python scripts/gate_evidence.py --simulate [--trials 4000] [--jobs 2] [--scenario paired]
    .venv/bin/python scripts/gate_evidence.py --real --trials 20 [--record sessions.jsonl]
    .venv/bin/python scripts/gate_evidence.py --across sessions.jsonl

--simulate (pure computation, plain values instead of a store): each trial draws the baseline's
runs and the new runs from lognormal noise and takes them through what a pytest session does with
them: Bench._repeat's loop (repeat.stop_reason with the shipped RepeatPolicy, asking a decided()
that is the session's own Gate.decided: gate.verdict and gate.futile on Baseline.comparison at
Baseline.test_level), then the final comparison, gate.verdict and gate.fails under --inconclusive.
The Baseline is the plugin's own, reading the drawn sessions from a stand-in for the store, so the
level (sequential.nominal_alpha in the sequential mode), the method (runs, or session medians on
their own spread or on the machine's drift from drift.from_store) are chosen by its code, not by
this script. The defaults are read from the options' declarations.

Scenarios, throughput (higher is better), allowed change 5 % (--fail-on-regression 5%):

- one-session: baseline and new runs from one machine state, noise of CV 5/10/20 % and "mix"
  (CV 10 % and 1 run in 10 slowed to 70 % of its throughput);
- across-sessions: every session (each baseline session and the new one) offset by a lognormal
  factor of CV offset_sd (3/5/10 %), runs of CV 10 %, against 1, 2, 3 or 5 baseline sessions;
- paired: --paired rounds in one session, every round offset by a factor of CV offset_sd (10 %)
  that hits both sides, runs of CV 10 %, 10 or 20 rounds (interleaved: never sequential).

The machine's drift (--drift=machine, the default) is known only once the store's complete
sessions give drift.MIN_DF degrees of freedom; rows without "drift known" are what the gate does
before that (or with --drift=baseline): one baseline session compared run by run. Rows with it
hold HISTORY complete sessions of the machine (the baseline's the newest of them), one series
each, or 10 series sharing each session's offset (a machine-wide drift).

Modes: "default" (the shipped defaults: sequential gate, --inconclusive=pass), "sign-off"
(--inconclusive=fail) and "fixed" (--gate-mode=fixed). The modes of one row share their trials'
random numbers, so default and sign-off differ only in how an inconclusive verdict counts and in
the futility stop (default looks on while a regression is likely, sign-off while any decision is). A row's
"fails" is the share of trials whose case fails as a CI job sees it (a false alarm when change is
0, the power otherwise), with a 95 % Wilson interval; regression/inconclusive/within are the
verdicts' shares and mean_runs the new runs measured. Each row is one JSON line after the table.

--real: dd direct writes on a loop target, each after a --control write (64 MiB, direct, to a
loop device of its own, as --control measures), in trials of rounds A A' B / B A' A (the order
alternates, so neither drift nor a position in the round favours one group). B writes
100 / (100 - --effect) times the bytes it reports, as a filesystem that writes its data over
again would: slower for a real reason, by a size that is measured and printed. A/A' gives false
alarms within a session, A/B detections, each for the unpaired gate, the paired gate, the
unpaired gate on control ratios and pytest-benchmark's rule. --record appends the session's A
runs and their controls to a file (--load says what else ran); --across reads such files of
several sessions and gives A/A false alarms across sessions: one baseline session with and
without the control, three baseline sessions.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import signal
import statistics
import sys
import time
import zlib
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass, replace
from functools import lru_cache, partial
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pytest_fsbench.verdicts import drift, gate  # noqa: E402
from pytest_fsbench.verdicts.baseline import Baseline, control_key  # noqa: E402
from pytest_fsbench.session import baseline_from_settings, gate_for  # noqa: E402
from pytest_fsbench.verdicts.gate import RegressionRule  # noqa: E402
from pytest_fsbench.metrics import Direction  # noqa: E402
from pytest_fsbench.verdicts.repeat import RepeatPolicy, stop_reason  # noqa: E402
from pytest_fsbench.settings import OPTIONS, Settings  # noqa: E402
from pytest_fsbench.verdicts.stats import PAIRED, SESSIONS, compare  # noqa: E402
from pytest_fsbench.store.results import Series, SeriesKey, SessionRow  # noqa: E402


def shipped(flag: str) -> Any:
    """An option's default, typed as the plugin reads it (None: off)."""
    option = next(o for o in OPTIONS if o.flag == flag)
    return None if option.default is None else option.value(option.default)


ALLOWED = 5.0
ALPHA = shipped("--alpha")
MODES = ("default", "sign-off", "fixed")
SCENARIOS = ("one-session", "across-sessions", "paired")
#: "mix": the share of runs slowed, and the throughput they keep
SLOW_SHARE, SLOW_FACTOR = 0.10, 0.70
#: what makes a row's world (all but its mode and trials)
WORLD = ("scenario", "noise", "cv", "offset_sd", "baseline_sessions", "n", "change", "drift", "history",
         "series", "control")
#: --drift=machine: the complete sessions of this machine the store holds (the baseline's among them)
HISTORY = 6
HOST = "bench-vm"


def key(index: int) -> SeriesKey:
    """A headline throughput series of the machine's history; index 0 is the gated one."""
    return SeriesKey(f"benchmarks/test_dd.py::test_write[ext4-single-{index}]", "dd", "{}", "dd.write", "{}")


# ---- rules (--real, --across) -------------------------------------------------------------------


def fsbench_verdict(base, new, level: float = ALPHA) -> str:
    return gate.verdict(compare(base, new, Direction.HIGHER, level), ALLOWED)


def pytest_benchmark_alarm(base, new) -> bool:
    """pytest-benchmark --benchmark-compare-fail=mean:5%: the mean got worse by more than 5 %."""
    return (np.mean(new) - np.mean(base)) / np.mean(base) * 100 < -ALLOWED


# ---- one simulated row --------------------------------------------------------------------------


@dataclass(frozen=True)
class Row:
    """One row of the evidence: a world (noise, drift, true change), a way of gating it (mode) and
    how many trials. offset_sd is the CV of each session's offset (across-sessions) or of each
    round's (paired); n is --runs, the first look (paired: the rounds). drift is --drift: "baseline"
    (also what "machine" does while the store's history is too short), or "machine" with a store
    that holds `history` complete sessions of this machine (the baseline's the newest of them), each
    with `series` headline series that share the session's offset. control > 0 is --control in every
    session: each run beside a control run of the runs' noise that sees offset ** control."""

    scenario: str
    cv: float
    change: float
    n: int
    offset_sd: float = 0.0
    baseline_sessions: int = 1
    noise: str = "lognormal"  # or "mix"
    drift: str = "baseline"
    history: int = 0
    series: int = 1
    control: float = 0.0  # with --control: the share (log scale) of each session's offset the control sees
    mode: str = "default"
    trials: int = 4000


@dataclass(frozen=True)
class Outcome:
    """One trial as a CI job sees it: the gate's verdict, the new runs measured, whether the case
    fails."""

    kind: str
    runs: int
    fails: bool


class MachineStore:
    """The part of a Store that Baseline and drift.from_store read: this machine's complete
    sessions (ids 0, 1, ...), each with the runs of its headline series (the gated one first)."""

    def __init__(self, runs: list[list[np.ndarray]], controls: list[np.ndarray] | None = None) -> None:
        self.runs = runs
        self.controls = controls

    def sessions(self, host: str | None = None) -> list[SessionRow]:
        return [SessionRow(i, "", "", "", "complete", HOST) for i in range(len(self.runs))]

    def session_export(self, session_id: int) -> dict:
        """No case records: every simulated session measured one configuration, so drift.from_store
        pools each series across all of them."""
        return {"session": {"id": session_id, "manifest": {}}, "cases": []}

    def series(self, session_id: int) -> list[Series]:
        found = [as_series(values, i) for i, values in enumerate(self.runs[session_id])]
        if self.controls is not None:
            found.append(replace(as_series(self.controls[session_id]), key=control_key(key(0))))
        return found


def as_series(values, index: int = 0) -> Series:
    return Series(key(index), "ext4-single", "MB/s", Direction.HIGHER, tuple(float(v) for v in values))


def mode_gate(row: Row) -> tuple[RepeatPolicy, str]:
    """The RepeatPolicy and --inconclusive a session in row.mode would run with (settings_from: the
    sequential gate needs --fail-on-regression and --compare, and --paired interleaves, which is
    never sequential)."""
    gate_mode = "fixed" if row.mode == "fixed" else shipped("--gate-mode")
    on_inconclusive = "fail" if row.mode == "sign-off" else shipped("--inconclusive")
    sequential = gate_mode == "sequential" and row.scenario != "paired"
    policy = RepeatPolicy(runs=row.n, warmup=shipped("--warmup"), until_ci=shipped("--until-ci"),
                          max_runs=shipped("--max-runs"), max_seconds=shipped("--max-time"),
                          sequential=sequential)
    return policy, on_inconclusive


@lru_cache(maxsize=32)
def settings_for(policy: RepeatPolicy, rule: RegressionRule, on_inconclusive: str,
                 drift_from: str = "baseline", control: bool = False) -> Settings:
    return Settings((), (), (), repeat=policy, compare="base", regression_rules=(rule,), alpha=ALPHA,
                    gate_mode="sequential" if policy.sequential else "fixed", on_inconclusive=on_inconclusive,
                    drift=drift_from, control=control)


def measured(settings: Settings, baseline: Baseline | None, new: np.ndarray,
             control: np.ndarray | None = None) -> int:
    """Bench._repeat's loop over the runs new would give, one at a time: how many it measures (a
    sequential decision only against a baseline compared run by run, as there)."""
    sequential = baseline is not None and not baseline.across_sessions
    runs = 0
    while True:
        series = [as_series(new[:runs])]
        if control is not None:
            series.append(replace(as_series(control[:runs]), key=control_key(key(0))))
        decided = partial(gate_of(settings, baseline).decided, series) if sequential else None
        if stop_reason(settings.repeat, runs, [series[0].values], 0.0, decided):
            return runs
        if runs == new.size:
            raise ValueError(f"the loop wants more than the {new.size} runs drawn")
        runs += 1


def gate_of(settings: Settings, baseline: Baseline | None):
    """The gate a session with these settings and this baseline asks (session.gate_for)."""
    return gate_for(settings, baseline)


def noise(rng: np.random.Generator, row: Row, size: int) -> np.ndarray:
    runs = rng.lognormal(0.0, sigma(row.cv), size)
    if row.noise == "mix":
        runs = np.where(rng.random(size) < SLOW_SHARE, runs * SLOW_FACTOR, runs)
    return runs


def sigma(cv: float) -> float:
    """The log-scale sd of a lognormal factor of this coefficient of variation."""
    return math.sqrt(math.log(1 + cv * cv))


def trial(rng: np.random.Generator, row: Row, policy: RepeatPolicy, rule: RegressionRule,
          on_inconclusive: str) -> Outcome:
    """One case through the gate: draw its baseline and new runs, measure as Bench._repeat would,
    judge as Bench._judge does."""
    settings = settings_for(policy, rule, on_inconclusive, row.drift, row.control > 0)
    most = max(policy.runs, policy.max_runs)
    if row.scenario == "paired":
        rounds = rng.lognormal(0.0, sigma(row.offset_sd), most)  # each round's offset, on both sides
        reference = 100 * rounds * noise(rng, row, most)
        variant = 100 * (1 + row.change) * rounds * noise(rng, row, most)
        runs = measured(settings, None, variant)
        cmp = compare(reference[:runs], variant[:runs], Direction.HIGHER, settings.alpha, method=PAIRED)
    else:
        def session(factor: float, size: int, series: int = 1) -> tuple[list[np.ndarray], np.ndarray]:
            offset = rng.lognormal(0.0, sigma(row.offset_sd))
            figures = [100 * factor * offset * noise(rng, row, size) for _ in range(series)]
            return figures, 100 * offset ** row.control * noise(rng, row, size)

        # the store's sessions ran with the shipped --runs (saved without --compare: not sequential)
        held = max(row.history, row.baseline_sessions)
        drawn = [session(1.0, shipped("--runs"), row.series) for _ in range(held)]
        store = MachineStore([figures for figures, _ in drawn], [c for _, c in drawn] if row.control else None)
        (new, *_), new_control = session(1 + row.change, most)
        new_control = new_control if row.control else None
        machine = drift.from_store(store, HOST) if row.drift == "machine" else None
        baseline = baseline_from_settings(store, settings, list(range(held - row.baseline_sessions, held)), machine)
        runs = measured(settings, baseline, new, new_control)
        cmp = baseline.comparison(as_series(new[:runs]), None if new_control is None else new_control[:runs])
    kind = gate.verdict(cmp, rule.threshold_pct)
    return Outcome(kind, runs, gate.fails(kind, on_inconclusive))


def level_of(row: Row) -> float:
    """The one-sided level of each look's test in this row, as the plugin chooses it."""
    policy, on_inconclusive = mode_gate(row)
    settings = settings_for(policy, RegressionRule(None, ALLOWED), on_inconclusive, row.drift)
    if row.scenario == "paired" or row.baseline_sessions > 1 or row.drift == "machine":
        return settings.alpha
    return baseline_from_settings(MachineStore([]), settings, [0]).test_level(shipped("--runs"))


def seed(row: Row) -> int:
    """The same for every mode and trial count of a world: modes share their random numbers."""
    return zlib.crc32(repr(tuple(getattr(row, k) for k in WORLD)).encode())


def simulate(row: Row) -> dict:
    """row.trials trials; the row's rates as one dict (the JSON line)."""
    policy, on_inconclusive = mode_gate(row)
    rule = RegressionRule(None, ALLOWED)
    rng = np.random.default_rng(seed(row))
    outcomes = [trial(rng, row, policy, rule, on_inconclusive) for _ in range(row.trials)]
    fails = sum(o.fails for o in outcomes)

    def share(kind: str) -> float:
        return sum(o.kind == kind for o in outcomes) / row.trials

    return {**asdict(row), "allowed": ALLOWED, "alpha": ALPHA, "level": level_of(row),
            "gate_mode": "sequential" if policy.sequential else "fixed", "on_inconclusive": on_inconclusive,
            "max_runs": policy.max_runs, "fails": fails / row.trials,
            "fails_ci95": list(wilson(fails, row.trials)),
            "regression": share(gate.REGRESSION), "inconclusive": share(gate.INCONCLUSIVE),
            "within": share(gate.WITHIN), "mean_runs": sum(o.runs for o in outcomes) / row.trials}


def wilson(hits: int, trials: int, z: float = 1.96) -> tuple[float, float]:
    """95 % Wilson score interval of a binomial rate."""
    p = hits / trials
    centre = (p + z * z / (2 * trials)) / (1 + z * z / trials)
    half = z * math.sqrt(p * (1 - p) / trials + z * z / (4 * trials * trials)) / (1 + z * z / trials)
    return max(0.0, centre - half), min(1.0, centre + half)


def worlds() -> list[Row]:
    """Every row's world, in the order of the table. --control is on by default in a session that
    compares (auto); rows with control 0 are --control=off (or a baseline saved without it)."""
    runs = shipped("--runs")
    noises = [("lognormal", 0.05), ("lognormal", 0.10), ("lognormal", 0.20), ("mix", 0.10)]
    machine = {"drift": "machine", "history": HISTORY}
    rows = [Row("one-session", cv, change, runs, noise=kind, control=control) for control in (1.0, 0.0)
            for kind, cv in noises for change in (0.0, -0.03, -0.05, -0.07, -0.10, -0.15, -0.20)]
    rows += [Row("one-session", 0.10, change, runs, **machine) for change in (0.0, -0.05, -0.10, -0.20)]
    rows += [Row("across-sessions", 0.10, change, runs, offset_sd=sd, baseline_sessions=k, control=share)
             for share in (1.0, 0.5) for sd in (0.03, 0.05, 0.10) for k in (1, 3) for change in (0.0, -0.10, -0.20)]
    for known in ({}, machine):
        rows += [Row("across-sessions", 0.10, change, runs, offset_sd=sd, baseline_sessions=k, **known)
                 for sd in (0.03, 0.05, 0.10) for k in (1, 2, 3, 5) for change in (0.0, -0.10, -0.20)]
    rows += [Row("across-sessions", 0.10, change, runs, offset_sd=sd, series=10, **machine)
             for sd in (0.05, 0.10) for change in (0.0, -0.10)]
    rows += [Row("paired", 0.10, change, rounds, offset_sd=0.10) for rounds in (10, 20)
             for change in (0.0, -0.05, -0.10)]
    return rows


def grid(trials: int, scenarios: tuple[str, ...] = SCENARIOS) -> list[Row]:
    return [replace(world, mode=mode, trials=trials) for world in worlds() if world.scenario in scenarios
            for mode in MODES]


# ---- output -------------------------------------------------------------------------------------


def pct(x: float) -> str:
    return f"{x * 100:.1f}"


def fails_text(r: dict) -> str:
    low, high = r["fails_ci95"]
    return f"**{pct(r['fails'])}** ({pct(low)}-{pct(high)})"


def table(results: list[dict]) -> list[str]:
    """Markdown, one line per world, the modes side by side (percentages)."""
    by_world: dict[tuple, dict[str, dict]] = {}
    for r in results:
        world = tuple(r[k] for k in WORLD)
        by_world.setdefault(world, {})[r["mode"]] = r
    lines = ["| scenario | noise | offset sd | drift known / control | base sessions | n | change "
             "| default: fails % (95 % CI) | regr. | inconcl. | within | mean runs "
             "| sign-off: fails % (95 % CI) | fixed: fails % (95 % CI) | fixed inconcl. |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for world, modes in by_world.items():
        scenario, kind, cv, offset, sessions, n, change, drift_from, history, series, control = world
        d, s, f = (modes.get(m) for m in MODES)
        noise_text = f"CV {cv * 100:g} %" + (" + 1/10 slow" if kind == "mix" else "")
        known = (f"{history} sessions" + (f" x {series} series" if series > 1 else "")
                 if drift_from == "machine" else "")
        known = f"--control (sees {control:.0%} of the offset)" if control else known
        cells = [scenario, noise_text, f"{offset * 100:g} %" if offset else "", known,
                 "" if scenario == "paired" else str(sessions), str(n), f"{change * 100:+g} %"]
        cells += [fails_text(d), pct(d["regression"]), pct(d["inconclusive"]), pct(d["within"]),
                  f"{d['mean_runs']:.1f}"] if d else [""] * 5
        cells += [fails_text(s) if s else "", fails_text(f) if f else "", pct(f["inconclusive"]) if f else ""]
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def main_simulate(args: argparse.Namespace) -> int:
    rows = grid(args.trials, tuple(args.scenario or SCENARIOS))
    sequential = Row("one-session", 0.10, 0.0, shipped("--runs"))
    level = level_of(sequential)  # computed once, before the workers fork
    start = time.monotonic()
    with ProcessPoolExecutor(max_workers=args.jobs) as pool:
        results = list(pool.map(simulate, rows))
    seconds = time.monotonic() - start
    default = mode_gate(sequential)[0]
    print(f"gate evidence by simulation: {args.trials} trials a row, allowed {ALLOWED:g}%, alpha {ALPHA:g}, "
          f"--runs {default.runs}, sequential looks {default.looks} (per-look level {level:.4f} against "
          f"{shipped('--runs')} baseline runs), {seconds:.0f} s with {args.jobs} processes")
    print("fails: share of trials whose case fails (a false alarm when change = 0); regr./inconcl./within: "
          "verdicts (sign-off shares default's trials); mean runs: new runs measured; drift known: the store's "
          "complete sessions of this machine (--drift=machine), blank: too few to know it (or --drift=baseline)\n")
    print("\n".join(table(results)))
    print()
    for r in results:
        print(json.dumps(r))
    return 0


# ---- real targets -----------------------------------------------------------------------------


def main_real(args: argparse.Namespace) -> int:
    from pytest_fsbench.case import CaseSpec
    from pytest_fsbench.kernels.probe import probe
    from pytest_fsbench.measure.run import measure_run
    from pytest_fsbench.session import FsbenchSession
    from pytest_fsbench.settings import CONTROL_MB
    from pytest_fsbench.sizes import format_size, parse_size
    from pytest_fsbench.system.commands import execute
    from pytest_fsbench.workloads.dd import DdWrite, parse_dd

    work = Path(f"/var/tmp/fsbench-evidence-{os.getpid()}")
    settings = Settings((args.fs,), ("single",), (), image_dir=work / "images", control=True)
    session = FsbenchSession(settings, probe(), execute, run_root=work / "run")
    size = parse_size(args.size)
    # B writes more than it reports, as a filesystem that writes its data 1/(1 - effect) times
    # over would: each B run is (1 - effect) as fast, for a real reason (more I/O per run)
    amplified = DdWrite(total_size=format_size(round(size / (1 - args.effect / 100) / (1 << 20)) << 20),
                        data="zeros").direct_io()
    plain = DdWrite(total_size=args.size, data="zeros").direct_io()  # zeros: ext4 writes them as given
    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))

    def control() -> float:
        done = execute(["dd", "if=/dev/zero", f"of={session.targets.control_device()}", f"bs={1 << 20}",
                    f"count={CONTROL_MB}", "oflag=direct", "conv=fdatasync"], timeout=300)
        result = parse_dd(done.output)
        return result.bytes / result.seconds / 1e6

    def measure(target, workload) -> tuple[float, float]:
        """(the figure as size / time, the control run just before it), as Bench measures one run."""
        before = control()
        metrics = measure_run(workload, target, execute, "drop").metrics
        value = next(m.value for m in metrics if m.name == "dd.write")
        return value * size / parse_size(workload.total_size), before

    groups: dict[str, list[tuple[float, float]]] = {}
    rows: dict[str, list[bool]] = {}
    trials = []
    try:
        with session.target(CaseSpec(args.fs, "single")) as target:
            measure(target, plain)  # warm-up
            for trial in range(args.trials):
                groups = {"a1": [], "a2": [], "b": []}
                for round_ in range(args.runs):  # rounds A A' B, then B A' A: drift and position cancel
                    for group in (("a1", "a2", "b") if round_ % 2 == 0 else ("b", "a2", "a1")):
                        groups[group].append(measure(target, amplified if group == "b" else plain))
                trials.append(groups)
                a1 = [v for v, _ in groups["a1"]]
                for kind, side in (("A/A", "a2"), ("A/B", "b")):
                    new = [v for v, _ in groups[side]]
                    for name, verdict in real_verdicts(a1, new, groups["a1"], groups[side]).items():
                        rows.setdefault(f"{kind} {name}", []).append(verdict)
                    rows.setdefault(f"{kind} pytest-benchmark mean:5%", []).append(pytest_benchmark_alarm(a1, new))
                print(f"trial {trial + 1}/{args.trials} done", flush=True)
    finally:
        session.close()
        for leftover in (work / "images", work / "run", work):
            if leftover.exists() and not any(leftover.iterdir()):
                leftover.rmdir()
    effect = statistics.median(statistics.median(v for v, _ in t["b"]) / statistics.median(v for v, _ in t["a1"])
                               for t in trials)
    a_cv = statistics.median(statistics.stdev(v for v, _ in t["a1"]) / statistics.mean(v for v, _ in t["a1"])
                             for t in trials)
    c_cv = statistics.median(statistics.stdev(c for _, c in t["a1"]) / statistics.mean(c for _, c in t["a1"])
                             for t in trials)
    t = args.trials
    print(f"\n{args.fs} on a loop device, dd {args.size} direct writes, each after a {CONTROL_MB} MiB --control "
          f"write, {args.runs} rounds of A A' B / B A' A, {t} trials, allowed {ALLOWED:g}%, alpha {ALPHA:g}")
    print(f"real effect of B's {args.effect:g} % extra writes (median B/A): {100 * (effect - 1):+.1f}%; "
          f"CV of A's runs {a_cv:.1%}, of the control's {c_cv:.1%}")
    for name, hits in rows.items():
        low, high = wilson(sum(hits), t)
        print(f"{name:<45} {sum(hits) / t:>5.0%}  95% CI {low:.0%}-{high:.0%}")
        print(json.dumps({"real": True, "fs": args.fs, "rounds": args.runs, "row": name, "rate": sum(hits) / t,
                          "ci95": [low, high], "trials": t, "effect": effect - 1}))
    if args.record:
        with open(args.record, "a") as record:
            record.write(json.dumps({"fs": args.fs, "size": args.size, "load": args.load,
                                     "runs": [[v for v, _ in g["a1"]] for g in trials],
                                     "controls": [[c for _, c in g["a1"]] for g in trials]}) + "\n")
    return 0


def real_verdicts(a: list[float], new: list[float], a_runs, new_runs) -> dict[str, bool]:
    """Whether each way of gating new against a fails the case (a regression): unpaired, paired by
    round, and unpaired on each run's ratio to its control."""
    paired = gate.verdict(compare(a, new, Direction.HIGHER, ALPHA, method=PAIRED), ALLOWED)
    ratio = fsbench_verdict([v / c for v, c in a_runs], [v / c for v, c in new_runs])
    return {"fsbench unpaired": fsbench_verdict(a, new) == gate.REGRESSION,
            "fsbench paired": paired == gate.REGRESSION,
            "fsbench unpaired on control ratios": ratio == gate.REGRESSION}


def main_across(args: argparse.Namespace) -> int:
    """A/A across recorded sessions: every session in turn is the new one; its first trial's runs
    against the first trial of each other session (a saved baseline of one session, with and
    without the control) and against the spread of three others."""
    records = [json.loads(line) for line in Path(args.across).read_text().splitlines() if line.strip()]
    if len(records) < 4:
        print(f"gate_evidence: --across needs at least 4 recorded sessions, {args.across} has {len(records)}",
              file=sys.stderr)
        return 2
    sessions = [r["runs"][0] for r in records]
    ratios = [[v / c for v, c in zip(r["runs"][0], r["controls"][0])] for r in records]
    rows: dict[str, list[bool]] = {"1 baseline session": [], "1 baseline session, control ratios": [],
                                   "3 baseline sessions": []}
    for i, new in enumerate(sessions):
        others = [j for j in range(len(sessions)) if j != i]
        for j in others:
            rows["1 baseline session"].append(fsbench_verdict(sessions[j], new) == gate.REGRESSION)
            rows["1 baseline session, control ratios"].append(fsbench_verdict(ratios[j], ratios[i]) == gate.REGRESSION)
        for k in range(len(others) - 2):
            three = [sessions[j] for j in others[k:k + 3]]
            verdict = gate.verdict(compare(three, new, Direction.HIGHER, ALPHA, method=SESSIONS), ALLOWED)
            rows["3 baseline sessions"].append(verdict == gate.REGRESSION)
    print(f"{len(sessions)} sessions, medians {', '.join(f'{statistics.median(s):.0f}' for s in sessions)} MB/s, "
          f"loaded: {', '.join(str(r.get('load', '?')) for r in records)}")
    for name, hits in rows.items():
        low, high = wilson(sum(hits), len(hits))
        print(f"A/A across, {name:<38} {sum(hits) / len(hits):>5.0%}  95% CI {low:.0%}-{high:.0%}  "
              f"({sum(hits)} of {len(hits)} comparisons)")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--simulate", action="store_true", help="pure computation")
    mode.add_argument("--real", action="store_true", help="on a real loop target (root)")
    mode.add_argument("--across", metavar="FILE", help="A/A across the sessions --record wrote to FILE")
    parser.add_argument("--trials", type=int, help="trials a row (--simulate: 4000) or a real run (--real: 20)")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="--simulate: processes")
    parser.add_argument("--scenario", choices=SCENARIOS, action="append", help="--simulate: only these scenarios")
    parser.add_argument("--runs", type=int, default=6, help="--real: rounds per trial")
    parser.add_argument("--effect", type=float, default=10.0,
                        help="--real: B writes 100/(100 - EFFECT) times the bytes it reports: about -EFFECT %%")
    parser.add_argument("--load", default="none", help="--real: what else loaded the machine (recorded with --record)")
    parser.add_argument("--fs", default="ext4")
    parser.add_argument("--size", default="256M", help="--real: bytes dd writes per run")
    parser.add_argument("--record", help="--real: append this session's A runs to this file")
    args = parser.parse_args()
    if args.simulate:
        args.trials = args.trials or 4000
        return main_simulate(args)
    if args.real:
        args.trials = args.trials or 20
        return main_real(args)
    return main_across(args)


if __name__ == "__main__":
    sys.exit(main())

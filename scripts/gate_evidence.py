"""Evidence for the regression gate: how often a case fails when nothing changed and when it got
slower, through the plugin's own decision path. Not a pytest test.

    .venv/bin/python scripts/gate_evidence.py --simulate [--trials 4000] [--jobs 2] [--scenario paired]
    .venv/bin/python scripts/gate_evidence.py --simulate --fitted DIR --trials 2000
    .venv/bin/python scripts/gate_evidence.py --simulate --defaults --trials 20000
    .venv/bin/python scripts/gate_evidence.py --real DIR [--cycles 8] [--until HH:MM]
    .venv/bin/python scripts/gate_evidence.py --judge DIR
    .venv/bin/python scripts/gate_evidence.py --changes DIR
    .venv/bin/python scripts/gate_evidence.py --within --trials 20 [--record sessions.jsonl]
    .venv/bin/python scripts/gate_evidence.py --across sessions.jsonl

--real DIR (root; across sessions, the path a CI job takes): real pytest sessions of the plugin,
dd write of 128M on ext4 (one layout), each with --control recorded, in a store of its own
(DIR/gate.db; DIR/sessions.jsonl says which session was which arm). Cycles of a quiet baseline
session (--save alone: the gate's budget of runs) and every arm once, shuffled: quiet A/A; A/A
beside two CPU burners (yes); A/A beside an I/O hog (a direct writer on the disk under the images);
real slowdowns of about -10 % (a 120M memory group), -20 % (ext4 with 2048-byte blocks) and -50 %
(ext4 nodelalloc), quiet and beside the burners. --judge DIR takes every stored session through the
session's own decision code (Bench._repeat's loop over its stored runs asking Gate.decided, then
the gate's verdict, the disturbance rule first) against its cycle's baseline, for each candidate
configuration (CONFIGS: --control off, off with --drift=baseline, the ratio, the CUPED adjustment)
and prints per arm x configuration how often the case fails, every verdict counted, the arm's
measured effect (median against the quiet sessions), others' CPU and disk use, and session time.
--changes DIR weighs fsbench changes' --max-pvalue on the same sessions' medians; --simulate
--fitted DIR fits the simulation's noise (runs' CV, drift between sessions) to them.

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

--within: dd direct writes on a loop target, each after a --control write (64 MiB, direct, to a
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
from dataclasses import asdict, dataclass, fields, replace
from functools import lru_cache, partial
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pytest_fsbench.verdicts import drift, gate  # noqa: E402
from pytest_fsbench.verdicts.disturbance import load_of  # noqa: E402
from pytest_fsbench.verdicts.baseline import Baseline, control_key  # noqa: E402
from pytest_fsbench.session import baseline_from_settings, gate_for  # noqa: E402
from pytest_fsbench.verdicts.gate import RegressionRule  # noqa: E402
from pytest_fsbench.metrics import Direction  # noqa: E402
from pytest_fsbench.verdicts.repeat import RepeatPolicy, stop_reason  # noqa: E402
from pytest_fsbench.settings import OPTIONS, PAIRED_ROUNDS, Settings  # noqa: E402
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
#: the runs of a saved baseline session: --save alone measures the gate's budget, --max-runs
BASELINE_RUNS = shipped("--max-runs")


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

        # the baseline's sessions were saved with --save's budget (--max-runs runs, not sequential);
        # the rest of the store's history ran with the shipped --runs
        held = max(row.history, row.baseline_sessions)
        drawn = [session(1.0, BASELINE_RUNS if i >= held - row.baseline_sessions else shipped("--runs"), row.series)
                 for i in range(held)]
        store = MachineStore([figures for figures, _ in drawn], [c for _, c in drawn] if row.control else None)
        (new, *_), new_control = session(1 + row.change, most)
        new_control = new_control if row.control else None
        machine = drift.for_gate(store, HOST) if row.drift == "machine" else None
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
    return baseline_from_settings(MachineStore([]), settings, [0]).test_level(BASELINE_RUNS)


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


def default_worlds() -> list[Row]:
    """Issue 41's goals, the defaults as shipped (--drift=machine: this machine's history, assumed until
    it tells; --paired: its default rounds): unchanged sessions fail at most 5 % with or without history,
    sessions drifting by up to 24 %; the paired comparison catches -10 % at least 90 %."""
    runs, rounds = shipped("--runs"), PAIRED_ROUNDS
    rows = []
    for history in (0, HISTORY, 12):
        for k in (1, 3):
            rows += [Row("across-sessions", 0.10, change, runs, offset_sd=sd, baseline_sessions=k, drift="machine",
                         history=max(history, k)) for sd in (0.0, 0.10, 0.24) for change in (0.0, -0.10, -0.20, -0.50)]
    rows += [Row("paired", 0.10, change, n, offset_sd=0.10) for n in (10, rounds) for change in (0.0, -0.05, -0.10)]
    return rows


def fitted(where: Path) -> tuple[float, float, int]:
    """The noise --real's quiet sessions show (the baselines and quiet A/A): the median CV of a
    session's runs, the sd of the sessions' log medians (the drift between sessions), and how many
    sessions."""
    from pytest_fsbench.store.results import Store
    records = [json.loads(line) for line in (where / "sessions.jsonl").read_text().splitlines() if line.strip()]
    store = Store(where / "gate.db", create=False)
    done = {s.id for s in store.sessions() if s.status == "complete"}
    runs = [next(s.values for s in store.series(r["session"]) if s.key.metric == FIGURE) for r in records
            if r["session"] in done and r["arm"] in (BASELINE.name, ARMS[0].name)]
    cv = statistics.median(statistics.stdev(v) / statistics.mean(v) for v in runs)
    sd = statistics.stdev(math.log(statistics.median(v)) for v in runs)
    return cv, sd, len(runs)


def fitted_worlds(cv: float, sd: float) -> list[Row]:
    """The goals' rows (one session, CV 10 %) and rows of the noise the real sessions showed."""
    runs = shipped("--runs")
    machine = {"drift": "machine", "history": HISTORY}
    rows = [Row("one-session", 0.10, change, runs) for change in (0.0, -0.05, -0.10, -0.20)]
    rows += [Row("one-session", round(cv, 3), change, runs) for change in (0.0, -0.10, -0.20)]
    rows += [Row("across-sessions", round(cv, 3), change, runs, offset_sd=round(sd, 3), baseline_sessions=k, **known)
             for known in ({}, machine) for k in (1, 3) for change in (0.0, -0.10, -0.20)]
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
    if args.defaults:
        rows = [replace(world, mode=mode, trials=args.trials) for world in default_worlds()
                for mode in ("default", "sign-off")]
    if args.fitted:
        cv, sd, count = fitted(Path(args.fitted))
        print(f"noise fitted to the {count} quiet real sessions of {args.fitted}: runs' CV {cv:.1%} (median of "
              f"the sessions'), drift between sessions sd {sd:.1%} (their log medians)")
        rows = [replace(world, mode=mode, trials=args.trials) for world in fitted_worlds(cv, sd)
                for mode in ("default", "sign-off")]
    sequential = Row("one-session", 0.10, 0.0, shipped("--runs"))
    level = level_of(sequential)  # computed once, before the workers fork
    start = time.monotonic()
    with ProcessPoolExecutor(max_workers=args.jobs) as pool:
        results = list(pool.map(simulate, rows))
    seconds = time.monotonic() - start
    default = mode_gate(sequential)[0]
    print(f"gate evidence by simulation: {args.trials} trials a row, allowed {ALLOWED:g}%, alpha {ALPHA:g}, "
          f"--runs {default.runs}, sequential looks {default.looks} (per-look level {level:.4f} against "
          f"{BASELINE_RUNS} baseline runs, --save's budget), {seconds:.0f} s with {args.jobs} processes")
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



# ---- real sessions across sessions (--real DIR, --judge DIR) -----------------------------------

#: what every session of --real runs: the plugin's own path (pytest, --save), dd write on ext4,
#: one layout, a small size, the baseline's budget of runs (--max-runs), the control recorded
SESSION = ("benchmarks/test_dd.py", "-k", "write", "--fs=ext4", "--layout=single", "--dd-size=128M",
           "--control=on", "-p", "no:cacheprovider", "-q")
#: the arms' sessions measure ARM_RUNS runs, the looks of a gate with --max-runs=ARM_RUNS; a baseline
#: session measures --save's budget (--max-runs, 30)
ARM_RUNS = 20
CPU, IO = "2 CPU burners", "I/O hog"


@dataclass(frozen=True)
class Arm:
    """One arm of --real: what its sessions change (pytest options: a real slowdown) and what runs
    beside them (a load)."""

    name: str
    options: tuple[str, ...] = ()
    load: str | None = None


#: the real slowdowns, each measured before the run (about -10 %, -20 %, -50 % of the MB/s): a memory
#: group of 120M for a 128M write (the page cache reclaimed under the writer), ext4 with 2048-byte
#: blocks, ext4 without delayed allocation; --judge measures each arm's effect on its own sessions
SLOW = {"-10%": ("--memory=120M",), "-20%": ("--fs-opt=ext4:mkfs=-b 2048",),
        "-50%": ("--fs-opt=ext4:mount=nodelalloc",)}
BASELINE = Arm("baseline")
ARMS = (Arm("quiet A/A"), Arm("A/A + " + CPU, load=CPU), Arm("A/A + " + IO, load=IO),
        *(Arm(f"{size} {'quiet' if load is None else '+ ' + load}", options, load)
          for size, options in SLOW.items() for load in (None, CPU)))


def slug(name: str) -> str:
    return "".join(c if c.isalnum() else "-" for c in name.replace("%", "pct")).strip("-")


def start_load(load: str | None, where: Path) -> list[int]:
    """Start what runs beside an arm's session; the pids of what this started."""
    import subprocess
    if load == CPU:
        return [subprocess.Popen(["yes"], stdout=subprocess.DEVNULL).pid for _ in range(2)]
    if load == IO:  # a writer on the disk under the images: 512 MiB direct writes, over and over
        hog = where / "gate-io-hog"
        script = f"while :; do dd if=/dev/zero of={hog} bs=1M count=512 oflag=direct status=none; done"
        return [subprocess.Popen(["sh", "-c", script], start_new_session=True).pid]
    return []


def stop_load(pids: list[int], load: str | None, where: Path) -> None:
    """End what start_load started, by pid (the I/O hog's shell with its own process group)."""
    for pid in pids:
        try:
            if load == IO:
                os.killpg(pid, signal.SIGTERM)
            else:
                os.kill(pid, signal.SIGTERM)
            os.waitpid(pid, 0)
        except (ProcessLookupError, ChildProcessError):
            pass
    (where / "gate-io-hog").unlink(missing_ok=True)


def run_session(arm: Arm, cycle: int, where: Path) -> dict:
    """One real pytest session of an arm, saved in the store as its own baseline name."""
    import re
    import subprocess
    repo = Path(__file__).resolve().parent.parent
    name = "base" if arm is BASELINE else slug(arm.name)
    runs = () if arm is BASELINE else (f"--runs={ARM_RUNS}",)
    command = [str(Path(sys.executable).with_name("pytest")), *SESSION, *runs, *arm.options,
               f"--store={where / 'gate.db'}", f"--image-dir={where / 'images'}", f"--save={name}-{cycle}"]
    pids = start_load(arm.load, where)
    start = time.monotonic()
    try:
        done = subprocess.run(command, cwd=repo, capture_output=True, text=True, timeout=900)
    finally:
        stop_load(pids, arm.load, where)
    found = re.search(r"\(session (\d+)\)", done.stdout)
    return {"cycle": cycle, "arm": arm.name, "options": list(arm.options), "load": arm.load,
            "session": int(found.group(1)) if found else None, "exit": done.returncode,
            "seconds": round(time.monotonic() - start, 1), "utc": time.strftime("%H:%M:%S", time.gmtime()),
            "tail": done.stdout.splitlines()[-3:] if done.returncode else []}


def real_sessions(args: argparse.Namespace) -> int:
    """Cycles of real sessions: a quiet baseline session, then every arm once in a shuffled order;
    each line of DIR/sessions.jsonl says which session of DIR/gate.db was which arm."""
    import random
    where = Path(args.real)
    (where / "images").mkdir(parents=True, exist_ok=True)
    arms = [a for a in ARMS if not args.arm or a.name in args.arm]
    rng = random.Random(32 + args.first_cycle)
    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))
    with open(where / "sessions.jsonl", "a") as log:
        for cycle in range(args.first_cycle, args.cycles + 1):
            if cycle > args.min_cycles and args.until and time.strftime("%H:%M", time.gmtime()) >= args.until:
                break
            order = rng.sample(arms, len(arms))
            for arm in (BASELINE, *order):
                record = run_session(arm, cycle, where)
                log.write(json.dumps(record) + "\n")
                log.flush()
                print(f"cycle {cycle} {arm.name}: session {record['session']} exit {record['exit']} "
                      f"{record['seconds']} s", flush=True)
    return 0



#: the gate configurations --judge compares on the same stored sessions (each session recorded its
#: control): --control off (the shipped default, on the machine's drift once the store knows it),
#: off with --drift=baseline (the baseline's runs only), the ratio to the control, and the CUPED
#: adjustment
CONFIGS = {"off": {"control": False, "control_adjust": False, "drift": "machine"},
           "off, --drift=baseline": {"control": False, "control_adjust": False, "drift": "baseline"},
           "ratio (--control=on)": {"control": True, "control_adjust": False, "drift": "machine"},
           "adjust (--control=adjust)": {"control": True, "control_adjust": True, "drift": "machine"}}
DISTURBED = "disturbed"
FIGURE = "dd.write"


def truncated(series: list[Series], runs: int) -> list[Series]:
    return [replace(s, values=s.values[:runs]) for s in series]


class Undisturbed(gate.Gate):
    """The session's gate without the disturbance rule: what the comparison alone would say."""

    def disturbance(self, series: list[Series]) -> str | None:
        return None


def judged(store, base_id: int, new_id: int, config: dict, host: str, rule_on: bool = True) -> Outcome:
    """One stored session against its cycle's baseline session as a session with this
    configuration would judge it: Bench._repeat's loop over its stored runs (the gate's looks,
    asking the session's own Gate.decided), then Gate's verdict (disturbed first)."""
    from pytest_fsbench.verdicts.gate import control_values
    stored = store.series(new_id)
    most = len(next(s for s in stored if s.key.metric == FIGURE).values)
    # the gate's looks up to the runs the session stored (--max-runs=ARM_RUNS)
    policy = RepeatPolicy(runs=shipped("--runs"), warmup=shipped("--warmup"), until_ci=shipped("--until-ci"),
                          max_runs=min(shipped("--max-runs"), most), max_seconds=None, sequential=True)
    rule = RegressionRule(None, ALLOWED)
    settings = Settings((), (), (), repeat=policy, compare="base", regression_rules=(rule,), alpha=ALPHA,
                        gate_mode="sequential", on_inconclusive=shipped("--inconclusive"), **config)
    # the drift a session would know: the store's complete sessions before this one
    later = [s.id for s in store.sessions() if s.id >= new_id]
    calm = load_of(store.series(base_id))  # as session.resolve_baseline: busier sessions leave the drift
    machine = drift.for_gate(store, host, exclude=later, calm=calm) if config["drift"] == "machine" else None
    baseline = baseline_from_settings(store, settings, [base_id], machine)
    gate_ = gate_for(settings, baseline)
    if not rule_on:
        gate_ = Undisturbed(**{f.name: getattr(gate_, f.name) for f in fields(gate_)})
    runs = 0
    while True:
        now = truncated(stored, runs)
        decided = partial(gate_.decided, now) if gate_.looks_sequentially else None
        if stop_reason(policy, runs, [next(s for s in now if s.key.metric == FIGURE).values], 0.0, decided):
            break
        if runs == most:
            raise ValueError(f"session {new_id}: the gate wants more than its {most} stored runs")
        runs += 1
    now = truncated(stored, runs)
    figure = next(s for s in now if s.key.metric == FIGURE)
    if gate_.disturbance(now) is not None:
        return Outcome(DISTURBED, runs, gate.fails(gate.INCONCLUSIVE, settings.on_inconclusive))
    cmp = baseline.comparison(figure, control_values(now))
    kind = gate.verdict(cmp, ALLOWED) if cmp is not None else "none"
    return Outcome(kind, runs, gate.fails(kind, settings.on_inconclusive) if cmp is not None else False)


def session_medians(store, session_id: int) -> dict[str, float]:
    return {s.key.metric: statistics.median(s.values) for s in store.series(session_id)
            if s.key.params == "{}" or s.key.metric == FIGURE}


def seconds(records: list[dict]) -> list[float]:
    return [r["seconds"] for r in records if r.get("seconds") is not None] or [0.0]


def judge(args: argparse.Namespace) -> int:
    """Per arm x configuration: how often the case fails, every verdict counted; each arm's
    measured effect, others' CPU and disk use, and session time."""
    from pytest_fsbench.store.results import Store
    where = Path(args.judge)
    records = [json.loads(line) for line in (where / "sessions.jsonl").read_text().splitlines() if line.strip()]
    store = Store(where / "gate.db", create=False)
    done = {s.id: s for s in store.sessions() if s.status == "complete"}
    records = [r for r in records if r["session"] in done]
    bases = {r["cycle"]: r["session"] for r in records if r["arm"] == BASELINE.name}
    medians = {r["session"]: session_medians(store, r["session"]) for r in records}
    host = done[records[0]["session"]].host
    arms = [BASELINE.name] + [a.name for a in ARMS]
    quiet = [medians[r["session"]][FIGURE] for r in records if r["arm"] in (BASELINE.name, ARMS[0].name)]
    reference = statistics.median(quiet)
    print(f"{len(records)} real sessions in {where / 'gate.db'}: dd write 128M on ext4 (one layout), 30 runs each "
          f"with --control recorded; cycles of a quiet baseline session and every arm once (shuffled)")
    print(f"quiet sessions (baselines and quiet A/A): median {reference:.0f} MB/s; allowed {ALLOWED:g}%, alpha "
          f"{ALPHA:g}, sequential looks {RepeatPolicy(runs=shipped('--runs'), max_runs=shipped('--max-runs'), sequential=True).looks}, "
          f"each session against its cycle's baseline session (30 runs: --save's budget)\n")
    rows = []
    for rule_on in (True, False):
        print("with the disturbance rule (as shipped): a case disturbed beyond its baseline is inconclusive" if rule_on
              else "\nthe comparison alone (the disturbance rule left out): what each configuration's own "
                   "comparison said")
        rows += judge_table(store, records, medians, bases, arms, reference, host, rule_on)
    print("\nk/n: sessions whose case fails (regression; an inconclusive case passes, as --inconclusive=pass); "
          "r/w/i/d: regression, within bounds, inconclusive, disturbed (inconclusive, named); runs: the new "
          "runs the gate measured (mean)\n")
    for row in rows:
        print(json.dumps(row))
    return 0


def judge_table(store, records, medians, bases, arms, reference, host, rule_on: bool) -> list[dict]:
    lines = ["| arm | sessions | effect (median vs quiet) | others' CPU % | others' disk MB/s | s / session | "
             + " | ".join(CONFIGS) + " |", "|---" * (6 + len(CONFIGS)) + "|"]
    rows = []
    for arm in arms:
        mine = [r for r in records if r["arm"] == arm]
        if not mine:
            continue
        figure = [medians[r["session"]][FIGURE] for r in mine]
        cpu = [medians[r["session"]].get("cpu.others") for r in mine]
        disk = [medians[r["session"]].get("disk.others") for r in mine]
        cells = [arm, str(len(mine)), f"{(statistics.median(figure) / reference - 1) * 100:+.1f}% "
                 f"({statistics.median(figure):.0f} MB/s)",
                 f"{statistics.median([c for c in cpu if c is not None]):.0f}",
                 f"{statistics.median([d for d in disk if d is not None]):.0f}",
                 f"{statistics.median(seconds(mine)):.0f}"]
        row = {"arm": arm, "rule": rule_on, "sessions": len(mine), "effect": statistics.median(figure) / reference - 1,
               "cpu_others": statistics.median([c for c in cpu if c is not None]),
               "disk_others": statistics.median([d for d in disk if d is not None]),
               "seconds": statistics.median(seconds(mine)), "configs": {}}
        for name, config in CONFIGS.items():
            if arm == BASELINE.name:
                cells.append("")
                continue
            found = [judged(store, bases[r["cycle"]], r["session"], config, host, rule_on)
                     for r in mine if r["cycle"] in bases]
            kinds = {k: sum(o.kind == k for o in found) for k in (gate.REGRESSION, gate.WITHIN, gate.INCONCLUSIVE,
                                                                  DISTURBED, "none")}
            fails = sum(o.fails for o in found)
            mean_runs = sum(o.runs for o in found) / len(found) if found else 0
            cells.append(f"**{fails}/{len(found)}** (r{kinds[gate.REGRESSION]} w{kinds[gate.WITHIN]} "
                         f"i{kinds[gate.INCONCLUSIVE]} d{kinds[DISTURBED]}; {mean_runs:.1f} runs)")
            row["configs"][name] = {"fails": fails, "of": len(found), **kinds, "mean_runs": mean_runs}
        lines.append("| " + " | ".join(cells) + " |")
        rows.append(row)
    print("\n".join(lines))
    return rows



# ---- change points on the real sessions (--changes DIR) ------------------------------------------

#: the --max-pvalue candidates --changes weighs
PVALUES = (0.001, 0.005, 0.01, 0.02, 0.05)
#: the series --changes draws: sessions, of which the last STEP_AFTER at the new level
SERIES_LENGTH, STEP_AFTER = 12, 3


def found_changes(medians: list[float], max_p: float) -> list:
    """fsbench changes' change points of a series of session medians (the plugin's own code)."""
    from pytest_fsbench.verdicts import changes
    points = tuple(changes.Point(i, "", m, "k", "none", "c") for i, m in enumerate(medians))
    history = changes.History(HOST, key(0), "MB/s", Direction.HIGHER, points)
    return changes.change_points(history, max_p)


def real_changes(args: argparse.Namespace) -> int:
    """False change points per 100 unchanged sessions and detection of a step after STEP_AFTER
    sessions, for each --max-pvalue of PVALUES, on the session medians --real stored: the real
    time-ordered series, and series drawn from them (unchanged: A/A sessions; a step: the last
    STEP_AFTER from a slowdown arm's sessions)."""
    from pytest_fsbench.store.results import Store
    where = Path(args.changes)
    records = [json.loads(line) for line in (where / "sessions.jsonl").read_text().splitlines() if line.strip()]
    store = Store(where / "gate.db", create=False)
    done = {s.id for s in store.sessions() if s.status == "complete"}
    records = sorted((r for r in records if r["session"] in done), key=lambda r: r["session"])
    median = {r["session"]: session_medians(store, r["session"])[FIGURE] for r in records}
    by_arm: dict[str, list[float]] = {}
    for r in records:
        by_arm.setdefault(r["arm"], []).append(median[r["session"]])
    quiet = [median[r["session"]] for r in records if r["arm"] in (BASELINE.name, ARMS[0].name)]
    unchanged = [median[r["session"]] for r in records if r["arm"] == BASELINE.name or r["arm"].startswith("A/A")
                 or r["arm"] == ARMS[0].name]
    rng = np.random.default_rng(32)
    trials = args.trials or 2000
    pools = {"quiet (baselines, quiet A/A)": quiet, "every A/A (quiet, burners, I/O hog)": unchanged}
    print(f"change points of fsbench changes on the session medians of {where / 'gate.db'}: "
          f"{len(quiet)} quiet unchanged sessions, {len(unchanged)} unchanged in all; drawn series of "
          f"{SERIES_LENGTH} sessions ({trials} each), a step: the last {STEP_AFTER} drawn from a slowdown arm\n")
    lines = ["| --max-pvalue | " + " | ".join(f"false per 100 sessions, {name}" for name in pools)
             + " | real series: quiet, in order | " + " | ".join(f"{arm} after {STEP_AFTER}: found" for arm in
                                                             ("-10% quiet", "-20% quiet", "-50% quiet")) + " |",
             "|---" * (4 + 3) + "|"]
    rows = []
    for max_p in PVALUES:
        cells = [f"{max_p:g}"]
        row = {"max_pvalue": max_p}
        for name, pool in pools.items():
            marks = sum(len(found_changes(list(rng.choice(pool, SERIES_LENGTH, replace=True)), max_p))
                        for _ in range(trials))
            cells.append(f"{100 * marks / (trials * SERIES_LENGTH):.2f}")
            row[name] = 100 * marks / (trials * SERIES_LENGTH)
        ordered = found_changes(quiet, max_p)
        cells.append(f"{len(ordered)} in {len(quiet)}")
        row["ordered_quiet"] = len(ordered)
        for arm in ("-10% quiet", "-20% quiet", "-50% quiet"):
            slow = by_arm.get(arm, [])
            if len(slow) < 2:
                cells.append("")
                continue
            hits = 0
            for _ in range(trials):
                series = list(rng.choice(quiet, SERIES_LENGTH - STEP_AFTER)) + list(rng.choice(slow, STEP_AFTER))
                hits += any(c.index == SERIES_LENGTH - STEP_AFTER and c.verdict == "worse"
                            for c in found_changes(series, max_p))
            cells.append(f"{100 * hits / trials:.1f}%")
            row[arm] = hits / trials
        lines.append("| " + " | ".join(cells) + " |")
        rows.append(row)
    print("\n".join(lines))
    print()
    for row in rows:
        print(json.dumps(row))
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--simulate", action="store_true", help="pure computation")
    mode.add_argument("--within", action="store_true", help="within one session, on a real loop target (root)")
    mode.add_argument("--real", metavar="DIR", help="real pytest sessions across sessions, in arms, kept in DIR (root)")
    mode.add_argument("--judge", metavar="DIR", help="judge the sessions --real kept in DIR")
    mode.add_argument("--changes", metavar="DIR", help="fsbench changes' defaults weighed on the sessions of --real")
    mode.add_argument("--across", metavar="FILE", help="A/A across the sessions --record wrote to FILE")
    parser.add_argument("--trials", type=int, help="trials a row (--simulate: 4000) or a real run (--real: 20)")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="--simulate: processes")
    parser.add_argument("--scenario", choices=SCENARIOS, action="append", help="--simulate: only these scenarios")
    parser.add_argument("--fitted", metavar="DIR", help="--simulate: only the goals' rows and rows of the noise "
                        "the real sessions of --real DIR showed")
    parser.add_argument("--defaults", action="store_true", help="--simulate: only the rows of the shipped defaults "
                        "across sessions (the assumed drift, the machine's history) and of --paired's rounds")
    parser.add_argument("--runs", type=int, default=6, help="--real: rounds per trial")
    parser.add_argument("--effect", type=float, default=10.0,
                        help="--real: B writes 100/(100 - EFFECT) times the bytes it reports: about -EFFECT %%")
    parser.add_argument("--load", default="none", help="--real: what else loaded the machine (recorded with --record)")
    parser.add_argument("--fs", default="ext4")
    parser.add_argument("--size", default="256M", help="--real: bytes dd writes per run")
    parser.add_argument("--record", help="--within: append this session's A runs to this file")
    parser.add_argument("--cycles", type=int, default=8, help="--real: cycles (a baseline session and every arm once)")
    parser.add_argument("--until", help="--real: start no cycle after this UTC time (HH:MM), once --min-cycles ran")
    parser.add_argument("--min-cycles", type=int, default=8, help="--real: cycles run whatever --until says")
    parser.add_argument("--first-cycle", type=int, default=1, help="--real: the number of its first cycle (to go on)")
    parser.add_argument("--arm", action="append", help="--real: only these arms (names as printed)")
    args = parser.parse_args()
    if args.simulate:
        args.trials = args.trials or 4000
        return main_simulate(args)
    if args.within:
        args.trials = args.trials or 20
        return main_real(args)
    if args.real:
        return real_sessions(args)
    if args.judge:
        return judge(args)
    if args.changes:
        return real_changes(args)
    return main_across(args)


if __name__ == "__main__":
    sys.exit(main())

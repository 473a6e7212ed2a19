"""scripts/gate_evidence.py --simulate: a row's rates, and its loop against the plugin's own
Bench._repeat and the session's Gate.decided on the same runs (run by run, and on a known machine drift)."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from conftest import load_script
from pytest_fsbench.verdicts import gate
from pytest_fsbench.bench import Bench
from pytest_fsbench.verdicts.drift import Drift
from pytest_fsbench.session import baseline_from_settings, gate_for

ge = load_script("gate_evidence")
KEYS = {"scenario", "cv", "offset_sd", "baseline_sessions", "n", "change", "allowed", "mode", "trials",
        "fails", "fails_ci95", "regression", "inconclusive", "within", "mean_runs"}


@pytest.mark.parametrize("mode", ge.MODES)
def test_a_row_has_its_keys_and_rates(mode):
    row = ge.Row("one-session", 0.10, -0.10, 10, mode=mode, trials=40)
    r = ge.simulate(row)
    assert KEYS <= r.keys()
    assert (r["scenario"], r["n"], r["mode"], r["trials"], r["allowed"]) == ("one-session", 10, mode, 40, 5.0)
    for key in ("fails", "regression", "inconclusive", "within"):
        assert 0 <= r[key] <= 1
    assert r["regression"] + r["inconclusive"] + r["within"] == pytest.approx(1)
    low, high = r["fails_ci95"]
    assert 0 <= low <= r["fails"] <= high <= 1
    assert r["n"] <= r["mean_runs"] <= r["max_runs"]
    expected = r["regression"] + (r["inconclusive"] if mode == "sign-off" else 0)
    assert r["fails"] == pytest.approx(expected)
    if mode == "fixed":
        assert r["mean_runs"] == 10


def test_modes_share_their_trials():
    """Modes draw the same numbers; where every trial decides at the first look (a -30 % change at
    CV 5 %), neither mode's futility stop acts, so their verdicts and runs are the same."""
    rows = [ge.Row("one-session", 0.05, -0.30, 10, mode=m, trials=30) for m in ("default", "sign-off")]
    assert ge.seed(rows[0]) == ge.seed(rows[1])
    default, sign_off = map(ge.simulate, rows)
    shared = ("regression", "inconclusive", "within", "mean_runs")
    assert [default[k] for k in shared] == [sign_off[k] for k in shared]
    assert default["regression"] == 1 and default["mean_runs"] == 10


def test_an_undecided_case_that_passes_stops_once_a_regression_is_unlikely():
    """--inconclusive=pass looks on only while a regression is likely by --max-runs; sign-off jobs
    look on while any decision is: an unchanged case at CV 5 %, whose "within bounds" more runs
    can still show, measures more runs when it must be decided, and more of them end decided."""
    default, sign_off = (ge.simulate(ge.Row("one-session", 0.05, 0.0, 10, mode=m, trials=60))
                         for m in ("default", "sign-off"))
    assert default["mean_runs"] < sign_off["mean_runs"]
    assert default["inconclusive"] > sign_off["inconclusive"]


def test_session_medians_and_paired_rounds_measure_runs_once():
    for row in (ge.Row("across-sessions", 0.10, 0.0, 10, offset_sd=0.05, baseline_sessions=3, trials=20),
                ge.Row("across-sessions", 0.10, 0.0, 10, offset_sd=0.05, drift="machine", history=6,
                       trials=20),
                ge.Row("paired", 0.10, -0.05, 10, offset_sd=0.10, trials=20)):
        r = ge.simulate(row)
        assert r["mean_runs"] == 10 and r["level"] == r["alpha"]


class CaseRuns:
    """The store as Bench._repeat and the gate's decided read one case: its runs so far."""

    def __init__(self) -> None:
        self.values: list[float] = []

    def series(self, session_id: int, case_row: int | None = None):
        return [ge.as_series(self.values)] if self.values else []

    def case_runs(self, row: int) -> int:
        return len(self.values)


def plugin_runs(settings, baseline, new: np.ndarray) -> int:
    """How many of new the plugin's own Bench._repeat measures (warm-ups discarded)."""
    store = CaseRuns()
    session = SimpleNamespace(settings=settings, store=store, session_id=1, gate=gate_for(settings, baseline))
    bench = SimpleNamespace(session=session, interleaved=False, test="p/test_dd.py::test_dd_write[ext4-single-1M]")
    bench._measure = lambda workload, policy, row, warmup, index, planned: (
        None if warmup else store.values.append(float(new[len(store.values)])))
    Bench._repeat(bench, None, "drop", 1)
    return len(store.values)


@pytest.mark.parametrize("mode", ["default", "fixed"])
@pytest.mark.parametrize("change", [0.0, -0.05, -0.10])
@pytest.mark.parametrize("machine", [None, Drift(0.05, 5, 1, 6)])
def test_the_loop_stops_where_the_plugins_does(mode, change, machine):
    row = ge.Row("one-session", 0.10, change, 10, mode=mode)
    policy, on_inconclusive = ge.mode_gate(row)
    settings = ge.settings_for(policy, gate.RegressionRule(None, ge.ALLOWED), on_inconclusive)
    rng = np.random.default_rng(7)
    for _ in range(15):
        baseline = baseline_from_settings(ge.MachineStore([[100 * ge.noise(rng, row, 10)]]), settings, [0], machine)
        new = 100 * (1 + change) * ge.noise(rng, row, policy.max_runs)
        runs = ge.measured(settings, baseline, new)
        assert runs == plugin_runs(settings, baseline, new)


def test_the_judge_takes_real_stored_sessions_through_the_sessions_gate(tmp_path):
    """--judge on real captured runs (tests/data/control/sessions.json: a quiet baseline session,
    one beside two CPU burners, one with --memory=120M): the burners' session is named disturbed
    under every configuration, and without the disturbance rule each verdict is the session's own
    Gate on the runs it stopped at."""
    import json
    from pathlib import Path

    from pytest_fsbench.metrics import CONTROL, Direction, Metric
    from pytest_fsbench.store.results import Store
    from pytest_fsbench.verdicts.gate import control_values

    data = json.loads((Path(__file__).resolve().parents[2] / "data" / "control" / "sessions.json").read_text())
    store = Store(tmp_path / "gate.db")
    for s in data["sessions"]:
        sid = store.start_session(f"t-{s['session']}", {"argv": []}, {"hostname": "h"})
        row = store.case_row(sid, "benchmarks/test_dd.py::test_dd_write[ext4-single-1M]", "ext4-single",
                             {"fs": "ext4", "layout": "single", "options": {}}, "dd", {"bs": "1M"}, "drop", "random", {})
        for i, figure in enumerate(s["dd.write"]):
            store.add_run(row, False, "t", 1.0, "drop", [
                Metric("dd.write", figure, "MB/s", Direction.HIGHER),
                Metric(CONTROL, s["control.write"][i], "MB/s", Direction.HIGHER),
                Metric("cpu.others", s["cpu.others"][i], "%", Direction.LOWER),
                Metric("disk.others", s["disk.others"][i], "MB/s", Direction.LOWER)])
        store.finish_case(row, "done", "runs")
        store.finish_session(sid, "complete")
    for name, config in ge.CONFIGS.items():
        burners = ge.judged(store, 1, 2, config, "h")
        if name == "off":  # across sessions on the assumed drift: judged at --runs, where the burners' first ten
            # runs (others 75 % of the CPUs against the baseline's 65 %) were not yet disturbed beyond it
            assert (burners.kind, burners.runs, burners.fails) == (gate.INCONCLUSIVE, 10, False)
            continue
        assert (burners.kind, burners.fails) == (ge.DISTURBED, False), name
        for new_id in (3,) if name in ("off", "adjust (--control=adjust)") else ():
            alone = ge.judged(store, 1, new_id, config, "h", rule_on=False)
            settings = ge.Settings((), (), (), repeat=ge.RepeatPolicy(runs=10, max_runs=30, sequential=True),
                                   compare="base", regression_rules=(ge.RegressionRule(None, ge.ALLOWED),),
                                   alpha=ge.ALPHA, gate_mode="sequential", **config)
            baseline = baseline_from_settings(store, settings, [1])
            runs = ge.truncated(store.series(new_id), alone.runs)
            figure = next(s for s in runs if s.key.metric == "dd.write")
            assert alone.kind == gate.verdict(baseline.comparison(figure, control_values(runs)), ge.ALLOWED), name
            assert alone.runs in (10, 15, 20, 30)

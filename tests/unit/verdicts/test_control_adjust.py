"""--control=adjust (issue 32): each run's figure adjusted by its estimated relation to the control
(CUPED), estimated within sessions, on real captured runs: three sessions of dd write 128M on ext4,
30 runs each beside their --control runs (tests/data/control/sessions.json)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from conftest import settings_of

from pytest_fsbench.metrics import CONTROL, Direction, Metric
from pytest_fsbench.session import baseline_from_settings
from pytest_fsbench.store.results import Store
from pytest_fsbench.system.host import Host
from pytest_fsbench.verdicts.baseline import THETA_RANGE, control_theta, cuped

DATA = Path(__file__).resolve().parents[2] / "data" / "control" / "sessions.json"
SESSIONS = json.loads(DATA.read_text())["sessions"]
PAIRS = [(s["dd.write"], s["control.write"]) for s in SESSIONS]
HOST = Host("6.1.0", frozenset({"ext4"}), frozenset({"mkfs.ext4"}), has_md=False, zfs_module=False, is_root=True,
            ram_bytes=8 << 30)


def within(pairs) -> float:
    """The runs' squared log deviations about their sessions' means, pooled."""
    return sum(float(((np.log(f) - np.log(f).mean()) ** 2).sum()) for f in pairs)


def test_theta_is_the_within_session_slope_of_the_real_runs():
    theta = control_theta(PAIRS)
    assert THETA_RANGE[0] <= theta <= THETA_RANGE[1]
    x = np.concatenate([np.log(c) - np.log(c).mean() for _, c in PAIRS])
    y = np.concatenate([np.log(f) - np.log(f).mean() for f, _ in PAIRS])
    assert theta == pytest.approx(min(max(float(x @ y / (x @ x)), 0.0), 1.0))


def test_the_adjusted_runs_spread_no_more_than_the_figures_within_their_sessions():
    """The control can never widen a session's spread: the least-squares theta, clipped towards 0."""
    for pairs in (PAIRS, PAIRS[:1], PAIRS[1:2], PAIRS[2:]):
        adjusted = cuped(pairs, control_theta(pairs))
        assert within(adjusted) <= within([f for f, _ in pairs]) + 1e-12


def test_a_real_change_between_sessions_never_enters_theta():
    """Halving one session's figures (a slower filesystem) moves its level, not the slope within it."""
    slower = [(f if i != 2 else [v / 2 for v in f], c) for i, (f, c) in enumerate(PAIRS)]
    assert control_theta(slower) == pytest.approx(control_theta(PAIRS))


def test_theta_0_leaves_the_figures_and_theta_1_is_the_ratio_to_the_control():
    assert cuped(PAIRS, 0.0) == [tuple(pytest.approx(v) for v in f) for f, _ in PAIRS]
    ratios = np.concatenate([np.asarray(a) / (np.asarray(f) / np.asarray(c))
                             for a, (f, c) in zip(cuped(PAIRS, 1.0), PAIRS)])
    assert np.allclose(ratios, ratios[0])


def test_a_control_that_does_not_vary_adjusts_nothing():
    assert control_theta([(f, [640.0] * len(f)) for f, _ in PAIRS]) == 0.0
    # a slope against the control within a session is noise, not a machine faster when slower
    figures = [100.0, 110.0, 121.0, 133.1]
    assert control_theta([(figures, list(reversed(figures)))]) == 0.0


def real_store(path: Path) -> Store:
    """The captured sessions in a store, as the plugin keeps them (one dd case each)."""
    store = Store(path)
    for s in SESSIONS:
        sid = store.start_session(f"t-{s['session']}", {"argv": []}, {"hostname": "h"})
        row = store.case_row(sid, "benchmarks/test_dd.py::test_dd_write[ext4-single-1M]", "ext4-single",
                             {"fs": "ext4", "layout": "single", "options": {}}, "dd", {"bs": "1M"}, "drop", "random", {})
        for figure, control in zip(s["dd.write"], s["control.write"]):
            store.add_run(row, False, "t", 1.0, "drop", [Metric("dd.write", figure, "MB/s", Direction.HIGHER),
                                                          Metric(CONTROL, control, "MB/s", Direction.HIGHER)])
        store.finish_case(row, "done", "runs")
        store.finish_session(sid, "complete")
    return store


def test_the_gate_compares_the_adjusted_runs_and_names_theta(tmp_path):
    """--control=adjust: the baseline compares the CUPED-adjusted runs, the medians stay MB/s."""
    store = real_store(tmp_path / "fsbench.db")
    settings = settings_of(HOST, **{"--control": "adjust", "--compare": "base"})
    assert settings.control and settings.control_adjust
    baseline = baseline_from_settings(store, settings, [1])
    [figure] = [s for s in store.series(2) if s.key.metric == "dd.write"]
    [control] = [s.values for s in store.series(2) if s.key.metric == CONTROL]
    cmp = baseline.comparison(figure, control)
    theta = control_theta(PAIRS[:2])
    assert cmp.adjusted_by == f"the control (theta {theta:.2f})"
    assert cmp.baseline_median == pytest.approx(np.median(SESSIONS[0]["dd.write"]))
    assert cmp.candidate_median == pytest.approx(np.median(SESSIONS[1]["dd.write"]))
    bases, mine, _ = baseline.controlled(figure, control)
    assert [list(bases[0]), list(mine)] == [pytest.approx(list(v)) for v in cuped(PAIRS[:2], theta)]
    ratio = baseline_from_settings(store, settings_of(HOST, **{"--control": "on", "--compare": "base"}), [1])
    assert ratio.comparison(figure, control).adjusted_by == "the control"

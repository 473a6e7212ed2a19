"""scripts/bisect_evidence.py: the noise it fits to real step sessions, and simulated bisects
through the bisect's own decision code (the search, the range's and each step's checks, the
confirmation)."""

from __future__ import annotations

import argparse
import math
import re

import numpy as np
import pytest

from conftest import load_script
from pytest_fsbench.store.results import Store

be = load_script("bisect_evidence")


def test_the_two_way_fit_recovers_the_spreads_it_was_drawn_with():
    rng = np.random.default_rng(5)
    ss = df = 0.0
    rounds = []
    for _ in range(400):  # sessions of 10 rounds x 3 kernels, each kernel at its own level
        offsets = rng.normal(0, 0.08, (10, 1))
        logs = np.array([0.0, 0.1, -0.2])[None, :] + offsets + rng.normal(0, 0.15, (10, 3))
        s, d, m = be.two_way(logs)
        ss, df = ss + s, df + d
        rounds.append(m)
    run_sd = math.sqrt(ss / df)
    assert run_sd == pytest.approx(0.15, rel=0.03)
    assert math.sqrt(max(0.0, float(np.mean(rounds)) - run_sd ** 2) / 3) == pytest.approx(0.08, rel=0.1)


def test_counts_that_never_vary_find_every_culprit_and_name_no_wrong_one():
    still = be.Noise(0.0005, 0.0, 1, 1)
    row = be.scenario((8, -0.10, be.COUNT_METRIC, still, 30, 3, be.BUDGET))
    assert row["outcomes"]["named, confirmed"] == 30 and row["wrong_pct"] == 0
    assert row["mean_rounds"] < 4 * 6 + 10  # each session decided at its fourth round, the confirmation's 10


def test_a_time_figure_in_noise_names_a_culprit_rarely_wrongly_and_says_what_it_could_not_tell():
    noisy = be.Noise(0.15, 0.05, 1, 1)
    row = be.scenario((8, -0.20, be.TIME_METRIC, noisy, 40, 11, be.BUDGET))
    assert sum(row["outcomes"].values()) == 40
    assert row["outcomes"]["WRONG, confirmed"] <= 2
    assert 0 <= row["wrong_ci95"][0] <= row["wrong_pct"] <= row["wrong_ci95"][1] <= 100


def test_the_table_has_a_row_per_scenario():
    rows = [be.scenario((8, -0.10, be.COUNT_METRIC, be.Noise(0.0005, 0.0, 1, 1), 5, 1, be.BUDGET))]
    lines = be.table(rows)
    assert len(lines) == 3 and lines[2].startswith("| work.flushes_per_gb | 10 | 8 | -10 % | 5 | 100.0 % |")


def test_a_design_is_a_figure_the_simulation_knows_and_a_budget_it_can_look_within():
    assert be.design("dd.write:30") == ("dd.write", 30)
    for wrong in ("dd.read:10", "dd.write", "dd.write:2", "work.flushes_per_gb:ten"):
        with pytest.raises(argparse.ArgumentTypeError, match=re.escape(wrong)):
            be.design(wrong)


def test_a_scenario_draws_the_same_bisects_whichever_designs_run_beside_it():
    still = be.Noise(0.0005, 0.0, 1, 1)
    alone = be.simulate({be.COUNT_METRIC: still}, 3, 1, ((be.COUNT_METRIC, 10),))
    beside = be.simulate({be.COUNT_METRIC: still, be.TIME_METRIC: still}, 3, 1,
                         ((be.TIME_METRIC, 10), (be.COUNT_METRIC, 10)))
    assert [r["outcomes"] for r in alone] == [r["outcomes"] for r in beside[len(alone):]]


def test_the_summary_gives_each_bisects_result_and_minutes_from_its_record(tmp_path):
    store = Store(tmp_path / "fsbench.db")
    record = {"asked": {"bad": "slowed", "kind": "uml"},
              "kernels": {"a": {"build_seconds": 600.0, "boot_seconds": 2.0, "full": True},
                          "b": {"build_seconds": 30.0, "boot_seconds": 1.0},
                          "c": {"build_seconds": 18.0, "boot_seconds": 1.0}},
              "steps": [{"kind": "range", "rounds": 4, "measure_seconds": 60.0},
                        {"kind": "step", "rounds": 4, "measure_seconds": 90.0},
                        {"kind": "confirm", "rounds": 10, "measure_seconds": 120.0}],
              "result": {"verdict": "found", "culprit": "7b73f478164b369e", "subject": "ext4: flush",
                         "confirmed": "confirmed"}}
    store.start_bisect("host", "tree", "g", "b", record)
    lines = be.summary(store)
    assert lines[2] == "| 1 | slowed | 7b73f478164b ext4: flush (confirmed) | 3 (4+4+10) | 10.8 | 0.1 | 4.5 | 15.4 |"
    assert lines[-1].startswith("a step's rebuild: median 24 s of 2 (range 18-30 s); a boot: median 1.0 s of 3")

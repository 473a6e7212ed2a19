"""The machine's drift between sessions, pooled from the store's history."""

import math

import numpy as np
import pytest

from pytest_fsbench.verdicts import drift
from pytest_fsbench.metrics import Direction, Metric
from pytest_fsbench.store.results import Store


def test_pooled_drift_is_the_sessions_spread_about_each_series_mean():
    a = [100.0, 110.0, 90.0]
    b = [10.0, 11.0]
    found = drift.pooled([a, b, [5.0]], sessions=3)
    logs_a, logs_b = np.log(a), np.log(b)
    squares = ((logs_a - logs_a.mean()) ** 2).sum() + ((logs_b - logs_b.mean()) ** 2).sum()
    assert found.series == 2 and found.sessions == 3
    assert found.sd == pytest.approx(math.sqrt(squares / 3))
    assert found.df == 2  # 3 from the series, but 3 sessions give no more than 2
    assert drift.pooled([a, b, [5.0]], sessions=30).df == 3
    assert drift.pooled([[1.0], [2.0]]) is None


def test_more_baseline_sessions_and_less_drift_detect_smaller_changes():
    noisy, quiet = drift.Drift(0.10, 20, 5, 8), drift.Drift(0.03, 20, 5, 8)
    assert drift.detectable_pct(quiet, 1, 0.05) < drift.detectable_pct(noisy, 1, 0.05)
    assert drift.detectable_pct(noisy, 5, 0.05) < drift.detectable_pct(noisy, 1, 0.05)
    # t(20) 0.95 + t(20) 0.8 = 1.725 + 0.860; times sd and sqrt(1 + 1/1)
    assert drift.detectable_pct(noisy, 1, 0.05) == pytest.approx(-math.expm1(-2.585 * 0.10 * math.sqrt(2)) * 100,
                                                                 rel=1e-3)


def test_the_store_gives_this_hosts_complete_sessions_drift(tmp_path):
    store = Store(tmp_path / "s.db")
    rng = np.random.default_rng(1)
    for index in range(6):
        host = "here" if index < 5 else "elsewhere"
        session = store.start_session(f"s{index}", {}, {"hostname": host})
        row = store.case_row(session, "t[ext4-single]", "ext4-single", {}, "dd", {}, "drop", "random", {})
        level = 100.0 * math.exp(rng.normal(0, 0.05))
        for run in range(3):
            store.add_run(row, False, "t", 1.0, "drop",
                          [Metric("dd.write", level * (1 + run / 100), "MB/s", Direction.HIGHER)])
        store.finish_session(session, "complete")
    found = drift.from_store(store, "here")
    assert found is not None and found.df == 4 and found.sessions == 5
    assert drift.from_store(store, "here", exclude=[1]) is None  # 3 degrees of freedom: too few to rely on
    assert drift.from_store(store, "elsewhere") is None
    store.close()


def test_control_ratios_pair_each_run_with_its_control():
    from pytest_fsbench.verdicts.baseline import control_key, ratios
    from pytest_fsbench.store.results import SeriesKey

    assert ratios([100.0, 90.0], [50.0, 45.0]) == (2.0, 2.0)
    assert ratios([100.0, 90.0], [50.0]) is None  # a run without its control: no ratios
    assert ratios([100.0], [0.0]) is None
    key = SeriesKey("t", "dd", "{}", "dd.write", '{"bs":"1M"}')
    assert control_key(key) == SeriesKey("t", "dd", "{}", "control.write", "{}")

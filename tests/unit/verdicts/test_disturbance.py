"""A busier machine is named, not blamed (issue 32): the rule on what other processes left over,
and the gate's verdict on a case whose runs were disturbed beyond the baseline's."""

from __future__ import annotations

import pytest

from pytest_fsbench.metrics import Direction, Metric
from pytest_fsbench.store.results import Store
from pytest_fsbench.verdicts.baseline import Baseline
from pytest_fsbench.verdicts.disturbance import Load, busier, busier_baseline, busier_disk, disturbed, load_of
from pytest_fsbench.verdicts.gate import Gate, RegressionRule

TEST = "benchmarks/test_dd.py::test_dd_write[ext4-single-1M]"


@pytest.mark.parametrize("mine, theirs, expected", [
    (93.0, 2.0, True),  # burners on a quiet machine
    (94.0, 82.0, True),  # burners on a busy one: they left 6 % of the CPUs, not 18 %
    (5.0, 2.0, False),  # a quiet machine, quiet again
    (92.5, 85.5, True),  # left 7.5 %, not 14.5 %
    (86.0, 82.0, False),  # as busy as the baseline's runs, give or take
    (99.0, 97.0, False),  # saturated both times: 2 points are noise, not a new load
    (2.0, 93.0, False),  # quieter than the baseline's runs: not disturbed by others
    (60.0, None, True),  # no record of the baseline's load: taken as none
    (3.0, None, False),
])
def test_busier_is_more_points_and_much_less_left_over(mine, theirs, expected):
    assert busier(mine, theirs) is expected


def test_the_line_names_both_loads():
    line = disturbed(Load(cpu=93.4, disk=None), Load(cpu=2.0, disk=None))
    assert line == ("disturbed: other processes used 93% of the CPUs during these runs, 2% during the baseline's "
                    "(leaving 7%, not 98%)")
    assert disturbed(Load(cpu=4.0, disk=10.0), Load(cpu=2.0, disk=8.0)) is None
    assert disturbed(Load(cpu=None, disk=None), Load(cpu=2.0, disk=1.0)) is None
    disk = disturbed(Load(cpu=3.0, disk=1300.0), Load(cpu=2.0, disk=450.0))
    assert disk == ("disturbed: other processes moved 1300 MB/s on the disk under the images during these runs, "
                    "450 MB/s during the baseline's")
    unknown = disturbed(Load(cpu=60.0, disk=None), Load(cpu=None, disk=None))
    assert unknown.endswith("60% of the CPUs during these runs, and the baseline's runs have no record of it")


@pytest.mark.parametrize("mine, theirs, expected", [
    (1300.0, 450.0, True),  # an I/O hog beside other jobs' steady traffic
    (700.0, 450.0, False),  # other jobs' traffic, as it varies
    (123.0, 58.0, False),  # twice, but 65 MB/s more on a disk that writes GB/s
    (260.0, 5.0, True),
    (100.0, 1.0, False),  # a hundred times a trickle is still a trickle
    (260.0, None, True),
])
def test_busier_disk_is_twice_the_rate_and_more_than_a_trickle(mine, theirs, expected):
    assert busier_disk(mine, theirs) is expected


def session(store: Store, figures: list[float], others: list[float], token: str) -> int:
    sid = store.start_session(token, {"argv": []}, {"hostname": "h"})
    row = store.case_row(sid, TEST, "ext4-single", {"fs": "ext4", "layout": "single", "options": {}}, "dd",
                         {"bs": "1M"}, "drop", "random", {})
    for figure, cpu in zip(figures, others):
        store.add_run(row, False, "t", 1.0, "drop", [
            Metric("dd.write", figure, "MB/s", Direction.HIGHER), Metric("cpu.others", cpu, "%", Direction.LOWER),
            Metric("disk.others", 1.0, "MB/s", Direction.LOWER)])
    store.finish_case(row, "done", "runs")
    store.finish_session(sid, "complete")
    return sid


BASE = [600.0, 610.0, 590.0, 605.0, 595.0, 615.0, 585.0, 600.0, 602.0, 598.0]
HALF = [v / 2 for v in BASE]


def judged(tmp_path, figures, others, on_inconclusive="pass"):
    store = Store(tmp_path / "fsbench.db")
    base = session(store, BASE, [2.0] * 10, "t-base")
    new = session(store, figures, others, "t-new")
    gate = Gate((RegressionRule(None, 5.0),), Baseline(store, "base", [base]), on_inconclusive=on_inconclusive)
    series = store.series(new)
    return gate.judge(series, [], {})


def test_a_halved_figure_beside_other_work_is_inconclusive_and_says_why(tmp_path):
    judgement = judged(tmp_path, HALF, [93.0, 95.0, 91.0, 94.0, 93.0, 92.0, 96.0, 90.0, 93.0, 94.0])
    [line] = judgement.lines
    assert line.startswith("ext4-single inconclusive: disturbed: other processes used 93% of the CPUs during these "
                           "runs, 2% during the baseline's (leaving 7%, not 98%), so the change is not judged: "
                           "dd.write 600 -> 300 MB/s")
    assert "regression" not in line and "within" not in line
    assert judgement.failed == [False] and judgement.passed_undecided == [line]


def test_inconclusive_fail_fails_a_disturbed_case(tmp_path):
    judgement = judged(tmp_path, BASE, [93.0] * 10, on_inconclusive="fail")
    assert judgement.failed == [True] and "within" not in judgement.lines[0]
    assert "disturbed: other processes used 93%" in judgement.lines[0]


def test_a_quiet_machines_figure_is_judged_as_before(tmp_path):
    [line] = judged(tmp_path, HALF, [3.0] * 10).lines
    assert line.startswith("ext4-single regression: dd.write 600 -> 300 MB/s") and "disturbed" not in line


def test_load_of_pools_the_runs():
    class S:  # a Series' fields the load reads
        def __init__(self, metric, values):
            self.key = type("K", (), {"metric": metric, "params": "{}"})()
            self.values = values

    load = load_of([S("cpu.others", (10.0, 20.0)), S("disk.others", (50.0,)), S("disk.write", (9.0,)),
                    S("cpu.others", (30.0,))])
    assert load == Load(cpu=20.0, disk=50.0)
    assert load_of([S("dd.write", (1.0,))]) == Load(None, None)


def test_a_disturbed_case_is_decided_at_its_look(tmp_path):
    """The sequential gate stops a disturbed case at the look: more runs under the same load would
    still be disturbed; the same noisy runs on a quiet machine look on."""
    store = Store(tmp_path / "fsbench.db")
    base = session(store, BASE, [2.0] * 10, "t-base")
    noisy = [600.0, 420.0, 780.0, 500.0, 690.0, 560.0]
    quiet = session(store, noisy, [3.0] * 6, "t-quiet")
    busy = session(store, noisy, [93.0] * 6, "t-busy")
    gate = Gate((RegressionRule(None, 5.0),), Baseline(store, "base", [base], looks=(6, 10, 20, 30)),
                looks=(6, 10, 20, 30), sequential=True)
    assert gate.decided(store.series(quiet)) is False
    assert gate.decided(store.series(busy)) is True


def test_a_busier_baseline_is_named_the_other_way_round():
    line = busier_baseline(Load(cpu=35.0, disk=3.0), Load(cpu=85.0, disk=2.0))
    assert line == ("the baseline was measured on a busier machine: other processes used 85% of the CPUs during "
                    "the baseline's runs, 35% during these")
    assert busier_baseline(Load(cpu=85.0, disk=None), Load(cpu=80.0, disk=None)) is None
    assert busier_baseline(Load(cpu=2.0, disk=None), Load(cpu=None, disk=None)) is None  # none recorded: quiet


def busy_baseline_judged(tmp_path, figures, rule=5.0):
    store = Store(tmp_path / "fsbench.db")
    base = session(store, BASE, [85.0] * 10, "t-base")
    new = session(store, figures, [35.0] * 10, "t-new")
    gate = Gate((RegressionRule(None, rule),), Baseline(store, "base", [base]))
    return gate.judge(store.series(new), [], {})


def test_a_baseline_saved_on_a_busier_machine_rules_nothing_out(tmp_path):
    """Issue 41: a baseline saved beside burners, then a faster-looking session on a quieter
    machine: 'within bounds, +38.7 %' passed a real slowdown. Now inconclusive, naming the baseline's
    load; a figure slower still on the quieter machine is a regression."""
    [line] = busy_baseline_judged(tmp_path / "a", [v * 1.387 for v in BASE]).lines
    assert line.startswith("ext4-single inconclusive: the baseline was measured on a busier machine: other processes "
                           "used 85% of the CPUs during the baseline's runs, 35% during these, so a change within "
                           "bounds cannot be told from a quieter machine: dd.write 600 -> 832.2 MB/s"), line
    [slower] = busy_baseline_judged(tmp_path / "b", HALF).lines
    assert slower.startswith("ext4-single regression: dd.write 600 -> 300 MB/s")
    assert slower.endswith("35% during these, and these runs are slower still")


def count_session(store: Store, token: str, flushes: list[float], others: float, figure: float = 600.0) -> int:
    sid = store.start_session(token, {"argv": []}, {"hostname": "h"})
    row = store.case_row(sid, TEST, "ext4-single", {"fs": "ext4", "layout": "single", "options": {}}, "dd",
                         {"bs": "1M"}, "drop", "random", {})
    for value in flushes:
        store.add_run(row, False, "t", 1.0, "drop", [
            Metric("dd.write", figure, "MB/s", Direction.HIGHER), Metric("cpu.others", others, "%", Direction.LOWER),
            Metric("work.flushes_per_gb", value, "/GB", Direction.LOWER)])
    store.finish_case(row, "done", "runs")
    store.finish_session(sid, "complete")
    return sid


def test_a_count_is_judged_whatever_the_load(tmp_path):
    """Beside burners (93 % of the CPUs others') the speed is not judged, the count is: unchanged
    with zero spread within bounds, ten times the flushes a regression, both in 3 runs."""
    store = Store(tmp_path / "fsbench.db")
    base = count_session(store, "base", [22.35] * 30, 2.0)
    same = count_session(store, "same", [22.35] * 3, 93.0, figure=300.0)
    more = count_session(store, "more", [223.5] * 3, 93.0, figure=300.0)
    gate = Gate((RegressionRule(None, 5.0), RegressionRule("work", 5.0)), Baseline(store, "base", [base]))
    unchanged = gate.judge(store.series(same), [], {})
    speed, count = unchanged.lines
    assert "disturbed" in speed and "dd.write" in speed
    assert count.startswith("ext4-single within bounds: work.flushes_per_gb 22.35 -> 22.35 /GB +0.0% "), count
    # a count of events: work:5% allows it x2.5 (when writeback and the journal run moves it), and says so
    assert "within the 150% allowed" in count and count.endswith(
        "a count of events, which moves with when writeback and the journal run: work:PCT allows it +150% at least")
    assert unchanged.failed == [False, False]
    worse = gate.judge(store.series(more), [], {})
    assert worse.lines[1].startswith("ext4-single regression: work.flushes_per_gb 22.35 -> 223.5 /GB +900.0% ")
    assert worse.failed == [False, True]
    assert gate.decided(store.series(more)) and gate.looks_sequentially  # counts decide, run by run


def test_a_rule_on_the_work_that_gated_no_count_gated_nothing(tmp_path):
    """A baseline with figures and no counts: the figures are compared, work:5% gates nothing, and
    the session says so (a rule that never applied is no pass)."""
    store = Store(tmp_path / "fsbench.db")
    base = session(store, BASE, [2.0] * 10, "t-base")
    new = session(store, BASE, [2.0] * 10, "t-new")
    gate = Gate((RegressionRule(None, 5.0), RegressionRule("work", 5.0)), Baseline(store, "base", [base]))
    series = store.series(new)
    judgement = gate.judge(series, [], {})
    [line] = gate.ungated([("ext4-single", series, judgement)], "base")
    assert line.startswith("--fail-on-regression=work:5% gated nothing: no case compared a count of the work it names")
    assert gate.unmatched([TEST], "base").startswith("--fail-on-regression=work:5% with --compare=base: the baseline "
                                                     "holds no count of the work per byte moved")

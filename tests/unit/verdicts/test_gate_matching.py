"""A gate whose baseline holds none of the session's tests, or holds a test with other workload
parameters, says so before anything is measured (issue 34: everything was measured, then "gated
nothing"). On a real store."""

from __future__ import annotations

from pytest_fsbench.metrics import Direction, Metric
from pytest_fsbench.store.results import Store
from pytest_fsbench.verdicts.baseline import Baseline
from pytest_fsbench.verdicts.gate import Gate, parse_rule

TEST = "benchmarks/test_dd.py::test_dd_write[ext4-single-1M]"


def gate_on(tmp_path) -> Gate:
    store = Store(tmp_path / "fsbench.db")
    session = store.start_session("tok-1", {}, {})
    row = store.case_row(session, TEST, "ext4-single", {"fs": "ext4"}, "dd", {"bs": "1M", "size": "256M"}, "drop",
                         "random", {})
    for value in (100.0, 101.0, 102.0):
        store.add_run(row, False, "t", 1.0, "drop", [Metric("dd.write", value, "MB/s", Direction.HIGHER)])
    return Gate((parse_rule("5%"),), Baseline(store, "base", [session]))


def test_a_baseline_holding_none_of_the_tests(tmp_path):
    gate = gate_on(tmp_path)
    assert gate.unmatched([TEST, "benchmarks/test_dd.py::test_dd_read[ext4-single-1M]"], "base") is None
    message = gate.unmatched(["benchmarks/test_dd.py::test_dd_write[xfs-single-1M]"], "base")
    assert message.startswith("--fail-on-regression with --compare=base: its session (1) measured none of this "
                              "session's tests") and "(the baseline holds test_dd_write[ext4-single-1M]; " in message


def test_a_test_measured_with_other_parameters(tmp_path):
    gate = gate_on(tmp_path)
    assert gate.unmatched_parameters(TEST, "dd", '{"bs":"1M","size":"256M"}') is None
    assert gate.unmatched_parameters("benchmarks/test_dd.py::test_dd_read[ext4-single-1M]", "dd", "{}") is None
    assert gate.unmatched_parameters(TEST, "dd", '{"bs":"1M","size":"8M"}') == (
        "--fail-on-regression: baseline 'base' measured test_dd_write[ext4-single-1M] with dd parameters "
        '{"bs":"1M","size":"256M"}, and this session with {"bs":"1M","size":"8M"}, so it cannot be compared and '
        "would gate nothing; run with the baseline's parameters, or --save a new baseline")


def test_without_rules_nothing_is_said(tmp_path):
    gate = gate_on(tmp_path)
    bare = Gate((), gate.baseline)
    assert bare.unmatched(["x"], "base") is None and bare.unmatched_parameters(TEST, "dd", "{}") is None

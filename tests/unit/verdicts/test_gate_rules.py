"""verdicts/gate.py's checks of the rules before anything is measured (issue 34): a rule that
would gate nothing, two rules for one metric."""

from __future__ import annotations

import pytest

from pytest_fsbench.errors import UsageError
from pytest_fsbench.verdicts.gate import RegressionRule, check_one_rule_each, gates_nothing
from pytest_fsbench.workloads import WORKLOAD_NAMES


@pytest.mark.parametrize("metric, tests, nothing", [
    ("dd.read", [("test_dd.py", "test_dd_write")], True),
    ("dd.read", [("test_dd.py", "test_dd_write"), ("test_dd.py", "test_dd_read")], False),
    ("dd.read", [("test_fio.py", "test_fio")], True),
    ("dd.read", [], True),
    ("iozone.write", [("test_iozone.py", "test_iozone_throughput")], True),
    ("iozone.write", [("test_iozone.py", "test_iozone")], False),
    ("kernel_build.seconds", [("test_kernel_build.py", "test_kernel_build")], False),
    ("dd.read", [("", "test_my_own")], False),  # a test of the user's may measure anything
    ("dd.read", [("test_pts.py", "test_pts")], False),
    (None, [("test_dd.py", "test_dd_write")], False),
])
def test_a_rule_gates_nothing_when_no_selected_test_measures_its_metric(metric, tests, nothing):
    assert gates_nothing(RegressionRule(metric, 5.0), tests, WORKLOAD_NAMES) is nothing


def test_two_rules_for_one_metric_are_refused():
    check_one_rule_each([RegressionRule("dd.write", 3.0), RegressionRule("dd.read", 3.0), RegressionRule(None, 5.0)])
    with pytest.raises(UsageError, match="dd.write:3% and dd.write:10% are two rules for dd.write"):
        check_one_rule_each([RegressionRule("dd.write", 3.0), RegressionRule("dd.write", 10.0)])

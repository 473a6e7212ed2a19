import pytest

from pytest_fsbench.errors import UsageError
from pytest_fsbench.gate import RegressionRule, failure_message, is_regression, parse_rule, rule_for
from pytest_fsbench.metrics import Direction
from pytest_fsbench.repeat import RepeatPolicy, parse_percent, pts_would_stop, stop_reason
from pytest_fsbench.stats import compare

TIGHT = [100.0, 100.5, 99.8, 100.2, 99.9, 100.1, 100.3]
LOOSE = [100.0, 140.0, 70.0, 120.0, 90.0, 60.0, 150.0]


def test_fixed_runs():
    policy = RepeatPolicy(runs=3)
    assert stop_reason(policy, 2, [[1.0, 2.0]], 0) is None
    assert stop_reason(policy, 3, [[1.0, 2.0, 3.0]], 0) == "runs"
    # runs are counted, not samples: a metric a tool leaves out of some runs (bonnie++'s +++++)
    # must not keep the case running forever
    assert stop_reason(policy, 3, [[1.0, 2.0, 3.0], [1.0]], 0) == "runs"


def test_dynamic_runs_stop_on_precision_or_budget():
    policy = RepeatPolicy(runs=6, until_ci=2.0, max_runs=7, max_seconds=60)
    assert stop_reason(policy, 5, [TIGHT[:5]], 0) is None  # below the minimum
    assert stop_reason(policy, 6, [TIGHT[:6]], 0) == "ci"
    assert stop_reason(policy, 6, [LOOSE[:6]], 0) is None
    assert stop_reason(policy, 6, [LOOSE[:6]], 61) == "time"
    assert stop_reason(policy, 7, [LOOSE], 0) == "max-runs"
    assert stop_reason(policy, 7, [LOOSE, [1.0]], 0) == "max-runs"


def test_pts_rule_stops_on_three_lucky_runs():
    # three close runs out of a noisy set: PTS's sigma% rule stops, the median CI rule cannot
    lucky = [100.0, 101.0, 100.5]
    assert pts_would_stop(lucky)
    assert stop_reason(RepeatPolicy(runs=3, until_ci=3.5), 3, [lucky], 0) is None


@pytest.mark.parametrize("kwargs", [{"runs": 0}, {"warmup": -1}, {"runs": 10, "max_runs": 5}])
def test_bad_policies(kwargs):
    with pytest.raises(UsageError):
        RepeatPolicy(**kwargs)


def test_percent_option():
    assert parse_percent("5%", "--until-ci") == 5.0 and parse_percent("2.5", "--until-ci") == 2.5
    with pytest.raises(UsageError, match="--until-ci='five': give a positive percentage"):
        parse_percent("five", "--until-ci")


def test_rules():
    assert parse_rule("5%") == RegressionRule(None, 5.0)
    assert parse_rule("dd.write:3") == RegressionRule("dd.write", 3.0)
    with pytest.raises(UsageError, match="expected PERCENT or METRIC:PERCENT"):
        parse_rule("dd.write>3%")
    rules = [RegressionRule(None, 5.0), RegressionRule("dd.read", 2.0), RegressionRule("cpu.system", 20.0)]
    assert rule_for(rules, "dd.read").threshold_pct == 2.0
    assert rule_for(rules, "dd.write").threshold_pct == 5.0
    assert rule_for(rules, "cpu.system").threshold_pct == 20.0
    assert rule_for(rules, "cpu.user") is None  # side metrics only when named


def test_regression_needs_size_and_significance():
    base = [100.0, 101.0, 99.0, 100.5, 99.5, 100.2]
    slower = [x * 0.9 for x in base]
    faster = [x * 1.1 for x in base]
    rule = RegressionRule(None, 5.0)
    cmp = compare(base, slower, Direction.HIGHER)
    assert is_regression(cmp, rule)
    assert not is_regression(cmp, RegressionRule(None, 15.0))  # worse, but within what is allowed
    assert not is_regression(compare(base, faster, Direction.HIGHER), rule)
    # for a time, longer is worse
    assert is_regression(compare(base, faster, Direction.LOWER), rule)
    # a 10 % drop seen in only 3 runs each cannot be significant with a rank test
    assert not is_regression(compare(base[:3], slower[:3], Direction.HIGHER), rule)


def test_failure_message():
    base = [100.0, 101.0, 99.0, 100.5, 99.5, 100.2]
    cmp = compare(base, [x * 0.9 for x in base], Direction.HIGHER)
    message = failure_message("btrfs-raid10", "dd.write", '{"bs":"1M"}', "MB/s", cmp, RegressionRule(None, 5.0))
    assert message.startswith("btrfs-raid10 dd.write bs=1M 100.1 -> 90.09 MB/s -10.0% [CI -10.9%, -9.1%]")
    assert "-10.0%" in message and "p=0.002 n=6/6 worse" in message
    assert message.endswith("a regression beyond the 5% allowed (baseline median 100.1, new 90.09 MB/s)")

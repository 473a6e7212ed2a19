import pytest

from pytest_fsbench.errors import UsageError
import numpy as np

from pytest_fsbench.verdicts import gate
from pytest_fsbench.verdicts.gate import INCONCLUSIVE, REGRESSION, WITHIN, RegressionRule, gate_message, parse_rule, rule_for
from pytest_fsbench.metrics import Direction
from pytest_fsbench.verdicts.repeat import RepeatPolicy, parse_percent, stop_reason
from pytest_fsbench.verdicts.sequential import looks, nominal_alpha
from pytest_fsbench.verdicts.stats import format_comparison, SESSIONS, compare

TIGHT = [100.0, 100.5, 99.8, 100.2, 99.9, 100.1, 100.3]
LOOSE = [100.0, 140.0, 70.0, 120.0, 90.0, 60.0, 150.0]


def test_fixed_runs():
    policy = RepeatPolicy(runs=3)
    assert stop_reason(policy, 2, [[1.0, 2.0]], 0) is None
    assert stop_reason(policy, 3, [[1.0, 2.0, 3.0]], 0) == "runs"
    # runs are counted, not samples: a metric a tool leaves out of some runs (bonnie++'s +++++)
    # must not keep the case running forever
    assert stop_reason(policy, 3, [[1.0, 2.0, 3.0], [1.0]], 0) == "runs"


def test_dynamic_runs_look_only_at_the_look_points():
    policy = RepeatPolicy(runs=6, until_ci=2.0, max_runs=10, max_seconds=60)
    assert policy.looks == (6, 10)
    assert policy.ci_confidence == pytest.approx(0.975)  # 5 % spread over two looks
    assert stop_reason(policy, 5, [TIGHT[:5]], 0) is None  # below the first look
    # 7 tight runs: their 97.5 % interval is (min, max)-ish and within 2 %, but 7 is no look point
    assert stop_reason(policy, 7, [TIGHT], 0) is None
    assert stop_reason(policy, 6, [LOOSE[:6]], 0) is None
    assert stop_reason(policy, 7, [LOOSE], 61) == "time"
    assert stop_reason(policy, 10, [LOOSE + LOOSE[:3]], 0) == "max-runs"
    tight10 = TIGHT + [100.0, 100.1, 99.95]
    assert stop_reason(policy, 10, [tight10], 0) == "ci"


def test_sequential_gate_stops_once_decided():
    policy = RepeatPolicy(runs=6, max_runs=20, sequential=True)
    assert policy.looks == (6, 10, 15, 20)
    assert stop_reason(policy, 6, [TIGHT[:6]], 0, decided=lambda: True) == "decided"
    assert stop_reason(policy, 6, [TIGHT[:6]], 0, decided=lambda: False) is None
    assert stop_reason(policy, 8, [TIGHT], 0, decided=lambda: True) is None  # between looks
    assert stop_reason(policy, 20, [TIGHT], 0, decided=lambda: False) == "max-runs"
    # nothing to decide sequentially (a baseline of several sessions): the fixed count
    assert stop_reason(policy, 6, [TIGHT[:6]], 0, decided=None) == "runs"


def test_three_lucky_runs_cannot_stop_the_precision_rule():
    # three close runs out of a noisy set (PTS's stddev < 3.5 % rule would stop): no median
    # interval exists yet, so --until-ci cannot
    lucky = [100.0, 101.0, 100.5]
    assert stop_reason(RepeatPolicy(runs=3, until_ci=3.5), 3, [lucky], 0) is None


@pytest.mark.parametrize("kwargs", [{"runs": 0}, {"warmup": -1}, {"runs": 10, "max_runs": 5, "sequential": True}])
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


BASE = [100.0, 101.0, 99.0, 100.5, 99.5, 100.2]


def test_three_verdicts():
    rule = 5.0
    slower = compare(BASE, [x * 0.9 for x in BASE], Direction.HIGHER)
    assert gate.verdict(slower, rule) == REGRESSION
    assert gate.verdict(slower, 15.0) == WITHIN  # worse, but its worse end is inside what is allowed
    same = compare(BASE, [x * 1.001 for x in BASE], Direction.HIGHER)
    assert gate.verdict(same, rule) == WITHIN
    noisy = compare([100.0, 60.0, 140.0, 90.0, 120.0, 70.0], [70.0, 40.0, 100.0, 95.0, 60.0, 130.0],
                    Direction.HIGHER)
    assert gate.verdict(noisy, rule) == INCONCLUSIVE
    text = gate.more_runs_text(noisy, rule, "--max-runs")
    assert "new runs against the baseline's 6 would likely decide it (now 6): --max-runs=" in text \
        or "no number of new runs against the baseline's 6 would likely decide it" in text, text
    # a time that rose by 10 %: worse for Direction.LOWER
    assert gate.verdict(compare(BASE, [x * 1.1 for x in BASE], Direction.LOWER), rule) == REGRESSION
    assert gate.verdict(compare(BASE, [x * 1.1 for x in BASE], Direction.HIGHER), rule) == WITHIN
    assert gate.fails(REGRESSION, "pass") and gate.fails(INCONCLUSIVE, "fail")
    assert not gate.fails(INCONCLUSIVE, "pass") and not gate.fails(WITHIN, "fail")


def test_significant_but_small_change_with_a_wide_interval_is_inconclusive():
    base = [96.0, 97.5, 99.0, 100.0, 101.0, 102.5, 104.0, 105.0]
    cmp = compare(base, [v * 0.96 for v in base], Direction.HIGHER)  # -4 %, 90 % CI about -6.9 .. -1.0 %
    assert cmp.verdict == "worse" and cmp.worse_end_pct < -5 < cmp.shift_pct
    assert gate.verdict(cmp, 5.0) == INCONCLUSIVE


def test_more_runs_for_sessions_speak_of_sessions():
    cmp = compare([[100.0, 101.0], [90.0, 91.0]], [95.0, 96.0], Direction.HIGHER, method=SESSIONS)
    assert gate.verdict(cmp, 5.0) == INCONCLUSIVE
    text = gate.more_runs_text(cmp, 5.0)
    assert "with the baseline sessions' spread, no number of baseline sessions would decide it" in text
    assert "--paired=FS:KEY=VALUE" in text and "--kernel=A,B" in text
    spread = compare([[100.0, 101.0, 99.0], [92.0, 93.0, 91.0], [106.0, 105.0, 107.0]], [80.0, 81.0, 79.0],
                     Direction.HIGHER, method=SESSIONS)
    assert gate.verdict(spread, 5.0) == INCONCLUSIVE  # -20 %, but 3 sessions cannot show it is significant
    assert gate.more_runs_text(spread, 5.0).startswith("about ") and "baseline sessions would likely decide" in \
        gate.more_runs_text(spread, 5.0)


def test_too_few_runs_for_an_interval_say_so_in_both_directions():
    for direction, base, new in ((Direction.HIGHER, [100.0, 101.0], [90.0, 91.0]),
                                 (Direction.LOWER, [1 / 100, 1 / 101], [1 / 90, 1 / 91])):
        cmp = compare(base, new, direction)
        assert not cmp.has_interval and gate.verdict(cmp, 5.0) == INCONCLUSIVE
        assert gate.more_runs_text(cmp, 5.0).startswith("2/2 runs are too few for any interval at this level: it "
                                                        "takes at least 5 new runs (--runs=5)")


def test_gate_messages_name_verdict_change_interval_and_p():
    cmp = compare(BASE, [x * 0.9 for x in BASE], Direction.HIGHER)
    message = gate_message("btrfs-raid10", "dd.write", '{"bs":"1M"}', "MB/s", cmp, RegressionRule(None, 5.0))
    assert message.startswith("btrfs-raid10 regression: dd.write bs=1M 100.1 -> 90.09 MB/s -10.0% [90% CI ")
    assert "p=0.001 n=6/6 worse" in message and message.endswith("worse than the 5% allowed")
    within = gate_message("x", "dd.write", "{}", "MB/s", cmp, RegressionRule(None, 15.0))
    assert "within bounds:" in within and within.endswith("within the 15% allowed")


def test_futility_asks_what_the_ci_job_needs():
    """An undecided case that passes (--inconclusive=pass) stops looking once a regression is
    unlikely by --max-runs; a sign-off job (fail) looks on while the within-bounds side can still
    be reached; an undecided slowdown beyond the rule looks on either way."""
    rng = np.random.default_rng(4)
    base = 100 * rng.lognormal(0, 0.05, 10)
    same = compare(base, 100 * rng.lognormal(0, 0.06, 10), Direction.HIGHER, 0.027)  # +1.9 % [-5.1, +9.9]
    rng = np.random.default_rng(3)
    base = 100 * rng.lognormal(0, 0.10, 10)
    slower = compare(base, 92 * rng.lognormal(0, 0.10, 10), Direction.HIGHER, 0.027)  # -6.7 % [-15.1, +3.5]
    assert gate.verdict(same, 5) == gate.verdict(slower, 5) == INCONCLUSIVE
    assert gate.regression_chance(same, 5, 30) < gate.FUTILE_CHANCE
    assert gate.futile(same, 5, 30, "pass") and not gate.futile(same, 5, 30, "fail")
    assert gate.regression_chance(slower, 5, 30) > 0.5
    assert not gate.futile(slower, 5, 30, "pass")
    # a sign-off job stops: new runs alone cannot narrow the interval past the baseline's share
    assert gate.new_runs_needed(slower, 5) == float("inf") and gate.futile(slower, 5, 30, "fail")
    assert gate.futile(slower, 5, 10, "pass")  # no runs left


def test_regression_chance_is_the_predictive_power_of_a_normal_estimate():
    """Against a closed form: the estimate beyond the limit by d, with standard error se from n of
    N new runs against m fixed baseline runs, ends beyond it with probability Phi(d / move), move^2
    = sigma^2 (N - n) / (n N), sigma^2 = se^2 / (1/m + 1/n)."""
    from scipy.stats import norm

    rng = np.random.default_rng(3)
    base = 100 * rng.lognormal(0, 0.10, 10)
    cmp = compare(base, 92 * rng.lognormal(0, 0.10, 10), Direction.HIGHER, 0.027)
    estimate = -np.log1p(cmp.shift_pct / 100)
    se = (estimate + np.log1p(max(cmp.pct_ci) / 100)) / norm.ppf(1 - cmp.alpha)
    sigma2 = se ** 2 / (1 / 10 + 1 / 10)
    expected = norm.cdf((estimate + np.log(0.95)) / np.sqrt(sigma2 * (30 - 10) / (10 * 30)))
    assert gate.regression_chance(cmp, 5, 30) == pytest.approx(expected)


def test_rule_limits():
    for bad in ("0%", "100%", "dd.write:150"):
        with pytest.raises(UsageError, match="above 0 and below 100%"):
            parse_rule(bad)
    with pytest.raises(UsageError, match="--inconclusive='maybe'"):
        gate.parse_on_inconclusive("maybe")


def test_sequential_levels():
    assert looks(6, 20) == (6, 10, 15, 20) and looks(6, 6) == (6,) and looks(12, 16) == (12, 15, 16) and looks(2, 4) == (2, 4)
    assert nominal_alpha(0.05, 6, (6,)) == 0.05
    level = nominal_alpha(0.05, 10, looks(6, 20))
    assert 0.015 < level < 0.05  # Pocock: spent over four looks
    assert nominal_alpha(0.05, 10, looks(6, 20)) == level  # seeded: the same everywhere


def test_sequential_false_decisions_stay_at_alpha():
    """No change, four looks, each at the calibrated level: any 'worse' at any look is a false
    alarm. Checked with other random numbers than the calibration's."""
    rng = np.random.default_rng(2024)
    baseline_runs, points = 10, looks(6, 20)
    level = nominal_alpha(0.05, baseline_runs, points)
    trials, alarms, naive = 2000, 0, 0
    for _ in range(trials):
        base, new = rng.lognormal(0, 0.1, baseline_runs), rng.lognormal(0, 0.1, points[-1])
        verdicts = [compare(base, new[:n], Direction.HIGHER, level).verdict for n in points]
        alarms += "worse" in verdicts
        naive += any(compare(base, new[:n], Direction.HIGHER, 0.05).verdict == "worse" for n in points)
    assert alarms / trials <= 0.05 + 3 * (0.05 * 0.95 / trials) ** 0.5
    assert naive / trials > 0.07  # looking four times at 0.05 each would not hold alpha


def test_one_baseline_session_is_compared_on_the_machines_pooled_drift():
    base, new = [100.0, 101.0, 99.0, 100.5], [97.0, 96.0, 98.0, 97.5]
    with pytest.raises(ValueError, match="one and the machine's drift"):
        compare([base], new, Direction.HIGHER, method=SESSIONS)
    narrow = compare([base], new, Direction.HIGHER, method=SESSIONS, drift=(0.01, 40))
    wide = compare([base], new, Direction.HIGHER, method=SESSIONS, drift=(0.10, 40))
    assert narrow.drift_df == 40 and narrow.verdict == "worse" and wide.verdict == "not significant"
    assert wide.pct_ci[0] < narrow.pct_ci[0] < narrow.shift_pct < narrow.pct_ci[1] < wide.pct_ci[1]
    assert "drift pooled on 40 df" in format_comparison("dd.write", narrow)
    assert "this machine's drift between sessions" in gate.more_runs_text(wide, 1.0)


def test_only_throughputs_are_taken_as_ratios_to_the_control():
    """A slower machine lowers a throughput as it lowers the control, so their ratio cancels it;
    a time rises instead (its ratio would double the slowdown), and a share of CPU is no speed."""
    from pytest_fsbench.verdicts.baseline import normalised_by_control
    from pytest_fsbench.store.results import Series, SeriesKey

    def series(metric: str, unit: str, direction: Direction) -> Series:
        return Series(SeriesKey("t", "w", "{}", metric, "{}"), "ext4-single", unit, direction, (1.0, 2.0))

    assert normalised_by_control(series("dd.write", "MB/s", Direction.HIGHER))
    assert not normalised_by_control(series("kernel_build.seconds", "s", Direction.LOWER))
    assert not normalised_by_control(series("fio.cpu.usr", "%", Direction.LOWER))
    assert not normalised_by_control(series("control.write", "MB/s", Direction.HIGHER))

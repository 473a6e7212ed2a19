import math

import numpy as np
import pytest
from scipy import stats as st

from pytest_fsbench.metrics import Direction
from pytest_fsbench.stats import (
    Comparison,
    ci_halfwidth_pct,
    compare,
    format_comparison,
    median_ci_ranks,
    min_runs_for,
    percent_change,
    regression,
    summarize,
)

# S1-like fileserver throughputs (MB/s), one slow run at the end
OUTLIER = [108.2, 106.9, 110.4, 107.5, 109.1, 105.8, 108.8, 107.0, 109.6, 52.3]
# values as a tool prints them: rounded, with ties
TIES = [412.0, 400.0, 412.0, 380.0, 400.0, 412.0, 395.0]
CLEAN = [33.1, 34.0, 32.7, 33.5, 35.2, 33.0, 34.4, 32.9, 33.8, 34.1, 33.3, 36.0]


@pytest.mark.parametrize("data", [OUTLIER, TIES, CLEAN, [3.0, 1.0, 2.0]])
def test_summary_fields_match_numpy_and_scipy(data):
    s = summarize(data)
    x = np.array(data)
    n = len(data)
    assert s.n == n
    assert s.mean == pytest.approx(np.mean(x))
    assert s.median == pytest.approx(np.median(x))
    assert (s.min, s.max) == (x.min(), x.max())
    assert s.q1 == pytest.approx(np.quantile(x, 0.25, method="linear"))
    assert s.q3 == pytest.approx(np.quantile(x, 0.75, method="linear"))
    assert s.iqr == pytest.approx(st.iqr(x))
    assert s.stddev == pytest.approx(np.std(x, ddof=1))
    assert s.sem == pytest.approx(st.sem(x))
    assert s.cv == pytest.approx(np.std(x, ddof=1) / np.mean(x))
    low, high = st.t.interval(0.95, n - 1, loc=np.mean(x), scale=st.sem(x))
    assert s.mean_ci == pytest.approx((low, high))


def test_outlier_is_flagged_not_removed():
    s = summarize(OUTLIER)
    assert s.outliers == (52.3,)
    assert s.n == 10 and s.min == 52.3
    assert s.mean == pytest.approx(np.mean(OUTLIER))  # still in the mean


def test_ties_have_no_outliers_and_exact_quartiles():
    s = summarize(TIES)
    # sorted: 380 395 400 400 412 412 412 -> linear quartiles at positions 1.5 and 4.5
    assert (s.q1, s.median, s.q3) == (397.5, 400.0, 412.0)
    assert s.outliers == ()


def test_outliers_on_both_sides_keep_sample_order():
    assert summarize([10, 100, 10.2, 10.1, 9.9, 10.0, 1.0]).outliers == (100.0, 1.0)


def test_n1_gives_nan_spread_not_an_exception():
    s = summarize([42.0])
    assert (s.n, s.mean, s.median, s.min, s.max) == (1, 42.0, 42.0, 42.0, 42.0)
    assert (s.q1, s.q3, s.iqr) == (42.0, 42.0, 0.0)
    for value in (s.stddev, s.sem, s.cv, *s.mean_ci, *s.median_ci, s.median_ci_level):
        assert math.isnan(value)
    assert s.outliers == ()
    assert ci_halfwidth_pct([42.0]) == math.inf


def test_n2():
    s = summarize([10.0, 14.0])
    assert s.stddev == pytest.approx(np.std([10, 14], ddof=1))
    assert s.mean_ci == pytest.approx(st.t.interval(0.95, 1, loc=12.0, scale=st.sem([10, 14])))
    assert s.median_ci == (10.0, 14.0)
    assert s.median_ci_level == 0.5


@pytest.mark.parametrize("bad", [[], [1.0, float("nan")], [float("inf")], [[1.0, 2.0]]])
def test_empty_or_non_finite_raises(bad):
    with pytest.raises(ValueError):
        summarize(bad)


@pytest.mark.parametrize("n", range(1, 31))
def test_median_ci_ranks_match_binomial(n):
    lo, hi, level = median_ci_ranks(n)
    assert hi == n + 1 - lo
    if n == 1:
        assert level == 0.0
        return
    coverage = 1 - 2 * st.binom.cdf(lo - 1, n, 0.5)
    assert level == pytest.approx(coverage)
    if n <= 5:  # no 95 % order-statistic interval: (min, max) with its lower coverage
        assert (lo, level < 0.95) == (1, True)
    else:  # narrowest interval with coverage >= 95 %
        assert level >= 0.95
        assert 1 - 2 * st.binom.cdf(lo, n, 0.5) < 0.95


def test_median_ci_known_values():
    s = summarize(CLEAN)  # n = 12: ranks 3 and 10, coverage 1 - 2 * 79/4096
    xs = sorted(CLEAN)
    assert s.median_ci == (xs[2], xs[9])
    assert s.median_ci_level == pytest.approx(1 - 2 * 79 / 4096)
    s5 = summarize([5.0, 1.0, 4.0, 2.0, 3.0])
    assert s5.median_ci == (1.0, 5.0) and s5.median_ci_level == pytest.approx(0.9375)


def test_median_ci_coverage_by_simulation():
    rng = np.random.default_rng(20240601)
    draws = rng.lognormal(mean=4.0, sigma=0.6, size=(2000, 10))
    true_median = math.exp(4.0)
    covered = 0
    for row in draws:
        low, high = summarize(row).median_ci
        covered += low <= true_median <= high
    assert covered / 2000 >= 0.93  # nominal 0.979 for n = 10


def test_ci_halfwidth_pct():
    data = [100.0, 98.0, 103.0, 101.0, 99.0, 102.0, 97.0, 100.5, 99.5, 101.5]
    low, high = summarize(data).median_ci  # ranks 2 and 9: 98.0, 102.0
    assert (low, high) == (98.0, 102.0)
    assert ci_halfwidth_pct(data) == pytest.approx((102.0 - 98.0) / 2 / 100.25 * 100)
    assert ci_halfwidth_pct([100.0, 100.1, 99.9, 100.0, 100.05]) == math.inf  # n=5: no 95 % CI
    assert ci_halfwidth_pct([100.0] * 6) == 0.0


def test_percent_change():
    assert percent_change(412.3, 383.1) == pytest.approx(-7.0822, abs=1e-4)
    assert percent_change(50, 75) == 50.0
    with pytest.raises(ValueError):
        percent_change(0, 1)


def test_min_runs_for():
    assert min_runs_for(0.05) == 4
    assert min_runs_for() == 4
    assert min_runs_for(0.1) == 4  # 3 vs 3 reaches p = 0.1 exactly, never below
    assert min_runs_for(0.01) == 5
    assert min_runs_for(0.001) == 7  # 2/C(12,6) = 0.0022, 2/C(14,7) = 0.00058
    for alpha in (0.1, 0.05, 0.01):
        n = min_runs_for(alpha)
        low, high = list(range(1, n + 1)), list(range(101, 101 + n))
        assert compare(low, high, Direction.HIGHER, alpha).p_value < alpha
        fewer = compare(low[: n - 1], high[: n - 1], Direction.HIGHER, alpha)
        assert fewer.p_value >= alpha and not fewer.significant


def test_three_runs_per_side_can_never_be_significant():
    cmp = compare([100.0, 101.0, 102.0], [50.0, 51.0, 52.0], Direction.HIGHER)
    assert cmp.p_value == pytest.approx(0.1)
    assert cmp.verdict == "unchanged"
    assert cmp.pct_ci == (-100.0, math.inf)  # no 95 % interval exists at 3 vs 3
    # with ties too (scipy's normal approximation would say p = 0.047 here)
    assert compare([1.0, 1.0, 1.0], [2.0, 2.0, 2.0], Direction.LOWER).p_value == pytest.approx(0.1)


BASE = [412.0, 405.3, 418.9, 409.1, 399.7, 415.2, 420.4, 411.8]
WORSE = [383.1, 379.4, 391.2, 386.0, 377.9, 388.8, 381.5, 395.0]


def test_p_value_equals_scipy_exact_without_ties():
    cmp = compare(BASE, WORSE, Direction.HIGHER)
    assert cmp.method == "exact"
    assert cmp.p_value == pytest.approx(st.mannwhitneyu(BASE, WORSE, method="exact").pvalue)
    rng = np.random.default_rng(7)
    for _ in range(20):
        b, c = rng.lognormal(size=rng.integers(3, 12)), rng.lognormal(size=rng.integers(3, 12))
        expected = st.mannwhitneyu(b, c, method="exact").pvalue
        assert compare(b, c, Direction.LOWER).p_value == pytest.approx(expected, rel=1e-9)


@pytest.mark.skipif(not hasattr(st, "PermutationMethod"), reason="scipy < 1.11")
def test_p_value_with_ties_equals_scipy_exact_permutation():
    rng = np.random.default_rng(11)
    exact = st.PermutationMethod(n_resamples=np.inf)
    for m, n in [(4, 4), (5, 7), (6, 6)]:
        b = np.round(rng.normal(10, 1, m))
        c = np.round(rng.normal(11, 1, n))
        cmp = compare(b, c, Direction.HIGHER)
        assert cmp.method == "exact-ties"
        assert cmp.p_value == pytest.approx(st.mannwhitneyu(b, c, method=exact).pvalue, rel=1e-9)


def test_large_samples_use_scipy_asymptotic():
    rng = np.random.default_rng(3)
    b, c = np.round(rng.normal(100, 5, 60)), np.round(rng.normal(102, 5, 60))
    cmp = compare(b, c, Direction.HIGHER)
    assert cmp.method == "asymptotic"
    assert cmp.p_value == pytest.approx(st.mannwhitneyu(b, c, method="asymptotic").pvalue)


def test_comparison_fields():
    cmp = compare(BASE, WORSE, Direction.HIGHER)
    assert isinstance(cmp, Comparison)
    assert cmp.baseline_median == np.median(BASE) and cmp.candidate_median == np.median(WORSE)
    assert cmp.pct_change == pytest.approx((np.median(WORSE) - np.median(BASE)) / np.median(BASE) * 100)
    assert (cmp.n_baseline, cmp.n_candidate, cmp.alpha) == (8, 8, 0.05)
    assert cmp.significant and cmp.p_value < 0.001  # complete separation: 2/12870
    ratios = sorted(np.log(np.array(WORSE))[:, None].repeat(8, 1).ravel() - np.tile(np.log(BASE), 8))
    # Moses interval at 8 vs 8, 95 %: k = 14 (P(U <= 13) = 0.0249), i.e. ratios 14 and 51 of 64
    assert cmp.pct_ci == pytest.approx((math.expm1(ratios[13]) * 100, math.expm1(ratios[50]) * 100))
    assert cmp.pct_ci[0] < cmp.shift_pct < cmp.pct_ci[1] < 0


def test_ci_excludes_zero_exactly_when_significant():
    rng = np.random.default_rng(5)
    for _ in range(200):
        b = rng.lognormal(0, 0.2, 7)
        c = rng.lognormal(rng.choice([0.0, 0.15, -0.15]), 0.2, 7)
        cmp = compare(b, c, Direction.HIGHER)
        excludes_zero = cmp.pct_ci[0] > 0 or cmp.pct_ci[1] < 0
        assert excludes_zero == cmp.significant


@pytest.mark.parametrize(
    ("direction", "candidate", "verdict"),
    [
        (Direction.HIGHER, WORSE, "worse"),  # throughput dropped
        (Direction.LOWER, WORSE, "better"),  # time dropped
        (Direction.HIGHER, [v * 1.1 for v in BASE], "better"),
        (Direction.LOWER, [v * 1.1 for v in BASE], "worse"),
        (Direction.HIGHER, [v + 0.5 for v in BASE], "unchanged"),
        (Direction.LOWER, [v - 0.5 for v in BASE], "unchanged"),
    ],
)
def test_verdict_is_direction_aware(direction, candidate, verdict):
    assert compare(BASE, candidate, direction).verdict == verdict


def test_regression_gate():
    worse = compare(BASE, WORSE, Direction.HIGHER)  # -6.7 %, significant
    assert regression(worse, 5) is True
    assert regression(worse, 10) is False  # significant but smaller than the threshold
    assert regression(worse, 0) is True
    assert regression(compare(BASE, WORSE, Direction.LOWER), 5) is False  # faster: better
    slower = compare(BASE, [v * 1.2 for v in BASE], Direction.LOWER)  # +20 % time
    assert regression(slower, 15) is True
    assert regression(slower, 25) is False
    big_but_noisy = compare([100.0, 60.0, 140.0], [70.0, 40.0, 100.0], Direction.HIGHER)  # -30 %
    assert big_but_noisy.pct_change < -5 and regression(big_but_noisy, 5) is False
    with pytest.raises(ValueError):
        regression(worse, -1)


def test_compare_rejects_bad_input():
    with pytest.raises(ValueError):
        compare([], [1.0], Direction.HIGHER)
    with pytest.raises(ValueError):
        compare([1.0, 0.0], [1.0, 2.0], Direction.HIGHER)
    with pytest.raises(ValueError):
        compare([1.0, 2.0], [1.0, float("nan")], Direction.HIGHER)
    with pytest.raises(ValueError):
        compare([1.0, 2.0], [1.0, 2.0], Direction.HIGHER, alpha=0)


def test_format_comparison():
    cmp = Comparison(
        baseline_median=412.3, candidate_median=383.1, pct_change=-7.08, pct_ci=(-9.81, -4.02),
        shift_pct=-7.0, p_value=0.0041, n_baseline=8, n_candidate=8, significant=True,
        verdict="worse", direction=Direction.HIGHER, alpha=0.05, method="exact",
    )
    assert (
        format_comparison("dd.write", cmp, "MB/s")
        == "dd.write 412.3 -> 383.1 MB/s -7.1% [CI -9.8%, -4.0%] p=0.004 n=8/8 worse"
    )
    line = format_comparison("kernel_build.seconds", compare([3.0, 1.0, 2.0], [2.0, 3.0, 4.0], "lower"))
    assert line == "kernel_build.seconds 2.000 -> 3.000 +50.0% [CI -100.0%, +inf%] p=0.500 n=3/3 unchanged"
    fast = compare(BASE, WORSE, Direction.HIGHER)
    assert format_comparison("x", fast).endswith("p<0.001 n=8/8 worse")


# ---- simulations: false alarms and power of the gate ------------------------------------------

TRIALS = 500


def _rate(rng, shift: float, sigma: float, n: int = 8, threshold: float = 5.0) -> float:
    hits = 0
    for _ in range(TRIALS):
        base = 400 * rng.lognormal(0.0, sigma, n)
        cand = 400 * (1 + shift) * rng.lognormal(0.0, sigma, n)
        hits += regression(compare(base, cand, Direction.HIGHER), threshold)
    return hits / TRIALS


def test_aa_false_alarm_rate():
    # same distribution on both sides, noisy (CV ~ 20 %), 8 vs 8 runs
    rate = _rate(np.random.default_rng(1234), shift=0.0, sigma=0.2)
    assert rate <= 0.05 + 0.02


def test_ab_detection_rate():
    # candidate 15 % slower, CV 5 %, 8 vs 8 runs
    rate = _rate(np.random.default_rng(4321), shift=-0.15, sigma=0.05)
    assert rate >= 0.9

import math

import numpy as np
import pytest
from scipy import stats as st

from pytest_fsbench.metrics import Direction
from pytest_fsbench.verdicts.stats import (
    PAIRED,
    RANK,
    SESSIONS,
    Comparison,
    compare,
    format_comparison,
    median_ci_ranks,
    median_within,
    min_rounds_for,
    min_runs_for,
    paired_shift,
    percent_change,
    rank_shift,
    rank_sum_cdf,
    session_shift,
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
    assert not median_within([42.0], 50.0)


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


def test_median_within_checks_both_ends():
    data = [100.0, 98.0, 103.0, 101.0, 99.0, 102.0, 97.0, 100.5, 99.5, 101.5]
    low, high = summarize(data).median_ci  # ranks 2 and 9: 98.0, 102.0 around the median 100.25
    assert (low, high) == (98.0, 102.0)
    assert median_within(data, 2.25) and not median_within(data, 2.2)  # the low end is 2.24 % away
    skewed = [100.0, 100.1, 100.2, 100.3, 100.4, 100.5, 100.6, 100.7, 108.0, 109.0]
    low, high = summarize(skewed).median_ci
    half_width = (high - low) / 2 / summarize(skewed).median * 100
    assert half_width < 4.5 and not median_within(skewed, 4.5)  # half the width is not both ends
    assert not median_within([100.0, 100.1, 99.9, 100.0, 100.05], 5.0)  # n = 5: no 95 % interval
    assert median_within([100.0] * 6, 0.1)
    assert not median_within(data, 5.0, confidence=0.999)  # n = 10 has no 99.9 % interval


def test_percent_change():
    assert percent_change(412.3, 383.1) == pytest.approx(-7.0822, abs=1e-4)
    assert percent_change(50, 75) == 50.0
    with pytest.raises(ValueError):
        percent_change(0, 1)


def test_min_runs_for():
    # one-sided: the smallest p of n vs n runs is 1 / C(2n, n): 0.05 at n = 3, 0.0040 at n = 5
    assert min_runs_for(0.05) == 3 and min_runs_for() == 3
    assert min_runs_for(0.01) == 5
    assert min_runs_for(0.001) == 7  # 1/C(12,6) = 0.00108, 1/C(14,7) = 0.00029
    assert min_runs_for(0.05, baseline_runs=20) == 1  # 1/21
    assert min_runs_for(0.01, baseline_runs=6) == 4  # 1/C(10,4) = 0.0048; 1/C(9,3) = 0.012
    for alpha in (0.05, 0.01):
        n = min_runs_for(alpha)
        low, high = [10.0 + i for i in range(n)], [100.0 + i for i in range(n)]
        assert compare(high, low, Direction.HIGHER, alpha).verdict == "worse"
        assert compare(high[: n - 1], low[: n - 1], Direction.HIGHER, alpha).verdict == "not significant"


def test_min_rounds_for():
    assert (min_rounds_for(0.05), min_rounds_for(0.01)) == (5, 7)  # 1/32, 1/128
    up = [1.0, 2.0, 3.0, 4.0, 5.0]
    assert compare(up, [v * 0.9 for v in up], Direction.HIGHER, method=PAIRED).verdict == "worse"
    assert compare(up[:4], [v * 0.9 for v in up[:4]], Direction.HIGHER, method=PAIRED).verdict == "not significant"


def test_one_slow_baseline_run_cannot_hide_a_20_percent_drop():
    cmp = compare([100, 100.5, 101, 99.5, 99, 60], [80, 80.5, 81, 79.5, 79, 80.2], Direction.HIGHER)
    assert cmp.verdict == "worse" and cmp.p_value == pytest.approx(0.0325, abs=1e-4)  # P(U <= 6) at 6 vs 6
    assert cmp.pct_ci[1] < 0


BASE = [412.0, 405.3, 418.9, 409.1, 399.7, 415.2, 420.4, 411.8]
WORSE = [383.1, 379.4, 391.2, 386.0, 377.9, 388.8, 381.5, 395.0]


def test_one_sided_p_equals_scipy_exact_without_ties():
    rng = np.random.default_rng(7)
    for _ in range(30):
        b, c = rng.lognormal(size=rng.integers(3, 12)), rng.lognormal(size=rng.integers(3, 12))
        shift = rank_shift(b, c, Direction.HIGHER, 0.05)
        assert shift.p_worse == pytest.approx(st.mannwhitneyu(c, b, alternative="less", method="exact").pvalue)
        assert shift.p_better == pytest.approx(st.mannwhitneyu(c, b, alternative="greater", method="exact").pvalue)
        # lower is better: a larger candidate is worse
        lower = rank_shift(b, c, Direction.LOWER, 0.05)
        assert lower.p_worse == pytest.approx(shift.p_better)


@pytest.mark.skipif(not hasattr(st, "PermutationMethod"), reason="scipy < 1.11")
def test_ties_make_the_test_conservative_never_liberal():
    rng = np.random.default_rng(11)
    exact = st.PermutationMethod(n_resamples=np.inf)
    for m, n in [(4, 4), (5, 7), (6, 6)]:
        b = np.round(rng.normal(10, 1, m))
        c = np.round(rng.normal(9.5, 1, n))
        tied_exact = st.mannwhitneyu(c, b, alternative="less", method=exact).pvalue
        assert rank_shift(b, c, Direction.HIGHER, 0.05).p_worse >= tied_exact - 1e-12


def test_moses_bounds_are_the_ordered_differences_the_test_inverts():
    cmp = compare(BASE, WORSE, Direction.HIGHER)
    diffs = np.sort((np.log(WORSE)[:, None] - np.log(BASE)[None, :]).ravel())
    # c = largest count with P(U <= c) <= 0.05 at 8 vs 8: P(U <= 15) = 0.0415, P(U <= 16) = 0.0524
    u_cdf = rank_sum_cdf(8, 8)
    c = int(np.flatnonzero(u_cdf <= 0.05)[-1])
    assert c == 15
    assert cmp.pct_ci == pytest.approx((math.expm1(diffs[c]) * 100, math.expm1(diffs[63 - c]) * 100))
    assert cmp.level == pytest.approx(0.9)
    assert cmp.pct_ci[0] < cmp.shift_pct < cmp.pct_ci[1] < 0
    assert cmp.shift_pct == pytest.approx(math.expm1(np.median(diffs)) * 100)
    assert cmp.p_value == pytest.approx(1 / math.comb(16, 8))  # complete separation


@pytest.mark.parametrize("method", [RANK, PAIRED])
def test_interval_and_test_agree_also_with_ties(method):
    rng = np.random.default_rng(5)
    for _ in range(300):
        b = np.round(rng.lognormal(3, 0.1, 7), 0)  # rounded: ties, and ties across the samples
        c = np.round(b.mean() * rng.lognormal(rng.choice([0.0, 0.08, -0.08]), 0.1, 7), 0)
        cmp = compare(b, c, Direction.HIGHER, method=method)
        assert (cmp.verdict == "worse") == (cmp.pct_ci[1] < 0)
        assert (cmp.verdict == "better") == (cmp.pct_ci[0] > 0)


def test_interval_coverage_by_simulation():
    rng = np.random.default_rng(99)
    covered = 0
    for _ in range(1000):
        b, c = rng.lognormal(0, 0.2, 6), 0.9 * rng.lognormal(0, 0.2, 6)
        low, high = compare(b, c, Direction.HIGHER).pct_ci
        covered += low <= -10.0 <= high
    assert covered / 1000 >= 0.88  # nominal 90 % (exact: >= 1 - 2 alpha)


def test_signed_rank_equals_scipy_wilcoxon():
    rng = np.random.default_rng(17)
    for n in (5, 8, 12, 20):
        a = rng.lognormal(3, 0.2, n)
        b = a * rng.lognormal(-0.05, 0.05, n)
        shift = paired_shift(a, b, Direction.HIGHER, 0.05)
        r = np.log(b) - np.log(a)
        assert shift.p_worse == pytest.approx(st.wilcoxon(r, alternative="less", method="exact").pvalue)
        assert shift.p_better == pytest.approx(st.wilcoxon(r, alternative="greater", method="exact").pvalue)


def test_pairing_cancels_drift_that_hides_a_change_from_independent_samples():
    drift = np.array([1.0, 1.3, 0.8, 1.6, 0.7, 1.2, 0.9, 1.5])  # the machine's speed, round by round
    a = 400 * drift * np.array([1.0, 1.01, 0.99, 1.0, 1.02, 0.98, 1.0, 1.01])
    b = 0.9 * 400 * drift * np.array([1.01, 1.0, 1.0, 0.99, 1.0, 1.01, 0.99, 1.0])
    assert compare(a, b, Direction.HIGHER).verdict == "not significant"
    paired = compare(a, b, Direction.HIGHER, method=PAIRED)
    assert paired.verdict == "worse" and -11 < paired.shift_pct < -9
    with pytest.raises(ValueError, match="one value per round"):
        compare(a, b[:-1], Direction.HIGHER, method=PAIRED)


def test_sessions_prediction_interval():
    sessions = [[500.0, 510, 490, 505], [350.0, 355, 345, 352], [480.0, 470, 490, 485]]
    medians = np.array([np.median(np.log(s)) for s in sessions])
    new = [400.0, 405, 395, 398]
    cmp = compare(sessions, new, Direction.HIGHER, method=SESSIONS)
    scale = medians.std(ddof=1) * math.sqrt(1 + 1 / 3)
    t = (np.median(np.log(new)) - medians.mean()) / scale
    assert cmp.p_value == pytest.approx(st.t(2).cdf(t)) and cmp.verdict == "not significant"
    assert cmp.sessions == 3 and cmp.n_baseline == 12
    half = st.t(2).ppf(0.95) * scale
    est = np.median(np.log(new)) - medians.mean()
    assert cmp.pct_ci == pytest.approx((math.expm1(est - half) * 100, math.expm1(est + half) * 100))
    # drift between sessions is in the baseline, so a new session as slow as the slowest is no alarm,
    # while a drop far beyond the sessions' spread is
    far = compare(sessions, [100.0, 101, 99, 100], Direction.HIGHER, method=SESSIONS)
    assert far.verdict == "worse" and far.pct_ci[1] < 0
    with pytest.raises(ValueError, match="two baseline sessions"):
        session_shift([[1.0, 2.0]], [1.0, 2.0], Direction.HIGHER, 0.05)


@pytest.mark.parametrize(
    ("direction", "candidate", "verdict"),
    [
        (Direction.HIGHER, WORSE, "worse"),  # throughput dropped
        (Direction.LOWER, WORSE, "better"),  # time dropped
        (Direction.HIGHER, [v * 1.1 for v in BASE], "better"),
        (Direction.LOWER, [v * 1.1 for v in BASE], "worse"),
        (Direction.HIGHER, [v + 0.5 for v in BASE], "not significant"),
        (Direction.LOWER, [v - 0.5 for v in BASE], "not significant"),
    ],
)
def test_verdict_is_direction_aware(direction, candidate, verdict):
    assert compare(BASE, candidate, direction).verdict == verdict


def test_compare_rejects_bad_input():
    with pytest.raises(ValueError):
        compare([], [1.0], Direction.HIGHER)
    with pytest.raises(ValueError):
        compare([1.0, 0.0], [1.0, 2.0], Direction.HIGHER)
    with pytest.raises(ValueError):
        compare([1.0, 2.0], [1.0, float("nan")], Direction.HIGHER)
    with pytest.raises(ValueError):
        compare([1.0, 2.0], [1.0, 2.0], Direction.HIGHER, alpha=0)
    with pytest.raises(ValueError):
        compare([1.0, 2.0], [1.0, 2.0], Direction.HIGHER, method="t-test")


def test_format_comparison():
    cmp = Comparison(
        baseline_median=412.3, candidate_median=383.1, pct_change=-7.08, pct_ci=(-9.81, -4.02),
        shift_pct=-7.0, p_value=0.0041, n_baseline=8, n_candidate=8, significant=True,
        verdict="worse", direction=Direction.HIGHER, alpha=0.05, method=RANK,
    )
    assert (
        format_comparison("dd.write", cmp, "MB/s")
        == "dd.write 412.3 -> 383.1 MB/s -7.0% [90% CI -9.8%, -4.0%] p=0.004 n=8/8 worse"
    )
    line = format_comparison("kernel_build.seconds", compare([3.0, 1.0, 2.0], [2.0, 3.0, 4.0], "lower"))
    assert line.startswith("kernel_build.seconds 2 -> 3 +50.0% [90% CI ")
    assert line.endswith("n=3/3 not significant")
    fast = compare(BASE, WORSE, Direction.HIGHER)
    assert format_comparison("x", fast).endswith("p<0.001 n=8/8 worse")
    sessions = compare([[100.0, 101.0], [90.0, 92.0]], [95.0, 96.0], Direction.HIGHER, method=SESSIONS)
    assert "n=2 sessions (4 runs)/2" in format_comparison("x", sessions)


def test_plain_numbers_never_use_exponents():
    from pytest_fsbench.verdicts.stats import plain

    assert [plain(x) for x in (12460.4, 24780.0, 412.34, 100.0, 0.05123, 0.0000123)] == [
        "12460", "24780", "412.3", "100", "0.05123", "0.000012"]


# ---- counts of the work (issue 41): ties and zeros are the rule -----------------------------


def test_counts_that_are_all_equal_give_a_clean_answer():
    from pytest_fsbench.verdicts.stats import COUNTS, compare

    same = compare([22.35] * 30, [22.35] * 3, Direction.LOWER, 0.05, method=COUNTS)
    assert (same.shift_pct, same.pct_ci, same.p_value, same.verdict) == (0.0, (0.0, 0.0), 1.0, "not significant")
    doubled = compare([1.0] * 30, [2.005] * 3, Direction.LOWER, 0.05, method=COUNTS)
    assert doubled.verdict == "worse" and doubled.shift_pct == pytest.approx(100.5)
    assert doubled.pct_ci == pytest.approx((100.5, 100.5)) and doubled.p_value == pytest.approx(1 / 5456)
    zeros = compare([0.0] * 10, [0.0] * 3, Direction.LOWER, 0.05, method=COUNTS)
    assert (zeros.pct_change, zeros.verdict, zeros.p_value) == (0.0, "not significant", 1.0)
    from_none = compare([0.0] * 10, [7.45] * 3, Direction.LOWER, 0.05, method=COUNTS)
    assert from_none.verdict == "worse" and from_none.shift_pct > 1000
    fewer = compare([7.45] * 10, [0.0] * 3, Direction.LOWER, 0.05, method=COUNTS)
    assert fewer.verdict == "better" and fewer.shift_pct == pytest.approx(-99.0, abs=0.1)


def test_tied_ranks_have_their_exact_permutation_distribution():
    """The mid-rank statistic's distribution, enumerated over every way to choose the candidate's
    runs: the tied counts neither hide a change nor make one."""
    from itertools import combinations

    from pytest_fsbench.verdicts.stats import doubled_mid_ranks, tied_rank_sum_cdf

    values = np.array([3.0, 3.0, 4.0, 3.0, 5.0, 3.0, 4.0])
    m = 3
    doubled = doubled_mid_ranks(values)
    assert sorted(doubled) == [5, 5, 5, 5, 11, 11, 14]  # ranks 1-4 tie at 2.5, 5-6 at 5.5, 7
    sums = [2 * sum(doubled[i] for i in chosen) // 2 for chosen in combinations(range(values.size), m)]
    cdf = tied_rank_sum_cdf(doubled, m)
    offset = m * (m + 1)
    for k in range(cdf.size):
        expected = sum(1 for total in sums if total - offset <= k) / len(sums)
        assert cdf[k] == pytest.approx(expected)


def test_a_count_that_rose_in_two_of_three_runs_is_not_hidden_by_ties():
    from pytest_fsbench.verdicts.stats import COUNTS, compare

    # ties counted fully against the change (as the rank test of times does) made p about 0.2
    found = compare([22.35] * 30, [22.35, 29.8, 29.8], Direction.LOWER, 0.05, method=COUNTS)
    assert found.p_value < 0.06 and found.shift_pct == pytest.approx(33.3, abs=0.1)

"""Statistics for benchmark samples: summaries, confidence intervals, A/B comparison, gating.

Pure functions, no I/O. Written for what filesystem benchmarks look like in practice: small samples
(n = 3..20 runs), skewed (a run can only be slowed down, never sped up beyond the hardware), with
outliers, often rounded by the tool that printed them (ties), on machines whose timings swing 2-5x
between sessions. Hence medians and rank methods first, means and t intervals only as the classic
figures the published studies reported (mean, stddev, SEM, 95 % CI).

Main entry points:

- :func:`summarize` -> :class:`Summary` (one sample of runs)
- :func:`median_within` (dynamic repetitions: run until the median is known to +-X %)
- :func:`compare` -> :class:`Comparison` (baseline vs candidate: one-sided tests with matching
  intervals, for independent runs, paired rounds or several baseline sessions)
- :func:`min_runs_for`, :func:`min_rounds_for`, :func:`percent_change`, :func:`format_comparison`
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields, replace
from functools import lru_cache
from typing import Sequence

import numpy as np
# scipy.special's distribution functions, not scipy.stats: the same numbers, and importing
# scipy.stats costs every fsbench command and pytest session about a second
from scipy.special import ndtr, stdtr, stdtrit

from ..metrics import Direction

#: Confidence level of the intervals in :class:`Summary`.
CONFIDENCE = 0.95

#: Exact p-values / interval constants are computed while n_baseline * n_candidate <= this
#: (50 x 50 runs); beyond it the normal approximation is accurate and used instead.
EXACT_LIMIT = 2500

_TUKEY_K = 1.5


# --------------------------------------------------------------------------------------------
# one sample
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Summary:
    """Descriptive statistics of one sample of benchmark runs (see :func:`summarize`)."""

    n: int
    mean: float
    median: float
    min: float
    max: float
    q1: float
    q3: float
    iqr: float
    stddev: float
    sem: float
    cv: float
    mean_ci: tuple[float, float]
    median_ci: tuple[float, float]
    median_ci_level: float
    outliers: tuple[float, ...]


def _as_array(samples: Sequence[float], what: str = "samples") -> np.ndarray:
    """1-D float array of finite values; ValueError for empty, non-finite or non-1-D input."""
    arr = np.asarray(samples, dtype=float)
    if arr.ndim != 1:
        raise ValueError(f"{what} must be a flat sequence of numbers, got shape {arr.shape}")
    if arr.size == 0:
        raise ValueError(f"{what} is empty: at least one value is needed")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{what} contains a non-finite value (nan or inf): {arr.tolist()}")
    return arr


@lru_cache(maxsize=None)
def median_ci_ranks(n: int, confidence: float = CONFIDENCE) -> tuple[int, int, float]:
    """Order statistics (1-based ranks lo, hi) bracketing the median, and their exact coverage.

    Distribution-free: for any continuous distribution the number of values below the true
    median is Binomial(n, 1/2), so P(x_(k) <= median <= x_(n+1-k)) = 1 - 2 * P(B <= k - 1).
    The narrowest symmetric pair whose coverage is >= ``confidence`` is returned. When even
    (min, max) falls short (n <= 5 at 95 %), (1, n) is returned with its actual, lower, coverage
    1 - 2 * 0.5**n (n = 1: coverage 0).
    """
    if n < 1:
        raise ValueError("n must be >= 1")
    total = 2**n
    best_k, best_cov = 1, 1.0 - 2.0 / total if n > 1 else 0.0
    tail = 0  # number of outcomes with B <= k - 1
    for k in range(1, n // 2 + 1):
        tail += math.comb(n, k - 1)
        coverage = 1.0 - 2.0 * tail / total
        if coverage >= confidence:
            best_k, best_cov = k, coverage
        else:
            break
    return best_k, n + 1 - best_k, best_cov


def summarize(samples: Sequence[float], confidence: float = CONFIDENCE) -> Summary:
    """Summary statistics of one sample (runs of one metric of one case).

    - Quartiles (q1, q3, iqr, outlier fences) use numpy's default ``linear`` method (Hyndman &
      Fan type 7), the one LibreOffice/Excel ``QUARTILE`` (``QUARTILE.INC``) use; the studies
      fsbench re-runs made their quartile tables and box plots with spreadsheets (S1 exported
      IOzone results as .ods), so fsbench's quartiles are directly comparable with theirs.
    - ``stddev`` is the sample standard deviation (ddof=1), ``sem = stddev / sqrt(n)``,
      ``cv = stddev / mean`` (a fraction, not a percent).
    - ``mean_ci``: Student t interval ``mean +- t(0.975, n-1) * sem``; assumes near-normal data,
      reported because the studies did. Prefer the median interval.
    - ``median_ci``: distribution-free order-statistic interval from the binomial distribution,
      exact coverage >= ``confidence`` (see :func:`median_ci_ranks`); ``median_ci_level`` is its
      actual coverage, e.g. 0.979 for n = 10. For n <= 5 no 95 % order-statistic interval exists:
      ``median_ci`` is (min, max) and ``median_ci_level`` its lower coverage (n=5: 0.9375).
    - ``outliers``: values outside Tukey's fences [q1 - 1.5 iqr, q3 + 1.5 iqr], in sample order.
      They are flagged only, never removed: every statistic above includes them.

    n = 1: stddev, sem, cv, mean_ci, median_ci and median_ci_level are nan (no spread can be
    estimated from one value); the quartiles are that value and iqr is 0. n = 0 raises ValueError,
    as does a nan or inf sample.
    """
    x = _as_array(samples)
    n = int(x.size)
    nan = float("nan")
    mean = float(np.mean(x))
    median = float(np.median(x))
    q1, q3 = (float(v) for v in np.percentile(x, [25, 75]))  # method="linear" (numpy default)
    iqr = q3 - q1
    if n >= 2:
        stddev = float(np.std(x, ddof=1))
        sem = stddev / math.sqrt(n)
        cv = stddev / mean if mean != 0 else nan
        half = float(stdtrit(n - 1, 0.5 + confidence / 2)) * sem
        mean_ci = (mean - half, mean + half)
        lo, hi, level = median_ci_ranks(n, confidence)
        xs = np.sort(x)
        median_ci = (float(xs[lo - 1]), float(xs[hi - 1]))
    else:
        stddev = sem = cv = level = nan
        mean_ci = median_ci = (nan, nan)
    low_fence, high_fence = q1 - _TUKEY_K * iqr, q3 + _TUKEY_K * iqr
    outliers = tuple(float(v) for v in x if v < low_fence or v > high_fence)
    return Summary(
        n=n, mean=mean, median=median, min=float(x.min()), max=float(x.max()), q1=q1, q3=q3,
        iqr=iqr, stddev=stddev, sem=sem, cv=cv, mean_ci=mean_ci, median_ci=median_ci,
        median_ci_level=level, outliers=outliers,
    )


def median_within(samples: Sequence[float], pct: float, confidence: float = CONFIDENCE) -> bool:
    """Whether both ends of the median's interval at ``confidence`` lie within +-pct % of the
    median (an interval need not be symmetric: both ends are checked, not half its width).

    False while no interval at that level exists (too few runs: a lucky close pair of runs must
    not stop the repetitions early) and when the median is 0.
    """
    s = summarize(samples, confidence)
    if not s.median_ci_level >= confidence or s.median == 0:  # also catches nan (n = 1)
        return False
    low, high = s.median_ci
    return low >= s.median - abs(s.median) * pct / 100 and high <= s.median + abs(s.median) * pct / 100


# --------------------------------------------------------------------------------------------
# two samples
# --------------------------------------------------------------------------------------------


def percent_change(base: float, new: float) -> float:
    """``(new - base) / base * 100``; ValueError when base is 0 (undefined)."""
    if base == 0:
        raise ValueError("percent change from a base of 0 is undefined")
    return (new - base) / abs(base) * 100.0


def _rank_sum_counts(scores: tuple[int, ...], m: int) -> np.ndarray:
    """counts[s] = number of size-m subsets of ``scores`` (positive ints) whose sum is s: the exact
    permutation distribution of a rank-sum statistic. Dynamic programming, O(len(scores) * m * sum)."""
    top = sum(sorted(scores, reverse=True)[:m])
    table = np.zeros((m + 1, top + 1))
    table[0, 0] = 1.0
    for i, v in enumerate(scores):
        for j in range(min(i + 1, m), 0, -1):
            table[j, v:] += table[j - 1, : top + 1 - v]
    return table[m]


def _normal_cdf(total: int, mean: float, sd: float) -> np.ndarray:
    """cdf[s] for s = 0..total of a count statistic, by the normal approximation (continuity-corrected)."""
    cdf = ndtr((np.arange(total + 1) + 0.5 - mean) / sd)
    cdf.flags.writeable = False
    return cdf


@lru_cache(maxsize=512)
def rank_sum_cdf(m: int, n: int) -> np.ndarray:
    """cdf[u] = P(U <= u) under H0 for U = the number of (candidate, baseline) pairs in one order,
    m candidate and n baseline runs without ties (Mann-Whitney); exact up to m * n = EXACT_LIMIT."""
    if m * n > EXACT_LIMIT:
        return _normal_cdf(m * n, m * n / 2, math.sqrt(m * n * (m + n + 1) / 12.0))
    counts = _rank_sum_counts(tuple(range(1, m + n + 1)), m)
    offset = m * (m + 1) // 2
    u_counts = counts[offset:offset + m * n + 1]
    cdf = np.cumsum(u_counts) / u_counts.sum()
    cdf.flags.writeable = False
    return cdf


@lru_cache(maxsize=512)
def signed_rank_cdf(n: int) -> np.ndarray:
    """cdf[t] = P(T <= t) under H0 for T = the number of positive Walsh averages of n paired
    differences symmetric about 0 (Wilcoxon's signed-rank statistic); exact up to n = 300."""
    total = n * (n + 1) // 2
    if n > 300:
        return _normal_cdf(total, total / 2, math.sqrt(n * (n + 1) * (2 * n + 1) / 24.0))
    counts = np.zeros(total + 1)
    counts[0] = 1.0
    for r in range(1, n + 1):
        counts[r:] = counts[r:] + counts[:-r].copy()
    cdf = np.cumsum(counts) / counts.sum()
    cdf.flags.writeable = False
    return cdf


def critical_count(cdf: np.ndarray, alpha: float) -> int:
    """The largest count c with P(T <= c) <= alpha (-1 when even T = 0 is likelier than alpha)."""
    return int(np.searchsorted(cdf, alpha * (1 + 1e-12), side="right")) - 1


@dataclass(frozen=True)
class Shift:
    """A one-sided shift test and its matching interval, on differences oriented so that a
    positive difference is *better*: ``estimate`` (median of the differences), ``low``/``high``
    (each a one-sided (1 - alpha) bound, together a (1 - 2 alpha) interval), and the one-sided
    p-values that the shift is negative (worse) or positive (better)."""

    estimate: float
    low: float
    high: float
    p_worse: float
    p_better: float


def shift_test(diffs: np.ndarray, cdf: np.ndarray, alpha: float) -> Shift:
    """Test and interval from one set of differences and the null cdf of their positive count.

    The statistic counts differences >= 0 as evidence against "worse" (ties count fully against the
    alternative, so tied data can only make the test more conservative), and the bounds invert the
    same test: ``p_worse <= alpha`` exactly when ``high < 0``, ``p_better <= alpha`` exactly when
    ``low > 0``. For two samples the differences are all log(candidate) - log(baseline) pairs (the
    Mann-Whitney test with the Hodges-Lehmann estimate and Moses' interval); for paired rounds the
    Walsh averages of per-round log ratios (Wilcoxon's signed-rank test and Tukey's interval).
    """
    d = np.sort(np.asarray(diffs, dtype=float))
    total = d.size
    c = critical_count(cdf, alpha)
    low = float(d[c]) if c >= 0 else -math.inf
    high = float(d[total - 1 - c]) if c >= 0 else math.inf
    not_worse = int(np.count_nonzero(d >= 0))
    not_better = int(np.count_nonzero(d <= 0))
    return Shift(float(np.median(d)), low, high, float(cdf[not_worse]), float(cdf[not_better]))


@lru_cache(maxsize=256)
def tied_rank_sum_cdf(doubled_ranks: tuple[int, ...], m: int) -> np.ndarray:
    """cdf[k] = P(2U <= k) under H0 for U = the number of (candidate, baseline) pairs in one order,
    ties counted a half, m candidate runs among these pooled runs' doubled mid-ranks: the exact
    permutation distribution given the ties (Mann-Whitney with ties), up to EXACT_LIMIT pairs,
    else the normal approximation with the ties' variance correction."""
    total = len(doubled_ranks)
    n = total - m
    if m * n > EXACT_LIMIT:
        groups = np.unique(np.asarray(doubled_ranks), return_counts=True)[1]
        variance = m * n / 12.0 * ((total + 1) - float((groups ** 3 - groups).sum()) / (total * (total - 1)))
        return _normal_cdf(2 * m * n, m * n, 2 * math.sqrt(max(variance, 1e-12)))
    counts = _rank_sum_counts(doubled_ranks, m)
    offset = m * (m + 1)  # 2U = 2R - m(m + 1)
    u_counts = np.zeros(2 * m * n + 1)
    present = counts[offset:offset + 2 * m * n + 1]
    u_counts[:present.size] = present
    cdf = np.cumsum(u_counts) / u_counts.sum()
    cdf.flags.writeable = False
    return cdf


def doubled_mid_ranks(values: np.ndarray) -> tuple[int, ...]:
    """Each value's rank among them, ties sharing their mean rank, doubled (an integer)."""
    order = np.argsort(values, kind="mergesort")
    ranks = np.empty(values.size)
    sorted_values = values[order]
    start = 0
    while start < values.size:
        end = start
        while end + 1 < values.size and sorted_values[end + 1] == sorted_values[start]:
            end += 1
        ranks[order[start:end + 1]] = start + end + 2  # twice the mean of ranks start+1 .. end+1
        start = end + 1
    return tuple(int(r) for r in ranks)


#: where a count is zero in some run, its values are compared as log(value + COUNT_FLOOR x the
#: smallest value above zero), so a zero compares (0 -> 5 flushes per GB is a rise)
COUNT_FLOOR = 0.01


def count_floor(baseline: np.ndarray, candidate: np.ndarray) -> float:
    """What is added to every value of a count before its log: nothing when no value is zero, else
    COUNT_FLOOR of the smallest value above zero (1 when every value is zero)."""
    values = np.concatenate([baseline, candidate])
    if np.all(values > 0):
        return 0.0
    above = values[values > 0]
    return COUNT_FLOOR * float(above.min()) if above.size else 1.0


def count_shift(baseline: Sequence[float], candidate: Sequence[float], direction: Direction,
                alpha: float) -> tuple[Shift, float]:
    """Counts of the work (device bytes, requests, flushes, commits per byte moved): runs that are
    often equal, some zero. Mann-Whitney on the logs of each value plus the floor (count_floor), ties
    counted a half with their exact permutation distribution, so equal runs neither hide a change
    nor make one (every run equal on both sides: p = 1 both ways, interval 0); the Hodges-Lehmann
    estimate and Moses' interval on all pairwise differences. Returns the shift and the floor."""
    base, cand = _as_array(baseline, "baseline"), _as_array(candidate, "candidate")
    if np.any(base < 0) or np.any(cand < 0):
        raise ValueError("counts are never negative")
    floor = count_floor(base, cand)
    sign = 1.0 if Direction(direction) is Direction.HIGHER else -1.0
    b, c = sign * np.log(base + floor), sign * np.log(cand + floor)
    diffs = np.sort((c[:, None] - b[None, :]).ravel())
    critical = critical_count(rank_sum_cdf(c.size, b.size), alpha)
    low = float(diffs[critical]) if critical >= 0 else -math.inf
    high = float(diffs[diffs.size - 1 - critical]) if critical >= 0 else math.inf
    doubled = 2 * int(np.count_nonzero(diffs > 0)) + int(np.count_nonzero(diffs == 0))
    cdf = tied_rank_sum_cdf(doubled_mid_ranks(np.concatenate([c, b])), c.size)
    p_worse = float(cdf[doubled])
    p_better = float(1.0 - cdf[doubled - 1]) if doubled > 0 else 1.0
    return Shift(float(np.median(diffs)), low, high, p_worse, p_better), floor


def _oriented_logs(values: Sequence[float], direction: Direction, what: str) -> np.ndarray:
    """log values, negated when lower is better: larger is then always better."""
    arr = _as_array(values, what)
    if np.any(arr <= 0):
        raise ValueError("comparisons need positive values (throughputs, times)")
    return np.log(arr) if Direction(direction) is Direction.HIGHER else -np.log(arr)


def rank_shift(baseline: Sequence[float], candidate: Sequence[float], direction: Direction, alpha: float) -> Shift:
    """Two independent samples: Mann-Whitney on all pairwise log differences."""
    base, cand = _oriented_logs(baseline, direction, "baseline"), _oriented_logs(candidate, direction, "candidate")
    return shift_test((cand[:, None] - base[None, :]).ravel(), rank_sum_cdf(cand.size, base.size), alpha)


def paired_shift(reference: Sequence[float], candidate: Sequence[float], direction: Direction, alpha: float) -> Shift:
    """Paired rounds (reference[i] and candidate[i] measured in round i): signed-rank on the
    Walsh averages of the per-round log ratios, so drift that hits both alike cancels."""
    ref, cand = _oriented_logs(reference, direction, "reference"), _oriented_logs(candidate, direction, "candidate")
    if ref.size != cand.size:
        raise ValueError(f"paired samples need one value per round each, got {ref.size} and {cand.size}")
    r = cand - ref
    i, j = np.triu_indices(r.size)
    return shift_test((r[i] + r[j]) / 2, signed_rank_cdf(r.size), alpha)


def session_shift(baseline_sessions: Sequence[Sequence[float]], candidate: Sequence[float], direction: Direction,
                  alpha: float, drift: tuple[float, int] | None = None) -> Shift:
    """Baseline sessions: the candidate session's median against the baseline sessions' mean
    median (log scale), a prediction interval with Student's t. Its spread is the baseline
    sessions' own (k - 1 degrees of freedom, k >= 2), or drift = (sd, degrees of freedom), the
    machine's drift between sessions pooled from its history (any k >= 1). Session-to-session
    drift then widens the interval instead of raising false alarms."""
    logs = [_oriented_logs(s, direction, "baseline") for s in baseline_sessions]
    medians = np.array([np.median(x) for x in logs])
    k = medians.size
    if k < (1 if drift else 2):
        raise ValueError("session_shift needs at least two baseline sessions, or one and the machine's drift")
    cand = float(np.median(_oriented_logs(candidate, direction, "candidate")))
    # sessions whose medians happen to agree (rounded tool output) still carry their runs'
    # uncertainty: the spread of a session median is at least that of the median of its runs
    within = float(np.median([np.std(x, ddof=1) * 1.2533 / math.sqrt(x.size) for x in logs if x.size > 1] or [0.0]))
    spread, df = drift if drift else (float(np.std(medians, ddof=1)), k - 1)
    scale = max(spread, within, 1e-9) * math.sqrt(1 + 1 / k)
    estimate = cand - float(medians.mean())
    t = float(stdtrit(df, 1 - alpha))  # Student's t quantile and cdf (scipy.special: fast)
    p_worse = float(stdtr(df, estimate / scale))
    return Shift(estimate, estimate - t * scale, estimate + t * scale, p_worse, 1.0 - p_worse)


def min_runs_for(alpha: float = 0.05, baseline_runs: int | None = None) -> int:
    """Smallest number of new runs with which the one-sided rank test can reach p <= alpha.

    The smallest one-sided p of m new vs n baseline runs is 1 / C(m + n, m) (complete
    separation; ties only raise it). With as many runs on each side (baseline_runs None):
    n = 3 -> 0.05, n = 4 -> 0.014, n = 5 -> 0.004, so ``min_runs_for(0.05) == 3`` and
    ``min_runs_for(0.01) == 5``. A floor, not a recommendation. 0 when no count can (a
    baseline too small for alpha).
    """
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")
    for m in range(1, 10_000):
        n = m if baseline_runs is None else baseline_runs
        if 1 / math.comb(m + n, m) <= alpha:
            return m
    return 0


def min_rounds_for(alpha: float = 0.05) -> int:
    """Smallest number of paired rounds with which the one-sided signed-rank test can reach
    p <= alpha: 1 / 2**n (every round better on one side): 5 at 0.05, 7 at 0.01."""
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")
    return max(1, math.ceil(math.log2(1 / alpha) - 1e-12))


#: --alpha's default: the one-sided level of comparisons made without one (exports)
DEFAULT_ALPHA = 0.05
#: a comparison's verdict when neither side is significant: it gates nothing, and says only that
#: the runs cannot tell the two apart (not that they are the same)
NOT_SIGNIFICANT = "not significant"
#: how a Comparison was computed
RANK, PAIRED, SESSIONS, COUNTS = "rank-sum", "signed-rank", "sessions", "counts"


@dataclass(frozen=True)
class Comparison:
    """Baseline (or reference) vs candidate for one metric.

    ``shift_pct`` is the estimated change in percent (Hodges-Lehmann for runs, the difference of
    medians for sessions) and ``pct_ci`` its (1 - 2 alpha) interval, each end a one-sided
    (1 - alpha) bound, in the metric's own sense (a throughput drop is negative, a time rise
    positive). ``p_value`` is the one-sided p-value of the side the estimate lies on; ``verdict``
    is "worse" or "better" when that p <= alpha, else "not significant" (the data cannot tell). ``pct_change`` compares the
    two medians, for tables.
    """

    baseline_median: float
    candidate_median: float
    pct_change: float
    pct_ci: tuple[float, float]
    shift_pct: float
    p_value: float
    n_baseline: int
    n_candidate: int
    significant: bool
    verdict: str
    direction: Direction
    alpha: float
    method: str
    sessions: int = 1
    has_interval: bool = True  # False: too few runs for any interval at this level (pct_ci is -100..inf)
    drift_df: int = 0  # sessions compared on the machine's pooled drift: its degrees of freedom (0: not)
    #: what adjusted the compared values (ADJUSTED_BY_CONTROL), "" for none; when set, the medians and
    #: pct_change stay the figures' own, in their unit, and the shift, interval, p and verdict are the
    #: adjusted comparison's
    adjusted_by: str = ""

    @property
    def worse_end_pct(self) -> float:
        """The end of the interval on the worse side, as a percent change."""
        return self.pct_ci[0] if self.direction is Direction.HIGHER else self.pct_ci[1]

    @property
    def level(self) -> float:
        """Confidence level of pct_ci."""
        return 1 - 2 * self.alpha


#: a comparison of each run's figure over its --control run's, told beside the figures' medians
ADJUSTED_BY_CONTROL = "the control"


def with_figures(cmp: Comparison, baseline: Sequence[float], candidate: Sequence[float],
                 adjusted_by: str) -> Comparison:
    """An adjusted comparison carrying the figures' own medians (baseline: every baseline run's
    figure, as compare pools them), so every view shows them in the metric's unit, the adjustment
    beside them."""
    base, cand = float(np.median(_as_array(baseline))), float(np.median(_as_array(candidate)))
    return replace(cmp, baseline_median=base, candidate_median=cand, pct_change=percent_change(base, cand),
                   adjusted_by=adjusted_by)


def _stored(x: float) -> float | str:
    return x if math.isfinite(x) else str(x)  # JSON has no infinity (a side with no interval)


def comparison_to_dict(cmp: Comparison) -> dict[str, object]:
    """Every field of a comparison, as JSON keeps it (a case's manifest), for comparison_from_dict."""
    found = {f.name: getattr(cmp, f.name) for f in fields(cmp)}
    return {**found, "direction": cmp.direction.value, "pct_ci": [_stored(x) for x in cmp.pct_ci],
            "shift_pct": _stored(cmp.shift_pct), "pct_change": _stored(cmp.pct_change)}


def comparison_from_dict(found: dict) -> Comparison:
    """The comparison comparison_to_dict kept."""
    return Comparison(**{**found, "direction": Direction(found["direction"]),
                         "pct_ci": tuple(float(x) for x in found["pct_ci"]),
                         "shift_pct": float(found["shift_pct"]), "pct_change": float(found["pct_change"])})


def _to_pct(oriented_log: float, direction: Direction) -> float:
    x = oriented_log if direction is Direction.HIGHER else -oriented_log
    # + 0.0: no change on a lower-is-better figure is -0.0, which prints as "-0.0%"
    return float(np.expm1(x) * 100.0) + 0.0 if math.isfinite(x) else (math.inf if x > 0 else -100.0)


def compare(
    baseline: Sequence[float] | Sequence[Sequence[float]],
    candidate: Sequence[float],
    direction: Direction,
    alpha: float = 0.05,
    *,
    method: str = RANK,
    drift: tuple[float, int] | None = None,
) -> Comparison:
    """Compare candidate runs with a baseline of one metric, one-sided in each direction.

    method RANK: baseline is the runs of one session (Mann-Whitney with Hodges-Lehmann and Moses,
    exact, ties conservative); PAIRED: baseline is the reference runs of the same rounds
    (signed-rank); SESSIONS: baseline is a list of sessions' runs, with drift (sd, degrees of
    freedom) the machine's pooled drift between sessions (see :func:`session_shift`); COUNTS:
    baseline is runs of a count of the work, of one session or several pooled (see
    :func:`count_shift`: ties and zeros are the rule there, and no drift moves them).
    Ranks ignore how far an outlier is (one 3x-slow run cannot hide a real shift, as it does by
    inflating a t test's variance) and assume no distribution. A rank test has a smallest
    attainable p-value (see :func:`min_runs_for`). All values must be > 0 (ValueError otherwise).
    """
    if not 0 < alpha < 0.5:
        raise ValueError(f"alpha must be in (0, 0.5), got {alpha}")
    direction = Direction(direction)
    floor = 0.0
    if method == SESSIONS:
        sessions = [_as_array(s, "baseline") for s in baseline]
        shift = session_shift(sessions, candidate, direction, alpha, drift)
        pooled, k = np.concatenate(sessions), len(sessions)
    elif method == COUNTS:
        shift, floor = count_shift(baseline, candidate, direction, alpha)
        pooled, k = _as_array(baseline, "baseline"), 1
    elif method == PAIRED:
        shift, pooled, k = paired_shift(baseline, candidate, direction, alpha), _as_array(baseline, "reference"), 1
    elif method == RANK:
        shift, pooled, k = rank_shift(baseline, candidate, direction, alpha), _as_array(baseline, "baseline"), 1
    else:
        raise ValueError(f"unknown comparison method {method!r}")
    cand = _as_array(candidate, "candidate")
    bounds = sorted((_to_pct(shift.low, direction), _to_pct(shift.high, direction)))
    if shift.p_worse <= alpha:
        verdict, p = "worse", shift.p_worse
    elif shift.p_better <= alpha:
        verdict, p = "better", shift.p_better
    else:
        verdict, p = NOT_SIGNIFICANT, shift.p_worse if shift.estimate < 0 else shift.p_better
    base_median, cand_median = float(np.median(pooled)), float(np.median(cand))
    return Comparison(
        baseline_median=base_median, candidate_median=cand_median,
        pct_change=percent_change(base_median + (floor if base_median == 0 else 0.0),
                                  cand_median + (floor if base_median == 0 else 0.0)), pct_ci=(bounds[0], bounds[1]),
        shift_pct=_to_pct(shift.estimate, direction), p_value=min(1.0, p),
        n_baseline=int(pooled.size), n_candidate=int(cand.size), significant=verdict != NOT_SIGNIFICANT,
        verdict=verdict, direction=direction, alpha=alpha, method=method, sessions=k,
        has_interval=math.isfinite(shift.low) and math.isfinite(shift.high),
        drift_df=drift[1] if method == SESSIONS and drift else 0,
    )


# --------------------------------------------------------------------------------------------
# formatting
# --------------------------------------------------------------------------------------------


def _fmt_value(x: float) -> str:
    """About 4 significant digits, never in exponent notation: 412.3, 12346, 0.05123."""
    if x == 0 or not math.isfinite(x):
        return f"{x:g}"
    decimals = min(6, max(0, 3 - math.floor(math.log10(abs(x)))))
    return f"{x:.{decimals}f}"


def plain(x: float) -> str:
    """Four significant digits as a person reads them, never in exponent notation: 12460, 412.3,
    0.05123."""
    text = f"{x:.4g}"
    if "e" not in text or not math.isfinite(x):
        return text
    return f"{x:.0f}" if abs(x) >= 1 else _fmt_value(x)


def _fmt_pct(x: float) -> str:
    return f"{x:+.1f}%" if math.isfinite(x) else f"{x:+}%"


def p_text(p: float) -> str:
    """A one-sided p-value as every view prints it: 0.016, or <0.001."""
    return "<0.001" if p < 0.001 else f"{p:.3f}"


def level_text(cmp: Comparison) -> str:
    """The confidence level of a comparison's interval, as every view labels it: 90 (ci90,
    "90% CI"); 94.5 for a sequential look at 0.027."""
    return f"{cmp.level * 100:.3g}"


def comparison_record(cmp: Comparison) -> dict[str, object]:
    """A comparison for the exports, in the words and numbers the tables and lines print."""
    low, high = cmp.pct_ci
    return {"change_pct": round(cmp.shift_pct, 1), "interval_pct": [round(low, 1), round(high, 1)],
            "level_pct": float(level_text(cmp)), "p": p_text(cmp.p_value), "verdict": cmp.verdict,
            "method": cmp.method, "baseline_median": cmp.baseline_median, "candidate_median": cmp.candidate_median,
            "medians_change_pct": round(cmp.pct_change, 1), "adjusted_by": cmp.adjusted_by or None,
            "n": [cmp.n_baseline, cmp.n_candidate]}


def format_comparison(metric_name: str, cmp: Comparison, unit: str = "") -> str:
    """One line: ``dd.write 412.3 -> 383.1 MB/s -7.1% [90% CI -9.8%, -4.0%] p=0.004 n=8/8 worse``.

    Medians baseline -> candidate in the metric's unit, the estimated change and its (1 - 2 alpha)
    interval (each end a one-sided bound at alpha), the one-sided p-value (``p<0.001`` below that),
    n baseline/candidate (with several baseline sessions: sessions and runs) and the verdict. An
    adjusted comparison keeps the figures' medians and their change, and names the adjustment
    before its own change: ``dd.write 729.3 -> 729.7 MB/s (medians +0.1%), adjusted by the
    control: -3.3% [90% CI ...] ...``.
    """
    unit_part = f" {unit}" if unit else ""
    p = "p<0.001" if cmp.p_value < 0.001 else f"p={p_text(cmp.p_value)}"
    low, high = cmp.pct_ci
    n = (f"n={cmp.n_baseline}/{cmp.n_candidate}" if cmp.method != SESSIONS
         else f"n={cmp.sessions} session{'s' * (cmp.sessions > 1)} ({cmp.n_baseline} runs)/{cmp.n_candidate}"
         + (f", drift pooled on {cmp.drift_df} df" if cmp.drift_df else ""))
    adjusted = (f" (medians {_fmt_pct(cmp.pct_change)}), adjusted by {cmp.adjusted_by}:" if cmp.adjusted_by
                else "")
    return (
        f"{metric_name} {plain(cmp.baseline_median)} -> {plain(cmp.candidate_median)}{unit_part}{adjusted} "
        f"{_fmt_pct(cmp.shift_pct)} [{level_text(cmp)}% CI {_fmt_pct(low)}, {_fmt_pct(high)}] {p} {n} "
        f"{cmp.verdict}"
    )

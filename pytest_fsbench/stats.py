"""Statistics for benchmark samples: summaries, confidence intervals, A/B comparison, gating.

Pure functions, no I/O. Written for what filesystem benchmarks look like in practice: small samples
(n = 3..20 runs), skewed (a run can only be slowed down, never sped up beyond the hardware), with
outliers, often rounded by the tool that printed them (ties), on machines whose timings swing 2-5x
between sessions. Hence medians and rank methods first, means and t intervals only as the classic
figures the published studies reported (mean, stddev, SEM, 95 % CI).

Main entry points:

- :func:`summarize` -> :class:`Summary` (one sample of runs)
- :func:`ci_halfwidth_pct` (dynamic repetitions: run until the median is known to +-X %)
- :func:`compare` -> :class:`Comparison` (baseline vs candidate, direction-aware verdict)
- :func:`regression` (the gate), :func:`min_runs_for`, :func:`percent_change`,
  :func:`format_comparison`
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from typing import Sequence

import numpy as np
from scipy import stats as _st

from .metrics import Direction

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
        half = float(_st.t.ppf(0.5 + confidence / 2, n - 1)) * sem
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


def ci_halfwidth_pct(samples: Sequence[float]) -> float:
    """Half-width of the 95 % CI of the median, as a percentage of the median.

    ``(ci_high - ci_low) / 2 / |median| * 100`` with the order-statistic interval of
    :func:`summarize`. For the dynamic-repetitions rule "run until this is <= X %".

    Returns ``inf`` while no 95 % interval exists (n <= 5: (min, max) covers less than 95 %, so
    a lucky close pair of runs must not stop the repetitions early) and when the median is 0.
    """
    s = summarize(samples)
    if not s.median_ci_level >= CONFIDENCE or s.median == 0:  # also catches nan (n = 1)
        return math.inf
    low, high = s.median_ci
    return (high - low) / 2.0 / abs(s.median) * 100.0


# --------------------------------------------------------------------------------------------
# two samples
# --------------------------------------------------------------------------------------------


def percent_change(base: float, new: float) -> float:
    """``(new - base) / base * 100``; ValueError when base is 0 (undefined)."""
    if base == 0:
        raise ValueError("percent change from a base of 0 is undefined")
    return (new - base) / abs(base) * 100.0


def _rank_sum_counts(scores: tuple[int, ...], m: int) -> np.ndarray:
    """counts[s] = number of size-m subsets of ``scores`` (positive ints) whose sum is s.

    This is the exact permutation distribution of a rank-sum statistic, also with ties (scores
    are then doubled mid-ranks). Dynamic programming, O(len(scores) * m * sum).
    """
    top = sum(sorted(scores, reverse=True)[:m])
    table = np.zeros((m + 1, top + 1))
    table[0, 0] = 1.0
    for i, v in enumerate(scores):
        for j in range(min(i + 1, m), 0, -1):
            table[j, v:] += table[j - 1, : top + 1 - v]
    return table[m]


@lru_cache(maxsize=256)
def _untied_u_cdf(m: int, n: int) -> np.ndarray:
    """cdf[u] = P(U <= u) for the Mann-Whitney U of a sample of size m vs n, no ties, under H0."""
    counts = _rank_sum_counts(tuple(range(1, m + n + 1)), m)
    offset = m * (m + 1) // 2
    u_counts = counts[offset:offset + m * n + 1]
    cdf = np.cumsum(u_counts) / u_counts.sum()
    cdf.flags.writeable = False
    return cdf


def _exact_tied_pvalue(candidate: np.ndarray, baseline: np.ndarray) -> float:
    """Two-sided exact permutation p-value of the rank sum, conditional on the observed ties.

    Same definition as ``scipy.stats.mannwhitneyu(..., method=PermutationMethod(n_resamples=inf))``:
    2 * min(P(U <= u), P(U >= u)), capped at 1 (the tied null distribution is not symmetric).
    """
    pooled = np.concatenate([candidate, baseline])
    doubled = np.rint(2 * _st.rankdata(pooled)).astype(int)  # mid-ranks * 2: integers
    m = candidate.size
    counts = _rank_sum_counts(tuple(int(v) for v in doubled), m)
    observed = int(doubled[:m].sum())
    total = counts.sum()
    p_le = counts[: observed + 1].sum() / total
    p_ge = counts[observed:].sum() / total
    return float(min(1.0, 2.0 * min(p_le, p_ge)))


def _moses_k(m: int, n: int, alpha: float) -> int:
    """Largest k with P(U <= k - 1) <= alpha / 2 (0 when even k = 1 fails)."""
    if m * n <= EXACT_LIMIT:
        cdf = _untied_u_cdf(m, n)
        return int(np.searchsorted(cdf, alpha / 2 * (1 + 1e-12), side="right"))
    z = float(_st.norm.ppf(1 - alpha / 2))
    return max(0, math.floor(m * n / 2 - z * math.sqrt(m * n * (m + n + 1) / 12.0)))


def min_runs_for(alpha: float = 0.05) -> int:
    """Smallest equal number of runs per side for which :func:`compare` can reach p < alpha.

    The two-sided exact Mann-Whitney p-value is at least 2 / C(2n, n) (complete separation;
    ties can only raise it): n=3 -> 0.1, n=4 -> 0.029, n=5 -> 0.0079, n=6 -> 0.0022.
    So ``min_runs_for(0.05) == 4`` and ``min_runs_for(0.01) == 5``. This is a floor, not a
    recommendation: at n = 4 only a complete separation of all 8 runs is significant; use >= 6
    runs per side (also the smallest n with a 95 % median interval) and more on noisy machines.
    """
    if not 0 < alpha <= 1:
        raise ValueError(f"alpha must be in (0, 1], got {alpha}")
    n = 1
    while 2 / math.comb(2 * n, n) >= alpha:
        n += 1
    return n


@dataclass(frozen=True)
class Comparison:
    """Baseline vs candidate for one metric (see :func:`compare`).

    ``pct_change`` compares the medians; ``pct_ci`` is the (1 - alpha) confidence interval of the
    percent change and ``shift_pct`` its matching Hodges-Lehmann point estimate; ``method`` names
    how the p-value was computed ("exact", "exact-ties" or "asymptotic").
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


def compare(
    baseline: Sequence[float],
    candidate: Sequence[float],
    direction: Direction,
    alpha: float = 0.05,
) -> Comparison:
    """Compare candidate runs with baseline runs of one metric; direction-aware verdict.

    Test: two-sided Mann-Whitney U (Wilcoxon rank-sum), not Welch's t on log values. Ranks ignore
    how far an outlier is (one 3x-slow run cannot hide a real shift, as it does by inflating a
    t test's variance), and the test assumes no distribution (benchmark runs are skewed and not
    lognormal either). The p-value is exact: ``scipy.stats.mannwhitneyu(method="exact")`` without
    ties; with ties (tools print rounded numbers) the exact permutation distribution conditional on
    the ties, equal to scipy's ``PermutationMethod`` p-value but computed in milliseconds (scipy's
    normal approximation would be anti-conservative here: 3 tied runs vs 3 tied runs gives p=0.047
    where the exact p is 0.1). Beyond 50 x 50 runs the tie-corrected normal approximation is used.

    Cost of exactness: a rank test has a minimum attainable p-value. With 3 vs 3 runs the smallest
    two-sided p is 2/20 = 0.1, so 3 runs per side can NEVER be significant at alpha = 0.05 and a
    gate on 3 runs never fires. See :func:`min_runs_for` (4 for 0.05; 6+ advisable).

    Interval: Hodges-Lehmann shift of log values with its distribution-free (Moses) confidence
    interval, reported as percent ``(exp(x) - 1) * 100``. Chosen over a bootstrap of the ratio of
    medians: a bootstrap of a median from 3..8 values has a few distinct resampled medians and
    under-covers, and it needs a seed; the Moses interval is exact for a multiplicative shift,
    deterministic, and is the inversion of the same rank test, so it excludes 0 exactly when the
    test is significant (up to ties). Level is 1 - alpha (95 % by default). When no interval at that
    level exists (3 vs 3 at 95 %) it is (-100.0, inf): a ratio anywhere in (0, inf).

    Verdict: "unchanged" unless p < alpha; otherwise the side the rank statistic found (the
    candidate tends to be larger or smaller) read through ``direction``: for Direction.HIGHER a
    decrease is "worse", for Direction.LOWER an increase is "worse", the opposite "better".

    All values must be > 0 (throughputs, times): ValueError otherwise, or for an empty sample.
    """
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")
    direction = Direction(direction)
    base = _as_array(baseline, "baseline")
    cand = _as_array(candidate, "candidate")
    if np.any(base <= 0) or np.any(cand <= 0):
        raise ValueError("compare() needs positive values (throughputs, times)")
    m, n = cand.size, base.size

    exact = m * n <= EXACT_LIMIT
    tied = np.unique(np.concatenate([cand, base])).size < m + n
    if exact and tied:
        u = float(_st.mannwhitneyu(cand, base, method="asymptotic").statistic)
        p, method = _exact_tied_pvalue(cand, base), "exact-ties"
    else:
        method = "exact" if exact else "asymptotic"
        res = _st.mannwhitneyu(cand, base, alternative="two-sided", method=method)
        u, p = float(res.statistic), float(res.pvalue)

    diffs = np.sort((np.log(cand)[:, None] - np.log(base)[None, :]).ravel())
    shift_pct = float(np.expm1(np.median(diffs)) * 100.0)
    k = _moses_k(m, n, alpha)
    if k >= 1:
        pct_ci = (float(np.expm1(diffs[k - 1]) * 100.0), float(np.expm1(diffs[m * n - k]) * 100.0))
    else:
        pct_ci = (-100.0, math.inf)

    base_median, cand_median = float(np.median(base)), float(np.median(cand))
    significant = p < alpha
    if not significant or u == m * n / 2:
        verdict = "unchanged"
    else:
        increased = u > m * n / 2
        verdict = "better" if increased == (direction is Direction.HIGHER) else "worse"
    return Comparison(
        baseline_median=base_median, candidate_median=cand_median,
        pct_change=percent_change(base_median, cand_median), pct_ci=pct_ci, shift_pct=shift_pct,
        p_value=p, n_baseline=n, n_candidate=m, significant=significant, verdict=verdict,
        direction=direction, alpha=alpha, method=method,
    )


def regression(cmp: Comparison, threshold_pct: float) -> bool:
    """True when ``cmp`` is a significant change for the worse by more than ``threshold_pct``.

    Uses the point estimate (percent change of the medians, the number users see) plus
    significance, not "the whole CI beyond the threshold": with 5-10 runs on machines whose runs
    swing widely the interval is wide, and requiring its near bound past 5 % would miss most real
    10-15 % regressions. False alarms are already bounded by the test (at most alpha / 2 for a
    one-sided "worse" call when nothing changed); the threshold only filters significant but
    practically irrelevant changes. For Direction.HIGHER the median must drop by more than the
    threshold, for Direction.LOWER rise by more than it.
    """
    if threshold_pct < 0 or math.isnan(threshold_pct):
        raise ValueError(f"threshold_pct must be >= 0, got {threshold_pct}")
    if not cmp.significant or cmp.verdict != "worse":
        return False
    if cmp.direction is Direction.HIGHER:
        return cmp.pct_change < -threshold_pct
    return cmp.pct_change > threshold_pct


# --------------------------------------------------------------------------------------------
# formatting
# --------------------------------------------------------------------------------------------


def _fmt_value(x: float) -> str:
    """About 4 significant digits, never in exponent notation: 412.3, 12346, 0.05123."""
    if x == 0 or not math.isfinite(x):
        return f"{x:g}"
    decimals = min(6, max(0, 3 - math.floor(math.log10(abs(x)))))
    return f"{x:.{decimals}f}"


def _fmt_pct(x: float) -> str:
    return f"{x:+.1f}%" if math.isfinite(x) else f"{x:+}%"


def format_comparison(metric_name: str, cmp: Comparison, unit: str = "") -> str:
    """One line: ``dd.write 412.3 -> 383.1 MB/s -7.1% [CI -9.8%, -4.0%] p=0.004 n=8/8 worse``.

    Medians baseline -> candidate, percent change of the medians, the (1 - alpha) CI of the change,
    the p-value (``p<0.001`` below that), n baseline/candidate and the verdict.
    """
    unit_part = f" {unit}" if unit else ""
    p = "p<0.001" if cmp.p_value < 0.001 else f"p={cmp.p_value:.3f}"
    low, high = cmp.pct_ci
    return (
        f"{metric_name} {_fmt_value(cmp.baseline_median)} -> {_fmt_value(cmp.candidate_median)}"
        f"{unit_part} {_fmt_pct(cmp.pct_change)} [CI {_fmt_pct(low)}, {_fmt_pct(high)}] {p} "
        f"n={cmp.n_baseline}/{cmp.n_candidate} {cmp.verdict}"
    )

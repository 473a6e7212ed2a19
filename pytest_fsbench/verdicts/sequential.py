"""Group-sequential runs: look at the data at a few run counts (e.g. 6, 10, 15, 20) and stop as
soon as the gate is decided, with each look's test at a nominal level small enough that the chance
of any false decision over all looks stays at alpha (Pocock's design: one constant level).

The level is calibrated by simulation under the null hypothesis. Ranks of continuous data under
"no change" do not depend on the data's distribution, so uniform random numbers give the exact
distribution of every look's p-value, whatever the benchmark's noise; the simulation is seeded,
so the level is the same on every machine and in every session. TRIALS is large enough that the
chosen level's own rate is known to about 0.03 points, and `attained` estimates that rate again
on trials of another seed (choosing the largest level that passes on one set of trials would
otherwise favour levels whose rate that set happened to underestimate).
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from .stats import critical_count, rank_sum_cdf, signed_rank_cdf

#: the run counts after the first at which a sequential gate looks (those within the budget)
LOOK_POINTS = (10, 15, 20, 30, 40, 60, 80, 100)
TRIALS = 400_000
SEED = 20261123


def looks(first: int, most: int) -> tuple[int, ...]:
    """The run counts at which to look: the first, LOOK_POINTS between, and the budget most."""
    points = (first, *(n for n in LOOK_POINTS if first < n < most))
    return points + (most,) if most > first else points


@lru_cache(maxsize=64)
def _smallest_p(baseline_runs: int, look_counts: tuple[int, ...], seed: int) -> np.ndarray:
    """Per simulated trial under no change, the smallest p-value over the looks, sorted."""
    rng = np.random.default_rng(seed)
    most = look_counts[-1]
    min_p = np.ones(TRIALS)
    for chunk in np.array_split(np.arange(TRIALS), max(1, TRIALS * most * baseline_runs // 4_000_000)):
        base = rng.random((chunk.size, baseline_runs))
        new = rng.random((chunk.size, most))
        above = np.cumsum((new[:, :, None] >= base[:, None, :]).sum(axis=2), axis=1)
        for n in look_counts:
            p = rank_sum_cdf(n, baseline_runs)[above[:, n - 1]]
            min_p[chunk] = np.minimum(min_p[chunk], p)
    return np.sort(min_p)


@lru_cache(maxsize=64)
def nominal_alpha(alpha: float, baseline_runs: int, look_counts: tuple[int, ...]) -> float:
    """The per-look one-sided level of a rank test of look_counts[i] new runs against
    baseline_runs fixed ones such that P(some look rejects | no change) <= alpha.
    0.0 when no level can: the looks are too small to ever reach significance."""
    if len(look_counts) == 1:
        return alpha
    min_p = _smallest_p(baseline_runs, look_counts, SEED + baseline_runs)
    attainable = np.unique(min_p)
    rates = np.searchsorted(min_p, attainable, side="right") / TRIALS
    allowed = attainable[rates <= alpha]
    return float(min(alpha, allowed[-1])) if allowed.size else 0.0


def attained(alpha: float, baseline_runs: int, look_counts: tuple[int, ...]) -> float:
    """The chance that some look rejects when nothing changed, at nominal_alpha's level, on
    trials independent of those that chose it (alpha itself with one look)."""
    level = nominal_alpha(alpha, baseline_runs, look_counts)
    if len(look_counts) == 1:
        return alpha
    check = _smallest_p(baseline_runs, look_counts, SEED + baseline_runs + 1)
    return float(np.searchsorted(check, level, side="right") / TRIALS)


def decidable(baseline_runs: int, look_counts: tuple[int, ...], level: float) -> bool:
    """Whether the last look can reach significance at level at all."""
    return level > 0 and critical_count(rank_sum_cdf(look_counts[-1], baseline_runs), level) >= 0


# ---- both sides growing: an interleaved session's rounds (a kernel A/B, a bisect's step) ----------

#: trials for the levels of looks at rounds that add runs to both sides (fewer than TRIALS: each
#: trial's looks cost n^2 comparisons; the chosen level's own rate is known to about 0.1 points)
ROUND_TRIALS = 100_000


def _round_p(rng: np.random.Generator, look_counts: tuple[int, ...], paired: bool, trials: int) -> np.ndarray:
    """Per trial under no change, the smallest one-sided p-value over the looks of rounds that each
    add one run to both sides: paired (the signed-rank test on the Walsh averages of the rounds'
    differences) or not (the rank-sum test of the two growing samples). Ranks of continuous data
    under no change do not depend on its distribution, so normal (paired) or uniform draws give
    the exact distribution of every look's p-value."""
    most = look_counts[-1]
    min_p = np.ones(trials)
    for chunk in np.array_split(np.arange(trials), max(1, trials * most * most // 8_000_000)):
        if paired:
            diffs = rng.standard_normal((chunk.size, most))
            for n in look_counts:
                i, j = np.triu_indices(n)
                walsh = (diffs[:, i] + diffs[:, j]) / 2
                p = signed_rank_cdf(n)[np.count_nonzero(walsh >= 0, axis=1)]
                min_p[chunk] = np.minimum(min_p[chunk], p)
        else:
            base, new = rng.random((chunk.size, most)), rng.random((chunk.size, most))
            for n in look_counts:
                above = (new[:, :n, None] >= base[:, None, :n]).sum(axis=(1, 2))
                min_p[chunk] = np.minimum(min_p[chunk], rank_sum_cdf(n, n)[above])
    return np.sort(min_p)


@lru_cache(maxsize=64)
def _round_smallest_p(look_counts: tuple[int, ...], paired: bool, seed: int) -> np.ndarray:
    return _round_p(np.random.default_rng(seed), look_counts, paired, ROUND_TRIALS)


def round_looks(first: int, most: int) -> tuple[int, ...]:
    """The rounds at which an interleaved session is looked at: every round from the first to the
    budget most (a round costs a case per kernel, so waiting for LOOK_POINTS would waste them)."""
    return tuple(range(first, max(first, most) + 1))


@lru_cache(maxsize=64)
def round_level(alpha: float, look_counts: tuple[int, ...], paired: bool) -> float:
    """The per-look one-sided level of a test whose two sides each grow by a run per round, such
    that P(some look rejects | no change) <= alpha (Pocock's constant level, by simulation, as
    nominal_alpha). 0.0 when no level can."""
    if len(look_counts) == 1:
        return alpha
    min_p = _round_smallest_p(look_counts, paired, SEED + 7 * look_counts[-1] + paired)
    attainable = np.unique(min_p)
    rates = np.searchsorted(min_p, attainable, side="right") / ROUND_TRIALS
    allowed = attainable[rates <= alpha]
    return float(min(alpha, allowed[-1])) if allowed.size else 0.0


def round_attained(alpha: float, look_counts: tuple[int, ...], paired: bool) -> float:
    """The chance that some look rejects when nothing changed, at round_level's level, on trials
    independent of those that chose it."""
    level = round_level(alpha, look_counts, paired)
    if len(look_counts) == 1:
        return alpha
    check = _round_smallest_p(look_counts, paired, SEED + 7 * look_counts[-1] + paired + 1)
    return float(np.searchsorted(check, level, side="right") / ROUND_TRIALS)

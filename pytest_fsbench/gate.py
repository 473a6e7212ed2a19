"""Regression gating: rules like '5%' (every headline metric) or 'dd.write:3%', applied to a
comparison with the baseline. Three verdicts:

- regression: significantly worse (one-sided, at alpha) and the estimated change beyond the allowed %;
- within bounds: the interval's worse end lies inside the allowed % (no worse change of that size:
  a non-inferiority test at alpha);
- inconclusive: neither; the data cannot tell, and more runs would.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

from scipy.special import ndtr, ndtri, stdtrit

from .errors import UsageError
from .metrics import Direction, MetricSpec, is_headline

from .stats import PAIRED, SESSIONS, Comparison, format_comparison, min_runs_for
from .tables import params_text

REGRESSION, WITHIN, INCONCLUSIVE = "regression", "within bounds", "inconclusive"
#: what a CI job does with an inconclusive verdict (--inconclusive)
ON_INCONCLUSIVE = ("fail", "pass")
#: the most runs a "more runs would decide it" estimate names
MORE_RUNS_CAP = 500
#: --inconclusive=pass: a look stops when a regression by --max-runs is less likely than this
FUTILE_CHANCE = 0.10


@dataclass(frozen=True)
class RegressionRule:
    metric: str | None  # None: every headline metric
    threshold_pct: float


def parse_rule(text: str) -> RegressionRule:
    match = re.fullmatch(r"\s*(?:(?P<metric>[A-Za-z_][\w.]*)\s*:)?\s*(?P<pct>\d+(?:\.\d+)?)\s*%?\s*", text)
    if not match:
        raise UsageError(f"--fail-on-regression {text!r}: expected PERCENT or METRIC:PERCENT, e.g. 5% or dd.write:3%")
    pct = float(match.group("pct"))
    if not 0 < pct < 100:
        raise UsageError(f"--fail-on-regression {text!r}: the allowed change must be above 0 and below 100%")
    return RegressionRule(match.group("metric"), pct)


def check_measurable(rule: RegressionRule, known: Sequence[MetricSpec]) -> None:
    """UsageError unless some workload measures the metric the rule names (a typo would gate
    nothing and pass)."""
    if rule.metric is not None and not any(spec.matches(rule.metric) for spec in known):
        raise UsageError(f"--fail-on-regression={rule.metric}:{rule.threshold_pct:g}%: no workload measures a metric "
                         f"{rule.metric!r}; metrics are {', '.join(spec.shown for spec in known)}")


def parse_on_inconclusive(text: str) -> str:
    if text not in ON_INCONCLUSIVE:
        raise UsageError(f"--inconclusive={text!r}: choose fail (an undecided gate fails the case) or pass")
    return text


def rule_for(rules: list[RegressionRule], metric: str) -> RegressionRule | None:
    """The rule naming this metric, else the general rule for headline metrics."""
    for rule in rules:
        if rule.metric == metric:
            return rule
    if is_headline(metric):
        for rule in rules:
            if rule.metric is None:
                return rule
    return None


def _worse_pct(pct: float, direction: Direction) -> float:
    """A percent change as how much worse it is (positive = worse)."""
    return -pct if direction is Direction.HIGHER else pct


def verdict(cmp: Comparison, allowed_pct: float) -> str:
    if cmp.verdict == "worse" and _worse_pct(cmp.shift_pct, cmp.direction) > allowed_pct:
        return REGRESSION
    if _worse_pct(cmp.worse_end_pct, cmp.direction) < allowed_pct:
        return WITHIN
    return INCONCLUSIVE


def _shrink_needed(cmp: Comparison, allowed_pct: float) -> float:
    """How many times narrower the interval must get for a decision (have / need, on the worseness
    scale): inf when the estimate sits on the allowed limit."""
    estimate = _worse_log(cmp.shift_pct, cmp.direction)
    ends = [_worse_log(end, cmp.direction) for end in cmp.pct_ci]
    have, need = _distance(estimate, min(ends), max(ends), _worse_log(_signed(allowed_pct, cmp.direction),
                                                                         cmp.direction))
    return have / need if math.isfinite(have) and need > 0 else math.inf


def more_runs_factor(cmp: Comparison, allowed_pct: float) -> float:
    """Roughly how many times the present runs a side a decision needs, the interval's width
    shrinking as 1/sqrt(runs): inf when the estimate sits on the allowed limit."""
    return max(1.0, _shrink_needed(cmp, allowed_pct) ** 2)


def _signed(allowed_pct: float, direction: Direction) -> float:
    """The allowed change as a percent change in the metric's own sense."""
    return -allowed_pct if direction is Direction.HIGHER else allowed_pct


def _worse_log(pct: float, direction: Direction) -> float:
    """A percent change as log-ratio worseness (positive = worse; -100 % is infinitely worse)."""
    if pct <= -100:
        return math.inf if direction is Direction.HIGHER else -math.inf
    x = math.log1p(pct / 100)
    return -x if direction is Direction.HIGHER else x


def _distance(estimate: float, better_end: float, worse_end: float, allowed: float) -> tuple[float, float]:
    """(half-width the decision has to lose, half-width it may keep), on the worseness scale."""
    if estimate > allowed:  # needs significance: the better end to pass 0
        return estimate - better_end, estimate
    return worse_end - estimate, allowed - estimate  # needs the worse end inside the allowed change


def futile(cmp: Comparison, allowed_pct: float, most_runs: int, on_inconclusive: str = "fail") -> bool:
    """Whether further looks up to most_runs new runs would spend runs for nothing. A sign-off gate
    (--inconclusive=fail) needs any decision: futile when the interval (shrinking as 1/sqrt(runs))
    would likely not decide it. When an undecided case passes, only a regression changes what CI
    sees: futile when one is unlikely (regression_chance below FUTILE_CHANCE)."""
    if not cmp.has_interval:
        return False
    if cmp.n_candidate >= most_runs:
        return True
    if on_inconclusive == "pass":
        return regression_chance(cmp, allowed_pct, most_runs) < FUTILE_CHANCE
    needed = more_runs_factor(cmp, allowed_pct) * min(cmp.n_baseline, cmp.n_candidate)
    return not math.isfinite(needed) or needed > most_runs


def regression_chance(cmp: Comparison, allowed_pct: float, most_runs: int) -> float:
    """The chance that the estimate ends beyond the allowed change after most_runs new runs, if the
    present estimate were the truth (conditional power under the current trend): the new runs'
    share of the estimate's variance, sigma^2 / n of sigma^2 (1/m + 1/n), moves it by
    sigma^2 (N - n) / N^2 more. Significance is left to the looks' own test."""
    m, n, big_n = cmp.n_baseline, cmp.n_candidate, most_runs
    estimate = _worse_log(cmp.shift_pct, cmp.direction)
    better_end = min(_worse_log(end, cmp.direction) for end in cmp.pct_ci)
    allowed = _worse_log(_signed(allowed_pct, cmp.direction), cmp.direction)
    se = (estimate - better_end) / ndtri(1 - cmp.alpha)
    if not (math.isfinite(se) and se > 0):
        return 0.0 if estimate <= allowed else 1.0
    sigma2 = se * se / (1 / m + 1 / n)
    move = math.sqrt(sigma2 * (big_n - n) / big_n ** 2)
    return float(ndtr((estimate - allowed) / move)) if move > 0 else float(estimate > allowed)


def sessions_needed(cmp: Comparison, allowed_pct: float, most: int = 50) -> int | None:
    """The smallest number of baseline sessions whose prediction interval (t on k - 1 degrees of
    freedom, times sqrt(1 + 1/k)) would decide the verdict, with the present spread; None when no
    number up to most would (the interval cannot shrink below 1.645 sd)."""
    k = cmp.sessions
    estimate = _worse_log(cmp.shift_pct, cmp.direction)
    ends = sorted(_worse_log(end, cmp.direction) for end in cmp.pct_ci)
    have, need = _distance(estimate, ends[0], ends[1], _worse_log(_signed(allowed_pct, cmp.direction), cmp.direction))
    spread = have / (stdtrit(cmp.drift_df or k - 1, 1 - cmp.alpha) * math.sqrt(1 + 1 / k))
    for more in range(k + 1, most + 1):
        if stdtrit(cmp.drift_df or more - 1, 1 - cmp.alpha) * spread * math.sqrt(1 + 1 / more) < need:
            return more
    return None


def new_runs_needed(cmp: Comparison, allowed_pct: float) -> float:
    """About how many new runs would likely decide a rank comparison against the baseline's fixed
    runs: the interval's width goes as sqrt(1/baseline + 1/new), so new runs alone can shrink it
    only to the baseline's part (inf when that is not enough, or the estimate sits on the limit)."""
    shrink = _shrink_needed(cmp, allowed_pct)
    m, n = cmp.n_baseline, cmp.n_candidate
    if not math.isfinite(shrink) or shrink <= 0:
        return math.inf if not math.isfinite(shrink) else float(n)
    room = (1 / m + 1 / n) / shrink ** 2 - 1 / m
    return math.inf if room <= 0 else max(float(n), 1 / room)


def more_runs_text(cmp: Comparison, allowed_pct: float, runs_option: str = "--runs") -> str:
    """What would likely decide an inconclusive comparison, as options a user can pass."""
    if cmp.method == SESSIONS:
        k = sessions_needed(cmp, allowed_pct)
        if k is None:
            spread = "this machine's drift between sessions" if cmp.drift_df else "the baseline sessions' spread"
            return (f"with {spread}, no number of baseline sessions would decide it: a session's median moves "
                    "more than the estimate lies from the allowed change; measure reference and candidate "
                    "interleaved in one session instead (--paired=FS:KEY=VALUE for an option, --kernel=A,B for a "
                    "kernel)")
        return (f"about {k} baseline sessions would likely decide it (now {cmp.sessions}): run --save=NAME in "
                f"{k - cmp.sessions} more session{'s' * (k - cmp.sessions > 1)} of the reference")
    if not cmp.has_interval:
        floor = min_runs_for(cmp.alpha, cmp.n_baseline if cmp.method != PAIRED else None)
        if floor == 0:
            return (f"the baseline's {cmp.n_baseline} runs are too few for any interval at this level: save a "
                    "baseline measured with more runs (--runs=10 --save=NAME)")
        return (f"{cmp.n_baseline}/{cmp.n_candidate} runs are too few for any interval at this level: it takes at "
                f"least {floor} new runs ({runs_option}={max(floor, cmp.n_candidate + 1)}), more to decide it")
    if cmp.method == PAIRED:
        rounds = more_runs_factor(cmp, allowed_pct) * cmp.n_candidate
        if not math.isfinite(rounds) or rounds > MORE_RUNS_CAP:
            return "the estimate is too close to the allowed change for more rounds to decide it soon"
        return f"about {math.ceil(rounds)} rounds would likely decide it (now {cmp.n_candidate}): --runs={math.ceil(rounds)}"
    runs = new_runs_needed(cmp, allowed_pct)
    if not math.isfinite(runs) or runs > MORE_RUNS_CAP:
        return (f"no number of new runs against the baseline's {cmp.n_baseline} would likely decide it: save a "
                f"baseline measured with more runs (--runs={2 * cmp.n_baseline} --save=NAME), or measure reference "
                "and candidate interleaved in one session (--paired=FS:KEY=VALUE, --kernel=A,B)")
    return (f"about {math.ceil(runs)} new runs against the baseline's {cmp.n_baseline} would likely decide it (now "
            f"{cmp.n_candidate}): {runs_option}={math.ceil(runs)}")


def gate_message(case_id: str, metric: str, params: str, unit: str, cmp: Comparison, rule: RegressionRule,
                 runs_option: str = "--runs") -> str:
    """The failure line of a case: the verdict, the change, its interval and p; when inconclusive,
    what would decide it (runs_option: the option that sets this session's most runs)."""
    label = f"{metric} {params_text(params)}".rstrip()
    kind = verdict(cmp, rule.threshold_pct)
    line = f"{case_id} {kind}: {format_comparison(label, cmp, unit)}"
    if kind == REGRESSION:
        return f"{line}; worse than the {rule.threshold_pct:g}% allowed"
    if kind == INCONCLUSIVE:
        return (f"{line}; cannot tell whether it is within the {rule.threshold_pct:g}% allowed: "
                f"{more_runs_text(cmp, rule.threshold_pct, runs_option)}")
    return f"{line}; within the {rule.threshold_pct:g}% allowed"


def fails(kind: str, on_inconclusive: str) -> bool:
    return kind == REGRESSION or (kind == INCONCLUSIVE and on_inconclusive == "fail")

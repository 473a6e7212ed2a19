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
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from scipy.special import ndtr, ndtri, stdtrit

from .disturbance import Load, busier_baseline, disturbed, load_of
from .drift import MIN_DF, POWER, Drift, detectable_pct
from ..errors import UsageError
from ..metrics import ALL_WORK, CONTROL, WORK_PER_BYTE, Direction, MetricSpec, is_count, is_headline, metric_label
from .sequential import attained, nominal_alpha

from .stats import COUNTS, PAIRED, SESSIONS, Comparison, format_comparison, min_runs_for
from ..store.results import Series, SeriesKey

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
        raise UsageError(f"--fail-on-regression {text!r}: expected PERCENT or METRIC:PERCENT, e.g. 5%, dd.write:3% "
                         "or work:5% (every count of the work per byte moved)")
    pct = float(match.group("pct"))
    if not 0 < pct < 100:
        raise UsageError(f"--fail-on-regression {text!r}: the allowed change must be above 0 and below 100%")
    return RegressionRule(match.group("metric"), pct)


def check_measurable(rule: RegressionRule, known: Sequence[MetricSpec]) -> None:
    """UsageError unless some workload measures the metric the rule names (a typo would gate
    nothing and pass)."""
    if rule.metric is not None and rule.metric != ALL_WORK and not any(spec.matches(rule.metric) for spec in known):
        raise UsageError(f"--fail-on-regression={rule.metric}:{rule.threshold_pct:g}%: no workload measures a metric "
                         f"{rule.metric!r}; {metrics_like(rule.metric, known)}")


def metrics_like(name: str, known: Sequence[MetricSpec]) -> str:
    """The metrics of the same kind as a name no workload measures (work.bogus: the work's), or every
    one: what a user reads to spell it right."""
    kind = name.partition(".")[0] + "."
    same = [spec.shown for spec in known if spec.shown.startswith(kind)]
    return (f"its metrics are {', '.join(same)}" if same
            else f"metrics are {', '.join(spec.shown for spec in known)}")


def check_one_rule_each(rules: Sequence[RegressionRule]) -> None:
    """Two rules for one metric (or two for every headline metric): the gate would use one and
    drop the other (issue 34)."""
    seen: dict[str | None, RegressionRule] = {}
    for rule in rules:
        other = seen.setdefault(rule.metric, rule)
        if other is not rule:
            prefix = f"{rule.metric}:" if rule.metric else ""
            what = {None: "every headline metric", ALL_WORK: "every count of the work"}.get(rule.metric, rule.metric)
            raise UsageError(f"--fail-on-regression={prefix}{other.threshold_pct:g}% and {prefix}"
                             f"{rule.threshold_pct:g}% are two rules for {what}; give one")


def gates_nothing(rule: RegressionRule, tests: Sequence[tuple[str, str]], workloads: Sequence[str]) -> bool:
    """Whether a rule for one metric can gate none of the selected tests, known before anything
    is measured (issue 34: dd.read:5% with only test_dd_write selected passed, gating nothing).
    tests: (file name, function name) of each selected test that measures; fsbench's own
    benchmarks/test_W.py's test_W_PART measure W's PART (test_W: all of W's); any other test may
    measure anything."""
    if rule.metric is None or rule.metric == ALL_WORK or is_count(rule.metric):
        return False  # the work is counted around every run
    workload, _, part = rule.metric.partition(".")
    for file, function in tests:
        if file not in {f"test_{w}.py" for w in workloads}:
            return False
        if file != f"test_{workload}.py":
            continue
        suffix = function.removeprefix(f"test_{workload}").lstrip("_")
        if not suffix or part == suffix or part.startswith(suffix + "."):
            return False
    return True


def parse_on_inconclusive(text: str) -> str:
    if text not in ON_INCONCLUSIVE:
        raise UsageError(f"--inconclusive={text!r}: choose fail (an undecided gate fails the case) or pass")
    return text


def rule_for(rules: list[RegressionRule], metric: str) -> RegressionRule | None:
    """The rule naming this metric, else the general rule for headline metrics (work:PCT for the
    counts of the work per byte moved: a count of events under it allows at least
    EVENT_RESOLUTION_PCT)."""
    for rule in rules:
        if rule.metric == metric:
            return rule
    general = None if is_headline(metric) else ALL_WORK if metric in WORK_PER_BYTE else ""
    for rule in rules:
        if rule.metric == general:
            if general == ALL_WORK and metric in EVENT_COUNTS:
                return RegressionRule(ALL_WORK, max(rule.threshold_pct, EVENT_RESOLUTION_PCT))
            return rule
    return None


#: the counts of the work that count events (requests, flushes, commits), not bytes: how many a run
#: issues moves with when writeback and the journal run, so with the machine's load (issue 41: in
#: unchanged sessions of dd write of 128M on this 2-core VM, XFS flushed 4 or 7-8 times a run and
#: committed 2-4 times, ext4 flushed 3-7 times, Btrfs issued 119-263 write requests, zfs-fuse flushed
#: 7-11 times; the device bytes per byte written did not move)
EVENT_COUNTS = ("work.requests_per_mb", "work.flushes_per_gb", "work.commits_per_gb")
#: what work:PCT allows a count of events at least: a rise to 2.5 times is within their resolution
EVENT_RESOLUTION_PCT = 150.0

#: what a count's gate line says of the machine's load
COUNT_NOTE = "; a count of the work: judged whatever the load, which does not move it"
#: and a count of events' line, under work:PCT
EVENT_NOTE = (f"; a count of events, which moves with when writeback and the journal run: work:PCT allows it "
              f"+{EVENT_RESOLUTION_PCT:g}% at least")


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
    needed = (more_runs_factor(cmp, allowed_pct) * cmp.n_candidate if cmp.method == PAIRED
              else new_runs_needed(cmp, allowed_pct))
    return not math.isfinite(needed) or needed > most_runs


def regression_chance(cmp: Comparison, allowed_pct: float, most_runs: int) -> float:
    """The chance that the estimate ends beyond the allowed change after most_runs new runs, given
    the runs so far (predictive power: the truth as uncertain as the present estimate): of the
    estimate's variance sigma^2 (1/m + 1/n) the new runs' part, sigma^2 / n, is all that more
    runs change; by N runs the estimate moves with variance sigma^2 (N - n) / (n N) (the truth's
    uncertainty, sigma^2 / n, shrunk by the runs still to come). Significance is left to the
    looks' own test."""
    m, n, big_n = cmp.n_baseline, cmp.n_candidate, most_runs
    estimate = _worse_log(cmp.shift_pct, cmp.direction)
    better_end = min(_worse_log(end, cmp.direction) for end in cmp.pct_ci)
    allowed = _worse_log(_signed(allowed_pct, cmp.direction), cmp.direction)
    se = (estimate - better_end) / ndtri(1 - cmp.alpha)
    if not (math.isfinite(se) and se > 0):
        return 0.0 if estimate <= allowed else 1.0
    sigma2 = se * se / (1 / m + 1 / n)
    move = math.sqrt(sigma2 * (big_n - n) / (n * big_n))
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


def more_runs_text(cmp: Comparison, allowed_pct: float, runs_option: str = "--runs", at_least: int = 0) -> str:
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
            f"{cmp.n_candidate}): {runs_option}={max(math.ceil(runs), at_least)}")


def gate_message(case_id: str, metric: str, params: str, unit: str, cmp: Comparison, rule: RegressionRule,
                 runs_option: str = "--runs", at_least: int = 0) -> str:
    """The failure line of a case: the verdict, the change, its interval and p; when inconclusive,
    what would decide it (runs_option: the option that sets this session's most runs)."""
    kind = verdict(cmp, rule.threshold_pct)
    line = f"{case_id} {kind}: {format_comparison(metric_label(metric, params), cmp, unit)}"
    if kind == REGRESSION:
        return f"{line}; worse than the {rule.threshold_pct:g}% allowed"
    if kind == INCONCLUSIVE:
        return (f"{line}; cannot tell whether it is within the {rule.threshold_pct:g}% allowed{ruled_out(cmp)}: "
                f"{more_runs_text(cmp, rule.threshold_pct, runs_option, at_least)}")
    return f"{line}; within the {rule.threshold_pct:g}% allowed"


def line_verdict(line: str) -> str:
    """The gate's verdict in one of its lines (CASE VERDICT: the comparison...), as a case's
    manifest keeps them; "gated" where none of the three is found."""
    head = line.split(": ", 1)[0]
    return next((v for v in (REGRESSION, WITHIN, INCONCLUSIVE) if head.endswith(" " + v)), "gated")


def count_note(rule: RegressionRule, metric: str) -> str:
    """What a count's gate line says of the load, and of a count of events' resolution."""
    return EVENT_NOTE if rule.metric == ALL_WORK and metric in EVENT_COUNTS else COUNT_NOTE


def disturbed_message(case_id: str, metric: str, params: str, unit: str, cmp: Comparison,
                      disturbance: str) -> str:
    """The line of a case whose runs were disturbed beyond the baseline's: inconclusive, whatever
    the comparison says, and why."""
    change = format_comparison(metric_label(metric, params), cmp, unit)
    return (f"{case_id} {INCONCLUSIVE}: {disturbance}, so the change is not judged: {change}; re-run when "
            "the machine is as quiet as it was for the baseline")


def busier_baseline_message(case_id: str, metric: str, params: str, unit: str, cmp: Comparison,
                            busier: str) -> str:
    """The line of a time figure whose baseline was measured on a busier machine and that is not
    slower beyond the rule: inconclusive (a quieter machine makes it look better than it is)."""
    change = format_comparison(metric_label(metric, params), cmp, unit)
    return (f"{case_id} {INCONCLUSIVE}: {busier}, so a change within bounds cannot be told from a quieter "
            f"machine: {change}; save the baseline again on a machine as quiet as this one")


def gate_verdict(cmp: Comparison, allowed_pct: float, metric: str, disturbance: str | None,
                 busier: str | None) -> str:
    """The verdict on one comparison with the load weighed both ways: a time figure measured on a
    busier machine than the baseline's is inconclusive; one whose baseline was busier can be a
    regression, never within bounds; a count of the work is judged whatever the load."""
    kind = verdict(cmp, allowed_pct)
    if is_count(metric):
        return kind
    if disturbance is not None:
        return INCONCLUSIVE
    return INCONCLUSIVE if busier is not None and kind == WITHIN else kind


def ruled_out(cmp: Comparison) -> str:
    """What an inconclusive comparison does rule out: a change worse than its interval's worse end."""
    if not cmp.has_interval or not math.isfinite(cmp.worse_end_pct):
        return ""
    return f" (it rules out a change worse than {cmp.worse_end_pct:+.1f}%, not one of the allowed size)"


def fails(kind: str, on_inconclusive: str) -> bool:
    return kind == REGRESSION or (kind == INCONCLUSIVE and on_inconclusive == "fail")


@dataclass(frozen=True)
class Outcome:
    """One comparison of `fsbench compare` and what a CI job does with it: the gate's verdict under
    the rule for its metric (None: no rule names it, or none given) and whether it fails the job."""

    case: str
    series: Series
    comparison: Comparison
    gate: str | None
    failed: bool
    disturbed: str | None = None  # the line saying its runs were disturbed beyond the baseline's
    busier: str | None = None  # the line saying the baseline's runs were disturbed beyond these


def outcomes(pairs: Sequence[tuple[str, Series, Comparison]], rules: Sequence[RegressionRule],
             disturbances: Mapping[tuple[str, str, str], str] | None = None,
             busier: Mapping[tuple[str, str, str], str] | None = None) -> list[Outcome]:
    """Each comparison's outcome: with rules, a regression under its metric's rule fails (an
    inconclusive one does not: a regression is what was asked about); without rules, any
    significantly worse headline metric fails. The load is weighed both ways on time figures (see
    gate_verdict): a case whose runs were disturbed beyond the baseline's (disturbances: (test,
    workload, workload params) -> its line) is inconclusive and fails nothing; one whose baseline
    was disturbed beyond its runs (busier) is never within bounds. Counts of the work are judged
    whatever the load."""
    found = []
    for case, s, cmp in pairs:
        where = (s.key.test, s.key.workload, s.key.workload_params)
        count = is_count(s.key.metric)
        disturbed = None if count else (disturbances or {}).get(where)
        heavier = None if count else (busier or {}).get(where)
        rule = rule_for(list(rules), s.key.metric) if rules else None
        kind = gate_verdict(cmp, rule.threshold_pct, s.key.metric, disturbed, heavier) if rule else None
        failed = not disturbed and (kind == REGRESSION if rules
                                    else is_headline(s.key.metric) and cmp.verdict == "worse")
        found.append(Outcome(case, s, cmp, kind, failed, disturbed, heavier))
    return found


def check_compared(rules: Sequence[RegressionRule], metrics: set[str]) -> None:
    """UsageError when a rule names a metric none of the comparisons has (a typo would gate nothing)."""
    for rule in rules:
        if rule.metric == ALL_WORK and metrics & set(WORK_PER_BYTE):
            continue
        if rule.metric is not None and (rule.metric == ALL_WORK or is_count(rule.metric)) and rule.metric not in metrics:
            raise UsageError(f"--fail-on-regression={rule.metric}:{rule.threshold_pct:g}%: the sessions compare no "
                             "count of the work per byte moved (a session recorded before fsbench counted the work "
                             "has none, and a workload that says no bytes moved has only its raw counts); gate the "
                             "figures, or compare sessions that counted it")
        if rule.metric is not None and rule.metric not in metrics:
            compared = ", ".join(sorted(metrics)) or "none"
            raise UsageError(f"--fail-on-regression={rule.metric}:{rule.threshold_pct:g}%: no compared "
                             f"metric {rule.metric!r}; the sessions compare {compared}")


# ---- the session's gate: one object owns the rules, the baseline and the decision ----------------


class BaselineSamples(Protocol):
    """What the gate reads of a baseline (baseline.Baseline): its sessions, the machine's drift,
    its samples and each series' comparison with them."""

    session_ids: list[int]
    drift: Drift | None

    @property
    def sessions(self) -> int: ...

    @property
    def across_sessions(self) -> bool: ...

    def fewest_runs(self) -> int: ...

    def series(self) -> dict[SeriesKey, list[Series]]: ...

    def comparison(self, series: Series, control: Sequence[float] | None = None) -> Comparison | None: ...

    def controlled(self, series: Series, control: Sequence[float] | None) -> object | None: ...

    def load(self, key: SeriesKey) -> Load: ...


@dataclass
class Judgement:
    """The gate's word on one case: its comparisons and, for each gated metric, the line and
    whether it fails the case (inconclusive lines that pass are warned about)."""

    comparisons: list[tuple[Series, Comparison]] = field(default_factory=list)  # with the baseline
    paired: list[tuple[Series, Comparison]] = field(default_factory=list)  # a --paired variant with its reference
    gated: list[tuple[Series, str, bool]] = field(default_factory=list)  # (series, its line, whether it failed)
    passed_undecided: list[str] = field(default_factory=list)  # inconclusive lines that passed

    @property
    def lines(self) -> list[str]:
        return [line for _, line, _ in self.gated]

    @property
    def failed(self) -> list[bool]:
        return [failed for _, _, failed in self.gated]

    @property
    def failures(self) -> list[str]:
        return [line for _, line, failed in self.gated if failed]


@dataclass(frozen=True)
class Gate:
    """The session's regression gate, built from plain values: the --fail-on-regression rules,
    the baseline they compare with (None: only --paired variants are gated), --alpha,
    --inconclusive, and the repeat policy's budget. Bench measures and stores; the gate decides
    when a sequential case has measured enough, and judges each case."""

    rules: tuple[RegressionRule, ...]
    baseline: BaselineSamples | None
    alpha: float = 0.05
    on_inconclusive: str = "pass"
    max_runs: int = 30
    looks: tuple[int, ...] = (10,)  # the run counts a case is judged at (fixed mode: only --runs)
    sequential: bool = False
    control: bool = False
    control_adjust: bool = False  # --control=adjust: the control's estimated relation, not its ratio

    @property
    def active(self) -> bool:
        return bool(self.rules)

    def rule_for(self, metric: str) -> RegressionRule | None:
        return rule_for(list(self.rules), metric)

    @property
    def strictest_pct(self) -> float | None:
        """The smallest allowed change of any rule (None without rules)."""
        return min((r.threshold_pct for r in self.rules), default=None)

    @property
    def looks_sequentially(self) -> bool:
        """Whether a case's runs stop once decided: a baseline compared run by run, or a rule on
        the counts of the work, which are always compared run by run (more runs in this session
        can decide them)."""
        return self.baseline is not None and (not self.baseline.across_sessions or self.gates_counts)

    @property
    def gates_counts(self) -> bool:
        """Whether a rule names a count of the work (work:PCT, or a work.* metric)."""
        return any(rule.metric is not None and (rule.metric == ALL_WORK or is_count(rule.metric))
                   for rule in self.rules)

    def decided(self, series: list[Series]) -> bool:
        """Whether every gated metric of a case's series is decided, or undecidable within the
        budget (futile): the sequential gate's stop. Time figures measured on a busier machine than
        the baseline's are inconclusive whatever more runs under the same load would show; counts
        of the work are decided by their runs whatever the load."""
        if self.baseline is None:
            return True
        disturbed = self.disturbance(series) is not None
        control = control_values(series)
        for s in series:
            if disturbed and not is_count(s.key.metric):
                continue
            rule = self.rule_for(s.key.metric)
            cmp = self.baseline.comparison(s, control) if rule else None
            if (cmp is not None and cmp.method != SESSIONS and verdict(cmp, rule.threshold_pct) == INCONCLUSIVE
                    and not futile(cmp, rule.threshold_pct, self.max_runs, self.on_inconclusive)):
                return False
        return True

    def judge(self, series: list[Series], paired: list[tuple[Series, Comparison, str]],
              cache_notes: dict[tuple[str, str], str], stopped_by: str | None = None) -> Judgement:
        """Each series against the baseline, and the --paired comparisons (with their notes);
        stopped_by: what ended the case's runs (repeat.stop_reason's word). Every line shows the
        figures' medians in their unit; a comparison adjusted by the control says so beside them."""
        found = Judgement()
        control = control_values(series)
        disturbance, busier = self.disturbance(series), self.busier_baseline(series)
        for s in series:
            cmp = self.baseline.comparison(s, control) if self.baseline is not None else None
            if cmp is not None:
                found.comparisons.append((s, cmp))
                note = self._baseline_note(s, cmp, control)
                self._judge(found, s, cmp, note, s.unit, cache_notes, stopped_by, disturbance, busier)
        for s, cmp, note in paired:
            found.paired.append((s, cmp))
            self._judge(found, s, cmp, note, s.unit, cache_notes, stopped_by)
        return found

    def disturbance(self, series: list[Series]) -> str | None:
        """The line saying a case's runs were disturbed beyond the baseline's (None: they were not,
        or there is no baseline)."""
        if self.baseline is None or not series:
            return None
        return disturbed(load_of(series), self.baseline.load(series[0].key))

    def busier_baseline(self, series: list[Series]) -> str | None:
        """The line saying the baseline's runs were disturbed beyond this case's (None: they were
        not, or there is no baseline)."""
        if self.baseline is None or not series:
            return None
        return busier_baseline(load_of(series), self.baseline.load(series[0].key))

    def _judge(self, found: Judgement, s: Series, cmp: Comparison, note: str, unit: str,
               cache_notes: dict[tuple[str, str], str], stopped_by: str | None = None,
               disturbance: str | None = None, busier: str | None = None) -> None:
        rule = self.rule_for(s.key.metric)
        if rule is None:
            return
        kind = gate_verdict(cmp, rule.threshold_pct, s.key.metric, disturbance, busier)
        if is_count(s.key.metric):
            note += count_note(rule, s.key.metric)
        elif disturbance is not None or (busier is not None and verdict(cmp, rule.threshold_pct) == WITHIN):
            # a busier machine is named, never blamed, nor taken as a pass; a busier baseline rules nothing out
            message = (disturbed_message(s.case_id, s.key.metric, s.key.params, unit, cmp, disturbance)
                       if disturbance is not None
                       else busier_baseline_message(s.case_id, s.key.metric, s.key.params, unit, cmp, busier)) + note
            failed = fails(INCONCLUSIVE, self.on_inconclusive)
            found.gated.append((s, message, failed))
            if not failed:
                found.passed_undecided.append(message)
            return
        elif busier is not None:  # slower on a quieter machine than the baseline's, or undecided anyway
            note += f"; {busier}" + (", and these runs are slower still" if kind == REGRESSION else "")
        cached = cache_notes.get((s.key.metric, s.key.params))
        note += f"; the figure was {cached}" if cached else ""
        runs_option, at_least = ("--max-runs", 0) if self.sequential else ("--runs", 0)
        if (kind == INCONCLUSIVE and stopped_by == "decided" and self.on_inconclusive == "pass"
                and cmp.n_candidate < self.max_runs):
            note += (f"; the gate stopped at {cmp.n_candidate} runs: a regression within --max-runs={self.max_runs} "
                     "runs had become unlikely (a sign-off job, --inconclusive=fail, looks on while a decision is "
                     "likely)")
            runs_option, at_least = "--inconclusive=fail --max-runs", self.max_runs
        message = gate_message(s.case_id, s.key.metric, s.key.params, unit, cmp, rule, runs_option,
                               at_least) + note
        failed = fails(kind, self.on_inconclusive)
        found.gated.append((s, message, failed))
        if kind == INCONCLUSIVE and not failed:
            found.passed_undecided.append(message)

    def _baseline_note(self, s: Series, cmp: Comparison, control: tuple[float, ...] | None) -> str:
        note = ""
        ratio = self.baseline.controlled(s, control) is not None
        if self.control and is_headline(s.key.metric):
            how = ("each run's log figure less theta x its --control run's log deviation (theta: the slope "
                   "estimated within the sessions, 0 to 1)" if self.control_adjust
                   else "each run's figure over its --control run's, as in the baseline")
            note += (f"; adjusted by the control: {how}" if ratio else
                     "; --control: the figures themselves were compared (the baseline has no control runs for this "
                     "case, or the figure is no throughput)")
        if not ratio and cmp.method not in (SESSIONS, COUNTS):
            note += (f"; one baseline session and too little history of this machine's sessions to know its drift "
                     f"(the store needs {MIN_DF} degrees of freedom of repeated sessions), so drift between "
                     "sessions is not in the test and its false-alarm rate is not controlled (--save the baseline "
                     "in more sessions)")
        base = self.baseline.series().get(s.key, [])
        if base and base[-1].options != s.options:  # as asked: a baseline stored before "mounted" was read has none
            note += f"; the filesystem options changed: baseline {base[-1].mounted}, now {s.mounted}"
        return note

    def drift_lines(self) -> list[str]:
        """What the header says of the drift: its size, the smallest slowdown the gate can catch
        across sessions, and, when that is larger than a rule, the in-session alternative (nothing
        when the gate does not compare on the drift: control ratios compared run by run)."""
        if self.baseline is None or self.baseline.drift is None or not self.baseline.across_sessions:
            return []
        sessions = self.baseline.sessions
        smallest = detectable_pct(self.baseline.drift, sessions, self.alpha)
        lines = [f"{self.baseline.drift.text()}: across sessions the gate catches a slowdown of {smallest:.0f}% or "
                 f"more {POWER * 100:.0f}% of the time against {sessions} baseline session{'s' * (sessions > 1)}"]
        strictest = self.strictest_pct
        if strictest is not None and smallest > strictest:
            lines.append(f"that is more than the {strictest:g}% rule: gate a change within one session instead, "
                         "reference and candidate interleaved: --paired=FS:KEY=VALUE (an option), "
                         "--kernel=A,B (a kernel); or gate the work the filesystem does, which no drift moves: "
                         "--fail-on-regression=work:5%")
        return lines

    def test_level(self, baseline_runs: int) -> float:
        """The per-look level the baseline compares run by run at (the baseline's, which knows the looks)."""
        return self.baseline.test_level(baseline_runs)

    def sequential_levels(self) -> tuple[float, float] | None:
        """The per-look level and its simulated chance of a false alarm over all looks, for the
        baseline's fewest runs (None outside the sequential mode)."""
        if not self.sequential or not self.rules or not self.looks_sequentially:
            return None
        fewest = self.baseline.fewest_runs()
        if fewest < 2:
            return None
        return nominal_alpha(self.alpha, fewest, self.looks), attained(self.alpha, fewest, self.looks)

    def check_can_fire(self, compare_name: str) -> None:
        """UsageError when the baseline has too few runs for the gate ever to fire (compared run by
        run; session medians use a t prediction interval, which any difference can pass)."""
        if not self.rules or not self.looks_sequentially:
            return
        fewest = self.baseline.fewest_runs()
        most = self.looks[-1]
        level = self.test_level(fewest)
        if level <= 0 or 1 / math.comb(fewest + most, most) > level:
            needed = min_runs_for(self.alpha, fewest)
            raise UsageError(f"--fail-on-regression: with {fewest} baseline runs and at most {most} new runs a change "
                             f"can never be significant at --alpha={self.alpha:g}; it needs at least "
                             f"{needed} new runs (--runs, or --max-runs in the sequential mode) and more if the "
                             "runs are spread over several looks, or a baseline measured with more runs"
                             + (f" (--compare={compare_name})" if compare_name else ""))

    def unmatched(self, tests: Sequence[str], compare_name: str | None) -> str | None:
        """Why the gate could gate none of the session's tests (their keys), known before
        anything is measured: the baseline holds none of them (issue 34: everything was measured
        first, then "gated nothing"). None when one of them is in the baseline."""
        if not self.rules or self.baseline is None or not tests:
            return None
        theirs = sorted({key.test for key in self.baseline.series()})
        if self.gates_counts and not any(key.metric in WORK_PER_BYTE for key in self.baseline.series()):
            named = ", ".join(f"{r.metric}:{r.threshold_pct:g}%" for r in self.rules
                              if r.metric == ALL_WORK or (r.metric and is_count(r.metric)))
            return (f"--fail-on-regression={named} with --compare={compare_name}: the baseline holds no count of the "
                    "work per byte moved (it was recorded before fsbench counted the work, or its workloads say no "
                    "bytes moved), so the rule would gate nothing; --save a new baseline, or gate the figures")
        if set(tests) & set(theirs):
            return None
        sessions = ", ".join(map(str, self.baseline.session_ids))
        return (f"--fail-on-regression with --compare={compare_name}: its session{'s' * (len(self.baseline.session_ids) > 1)} "
                f"({sessions}) measured none of this session's tests, so the gate would gate nothing after "
                f"measuring everything (the baseline holds {shown(theirs)}; this session runs {shown(tests)}); "
                "compare like with like (the same tests, --fs, --layout and options), or --save a new baseline")

    def unmatched_parameters(self, test: str, workload: str, params: str) -> str | None:
        """Why a case the baseline measured with other workload parameters (a changed --dd-size,
        say) cannot be gated, known before its first run (found by the sweep: every case was
        measured, then "gated nothing"); None when the baseline has it, or has not the test at all
        (a new test: the gate leaves it out). params: the canonical JSON of the parameters."""
        if not self.rules or self.baseline is None:
            return None
        theirs = sorted({key.workload_params for key in self.baseline.series()
                         if key.test == test and key.workload == workload})
        if not theirs or params in theirs:
            return None
        return (f"--fail-on-regression: baseline {self.baseline.name!r} measured {test.rpartition('::')[2]} with "
                f"{workload} parameters {' or '.join(theirs)}, and this session with {params}, so it cannot be "
                "compared and would gate nothing; run with the baseline's parameters, or --save a new baseline")

    def ungated(self, judged: Sequence[tuple[str, list[Series], Judgement]], compare_name: str | None) -> list[str]:
        """A gate that compared nothing gated nothing: one line naming what did not match (a
        changed case or size has no samples in the baseline). judged: (case id, series, judgement).
        A rule on the work that gated no count gated nothing either (a baseline recorded before fsbench
        counted the work, or workloads that say no bytes moved)."""
        if not self.rules or not judged:
            return []
        compared = [(s, c) for _, _, j in judged for s, c in [*j.comparisons, *j.paired]]
        if compared and self.gates_counts and not any(
                is_count(s.key.metric) and self.rule_for(s.key.metric) for s, _ in compared):
            named = ", ".join(f"{r.metric}:{r.threshold_pct:g}%" for r in self.rules
                              if r.metric == ALL_WORK or (r.metric and is_count(r.metric)))
            return [f"--fail-on-regression={named} gated nothing: no case compared a count of the work it names "
                    "(a baseline recorded before fsbench counted the work has none, and a workload that says no "
                    "bytes moved has only its raw counts: work.written, work.flushes, ...)"]
        if compared:
            return []
        if self.baseline is None:
            return ["--fail-on-regression gated nothing: no --paired variant finished its rounds beside its case"]
        theirs = sorted({s.case_id for group in self.baseline.series().values() for s in group})
        mine = sorted({case_id for case_id, _, _ in judged})
        params = sorted({s.key.workload_params for _, series, _ in judged for s in series}
                        - {key.workload_params for key in self.baseline.series()})
        return [f"--fail-on-regression gated nothing: no case here has samples in baseline {compare_name!r} "
                f"(its cases: {', '.join(theirs) or 'none'}; this session's: {', '.join(mine)}"
                + (f"; workload parameters not in the baseline: {', '.join(params)}" if params else "")
                + "); compare like with like, or --save a new baseline"]


def shown(tests: Sequence[str], most: int = 4) -> str:
    """A few test ids, their count when there are more."""
    names = [test.rpartition("::")[2] or test for test in tests]
    if not names:
        return "none"
    return ", ".join(names[:most]) + (f" and {len(names) - most} more" if len(names) > most else "")


def look_level(alpha: float, baseline_runs: int, looks: tuple[int, ...]) -> float:
    """The one-sided level of each look of the rank test: alpha for one look (fixed mode), else
    the per-look level that keeps the chance of any false decision over the looks at alpha."""
    return nominal_alpha(alpha, baseline_runs, looks) if looks else alpha


def control_values(series: list[Series]) -> tuple[float, ...] | None:
    """The --control runs measured beside a case's runs, in run order (None without --control)."""
    return next((s.values for s in series if s.key.metric == CONTROL), None)

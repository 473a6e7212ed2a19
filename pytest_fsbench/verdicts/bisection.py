"""A bisect's decisions (`fsbench bisect`), each from the runs of one interleaved session of
kernels, with the gate's own comparisons, rules and verdicts:

- the range: do the good and the bad endpoint differ beyond the rule? ("regression": yes, in the
  figures that regressed; "no regression": every gated figure within the rule; else not yet);
- a step: is the step's kernel like the good one or like the bad one, measured beside both?
- the culprit: is the first bad commit worse than its parent beyond the rule, with more rounds?

Each one-sided test is the gate's: a count of the work (work.*) compared as counts are (ranks,
ties a half, exact), a time figure paired by round. A session is looked at after every round from
the first look to the budget, each look at the per-look level that keeps the chance of any false
decision over all looks at alpha (sequential.round_level). A step is "like bad" when it is worse
than the good kernel beyond the rule and not better than the bad one beyond it; "like good" the
mirror; anything else is not yet decided. Figures are taken counts first: where the regression
shows in a count, a step is decided in a few rounds (counts barely vary between runs), and a time
figure that has not decided yet does not hold it up; figures that disagree decide nothing.

Pure: plain runs in, verdicts out. The bisect (bisect/) reads the runs from the store.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

from ..metrics import ALL_WORK, Direction, is_count, metric_label
from .gate import EVENT_COUNTS, INCONCLUSIVE, REGRESSION, WITHIN, RegressionRule, rule_for, verdict
from .sequential import round_level
from .stats import COUNTS, PAIRED, Comparison, compare, format_comparison, plain

#: the kernels of a step's session, by role (a range's session has GOOD and BAD; a culprit's
#: confirmation its parent as GOOD and itself as BAD)
GOOD, BAD, STEP = "good", "bad", "step"
LIKE_GOOD, LIKE_BAD, NOT_YET = "like good", "like bad", "not yet"
REGRESSES, NO_REGRESSION = "regression", "no regression"
CONFIRMED, NOT_CONFIRMED = "confirmed", "not confirmed"


@dataclass(frozen=True)
class Figure:
    """One figure of one case in one session: its runs under each kernel (by role), round by round."""

    case: str  # the test without its kernel, e.g. test_dd_write[ext4-single-1M]
    metric: str
    params: str  # the metric's parameters (JSON)
    unit: str
    direction: Direction
    runs: tuple[tuple[str, tuple[float, ...]], ...]  # (role, runs in round order)

    def of(self, role: str) -> tuple[float, ...]:
        return next((values for name, values in self.runs if name == role), ())

    @property
    def key(self) -> tuple[str, str, str]:
        return self.case, self.metric, self.params

    @property
    def name(self) -> str:
        return f"{self.case} {metric_label(self.metric, self.params)}".strip()

    @property
    def rounds(self) -> int:
        """The rounds every kernel has a run of."""
        return min((len(values) for _, values in self.runs), default=0)

    def upto(self, rounds: int) -> Figure:
        return replace(self, runs=tuple((role, values[:rounds]) for role, values in self.runs))


def counts_first(figures: Iterable[Figure]) -> list[Figure]:
    """Counts of the work before time figures (a count decides in fewer rounds), else in order."""
    return sorted(figures, key=lambda figure: not is_count(figure.metric))


def level_for(figure: Figure, alpha: float, looks: tuple[int, ...]) -> float:
    """The per-look level of this figure's test (counts: two growing samples; time: paired rounds)."""
    return round_level(alpha, looks, not is_count(figure.metric))


def comparison(figure: Figure, reference: str, candidate: str, level: float) -> Comparison | None:
    """The candidate kernel's runs against the reference's, as the gate compares them (None: fewer
    than two rounds, no level, or a figure of zero that has no ratio)."""
    ref, cand = figure.of(reference), figure.of(candidate)
    n = min(len(ref), len(cand))
    if n < 2 or not 0 < level < 0.5:
        return None
    try:
        return compare(ref[:n], cand[:n], figure.direction, level,
                       method=COUNTS if is_count(figure.metric) else PAIRED)
    except ValueError:
        return None


def _gated(figures: Iterable[Figure], rules: Sequence[RegressionRule]) -> list[tuple[Figure, RegressionRule]]:
    found = [(figure, rule_for(list(rules), figure.metric)) for figure in counts_first(figures)]
    return [(figure, rule) for figure, rule in found if rule is not None]


@dataclass(frozen=True)
class Judged:
    """One gated figure of the range: good against bad, and the gate's verdict on it."""

    figure: Figure
    rule: RegressionRule
    comparison: Comparison | None
    kind: str  # REGRESSION, WITHIN or INCONCLUSIVE


@dataclass(frozen=True)
class RangeCheck:
    verdict: str  # REGRESSES, NO_REGRESSION or NOT_YET
    judged: tuple[Judged, ...]
    rounds: int

    @property
    def regressed(self) -> tuple[Figure, ...]:
        """The figures the bisect decides its steps on: those that regressed, counts first."""
        return tuple(j.figure for j in self.judged if j.kind == REGRESSION)

    def lines(self) -> list[str]:
        """Each gated figure's verdict and comparison, those that regressed first."""
        ordered = sorted(self.judged, key=lambda j: j.kind != REGRESSION)
        return [f"{j.kind}: {format_comparison(j.figure.name, j.comparison, j.figure.unit)}{_allowed(j)}"
                for j in ordered if j.comparison is not None]


def _allowed(judged: Judged) -> str:
    """What a count of events under work:PCT is allowed (its line would read as a contradiction
    without it: within bounds, yet worse)."""
    if judged.rule.metric == ALL_WORK and judged.figure.metric in EVENT_COUNTS:
        return f"; a count of events: work:PCT allows it +{judged.rule.threshold_pct:g}%"
    return ""


def check_range(figures: Sequence[Figure], rules: Sequence[RegressionRule], alpha: float,
                looks: tuple[int, ...]) -> RangeCheck:
    """Good against bad at the session's last look (rounds beyond it are not looked at)."""
    gated = _gated(figures, rules)
    if not gated:
        raise ValueError("no rule gates any figure of the range's session")
    rounds = last_look(min(figure.rounds for figure, _ in gated), looks)
    judged = []
    for figure, rule in gated:
        cmp = comparison(figure.upto(rounds), GOOD, BAD, level_for(figure, alpha, looks)) if rounds else None
        judged.append(Judged(figure.upto(rounds), rule, cmp, verdict(cmp, rule.threshold_pct) if cmp else INCONCLUSIVE))
    kinds = [j.kind for j in judged]
    found = REGRESSES if REGRESSION in kinds else NO_REGRESSION if set(kinds) == {WITHIN} else NOT_YET
    return RangeCheck(found, tuple(judged), rounds)


def last_look(rounds: int, looks: tuple[int, ...]) -> int:
    """The latest look the rounds measured reach (0: not the first yet)."""
    return max((look for look in looks if look <= rounds), default=0)


@dataclass(frozen=True)
class Evidence:
    """One deciding figure of a step: the step against the good kernel (worse?) and the bad
    kernel against the step (worse?), and what the two say together."""

    figure: Figure
    rule: RegressionRule
    against_good: Comparison | None  # good -> step
    against_bad: Comparison | None  # step -> bad
    verdict: str

    def text(self) -> str:
        """The figure's medians under the three kernels and the two comparisons' changes."""
        medians = ", ".join(f"{role} {plain(statistics.median(self.figure.of(role)))}" for role in (GOOD, STEP, BAD)
                            if self.figure.of(role))
        parts = [f"{self.figure.name} ({medians} {self.figure.unit})".replace(" )", ")")]
        for what, cmp in (("step against good", self.against_good), ("bad against step", self.against_bad)):
            if cmp is not None:
                parts.append(f"{what} {cmp.shift_pct:+.1f}% [{cmp.pct_ci[0]:+.1f}%, {cmp.pct_ci[1]:+.1f}%] "
                             f"p={_p(cmp.p_value)}")
        return "; ".join(parts)


def _p(p: float) -> str:
    return "<0.001" if p < 0.001 else f"{p:.3f}"


def _figure_verdict(worse: bool, better: bool) -> str:
    if worse and not better:
        return LIKE_BAD
    if better and not worse:
        return LIKE_GOOD
    return NOT_YET


@dataclass(frozen=True)
class StepCheck:
    verdict: str  # LIKE_GOOD, LIKE_BAD or NOT_YET
    evidence: tuple[Evidence, ...]
    rounds: int

    @property
    def deciding(self) -> Evidence | None:
        """The figure that decided the step (the first, counts first, that says its verdict)."""
        return next((e for e in self.evidence if e.verdict == self.verdict), None) if self.verdict != NOT_YET \
            else None

    @property
    def split(self) -> bool:
        """Whether the deciding figures disagree (one like good, another like bad)."""
        return {LIKE_GOOD, LIKE_BAD} <= {e.verdict for e in self.evidence}


def check_step(figures: Sequence[Figure], deciding: Iterable[tuple[str, str, str]], rules: Sequence[RegressionRule],
               alpha: float, looks: tuple[int, ...]) -> StepCheck:
    """The step's kernel against the good and the bad one on the figures that regressed in the
    range (deciding: their keys), at the session's last look."""
    keys = set(deciding)
    chosen = [(figure, rule) for figure, rule in _gated(figures, rules) if figure.key in keys]
    if not chosen:
        raise ValueError("the step's session has none of the figures that regressed in the range")
    rounds = last_look(min(figure.rounds for figure, _ in chosen), looks)
    evidence = []
    for figure, rule in chosen:
        figure = figure.upto(rounds)
        level = level_for(figure, alpha, looks)
        worse = comparison(figure, GOOD, STEP, level) if rounds else None
        better = comparison(figure, STEP, BAD, level) if rounds else None
        says = _figure_verdict(worse is not None and verdict(worse, rule.threshold_pct) == REGRESSION,
                               better is not None and verdict(better, rule.threshold_pct) == REGRESSION)
        evidence.append(Evidence(figure, rule, worse, better, says))
    said = {e.verdict for e in evidence} - {NOT_YET}
    return StepCheck(said.pop() if len(said) == 1 else NOT_YET, tuple(evidence), rounds)


@dataclass(frozen=True)
class Confirmation:
    verdict: str  # CONFIRMED or NOT_CONFIRMED
    figure: Figure | None
    comparison: Comparison | None
    rounds: int

    def text(self) -> str:
        if self.comparison is None or self.figure is None:
            return f"{self.verdict}: no figure that regressed in the range was measured"
        return f"{self.verdict}: {format_comparison(self.figure.name, self.comparison, self.figure.unit)}"


def confirm(figures: Sequence[Figure], deciding: Iterable[tuple[str, str, str]], rules: Sequence[RegressionRule],
            alpha: float) -> Confirmation:
    """The culprit (as BAD) against its parent (as GOOD) in a session of fixed rounds, one look at
    alpha: confirmed when a figure that regressed in the range regresses here too (the first that
    does, counts first); else not confirmed, with the first figure's comparison."""
    keys = set(deciding)
    chosen = [(figure, rule) for figure, rule in _gated(figures, rules) if figure.key in keys]
    found: list[tuple[Figure, Comparison]] = []
    for figure, rule in chosen:
        cmp = comparison(figure, GOOD, BAD, alpha)
        if cmp is None:
            continue
        if verdict(cmp, rule.threshold_pct) == REGRESSION:
            return Confirmation(CONFIRMED, figure, cmp, figure.rounds)
        found.append((figure, cmp))
    rounds = min((figure.rounds for figure, _ in chosen), default=0)
    return Confirmation(NOT_CONFIRMED, *(found[0] if found else (None, None)), rounds)


def sequentially(check, figures: Sequence[Figure], looks: tuple[int, ...]):
    """check(figures) at each look the runs reach, in order, until one decides (its verdict is no
    longer NOT_YET); that check, or the last look's. What a session that stops at its first
    decision measured and decided, from its runs."""
    rounds = min((figure.rounds for figure in figures), default=0)
    result = None
    for look in looks:
        if look > rounds:
            break
        result = check([figure.upto(look) for figure in figures])
        if result.verdict != NOT_YET:
            return result
    return result if result is not None else check([figure.upto(0) for figure in figures])

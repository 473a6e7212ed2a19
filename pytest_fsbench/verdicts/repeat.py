"""How many times a case is measured: fixed runs, or runs until the median is known precisely
enough, within a budget. Pure decisions; the plugin does the running."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ..errors import UsageError
from .sequential import looks
from .stats import CONFIDENCE, median_within

#: why a case stopped repeating, recorded with it
STOP_RUNS, STOP_CI, STOP_DECIDED, STOP_MAX_RUNS, STOP_TIME = "runs", "ci", "decided", "max-runs", "time"


@dataclass(frozen=True)
class RepeatPolicy:
    """runs: measured runs (the first look, in the sequential modes); warmup: discarded runs
    first; until_ci: stop once the median's interval of every headline metric lies within
    +-until_ci % at both ends; sequential: stop once the regression gate is decided. Both
    sequential modes look only at the run counts of :func:`looks`, within the budget
    max_runs / max_seconds, so that looking repeatedly keeps its error rates (until_ci: each
    look's interval at 1 - 5 % / looks, Bonferroni)."""

    runs: int = 10
    warmup: int = 1
    until_ci: float | None = None
    max_runs: int = 30
    max_seconds: float | None = None
    sequential: bool = False
    until_ci_metrics: tuple[str, ...] = ()  # the metrics until_ci looks at (none: every headline metric)

    def __post_init__(self) -> None:
        if self.runs < 1 or self.warmup < 0 or (self.dynamic and self.max_runs < self.runs):
            raise UsageError(f"--runs {self.runs}, --warmup {self.warmup}, --max-runs {self.max_runs}: "
                             "need runs >= 1, warmup >= 0 and max-runs >= runs")

    @property
    def dynamic(self) -> bool:
        return self.until_ci is not None or self.sequential

    @property
    def looks(self) -> tuple[int, ...]:
        return looks(self.runs, self.max_runs) if self.dynamic else (self.runs,)

    @property
    def ci_confidence(self) -> float:
        """The level of each look's median interval with until_ci (95 % over all looks)."""
        return 1 - (1 - CONFIDENCE) / len(self.looks)


def parse_percent(text: str, option: str) -> float:
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*%?\s*", text)
    if not match or float(match.group(1)) <= 0:
        raise UsageError(f"{option}={text!r}: give a positive percentage, e.g. 5%")
    return float(match.group(1))


def stop_reason(policy: RepeatPolicy, runs: int, headline: Sequence[Sequence[float]], elapsed: float,
                decided: Callable[[], bool] | None = None) -> str | None:
    """Why to stop now, or None to run again. runs: measured runs so far; headline: the samples of
    each headline metric (a tool may leave one out of a run, e.g. bonnie++'s "+++++", so runs
    are counted, not samples); decided(): whether the gate has decided every gated metric (None:
    no sequential decision applies to this case, e.g. a baseline of several sessions)."""
    if runs < policy.runs:
        return None
    if not policy.dynamic or (decided is None and policy.until_ci is None):
        return STOP_RUNS
    if runs in policy.looks or runs >= policy.looks[-1]:
        if policy.sequential and decided is not None and decided():
            return STOP_DECIDED
        measured = [s for s in headline if len(s)]  # none: nothing is known yet, so nothing is precise
        if policy.until_ci is not None and measured and all(median_within(s, policy.until_ci, policy.ci_confidence)
                                                            for s in measured):
            return STOP_CI
    if runs >= policy.looks[-1]:
        return STOP_MAX_RUNS
    if policy.max_seconds is not None and elapsed >= policy.max_seconds:
        return STOP_TIME
    return None


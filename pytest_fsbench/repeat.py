"""How many times a case is measured: fixed runs, or runs until the median is known precisely
enough, within a budget. Pure decisions; the plugin does the running."""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

from .errors import UsageError
from .stats import ci_halfwidth_pct

#: why a case stopped repeating, recorded with it
STOP_RUNS, STOP_CI, STOP_MAX_RUNS, STOP_TIME = "runs", "ci", "max-runs", "time"


@dataclass(frozen=True)
class RepeatPolicy:
    """runs: measured runs (the minimum, in dynamic mode); warmup: discarded runs first;
    until_ci: dynamic mode, stop once the 95 % CI of every headline metric's median is within
    +-until_ci % of it; max_runs / max_seconds: the dynamic mode's budget per case."""

    runs: int = 6
    warmup: int = 1
    until_ci: float | None = None
    max_runs: int = 30
    max_seconds: float | None = None

    def __post_init__(self) -> None:
        if self.runs < 1 or self.warmup < 0 or self.max_runs < self.runs:
            raise UsageError(f"--runs {self.runs}, --warmup {self.warmup}, --max-runs {self.max_runs}: "
                             "need runs >= 1, warmup >= 0 and max-runs >= runs")


def parse_percent(text: str, option: str) -> float:
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*%?\s*", text)
    if not match or float(match.group(1)) <= 0:
        raise UsageError(f"{option}={text!r}: give a positive percentage, e.g. 5%")
    return float(match.group(1))


def stop_reason(policy: RepeatPolicy, runs: int, headline: Sequence[Sequence[float]], elapsed: float) -> str | None:
    """Why to stop now, or None to run again. runs: measured runs so far; headline: the samples of
    each headline metric (a tool may leave one out of a run, e.g. bonnie++'s "+++++", so runs
    are counted, not samples)."""
    n = runs
    if n < policy.runs:
        return None
    if policy.until_ci is None:
        return STOP_RUNS
    if all(ci_halfwidth_pct(s) <= policy.until_ci for s in headline if len(s)):
        return STOP_CI
    if n >= policy.max_runs:
        return STOP_MAX_RUNS
    if policy.max_seconds is not None and elapsed >= policy.max_seconds:
        return STOP_TIME
    return None


def pts_would_stop(samples: Sequence[float], threshold_pct: float = 3.5) -> bool:
    """PTS's dynamic rule, for comparison: stop once stddev/mean is below 3.5 %."""
    if len(samples) < 3:
        return False
    mean = sum(samples) / len(samples)
    sd = math.sqrt(sum((x - mean) ** 2 for x in samples) / (len(samples) - 1))
    return 100 * sd / mean < threshold_pct

"""Absolute thresholds: 'dd.write>=100MB/s', 'btrfs:dd.write>=150MB/s',
'btrfs-raid10:kernel_build.seconds<=900s'. A scope before ':' limits a threshold to a filesystem
or to a case id (and the cases whose id starts with it)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from .case import CaseSpec
from .errors import UsageError
from .metrics import Metric

#: unit -> (dimension, factor to the dimension's base unit)
UNITS: dict[str, tuple[str, float]] = {
    "MB/s": ("throughput", 1.0), "GB/s": ("throughput", 1000.0), "kB/s": ("throughput", 1e-3),
    "KB/s": ("throughput", 1e-3), "MiB/s": ("throughput", 1.048576),
    "KiB/s": ("throughput", 1.024e-3), "GiB/s": ("throughput", 1073.741824),
    "s": ("time", 1.0), "ms": ("time", 1e-3), "us": ("time", 1e-6), "min": ("time", 60.0),
    "ops/s": ("rate", 1.0), "IOPS": ("rate", 1.0), "%": ("percent", 1.0),
}

_RULE = re.compile(
    r"^(?P<metric>[A-Za-z_][\w.]*)\s*(?P<op>>=|<=)\s*(?P<num>\d+(?:\.\d+)?(?:[eE][+-]?\d+)?)\s*(?P<unit>\S*)$"
)


@dataclass(frozen=True)
class Threshold:
    scope: str | None
    metric: str
    op: str
    value: float
    unit: str | None
    text: str

    def applies_to(self, spec: CaseSpec, metric: Metric) -> bool:
        if metric.name != self.metric:
            return False
        if self.scope is None:
            return True
        return self.scope in (spec.fs, spec.id) or spec.id.startswith(self.scope + "-")

    def violation(self, spec: CaseSpec, metric: Metric) -> str | None:
        """A failure message when metric breaks this threshold, else None."""
        limit = self._limit_in(metric.unit)
        ok = metric.value >= limit if self.op == ">=" else metric.value <= limit
        if ok:
            return None
        shown = "<" if self.op == ">=" else ">"
        params = "".join(f" {k}={v}" for k, v in sorted(metric.params.items()))
        unit = self.unit or metric.unit
        return (
            f"{spec.id} {metric.name}{params} {metric.value:.4g} {metric.unit} {shown} "
            f"{self.value:g} {unit}"
        )

    def _limit_in(self, unit: str) -> float:
        if self.unit is None or self.unit == unit:
            return self.value
        mine, theirs = UNITS[self.unit], UNITS.get(unit)
        if theirs is None or theirs[0] != mine[0]:
            raise UsageError(f"threshold {self.text!r} is in {self.unit} but {self.metric} is measured in {unit}")
        return self.value * mine[1] / theirs[1]


def parse_threshold(text: str) -> Threshold:
    """Parse one rule; UsageError with an example when it is malformed."""
    scope, _, rule = text.strip().rpartition(":")
    match = _RULE.match(rule.strip())
    example = "e.g. dd.write>=100MB/s or btrfs:dd.write>=150MB/s or kernel_build.seconds<=900s"
    if not match:
        raise UsageError(f"threshold {text!r}: expected [SCOPE:]METRIC>=VALUE[UNIT] or <=, {example}")
    unit = match.group("unit") or None
    if unit is not None and unit not in UNITS:
        raise UsageError(f"threshold {text!r}: unknown unit {unit!r}; use one of {', '.join(UNITS)}")
    return Threshold(scope.strip() or None, match.group("metric"), match.group("op"),
                     float(match.group("num")), unit, text.strip())


def violations(thresholds: list[Threshold], spec: CaseSpec, metrics: list[Metric]) -> list[str]:
    return [
        message
        for threshold in thresholds
        for metric in metrics
        if threshold.applies_to(spec, metric)
        and (message := threshold.violation(spec, metric)) is not None
    ]

"""Absolute thresholds: 'dd.write>=100MB/s', 'btrfs:dd.write>=150MB/s',
'btrfs-raid10:kernel_build.seconds<=900s'. A scope before ':' limits a threshold to a filesystem
or to a case id (and the cases whose id starts with it)."""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

from ..case import CaseSpec
from ..errors import UsageError
from ..metrics import UNITS, Metric, MetricSpec

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

    def applies_to_case(self, spec: CaseSpec) -> bool:
        if self.scope is None:
            return True
        return self.scope in (spec.fs, spec.id) or spec.id.startswith(self.scope + "-")

    def applies_to(self, spec: CaseSpec, metric: Metric) -> bool:
        return metric.name == self.metric and self.applies_to_case(spec)

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
    if "," in text:
        raise UsageError(f"threshold {text!r}: a threshold is one rule; give each rule on its own (--threshold "
                         "once per rule, in the ini file one per line)")
    if not match:
        raise UsageError(f"threshold {text!r}: expected [SCOPE:]METRIC>=VALUE[UNIT] or <=, {example}")
    if _ and not scope.strip():  # issue 44: ':dd.write>=1MB/s' applied to every case, without a word
        raise UsageError(f"threshold {text!r}: the scope before ':' is empty; name a filesystem or a case "
                         f"(btrfs:..., btrfs-raid1:...), or leave the ':' out to apply it to every case")
    unit = match.group("unit") or None
    if unit is not None and unit not in UNITS:
        raise UsageError(f"threshold {text!r}: unknown unit {unit!r}; use one of {', '.join(UNITS)}")
    if not math.isfinite(float(match.group("num"))):
        raise UsageError(f"threshold {text!r}: {match.group('num')} is too large to compare with; give a finite "
                         f"value, {example}")
    return Threshold(scope.strip() or None, match.group("metric"), match.group("op"),
                     float(match.group("num")), unit, text.strip())


def check_measurable(threshold: Threshold, known: Sequence[MetricSpec]) -> None:
    """UsageError unless some workload measures the threshold's metric in a unit it can be
    compared with (checked before anything runs)."""
    found = [spec for spec in known if spec.matches(threshold.metric)]
    if not found:
        kind = threshold.metric.partition(".")[0] + "."
        same = [spec.shown for spec in known if spec.shown.startswith(kind)]
        names = f"its metrics are {', '.join(same)}" if same else f"metrics are {', '.join(s.shown for s in known)}"
        raise UsageError(f"threshold {threshold.text!r}: no workload measures a metric {threshold.metric!r}; {names}")
    if threshold.unit is None:
        return
    dimension = UNITS[threshold.unit][0]
    for spec in found:
        if spec.unit and UNITS.get(spec.unit, ("", 0))[0] != dimension:
            raise UsageError(f"threshold {threshold.text!r} is in {threshold.unit} but {threshold.metric} is "
                             f"measured in {spec.unit}; give the value in {spec.unit}")


def violations(thresholds: list[Threshold], spec: CaseSpec, metrics: list[Metric]) -> list[str]:
    return [
        message
        for threshold in thresholds
        for metric in metrics
        if threshold.applies_to(spec, metric)
        and (message := threshold.violation(spec, metric)) is not None
    ]

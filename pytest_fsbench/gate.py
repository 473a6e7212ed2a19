"""Regression gating: rules like '5%' (every headline metric) or 'dd.write:3%', applied to a
comparison with the baseline's samples. A case fails only on a change that is worse than the
threshold *and* statistically significant."""

from __future__ import annotations

import re
from dataclasses import dataclass

from .errors import UsageError
from .metrics import is_headline
from .stats import Comparison, format_comparison, regression
from .tables import params_text

@dataclass(frozen=True)
class RegressionRule:
    metric: str | None  # None: every headline metric
    threshold_pct: float


def parse_rule(text: str) -> RegressionRule:
    match = re.fullmatch(r"\s*(?:(?P<metric>[A-Za-z_][\w.]*)\s*:)?\s*(?P<pct>\d+(?:\.\d+)?)\s*%?\s*", text)
    if not match:
        raise UsageError(f"--fail-on-regression {text!r}: expected PERCENT or METRIC:PERCENT, e.g. 5% or dd.write:3%")
    return RegressionRule(match.group("metric"), float(match.group("pct")))


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


def failure_message(case_id: str, metric: str, params: str, unit: str, cmp: Comparison, rule: RegressionRule) -> str:
    label = f"{metric} {params_text(params)}".rstrip()
    return (f"{case_id} {format_comparison(label, cmp, unit)}: "
            f"a regression beyond the {rule.threshold_pct:g}% allowed (baseline median "
            f"{cmp.baseline_median:.4g}, new {cmp.candidate_median:.4g} {unit})")


def is_regression(cmp: Comparison, rule: RegressionRule) -> bool:
    return regression(cmp, rule.threshold_pct)

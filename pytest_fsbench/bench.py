"""The `fsbench` fixture's object: measures a workload on the case's target as many times as the
repeat policy says, stores every run as it completes, then applies thresholds (to medians) and
the regression gate (against the baseline's samples)."""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field

import pytest

from . import gate
from .metrics import Metric, is_headline
from .pts import PtsRun, read_results, result_file, to_metrics, user_path
from .repeat import stop_reason
from .runner import Unsupported, check_cache_policy, execute
from .session import FsbenchSession, RunSpec
from .stats import Comparison, compare, summarize
from .store import Series, now
from .target import Target
from .thresholds import Threshold, parse_threshold, violations
from .workloads.base import Workload

_ROUND = re.compile(r"-round\d+\]$")


def case_key(nodeid: str) -> str:
    """The test's identity across sessions and interleaved rounds (the round id dropped)."""
    return _ROUND.sub("]", nodeid)


@dataclass
class CaseResult:
    """One workload's outcome in one test, for the terminal summary."""

    test: str
    case_id: str
    series: list[Series]
    stopped_by: str | None
    comparisons: list[tuple[Series, Comparison]] = field(default_factory=list)


class Bench:
    def __init__(self, session: FsbenchSession, target: Target, run_spec: RunSpec, item: pytest.Item,
                 record_property, interleaved: bool = False) -> None:
        self.session = session
        self.target = target
        self.cache = run_spec.cache
        self.data = run_spec.data
        self.item = item
        self.test = case_key(item.nodeid)
        self.interleaved = interleaved
        self._record_property = record_property
        self.thresholds: list[Threshold] = list(session.settings.thresholds)
        for marker in item.iter_markers("fsbench_threshold"):
            self.thresholds += [parse_threshold(rule) for rule in marker.args]

    def own_data(self, tool: str) -> None:
        """Skip unless the case uses the default data: tool writes a pattern of its own, whose
        compressibility fsbench cannot set (only dd and fio honour --data)."""
        if self.data != RunSpec().data:
            pytest.skip(f"{self.target.id}: {tool} writes its own data pattern, so --data={self.data} "
                        "cannot apply; dd and fio honour --data")

    def run(self, workload: Workload, *, cache: str | None = None) -> dict[str, list[float]]:
        """Measure workload (warm-up runs first, discarded) until the repeat policy stops; fail
        the test on a broken threshold or a significant regression. Returns each metric's
        measured samples by name. Pass `data=fsbench.data` to workloads that write data."""
        policy = check_cache_policy(cache or self.cache)
        store, session_id = self.session.store, self.session.session_id
        row = store.case_row(session_id, self.test, self.target.id, self.target.spec.to_dict(), workload.name,
                             workload.params(), policy, self.data, self.target.manifest)
        try:
            stopped_by = self._repeat(workload, policy, row)
        except Unsupported as exc:
            store.finish_case(row, "skipped", None)
            pytest.skip(f"{self.target.id}: {exc}")
        series = self._finish(row, stopped_by)
        return {s.key.metric: list(s.values) for s in series}

    def _finish(self, row: int, stopped_by: str | None) -> list[Series]:
        """Close the case in the store, report its series, check thresholds and the gate."""
        store = self.session.store
        series = store.series(self.session.session_id, case_row=row)
        store.finish_case(row, "done" if stopped_by else "running", stopped_by)
        result = CaseResult(self.test, self.target.id, series, stopped_by)
        self.session.results.append(result)
        self._report(series)
        if stopped_by:
            self._check(result)
        return series

    def run_pts(self, run: PtsRun, timeout: float = 4 * 3600) -> dict[str, list[float]]:
        """Install run's profile on this target and run it through PTS (its own repetitions:
        run.times, no warm-up; the profile applies its own cache handling); store each PTS
        sample as a run, then check thresholds and the gate as `run` does."""
        store, session_id = self.session.store, self.session.session_id
        params = {"profile": run.test, **dict(run.options)}
        row = store.case_row(session_id, self.test, self.target.id, self.target.spec.to_dict(), f"pts.{run.profile}",
                             params, "profile", self.data, self.target.manifest)
        composite = result_file(run.result_name, user_path())
        before = set(read_results(composite, run.identifier)) if composite.exists() else set()
        self.session.run(run.install_argv(), timeout=timeout)
        started = now()
        done = self.session.run(run.run_argv(), timeout=timeout, check=False)
        after = read_results(composite, run.identifier) if composite.exists() else []
        new = [r for r in after if r not in before and r.identifier == run.test]
        if not new:
            pytest.fail(f"{self.target.id}: PTS ran {run.test} but saved no result for {run.identifier} in "
                        f"{composite} (exit {done.returncode}); its output ends:\n{done.output.strip()[-1500:]}",
                        pytrace=False)
        runs = max(len(r.samples) for r in new)
        # PTS 10 records each run's duration; without them, the whole invocation's mean
        seconds = next((r.run_seconds for r in new if len(r.run_seconds) == runs), (done.seconds / runs,) * runs)
        for i in range(runs):
            store.add_run(row, False, started, seconds[i], "profile", to_metrics(run.profile, new, i))
        self._record_property("fsbench.pts_result_file", str(composite))
        series = self._finish(row, "runs")
        return {f"{s.key.metric}[{s.params.get('result', '')}]": list(s.values) for s in series}

    def _repeat(self, workload: Workload, policy: str, row: int) -> str | None:
        repeat, store = self.session.settings.repeat, self.session.store
        for _ in range(repeat.warmup):
            self._measure(workload, policy, row, warmup=True)
        start, measured = time.monotonic(), 0
        while True:
            headline = [s.values for s in store.series(self.session.session_id, case_row=row) if is_headline(s.key.metric)]
            reason = stop_reason(repeat, headline, time.monotonic() - start)
            if reason or (self.interleaved and measured == 1):  # interleaved: one run per round
                return reason
            self._measure(workload, policy, row, warmup=False)
            measured += 1

    def _measure(self, workload: Workload, policy: str, row: int, warmup: bool) -> None:
        started = now()
        measurement = execute(workload, self.target, self.session.run, policy)
        self.session.store.add_run(row, warmup, started, measurement.completed.seconds, measurement.cache,
                                   measurement.metrics)

    def _report(self, series: list[Series]) -> None:
        for s in series:
            summary = summarize(s.values)
            params = "".join(f"[{k}={v}]" for k, v in sorted(s.params.items()))
            self._record_property(f"fsbench.{s.key.metric}{params}",
                                  f"{summary.median:.6g} {s.unit} median of {summary.n} ({s.direction.value} is better)")

    def _check(self, result: CaseResult) -> None:
        medians = [Metric(s.key.metric, summarize(s.values).median, s.unit, s.direction, s.params)
                   for s in result.series]
        failures = violations(self.thresholds, self.target.spec, medians)
        failures += self._gate(result)
        if failures:
            pytest.fail("\n".join(failures), pytrace=False)

    def _gate(self, result: CaseResult) -> list[str]:
        baseline = self.session.baseline_series()
        if baseline is None:
            return []
        failures = []
        for s in result.series:
            base = baseline.get(s.key)
            if base is None or len(base.values) < 2 or len(s.values) < 2:
                continue
            try:
                cmp = compare(base.values, s.values, s.direction, self.session.settings.alpha)
            except ValueError:  # a zero or negative sample cannot be compared on a log scale
                continue
            result.comparisons.append((s, cmp))
            rule = gate.rule_for(list(self.session.settings.regression_rules), s.key.metric)
            if rule and gate.is_regression(cmp, rule):
                message = gate.failure_message(s.case_id, s.key.metric, s.key.params, s.unit, cmp, rule)
                if base.options != s.options:
                    message += f"; the filesystem options changed: baseline {base.options}, now {s.options}"
                failures.append(message)
        return failures


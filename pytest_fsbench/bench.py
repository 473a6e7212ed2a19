"""The `fsbench` fixture's object: measures a workload on the case's target as many times as the
repeat policy says, stores every run as it completes, then applies thresholds (to medians) and
the regression gate (against the baseline's samples)."""

from __future__ import annotations

import re
import shutil
import time
import warnings
from dataclasses import dataclass, field

import pytest

from .measure import cache_check
from .verdicts.gate import Judgement
from .metrics import CONTROL, WORK_COUNTED, Direction, Metric, is_headline, mb_per_s
from .measure.progress import WIDTH, Progress, fit, run_line
from .verdicts.repeat import stop_reason
from .measure.run import Unsupported, check_cache_policy
from .session import FsbenchSession
from .settings import CONTROL_MB, Conditions
from .views.tables import gate_section
from .verdicts.baseline import COMPARED, PAIRED_WITH, compared_record, pair_up
from .case import CaseSpec
from .kernels.kernel import ram_of
from .verdicts.stats import Comparison, summarize
from .store.results import Series, canonical, now
from .targets.target import Target
from .errors import CommandError, FsbenchError, UsageError
from .sizes import human_size
from .store.results import StoreError
from .verdicts.thresholds import Threshold, check_measurable, parse_threshold
from .store.facts import emulation
from .workloads import KNOWN_METRICS
from .workloads.base import Workload
from .workloads.dd import parse_dd
from .sizes import existing_ancestor

_ROUND = re.compile(r"-round\d+\]$")


def case_key(nodeid: str) -> str:
    """The test's identity across sessions and interleaved rounds (the round id dropped)."""
    return _ROUND.sub("]", nodeid)


def failure_text(failures: list[str], width: int) -> str:
    """A case's failures (its thresholds' and the gate's), a line each, every line within width as
    the rest of fsbench's prose (progress.fit; issue 35): pytest prints the text as it is."""
    return "\n".join(part for failure in failures for line in failure.splitlines() for part in fit(line, width))


class CachedFigureWarning(UserWarning):
    """A threshold or the gate judged a figure that came from a cache, not from the storage."""


class InconclusiveGateWarning(UserWarning):
    """The gate could tell neither a regression nor a change within bounds, and the case passed:
    one short warning a session (inconclusive_warning), the lines being the gate's."""


def inconclusive_warning(passed_undecided: int, gated: int) -> InconclusiveGateWarning | None:
    """The session's one warning of its inconclusive verdicts that passed (issue 43: each was printed
    again in pytest's warnings summary, 307-345 columns with fsbench's source line), None for none."""
    if not passed_undecided:
        return None
    return InconclusiveGateWarning(f"{passed_undecided} of {gated} gate verdicts inconclusive, passed")


@dataclass
class CaseResult:
    """One workload's outcome in one test, for the terminal summary."""

    test: str
    case_id: str
    series: list[Series]
    stopped_by: str | None
    judgement: Judgement = field(default_factory=Judgement)  # the gate's word on the case
    cache_notes: dict[tuple[str, str], str] = field(default_factory=dict)  # (metric, params) -> why from cache
    fs: str = ""  # the case's filesystem and the data its tool wrote, for the summary's compression column
    data: str = "random"
    emulated: bool = False  # measured in a virtual machine under QEMU's CPU emulation (TCG)

    @property
    def comparisons(self) -> list[tuple[Series, Comparison]]:
        return self.judgement.comparisons

    @property
    def paired(self) -> list[tuple[Series, Comparison]]:
        return self.judgement.paired

    @property
    def verdicts(self) -> list[str]:
        return self.judgement.lines


#: the image directory's free space below which a failed run is put down to its filling up
FILLED_BELOW = 8 << 20


class Bench:
    def __init__(self, session: FsbenchSession, target: Target, conditions: Conditions, item: pytest.Item,
                 record_property, interleaved: bool = False, progress: Progress | None = None,
                 width: int = WIDTH) -> None:
        self.session = session
        self.width = width  # the columns a failure's line may take (measure.progress.terminal_width)
        self.progress = progress or Progress()
        self.target = target
        self.cache = conditions.cache
        self.data = conditions.data
        self.written: str | None = None  # what the tool writes when it is not --data (own_data)
        self.item = item
        self.test = case_key(item.nodeid)
        self.interleaved = interleaved
        self._record_property = record_property
        self.thresholds: list[Threshold] = list(session.settings.thresholds)
        self.marked: list[Threshold] = []  # this test's own thresholds (fsbench_threshold marker)
        try:
            for marker in item.iter_markers("fsbench_threshold"):
                self.marked += [parse_threshold(rule) for rule in marker.args]
            for threshold in self.marked:
                check_measurable(threshold, KNOWN_METRICS)
        except UsageError as exc:
            pytest.fail(f"{item.nodeid}: fsbench_threshold marker: {exc}", pytrace=False)

    @property
    def ram_bytes(self) -> int:
        """The memory a measured run may use, page cache included (kernel.ram_of): what 2xRAM
        file sizes are made of."""
        return ram_of(self.target.spec.kernel, self.session.settings.memory, self.session.host.ram_bytes)

    def own_data(self, tool: str) -> None:
        """Skip unless the case uses the default data: tool writes a pattern of its own, whose
        compressibility fsbench cannot set (only dd and fio honour --data). A test marked
        fsbench_own_data(tool) has this done for it, and is never given another --data."""
        if self.data != Conditions().data:
            pytest.skip(f"{self.target.id}: {tool} writes its own data pattern, so --data={self.data} "
                        "cannot apply; dd and fio honour --data")
        self.written = f"{tool}'s own pattern"

    def run(self, workload: Workload, *, cache: str | None = None) -> dict[str, list[float]]:
        """measure's former name (a run is one measured repetition): kept for test files that use it."""
        warnings.warn("fsbench.run(workload) is fsbench.measure(workload) now", DeprecationWarning, stacklevel=2)
        return self.measure(workload, cache=cache)

    def measure(self, workload: Workload, *, cache: str | None = None) -> dict[str, list[float]]:
        """Measure workload (warm-up runs first, discarded) until the repeat policy stops; fail
        the test on a broken threshold or a significant regression. Returns each metric's
        measured samples by name. Pass `data=fsbench.data` to workloads that write data."""
        policy = check_cache_policy(cache or self.cache)
        store, session_id = self.session.store, self.session.session_id
        tests = self._pair_tests()
        if tests is not None and tests[1] == self.test:  # a report made later pairs them from this
            self.target.manifest[PAIRED_WITH] = {"reference": tests[0], "rounds": self.session.settings.repeat.runs}
        mismatch = self.session.gate.unmatched_parameters(self.test, workload.name, canonical(workload.params()))
        if mismatch is not None:
            pytest.fail(f"{self.target.id}: {mismatch}", pytrace=False)
        row = store.case_row(session_id, self.test, self.target.id, self.target.stored_spec(), workload.name,
                             workload.params(), policy, self.written or self.data, self.target.manifest)
        failure = None
        try:
            workload = self._installed(workload)
            self._check_room(workload)
            stopped_by = self._repeat(workload, policy, row)
        except Unsupported as exc:
            store.finish_case(row, "skipped", None)
            pytest.skip(f"{self.target.id}: {exc}")
        except StoreError as exc:  # issue 34: a store that filled up mid-session was a chained traceback
            failure = self.session.store_failed(exc)
            self.item.session.shouldstop = failure
        except (FsbenchError, OSError) as exc:
            store.finish_case(row, "failed", None)
            failure = self._image_dir_filled(workload, exc)
            if failure is None:
                cause = self.session.targets.daemon_failure(self.target.spec)
                if cause is None and not isinstance(exc, CommandError):
                    raise
                # a tool that failed is the tool's words, not a traceback through fsbench (found by the sweep)
                failure = f"{cause}\n{exc}" if cause else f"{self.target.id}: {workload.name} failed: {exc}"
        except pytest.fail.Exception:
            store.finish_case(row, "failed", None)
            raise
        if failure is not None:  # outside the handler: one line, no chained traceback
            pytest.fail(failure, pytrace=False)
        series = self._finish(row, stopped_by)
        return {s.key.metric + "".join(f"[{k}={v}]" for k, v in sorted(s.params.items())): list(s.values)
                for s in series}

    def _installed(self, workload: Workload) -> Workload:
        """The workload after its one-time set-up on this target, if it has one (a PTS profile is
        installed on the target once per case: pts/workload.py); Unsupported skips the case."""
        install = getattr(workload, "installed", None)
        return workload if install is None else install(self.target, self.session.execute)

    def _image_dir_filled(self, workload: Workload, exc: Exception) -> str | None:
        """The one line of a run that failed because the image directory filled up, so the loop
        images could not grow (the filesystem on them then fails its writes or goes read-only;
        issue 34: "No space left" inside 78 lines); None when it did not."""
        settings = self.session.settings
        if settings.devices or self.target.spec.in_guest:
            return None
        existing = existing_ancestor(settings.image_dir)
        free = shutil.disk_usage(existing).free
        if free >= FILLED_BELOW:
            return None
        words = next((line.strip() for line in str(exc).splitlines()[1:] if line.strip()), str(exc).splitlines()[0])
        return (f"{self.target.id}: {workload.name} failed because --image-dir={settings.image_dir} filled up "
                f"({human_size(free)} free), so the loop images could not grow ({words}); free some room there, "
                "or give an --image-dir with more room")

    def _check_room(self, workload: Workload) -> None:
        """Refuse a workload that will not fit on the target, before it runs for minutes and
        fails with ENOSPC."""
        needed = getattr(workload, "space_needed", lambda cow: None)(self.target.driver.copy_on_write)
        free = self.target.free_bytes(self.session.execute)
        if needed is not None and needed > free:
            pytest.fail(f"{self.target.id}: {workload.name} needs about {human_size(needed)} on the target and "
                        f"{self.target.id} has {human_size(free)} free; raise --image-size (now "
                        f"{human_size(self.session.settings.image_size)}) or make the workload smaller",
                        pytrace=False)

    def _finish(self, row: int, stopped_by: str | None) -> list[Series]:
        """Close the case in the store, report its series, check thresholds and the gate."""
        store = self.session.store
        series = store.series(self.session.session_id, case_row=row)
        store.finish_case(row, "done" if stopped_by else "running", stopped_by, self.target.manifest)
        result = CaseResult(self.test, self.target.id, series, stopped_by, fs=self.target.spec.fs,
                            data=self.written or self.data,
                            emulated=emulation(self.target.manifest) == "emulated")
        self.session.results.append(result)
        self._report(series)
        if stopped_by:
            try:
                self._check(result)
            finally:
                baseline = self.session.gate.baseline
                if result.comparisons and baseline is not None:  # a report made later shows these comparisons
                    self.target.manifest[COMPARED] = compared_record(baseline.session_ids, result.comparisons)
                if result.verdicts:  # kept with the case, so a report made later shows the gate too
                    self.target.manifest["gate"] = [{"line": line, "failed": failed, "test": s.key.test,
                                                     "metric": s.key.metric, "params": s.key.params}
                                                    for s, line, failed in result.judgement.gated]
                if result.verdicts or COMPARED in self.target.manifest:
                    store.finish_case(row, "done", stopped_by, self.target.manifest)
        return series

    def _repeat(self, workload: Workload, policy: str, row: int) -> str | None:
        repeat, store = self.session.settings.repeat_for(self.test), self.session.store
        for k in range(repeat.warmup):
            self._measure(workload, policy, row, True, k + 1, repeat.warmup)
        start, measured = time.monotonic(), 0
        while True:
            headline = [s.values for s in store.series(self.session.session_id, case_row=row)
                        if (s.key.metric in repeat.until_ci_metrics if repeat.until_ci_metrics
                            else is_headline(s.key.metric))]
            gate = self.session.gate
            decided = ((lambda: gate.decided(store.series(self.session.session_id, case_row=row)))
                       if gate.looks_sequentially else None)
            reason = stop_reason(repeat, store.case_runs(row), headline, time.monotonic() - start, decided)
            if reason or (self.interleaved and measured == 1):  # interleaved: one run per round
                return reason
            done = store.case_runs(row)
            self._measure(workload, policy, row, False, done + 1, max(repeat.runs, done + 1))
            measured += 1

    def _measure(self, workload: Workload, policy: str, row: int, warmup: bool, index: int, planned: int) -> None:
        started, start = now(), time.monotonic()
        kind = f"warm-up {index}" if warmup else f"run {index}"
        with self.progress.running(self.target.id, workload.name, kind):
            control = self._control()
            limit = self.session.targets.run_limit(getattr(workload, "memory_limit", None))
            measurement = self.target.measure(workload, self.session.execute, policy, limit)
        wall = time.monotonic() - start  # before the paced storage's counters are read (up to a second)
        storage = self.session.targets.storage_record()
        if storage is not None:  # --storage-rate: the rate, and what has passed through it so far
            self.target.manifest["storage"] = storage
        entries = getattr(workload, "manifest_entries", None)
        if entries is not None:
            self.target.manifest.update(entries(measurement.completed.output))
        if measurement.counted:  # where the run's work was counted (issue 41)
            self.target.manifest[WORK_COUNTED] = measurement.counted
        self.session.store.add_run(row, warmup, started, measurement.completed.seconds, measurement.cache,
                                   measurement.metrics + control, measurement.prepare_seconds,
                                   measurement.cache_seconds, wall, measurement.count_seconds)
        repeat = self.session.settings.repeat_for(self.test)
        budget = repeat.max_runs if repeat.dynamic else None
        self.progress.run(run_line(self.target.id, workload.name, index, planned, budget, warmup,
                                    measurement.completed.seconds, measurement.metrics))

    def _control(self) -> list[Metric]:
        """--control: the machine's own write speed just before this run (control.write)."""
        if not self.session.settings.control:
            return []
        device = self.session.targets.control_device()
        done = self.session.execute(["dd", "if=/dev/zero", f"of={device}", f"bs={1 << 20}", f"count={CONTROL_MB}",
                                 "oflag=direct", "conv=fdatasync"], timeout=300)
        result = parse_dd(done.output)
        return [Metric(CONTROL, mb_per_s(result.bytes, result.seconds), "MB/s", Direction.HIGHER)]

    def _report(self, series: list[Series]) -> None:
        shares = cache_check.share_index(series)
        for s in series:
            summary = summarize(s.values)
            params = "".join(f"[{k}={v}]" for k, v in sorted(s.params.items()))
            note = cache_check.cache_note(cache_check.figure_share(shares, s), self.cache)
            self._record_property(f"fsbench.{s.key.metric}{params}",
                                  f"{summary.median:.6g} {s.unit} median of {summary.n} ({s.direction.value} is better)"
                                  + (f"; {note}" if note else ""))

    def _cache_notes(self, series: list[Series]) -> dict[tuple[str, str], str]:
        """(metric, params) -> why the figure is marked served from cache, for those that are."""
        shares = cache_check.share_index(series)
        notes = {(s.key.metric, s.key.params): cache_check.cache_note(cache_check.figure_share(shares, s), self.cache)
                 for s in series}
        return {key: note for key, note in notes.items() if note}

    def _check(self, result: CaseResult) -> None:
        medians = [Metric(s.key.metric, summarize(s.values).median, s.unit, s.direction, s.params)
                   for s in result.series]
        thresholds = self.thresholds + self.marked
        applied = [(t, m) for t in thresholds for m in medians if t.applies_to(self.target.spec, m)]
        self.session.thresholds_applied.update(t.text for t, _ in applied)
        notes = result.cache_notes = self._cache_notes(result.series)
        for t, m in applied:
            note = notes.get((m.name, canonical(m.params)))
            if note:
                warnings.warn(CachedFigureWarning(f"{self.target.id}: threshold {t.text!r} checked "
                                                  f"{m.name} {m.value:.4g} {m.unit}, {note}"))
        failures = [message + (f" ({notes[(m.name, canonical(m.params))]})"
                               if (m.name, canonical(m.params)) in notes else "")
                    for t, m in applied if (message := t.violation(self.target.spec, m)) is not None]
        failures += [f"{self.target.id}: fsbench_threshold {t.text!r} applies to no metric this test measured "
                     f"({', '.join(sorted({m.name for m in medians}))})"
                     for t in self.marked if t.text not in self.session.thresholds_applied]
        failed = [(line, True, s.key.metric) for s, line, fails in self._gate(result) if fails]
        if failures or failed:  # the gate's lines with each note said once (issue 43), as its section says them
            text = failure_text(failures, self.width) if failures else ""
            gated = "\n".join(gate_section(failed, self.width, failures_shown=False))
            pytest.fail("\n".join(part for part in (text, gated) if part), pytrace=False)

    def _gate(self, result: CaseResult) -> list[tuple[Series, str, bool]]:
        """Ask the gate about the case (against the baseline and, for a --paired variant, its
        reference case); record its lines; each gated figure's (series, line, whether it failed)."""
        note = f" (paired by round with {self.pair[0].id})" if self.pair else ""
        paired = [(s, cmp, note) for s, cmp in self._paired_comparisons(result.series)]
        judgement = result.judgement = self.session.gate.judge(result.series, paired, result.cache_notes,
                                                               result.stopped_by)
        for s, line, _ in judgement.gated:
            params = "".join(f"[{k}={v}]" for k, v in sorted(s.params.items()))
            self._record_property(f"fsbench.gate.{s.key.metric}{params}", line)
        return judgement.gated

    @property
    def pair(self) -> tuple[CaseSpec, CaseSpec] | None:
        """(reference, variant) of --paired that this target is one of (None when neither)."""
        return next(((a, b) for a, b in self.session.settings.pairs if self.target.spec in (a, b)), None)

    def _pair_tests(self) -> tuple[str, str] | None:
        """(reference's test, variant's test) of the pair this target is one of (None when neither)."""
        pair = self.pair
        if pair is None:
            return None
        other = pair[0] if self.target.spec == pair[1] else pair[1]
        theirs = self.test.replace(f"[{self.target.spec.id}", f"[{other.id}", 1)
        return (theirs, self.test) if other == pair[0] else (self.test, theirs)

    def _paired_comparisons(self, series: list[Series]) -> list[tuple[Series, Comparison]]:
        """The variant against its reference, round by round, once both have all their rounds
        (rounds alternate their order, so either may finish last)."""
        tests = self._pair_tests()
        if tests is None:
            return []
        theirs = self.session.store.series(self.session.session_id, test=next(t for t in tests if t != self.test))
        refs, variants = (series, theirs) if tests[0] == self.test else (theirs, series)
        return pair_up(refs, variants, self.session.settings.repeat.runs, self.session.settings.alpha)

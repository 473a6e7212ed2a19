"""The terminal of a pytest session that measures fsbench cases (issue 35): one line per case, with
its place in the session ([12/40]), its time, its headline median, the time spent and an
estimate of the time left, in place of pytest's file name and letter per test (the file's name
was printed again before every case, 40 times in the bench). Only at pytest's default verbosity:
-v keeps pytest's own line per test (and adds a line per run and per case), -q keeps pytest's
letters and writes none of fsbench's. Sessions without a case are left as pytest writes them.
Every line fits the terminal's width, at most 120 columns (measure.progress.case_lines says how a
case's line gives way on a narrow terminal)."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable

import pytest

from .bench import case_key
from .case import case_kind
from .measure.progress import PLAN_SECONDS, Estimate, case_lines, for_pytest, headline_text

#: pytest's outcomes by how bad: a case's word is its worst report's (setup, call, teardown)
RANK = {"passed": 0, "xpassed": 0, "skipped": 1, "xfailed": 1, "failed": 2, "error": 3}


def is_case(item: pytest.Item) -> bool:
    callspec = getattr(item, "callspec", None)
    return callspec is not None and "fsbench_spec" in callspec.params


def kind_of(item: pytest.Item) -> str:
    """A case's kind for the estimate (case.case_kind, as a study's plan keys it)."""
    function = getattr(item, "originalname", item.name)
    spec = item.callspec.params["fsbench_spec"] if is_case(item) else None
    if spec is None:
        return function
    return case_kind(function, spec.kernel if spec.in_guest else "host", bool(spec.storage_rate))


def plan_seconds(text: str | None) -> dict[str, float]:
    """PLAN_SECONDS' value; anything but a JSON object of numbers is no plan."""
    try:
        found = json.loads(text or "{}")
    except ValueError:
        return {}
    if not isinstance(found, dict):
        return {}
    return {str(k): float(v) for k, v in found.items() if isinstance(v, (int, float))}


def outcome_of(report: pytest.TestReport) -> str:
    if report.when != "call" and report.failed:
        return "error"
    if hasattr(report, "wasxfail"):
        return "xfailed" if report.skipped else "xpassed"
    return report.outcome


def detail_of(report: pytest.TestReport) -> str:
    """Why a case was skipped or failed, in one line."""
    longrepr = report.longrepr
    if report.skipped and isinstance(longrepr, tuple) and len(longrepr) == 3:
        return str(longrepr[2]).removeprefix("Skipped: ")
    crash = getattr(longrepr, "reprcrash", None)
    text = crash.message if crash is not None else str(longrepr or "")
    return next((line.strip() for line in text.splitlines() if line.strip()), "")


class CaseLines:
    """Registered by the plugin in every session; active once collection finds a case and pytest
    has a terminal reporter writing at verbosity 0 or more."""

    def __init__(self, config: pytest.Config, results, width: int, booting: Callable[[], float],
                 history: Callable[[], dict[str, float]] = dict) -> None:
        self.config = config
        self.width = width  # the columns a line may take (measure.progress.terminal_width)
        self.booting = booting  # the session's seconds so far waiting for its virtual machines to boot
        self.write = None  # writes one line past pytest's capture (measure.progress.for_pytest's)
        self.results = results  # the session's CaseResults, for the headline median
        self.active = False
        self.quiet_pytest = False  # pytest's file names and letters left out (verbosity 0)
        self.finished = False
        self.items: list[pytest.Item] = []
        self.done = 0
        self.start = time.monotonic()
        self.started: dict[str, tuple[float, float]] = {}  # nodeid -> (its start, the boot waits before it)
        self.outcomes: dict[str, pytest.TestReport] = {}
        self.estimate = Estimate(prior=plan_seconds(os.environ.get(PLAN_SECONDS)))
        self.history = history  # without a plan: each kind's seconds a case in this machine's earlier sessions

    @pytest.hookimpl(trylast=True)  # after the plugin has deselected what cannot run
    def pytest_collection_finish(self, session: pytest.Session) -> None:
        reporter = self.config.pluginmanager.get_plugin("terminalreporter")
        if (self.config.option.collectonly or reporter is None or self.config.get_verbosity() < 0
                or not any(is_case(item) for item in session.items)):
            return
        self.write = for_pytest(self.config, self.width).line
        self.active, self.items, self.start = True, list(session.items), time.monotonic()
        if not self.estimate.prior:
            self.estimate.prior = self.history()
        if self.config.get_verbosity() == 0:
            self.quiet_pytest = True
            reporter.showfspath = False

    @pytest.hookimpl(wrapper=True)
    def pytest_report_teststatus(self, report, config: pytest.Config):
        status = yield
        if not self.quiet_pytest or not status or not isinstance(report, pytest.TestReport):
            return status
        # counted in pytest's summary, neither lettered nor worded while the cases run (this plugin
        # writes each case's line; a word would make pytest write its progress); the short summary
        # at the end ("FAILED tests/...") asks again once the session is finished, and gets the word
        return status if self.finished else (status[0], "", "")

    def pytest_sessionfinish(self) -> None:
        self.finished = True  # before the terminal reporter writes its summary (a wrapper, after us)

    def pytest_runtest_logstart(self, nodeid: str) -> None:
        if self.active:
            self.started[nodeid] = (time.monotonic(), self.booting())

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if not self.active:
            return
        kept = self.outcomes.get(report.nodeid)
        if kept is None or RANK.get(outcome_of(report), 2) > RANK.get(outcome_of(kept), 2):
            self.outcomes[report.nodeid] = report

    def pytest_runtest_logfinish(self, nodeid: str) -> None:
        if not self.active:
            return
        self.done += 1
        item = next((i for i in self.items[self.done - 1:] if i.nodeid == nodeid), None) or \
            next((i for i in self.items if i.nodeid == nodeid), None)
        start, booted = self.started.pop(nodeid, (time.monotonic(), self.booting()))
        seconds = time.monotonic() - start
        if item is not None:  # a virtual machine's boot in the case is the session's, not the case's (issue 35)
            self.estimate.add(item.name, kind_of(item), seconds, once=self.booting() - booted)
        report = self.outcomes.pop(nodeid, None)
        outcome = outcome_of(report) if report is not None else "passed"
        detail = detail_of(report) if report is not None and outcome != "passed" else self.headline(nodeid)
        left = self.estimate.left([(i.name, kind_of(i)) for i in self.items[self.done:]])
        name = nodeid.rpartition("::")[2]
        for line in case_lines(self.done, len(self.items), name, outcome, seconds, detail,
                               time.monotonic() - self.start, left, self.width):
            self.write(line)

    def headline(self, nodeid: str) -> str:
        key = case_key(nodeid)
        found = [r for r in self.results() if r.test == key]
        return headline_text(found[-1].series) if found else ""

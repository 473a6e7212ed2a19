"""Live progress in the terminal: one line per finished case (its place in the session, its
time, its headline median, the time spent and an estimate of the time left: case_lines,
Estimate), with -v also a line per run (run k of n or of the budget, its time and headline value);
for a run that takes long, a heartbeat line every HEARTBEAT seconds so a user sees the tool is
alive. Every line fits in the terminal's width, at most WIDTH columns (terminal_width). Nothing is
written with -q (or when pytest
has no terminal reporter); the lines bypass pytest's output capture, as its live logging does,
so they never land in a test's captured output or a junit report."""

from __future__ import annotations

import contextlib
import shutil
import statistics
import sys
import textwrap
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field

from ..case import case_kind
from ..metrics import Metric, is_headline

HEARTBEAT = 30.0


def run_line(case: str, workload: str, index: int, planned: int, budget: int | None, warmup: bool,
             seconds: float, metrics: list[Metric]) -> str:
    """One finished run, e.g. "fsbench ext4-single dd: run 3/10 (budget 30) 2.1 s, dd.write 512 MB/s"."""
    of = f"{index}/{planned}" + (f" (budget {budget})" if budget and budget > planned else "")
    kind = f"warm-up {index}" if warmup else f"run {of}"
    headline = next((m for m in metrics if is_headline(m.name)), None)
    value = f", {headline.name} {headline.value:.4g} {headline.unit}" if headline else ""
    return f"fsbench {case} {workload}: {kind} {seconds:.1f} s{value}"


def heartbeat_line(case: str, workload: str, kind: str, elapsed: float) -> str:
    return f"fsbench {case} {workload}: {kind} still running, {elapsed:.0f} s"


@dataclass
class Progress:
    """Writes progress lines through `write` (None: silent)."""

    write: Callable[[str], None] | None = None
    heartbeat: float = HEARTBEAT
    runs: bool = True  # a line per run too (pytest -v); else one line per case, written by the plugin
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def run(self, text: str) -> None:
        """A finished run's line, when lines per run are asked for."""
        if self.runs:
            self.line(text)

    def line(self, text: str) -> None:
        if self.write is not None:
            with self._lock:
                self.write(text)

    @contextlib.contextmanager
    def running(self, case: str, workload: str, kind: str) -> Iterator[None]:
        """Around one run: a heartbeat line every `heartbeat` seconds until it ends."""
        if self.write is None:
            yield
            return
        done = threading.Event()
        start = time.monotonic()

        def beat() -> None:
            while not done.wait(self.heartbeat):
                self.line(heartbeat_line(case, workload, kind, time.monotonic() - start))

        thread = threading.Thread(target=beat, name="fsbench-heartbeat", daemon=True)
        thread.start()
        try:
            yield
        finally:
            done.set()
            thread.join()


def for_pytest(config, width: int) -> Progress:
    """Progress for a pytest session: silent with -q or without a terminal reporter; a line per
    run with -v (by default the plugin writes one line per case, and heartbeats come here); each
    line within width (fit)."""
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    if reporter is None or config.get_verbosity() < 0:
        return Progress()
    capture = config.pluginmanager.get_plugin("capturemanager")

    def write(text: str) -> None:
        guard = capture.global_and_fixture_disabled() if capture is not None else contextlib.nullcontext()
        with guard:
            reporter.ensure_newline()
            for part in fit(text, width):
                reporter.write_line(part)

    return Progress(write, runs=config.get_verbosity() > 0)


#: the environment variable holding the plan's seconds per case as a JSON object, by test name
#: (test_iozone[btrfs-single-16M]: a study's, its claims' cases at their expected runs), or by test
#: function (or "function kernel"): the plan's estimates, which a study passes to its session
#: (studies/launch.py); the cases done so far correct them
PLAN_SECONDS = "FSBENCH_PLAN_SECONDS"

#: the widest line fsbench writes to the terminal (issue 35: result lines were about 220 wide)
WIDTH = 120
#: the narrowest width fsbench lays its lines out for (a narrower terminal wraps them itself)
NARROWEST = 40


def terminal_width() -> int:
    """The columns fsbench's lines may take: the terminal's width (its COLUMNS when set, which
    pytest honours too) up to WIDTH; WIDTH when the output goes to a file or a pipe (issue 35: an
    80-column terminal got 120-column lines that it wrapped again itself)."""
    return max(NARROWEST, min(WIDTH, shutil.get_terminal_size((WIDTH, 24)).columns))


def fit(line: str, width: int = WIDTH) -> list[str]:
    """A line of prose within width columns: wrapped at spaces, the rest indented by two; a word
    longer than a line (a path) is left whole, past the width, so that unwrap() gives the line
    back as it was (a path broken in two came back with a space inside it)."""
    if len(line) <= width:
        return [line]
    return textwrap.wrap(line, width, subsequent_indent="  ", break_long_words=False, break_on_hyphens=False)


def fit_under(line: str, width: int = WIDTH) -> list[str]:
    """A line of prose within width columns, its continuation two deeper than its own indent (an
    indented line under its heading: fsbench changes' session lines); as fit() for a line not
    indented."""
    indent = line[:len(line) - len(line.lstrip(" "))]
    if not indent:
        return fit(line, width)
    if len(line) <= width:
        return [line]
    return textwrap.wrap(line.lstrip(" "), width, initial_indent=indent, subsequent_indent=indent + "  ",
                         break_long_words=False, break_on_hyphens=False)


def say(*lines: str, file=None) -> None:
    """Lines of prose, each within the terminal's width (issue 43): wrapped at spaces, an indented
    line's rest under it (a path longer than a line stays whole)."""
    width = terminal_width()
    print("\n".join(part for text in lines for line in text.splitlines() or [""]
                    for part in fit_under(line, width)), file=file or sys.stdout)


def unwrap(lines: Sequence[str]) -> list[str]:
    """The lines fit() wrapped, each joined again with the indented lines that continue it (for
    a program that reads a session's output line by line)."""
    found: list[str] = []
    for line in lines:
        if found and found[-1] and line.startswith("  ") and not line.startswith("   ") and line.strip():
            found[-1] += " " + line.strip()
        else:
            found.append(line)
    return found


def clock(seconds: float) -> str:
    """42 -> 0:42, 3725 -> 1:02:05."""
    hours, rest = divmod(max(0, round(seconds)), 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


def shorten(text: str, width: int) -> str:
    """text cut to width, its middle replaced by '...' (a test id keeps its start and its case)."""
    if len(text) <= width:
        return text
    if width <= 3:
        return text[:width]
    head = (width - 3 + 1) // 2
    return text[:head] + "..." + text[len(text) - (width - 3 - head):]


def case_lines(index: int, total: int, name: str, outcome: str, seconds: float, detail: str, spent: float,
               left: float | None, width: int = WIDTH) -> list[str]:
    """One finished case of the session, within width, e.g.
    "[ 3/40] test_dd_write[ext4-single-1M] passed 2.1 s: dd.write 1577 MB/s  0:12 spent, about 2:40 left".
    Where that is wider than the terminal, the case takes two lines (issue 43: a line that left the
    time spent out instead read unlike its neighbours, a paired session's variants every other
    line): its place, name, outcome and time, then, indented by two as a wrapped line of prose is
    (unwrap joins them again into the one line), its headline or why it skipped or failed and the
    time (the time spent left out only where even that line is too narrow for it; the detail
    shortened in its middle, and the name, only where even that does not fit)."""
    head = f"[{index:>{len(str(total))}}/{total}] "
    when = ("done" if index >= total else "time left unknown" if left is None else f"about {clock(left)} left")
    tails = (f"{clock(spent)} spent, {when}", when)
    said = f": {detail}" if detail else ""
    line = f"{head}{name} {outcome} {seconds:.1f} s{said}  {tails[0]}"
    if len(line) <= width:
        return [line]
    ending = f" {outcome} {seconds:.1f} s" + (":" if detail else "")
    first = head + shorten(name, max(width - len(head) - len(ending), 10)) + ending
    tail = next((t for t in tails if len(f"  {detail}  {t}") <= width), tails[-1])
    second = "  " + (shorten(detail, width - 4 - len(tail)) + "  " if detail else "") + tail
    return [shorten(first, width), shorten(second, width)]


@dataclass
class Estimate:
    """The time left in a session. A case still to run takes the plan's seconds for it (by its
    test name, else its kind, else its test function: a study's measured seconds, its claims'
    cases at their expected runs), scaled by how long the cases of its kind (test function and
    kernel) done so far took against their plan's; a case the plan does not know takes the mean
    of the cases of its kind done so far, else of every case done. A one-off cost inside a case
    (the boot of a virtual machine that serves the whole session, in the first case of its
    kernel) is left out of that case's seconds (add's `once`): the boot is counted once, in the
    time spent, not again in each case of that kernel still to run."""

    prior: dict[str, float] = field(default_factory=dict)
    taken: dict[str, list[float]] = field(default_factory=dict)  # kind -> the seconds of its cases done
    planned: dict[str, list[float | None]] = field(default_factory=dict)  # kind -> the plan's for each of them
    own: dict[str, list[bool]] = field(default_factory=dict)  # kind -> whether each one's plan was its own

    def plan(self, name: str, kind: str) -> float | None:
        """The plan's seconds for a case (None: the plan does not know it)."""
        return next((self.prior[key] for key in (name, kind, kind.partition(" ")[0]) if key in self.prior), None)

    def add(self, name: str, kind: str, seconds: float, once: float = 0.0) -> None:
        """A case done in seconds, `once` of which went to a one-off cost the cases after it do not repeat."""
        self.taken.setdefault(kind, []).append(max(0.0, seconds - once))
        self.planned.setdefault(kind, []).append(self.plan(name, kind))
        self.own.setdefault(kind, []).append(name in self.prior or kind in self.prior)

    def pace(self, kind: str) -> float | None:
        """How long the cases of a kind done so far took, over what the plan gave them; for a kind
        none of whose cases is done yet, that of the cases done whose plan was their own (by name
        or kind, not their function's: issue 43, a machine busier than the plan's, or larger
        sizes, slow every kind alike); None when no such case is done."""
        if any(self.planned.get(kind, ())):
            pairs = [(t, p) for t, p in zip(self.taken[kind], self.planned[kind]) if p]
        else:
            pairs = [(t, p) for k in self.taken for t, p, own in zip(self.taken[k], self.planned[k], self.own[k])
                     if p and own]
        return sum(t for t, _ in pairs) / sum(p for _, p in pairs) if pairs else None

    def left(self, cases: list[tuple[str, str]]) -> float | None:
        """The seconds the cases still to run (name, kind) are expected to take (None: unknown)."""
        every = [s for found in self.taken.values() for s in found]
        total = 0.0
        for name, kind in cases:
            planned, pace = self.plan(name, kind), self.pace(kind)
            if planned is not None:
                total += planned * (1.0 if pace is None else pace)
            elif kind in self.taken:
                total += sum(self.taken[kind]) / len(self.taken[kind])
            elif every:
                total += sum(every) / len(every)
            else:
                return None
        return total


def kind_of_stored(timing) -> str:
    """A stored test's kind (case.case_kind), from its Timing: test function, kernel, paced."""
    function = timing.test.rpartition("::")[2].partition("[")[0]
    return case_kind(function, timing.kernel, "-storage=" in timing.test.rpartition("[")[2])


def history_prior(timings: Sequence, runs: int) -> dict[str, float]:
    """A plan from earlier sessions, for a session that has none (issue 43: the first estimate of a
    session whose first case ran on the host and most of the rest in a guest said 0:38 where 2:24
    remained): each kind's seconds of a case of `runs` runs (warm-up included), from the earlier
    tests of that kind (store.results.Timing: test, kernel, runs, run_seconds, target_seconds):
    their seconds, target included, over their runs."""
    totals: dict[str, list[float]] = {}
    for timing in timings:
        found = totals.setdefault(kind_of_stored(timing), [0.0, 0.0])
        found[0] += timing.run_seconds + (timing.target_seconds or 0.0)
        found[1] += timing.runs
    return {kind: seconds / count * runs for kind, (seconds, count) in totals.items() if count}


def headline_text(series) -> str:
    """The median of a case's first headline figure, e.g. "dd.write 1577 MB/s" (empty: none)."""
    for s in series:
        if is_headline(s.key.metric) and s.values:
            return f"{s.key.metric} {statistics.median(s.values):.4g} {s.unit}"
    return ""

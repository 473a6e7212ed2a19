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
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

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


def for_pytest(config) -> Progress:
    """Progress for a pytest session: silent with -q or without a terminal reporter; a line per
    run with -v (by default the plugin writes one line per case, and heartbeats come here)."""
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    if reporter is None or config.get_verbosity() < 0:
        return Progress()
    capture = config.pluginmanager.get_plugin("capturemanager")

    def write(text: str) -> None:
        guard = capture.global_and_fixture_disabled() if capture is not None else contextlib.nullcontext()
        with guard:
            reporter.ensure_newline()
            reporter.write_line(text)

    return Progress(write, runs=config.get_verbosity() > 0)


#: the environment variable holding seconds per case by test function (or "function kernel") as a
#: JSON object: the plan's estimates, which a study passes to its session (studies/launch.py); the
#: cases done so far take over from them
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
    Where that is wider than the terminal, the time spent is left out first (pytest's last line
    says the session's); where it still is, the case takes two lines: its place, name, outcome and
    time, then, indented by two as a wrapped line of prose is (unwrap joins them again into the
    one line), its headline or why it skipped or failed, and the time (the detail shortened in
    its middle, then the name, only when even that does not fit)."""
    head = f"[{index:>{len(str(total))}}/{total}] "
    when = ("done" if index >= total else "time left unknown" if left is None else f"about {clock(left)} left")
    tails = (f"{clock(spent)} spent, {when}", when)
    said = f": {detail}" if detail else ""
    for tail in tails:
        line = f"{head}{name} {outcome} {seconds:.1f} s{said}  {tail}"
        if len(line) <= width:
            return [line]
    ending = f" {outcome} {seconds:.1f} s" + (":" if detail else "")
    first = head + shorten(name, max(width - len(head) - len(ending), 10)) + ending
    tail = next((t for t in tails if len(f"  {detail}  {t}") <= width), tails[-1])
    second = "  " + (shorten(detail, width - 4 - len(tail)) + "  " if detail else "") + tail
    return [shorten(first, width), shorten(second, width)]


@dataclass
class Estimate:
    """The time left in a session: for each case still to run, the mean time of the cases of its
    kind (test function and kernel) done so far; for a kind not seen yet, the plan's seconds for
    it (a study's measured seconds per case, when given), else the mean of every case done."""

    prior: dict[str, float] = field(default_factory=dict)
    taken: dict[str, list[float]] = field(default_factory=dict)

    def add(self, kind: str, seconds: float) -> None:
        self.taken.setdefault(kind, []).append(seconds)

    def left(self, kinds: list[str]) -> float | None:
        every = [s for found in self.taken.values() for s in found]
        total = 0.0
        for kind in kinds:
            function = kind.partition(" ")[0]
            if kind in self.taken:
                total += sum(self.taken[kind]) / len(self.taken[kind])
            elif kind in self.prior or function in self.prior:
                total += self.prior.get(kind, self.prior.get(function, 0.0))
            elif every:
                total += sum(every) / len(every)
            else:
                return None
        return total


def headline_text(series) -> str:
    """The median of a case's first headline figure, e.g. "dd.write 1577 MB/s" (empty: none)."""
    for s in series:
        if is_headline(s.key.metric) and s.values:
            return f"{s.key.metric} {statistics.median(s.values):.4g} {s.unit}"
    return ""

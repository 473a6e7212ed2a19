"""Live progress in the terminal while a case runs: which case, run k of n (or of the budget),
the run's time and its last headline value; for a run that takes long, a heartbeat line every
HEARTBEAT seconds so a user sees the tool is alive. Nothing is written with -q (or when pytest
has no terminal reporter); the lines bypass pytest's output capture, as its live logging does,
so they never land in a test's captured output or a junit report."""

from __future__ import annotations

import contextlib
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
    _lock: threading.Lock = field(default_factory=threading.Lock)

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
    """Progress for a pytest session: silent with -q or without a terminal reporter."""
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    if reporter is None or config.get_verbosity() < 0:
        return Progress()
    capture = config.pluginmanager.get_plugin("capturemanager")

    def write(text: str) -> None:
        guard = capture.global_and_fixture_disabled() if capture is not None else contextlib.nullcontext()
        with guard:
            reporter.ensure_newline()
            reporter.write_line(text)

    return Progress(write)

"""An undo stack: record each thing done, undo in reverse, keep going past failures, safe twice."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from .errors import FsbenchError
from .system import Runner

log = logging.getLogger("fsbench.undo")

RETRIES = 4
RETRY_DELAY = 1.0

Undo = tuple[str, ...] | Callable[[], None]


def run_with_retries(run: Runner, argv: list[str]) -> None:
    """Run a removal command, trying again a few times: a device or pool is often "busy" for a
    moment after the last file on it closes."""
    for attempt in range(RETRIES):
        try:
            run(argv, timeout=120)
            return
        except FsbenchError:
            if attempt == RETRIES - 1:
                raise
            time.sleep(RETRY_DELAY)


class UndoStack:
    def __init__(self, run: Runner) -> None:
        self._run = run
        self._items: list[tuple[Undo, bool]] = []

    def push(self, *items: Undo, best_effort: bool = False) -> None:
        """Record undo actions; several pushed together run in the order given. A best-effort
        action's failure is logged, not reported (used for half-done steps)."""
        self._items.extend((item, best_effort) for item in reversed(items))

    def unwind(self) -> list[str]:
        """Undo everything, newest first. Returns the errors (each undo is still tried)."""
        errors = []
        while self._items:
            item, best_effort = self._items.pop()
            try:
                if callable(item):
                    item()
                else:
                    self._run_with_retries(list(item))
            except (FsbenchError, OSError) as exc:
                log.log(logging.INFO if best_effort else logging.ERROR, "undo failed: %s", exc)
                if not best_effort:
                    errors.append(str(exc).splitlines()[0])
        return errors

    def _run_with_retries(self, argv: list[str]) -> None:
        run_with_retries(self._run, argv)

    def __len__(self) -> int:
        return len(self._items)

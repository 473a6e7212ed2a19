"""An undo stack: record each thing done, undo in reverse, keep going past failures, safe twice."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from ..errors import CommandError, FsbenchError
from ..system.commands import Executor

log = logging.getLogger("fsbench.undo")

#: waits between tries of a removal command; zfs-fuse says "busy" for a few seconds after I/O
RETRY_DELAYS = (0.5, 1.0, 2.0, 2.0, 3.0)

Undo = tuple[str, ...] | Callable[[], None]


def execute_with_retries(execute: Executor, argv: list[str], gone: tuple[str, ...] = ()) -> None:
    """Run a removal command, trying again a few times: a device or pool is often "busy" for a
    moment after the last file on it closes. A failure whose output says the thing is already
    gone (one of `gone`, e.g. "no such pool") is success."""
    for delay in (*RETRY_DELAYS, None):
        try:
            execute(argv, timeout=120)
            return
        except CommandError as exc:
            if any(text in exc.output for text in gone):
                return
            if delay is None:
                raise
            time.sleep(delay)


class UndoStack:
    def __init__(self, execute: Executor) -> None:
        self._execute = execute
        self._items: list[tuple[Undo, bool, tuple[str, ...]]] = []

    def push(self, *items: Undo, best_effort: bool = False, gone: tuple[str, ...] = ()) -> None:
        """Record undo actions; several pushed together run in the order given. A best-effort
        action's failure is logged, not reported (used for half-done steps); `gone`: outputs of
        a failed undo command that mean there was nothing left to undo."""
        self._items.extend((item, best_effort, gone) for item in reversed(items))

    def unwind(self) -> list[str]:
        """Undo everything, newest first. Returns the errors (each undo is still tried)."""
        errors = []
        while self._items:
            item, best_effort, gone = self._items.pop()
            try:
                if callable(item):
                    item()
                else:
                    execute_with_retries(self._execute, list(item), gone)
            except (FsbenchError, OSError) as exc:
                log.log(logging.INFO if best_effort else logging.ERROR, "undo failed: %s", exc)
                if not best_effort:
                    errors.append(str(exc).splitlines()[0])
        return errors

    def __len__(self) -> int:
        return len(self._items)

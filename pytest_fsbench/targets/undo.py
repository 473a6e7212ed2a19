"""An undo stack: record each thing done, undo in reverse, keep going past failures, safe twice."""

from __future__ import annotations

import logging
import os
import stat
import time
from collections.abc import Callable

from ..errors import CommandError, FsbenchError
from ..system import interrupts
from ..system.commands import Executor
from ..system.processes import openers

log = logging.getLogger("fsbench.undo")

#: waits between tries of a removal command; zfs-fuse says "busy" for a few seconds after I/O
RETRY_DELAYS = (0.5, 1.0, 2.0, 2.0, 3.0)

#: what a removal command says when a device or pool is held for the moment (wipefs, btrfs, zpool, umount)
BUSY = ("Device or resource busy", "is busy", "target is busy")

Undo = tuple[str, ...] | Callable[[], None]


def settle(execute: Executor) -> None:
    """Wait until udev has handled the devices' last events (its probes open a device for a
    moment); best effort: a machine without udev has nothing to wait for."""
    try:
        execute(["udevadm", "settle", "--timeout=10"], timeout=30, check=False)
    except CommandError:
        pass


def held_by(argv: list[str]) -> list[str]:
    """Who holds the block devices argv names open: 'DEVICE: NAME (pid N)'."""
    found = []
    for arg in argv:
        try:
            info = os.stat(arg) if arg.startswith("/dev/") else None
        except OSError:
            continue
        if info is not None and stat.S_ISBLK(info.st_mode):
            found += [f"{arg}: {who}" for who in openers(info.st_rdev)]
    return found


def execute_with_retries(execute: Executor, argv: list[str], gone: tuple[str, ...] = ()) -> None:
    """Run a removal command, trying again a few times: a device or pool is often "busy" for a
    moment after the last file on it closes, or while udev probes it (then udev is waited for
    first: issue 34). A failure whose output says the thing is already gone (one of `gone`,
    e.g. "no such pool") is success; a last busy one names who holds the device."""
    for delay in (*RETRY_DELAYS, None):
        try:
            execute(argv, timeout=120)
            return
        except CommandError as exc:
            if any(text in exc.output for text in gone):
                return
            busy = any(text in exc.output for text in BUSY)
            if delay is None:
                holders = held_by(argv) if busy else []
                if holders:
                    raise CommandError(exc.argv, exc.returncode, exc.output,
                                       f"{exc.reason or f'exit status {exc.returncode}'}; held open by "
                                       f"{', '.join(holders)}") from None
                raise
            if busy:
                settle(execute)
            time.sleep(delay)


class UndoStack:
    def __init__(self, execute: Executor, what: str = "a teardown") -> None:
        self._execute = execute
        self.what = what  # its words in the line a stop signal during its unwinding prints
        self._items: list[tuple[Undo, bool, tuple[str, ...]]] = []

    def push(self, *items: Undo, best_effort: bool = False, gone: tuple[str, ...] = ()) -> None:
        """Record undo actions; several pushed together run in the order given. A best-effort
        action's failure is logged, not reported (used for half-done steps); `gone`: outputs of
        a failed undo command that mean there was nothing left to undo."""
        self._items.extend((item, best_effort, gone) for item in reversed(items))

    def unwind(self) -> list[str]:
        """Undo everything, newest first. Returns the errors (each undo is still tried). A first
        stop signal meanwhile lets it finish, then interrupts (interrupts.teardown)."""
        with interrupts.teardown(self.what):
            return self._unwind()

    def _unwind(self) -> list[str]:
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

"""How a session stops on a signal (Ctrl-C, SIGTERM, SIGHUP).

The first stop signal unwinds like Ctrl-C, so every target is torn down, and every further one is
ignored from that moment on, so the teardown that follows cannot be cut short (issue 23). A signal
that arrives while a teardown runs (`teardown()`) lets that teardown finish first, then stops the
session (issue 44: a SIGTERM while umount or losetup --detach ran left the loop devices and both
images); a second one during that teardown cuts it short, and what is left is for `fsbench cleanup`
(`was_cut_short()` tells the session to keep its state file, so cleanup finds it all).

Signals reach the main thread only: teardowns in other threads are not deferred.
"""

from __future__ import annotations

import contextlib
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

#: the signals that stop a session as Ctrl-C does
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


@dataclass
class _State:
    installed: bool = False
    teardowns: list[str] = field(default_factory=list)  # what is being torn down, outermost first
    pending: int | None = None  # a signal received during a teardown, delivered once it ends
    cut_short: bool = False  # a second signal ended a teardown before it was done
    received: int | None = None  # the first stop signal, once one arrived
    delivered: bool = False  # the session was stopped by a signal deferred until a teardown ended
    say: Callable[[str], None] | None = None  # writes a line to the user's terminal (pytest captures stderr)


_STATE = _State()


def _name(signum: int) -> str:
    return "Ctrl-C" if signum == signal.SIGINT else signal.Signals(signum).name


def _say(line: str) -> None:
    try:
        if _STATE.say is not None:
            _STATE.say(line)
        else:
            sys.stderr.write(f"\n{line}\n")
    except Exception:  # noqa: BLE001 - a line that cannot be written must not change how the session stops
        pass


def _interrupt(signum: int) -> KeyboardInterrupt:
    return KeyboardInterrupt() if signum == signal.SIGINT else KeyboardInterrupt(f"signal {_name(signum)}")


def _stop(signum: int, frame: object) -> None:
    if _STATE.received is None:
        _STATE.received = signum
    if _STATE.teardowns and _STATE.pending is None and not _STATE.cut_short:
        _STATE.pending = signum
        _say(f"fsbench: {_name(signum)}: finishing {_STATE.teardowns[-1]} first, so that nothing is left behind; "
             f"the session stops after it ({_name(signum)} again cuts it short, and fsbench cleanup then removes "
             "what is left)")
        return
    if _STATE.teardowns:
        _STATE.cut_short = True
        _STATE.pending = None
        _say(f"fsbench: {_name(signum)} again: {_STATE.teardowns[-1]} is cut short; once this session has ended, "
             "fsbench cleanup removes what it left")
    ignore()
    raise _interrupt(signum)


def ignore() -> None:
    """Ignore every stop signal from now on. Ignored, not handled: the teardown's commands (umount,
    losetup) inherit it, so a terminal's second Ctrl-C, sent to the whole process group, cannot
    kill them either."""
    if threading.current_thread() is threading.main_thread():
        for sig in STOP_SIGNALS:
            signal.signal(sig, signal.SIG_IGN)


def install(say: Callable[[str], None] | None = None) -> dict[int, object]:
    """Handle the stop signals as this module says; the handlers they had before, for restore().
    say: writes a line to the user's terminal (default: standard error)."""
    if threading.current_thread() is not threading.main_thread():
        return {}
    old = {sig: signal.signal(sig, _stop) for sig in STOP_SIGNALS}
    _STATE.__init__()  # a new session (pytest run in-process again) starts afresh
    _STATE.installed = True
    _STATE.say = say
    return old


def restore(old: dict[int, object]) -> None:
    """The handlers install() replaced, back; unless a stop signal ended the session: then every
    further one stays ignored while the process exits (a second SIGTERM just after the session's
    end would otherwise kill it, its exit status lost)."""
    if _STATE.received is None:
        for sig, handler in old.items():
            signal.signal(sig, handler)
    _STATE.installed = False


@contextlib.contextmanager
def teardown(what: str, deliver: bool = True) -> Iterator[None]:
    """A teardown a first stop signal lets finish (what: the words for it, "the teardown of
    btrfs-raid1 (fsbench-…-1)"). With deliver, the signal received meanwhile is raised as
    KeyboardInterrupt once the outermost teardown has ended (the session then stops as it would
    have); without, it is only remembered (received())."""
    if not _STATE.installed or threading.current_thread() is not threading.main_thread():
        yield
        return
    _STATE.teardowns.append(what)
    try:
        yield
    finally:
        _STATE.teardowns.pop()
        if not _STATE.teardowns and _STATE.pending is not None:
            signum, _STATE.pending = _STATE.pending, None
            ignore()  # the unwinding that follows is not cut short
            if deliver:
                _STATE.delivered = True
                raise _interrupt(signum)


def received() -> str | None:
    """The first stop signal this session received ('Ctrl-C', 'SIGTERM'), or None."""
    return None if _STATE.received is None else _name(_STATE.received)


def stopped_after_teardown() -> bool:
    """Whether the session stopped on a signal it let a teardown finish first."""
    return _STATE.delivered


def was_cut_short() -> bool:
    """Whether a second stop signal ended a teardown before it was done."""
    return _STATE.cut_short

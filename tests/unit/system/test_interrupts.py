"""How a session's signal handlers end: given back when no signal stopped it, left ignoring every
stop signal when one did (a second SIGTERM just after the session's end killed pytest, its exit
status lost: seen on CI)."""

from __future__ import annotations

import os
import signal

import pytest

from pytest_fsbench.system import interrupts


@pytest.fixture
def handlers():
    before = {sig: signal.getsignal(sig) for sig in interrupts.STOP_SIGNALS}
    yield
    for sig, handler in before.items():
        signal.signal(sig, handler)
    interrupts._STATE.__init__()  # no signal received, for the tests after these


def test_a_session_no_signal_stopped_gives_its_handlers_back(handlers):
    old = interrupts.install()
    assert signal.getsignal(signal.SIGTERM) is interrupts._stop
    interrupts.restore(old)
    assert {sig: signal.getsignal(sig) for sig in old} == old


def test_a_session_a_signal_stopped_ignores_the_next_one_to_its_exit(handlers):
    old = interrupts.install()
    with pytest.raises(KeyboardInterrupt, match="SIGTERM"):
        os.kill(os.getpid(), signal.SIGTERM)
        signal.sigtimedwait([], 0)  # a point where Python runs the handler
    interrupts.restore(old)
    assert interrupts.received() == "SIGTERM"
    assert all(signal.getsignal(sig) == signal.SIG_IGN for sig in interrupts.STOP_SIGNALS)

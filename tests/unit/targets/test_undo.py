"""targets/undo.py: a removal that meets a transient "busy" waits for udev and tries again
(issue 34). The executor is a recorder: the busy device is a fault these tests cannot cause on
demand without another process racing them."""

from __future__ import annotations

import pytest

from pytest_fsbench.errors import CommandError
from pytest_fsbench.system.commands import Completed
from pytest_fsbench.targets import undo
from pytest_fsbench.targets.undo import UndoStack, execute_with_retries


class Busy:
    """Answers the first `busy` calls of argv with output, then succeeds; records every call."""

    def __init__(self, busy: int, output: str = "wipefs: error: /dev/loop0: probing initialization failed: "
                                             "Device or resource busy"):
        self.busy, self.output, self.calls = busy, output, []

    def __call__(self, argv, *, input=None, timeout=0, check=True, **kwargs):
        self.calls.append(list(argv))
        if argv[0] == "udevadm":
            return Completed(tuple(argv), 0, "", "", 0.0)
        if self.busy:
            self.busy -= 1
            raise CommandError(list(argv), 1, self.output)
        return Completed(tuple(argv), 0, "", "", 0.0)


@pytest.fixture(autouse=True)
def no_waiting(monkeypatch):
    monkeypatch.setattr(undo, "RETRY_DELAYS", (0.0, 0.0, 0.0))


def test_a_busy_device_waits_for_udev_before_the_next_try():
    execute = Busy(busy=2)
    execute_with_retries(execute, ["wipefs", "--all", "/dev/loop0"])
    assert execute.calls == [["wipefs", "--all", "/dev/loop0"], ["udevadm", "settle", "--timeout=10"]] * 2 + \
        [["wipefs", "--all", "/dev/loop0"]]


@pytest.mark.parametrize("output", ["ERROR: cannot forget /dev/loop0: Device or resource busy",
                                    "cannot destroy 'fsbench-1-2': pool is busy"])
def test_btrfs_and_zpool_busy_are_busy_too(output):
    execute = Busy(busy=1, output=output)
    execute_with_retries(execute, ["btrfs", "device", "scan", "--forget", "/dev/loop0"])
    assert ["udevadm", "settle", "--timeout=10"] in execute.calls


def test_another_failure_is_not_waited_for():
    execute = Busy(busy=1, output="mount: /x: not mounted.")
    execute_with_retries(execute, ["umount", "/x"])
    assert ["udevadm", "settle", "--timeout=10"] not in execute.calls


def test_still_busy_after_every_try_is_an_undo_error():
    execute = Busy(busy=99)
    stack = UndoStack(execute)
    stack.push(("wipefs", "--all", "/dev/loop0"))
    errors = stack.unwind()
    assert len(errors) == 1 and errors[0].startswith("wipefs --all /dev/loop0: exit status 1")
    assert execute.calls.count(["wipefs", "--all", "/dev/loop0"]) == 4


def test_a_machine_without_udevadm_does_not_wait():
    def missing(argv, **kwargs):
        raise CommandError(list(argv), None, "", "program not found")

    undo.settle(missing)  # no error

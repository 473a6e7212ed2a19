"""Live progress lines and the session's time shares (pure)."""

from __future__ import annotations

import threading
import time

from pytest_fsbench.metrics import Direction, Metric
from pytest_fsbench.measure.progress import Progress, heartbeat_line, run_line
from pytest_fsbench.views.tables import time_line, time_shares


def test_a_run_line_says_which_case_which_run_its_time_and_last_value():
    metrics = [Metric("cpu.user", 20.0, "%", Direction.LOWER), Metric("dd.write", 512.34, "MB/s", Direction.HIGHER)]
    assert run_line("ext4-single", "dd", 3, 10, 30, False, 2.14, metrics) == \
        "fsbench ext4-single dd: run 3/10 (budget 30) 2.1 s, dd.write 512.3 MB/s"
    assert run_line("ext4-single", "dd", 1, 1, None, True, 2.0, []) == "fsbench ext4-single dd: warm-up 1 2.0 s"
    assert heartbeat_line("zfs-raid10", "kernel_build", "run 2", 61.4) == \
        "fsbench zfs-raid10 kernel_build: run 2 still running, 61 s"


def test_a_long_run_beats_and_a_short_one_does_not():
    lines: list[str] = []
    progress = Progress(lines.append, heartbeat=0.05)
    with progress.running("ext4-single", "iozone", "run 1"):
        deadline = time.monotonic() + 5
        while len(lines) < 2 and time.monotonic() < deadline:
            time.sleep(0.01)
    assert len(lines) >= 2 and all("ext4-single iozone: run 1 still running" in line for line in lines)
    count = len(lines)
    with progress.running("ext4-single", "iozone", "run 2"):
        pass
    time.sleep(0.1)
    assert len(lines) == count, "no heartbeat after the run ended"
    assert not [t for t in threading.enumerate() if t.name == "fsbench-heartbeat"]


def test_silent_progress_writes_nothing_and_starts_no_thread():
    progress = Progress()
    with progress.running("a", "dd", "run 1"):
        assert not [t for t in threading.enumerate() if t.name == "fsbench-heartbeat"]
    progress.line("x")  # nowhere to write: nothing happens


def test_time_shares_name_the_rest():
    totals = {"session": 200.0, "measured": 50.0, "warm-up runs": 10.0, "preparing": 20.0, "cache policy": 10.0,
              "building targets": 30.0, "tearing down targets": 10.0}
    rows = time_shares(totals)
    assert rows[0] == ("measured", 50.0, 0.25) and rows[-1] == ("the rest", 70.0, 0.35)
    assert time_line(totals).startswith("time: session 200 s: measured 50 s (25%), warm-up runs 10 s (5%)")
    old = time_shares({"session": None, "measured": 5.0, "preparing": None})
    assert old == [("measured", 5.0, None), ("preparing", None, None)]
    assert "preparing not recorded" in time_line({"session": None, "measured": 5.0, "preparing": None})


def test_a_case_line_says_where_the_session_is_within_120_columns():
    from pytest_fsbench.measure.progress import case_line, clock

    assert clock(42) == "0:42" and clock(3725) == "1:02:05" and clock(-1) == "0:00"
    line = case_line(3, 40, "test_dd_write[ext4-single-1M]", "passed", 2.14, "dd.write 1577 MB/s", 12.0, 160.0)
    assert line == "[ 3/40] test_dd_write[ext4-single-1M] passed 2.1 s: dd.write 1577 MB/s  0:12 spent, about 2:40 left"
    assert case_line(40, 40, "t[a]", "failed", 1.0, "", 70.0, 0.0).endswith("1:10 spent, done")
    assert case_line(1, 2, "t[a]", "passed", 1.0, "", 1.0, None).endswith("time left unknown")
    long = case_line(7, 40, "test_iozone[btrfs-raid10-compress=zstd-" + "x" * 120 + "]", "skipped", 0.1,
                     "needs md " * 30, 5.0, 50.0)
    assert len(long) <= 120 and long.startswith("[ 7/40] test_iozone[btrfs") and long.endswith("about 0:50 left")


def test_the_time_left_is_the_mean_of_the_cases_of_each_kind_or_the_plans():
    from pytest_fsbench.measure.progress import Estimate

    estimate = Estimate(prior={"test_iozone": 30.0})
    assert estimate.left(["test_dd_write"]) is None  # nothing done, no plan for it
    assert estimate.left(["test_iozone", "test_iozone uml"]) == 60.0  # the plan's, for its function in a guest too
    estimate.add("test_dd_write", 2.0)
    estimate.add("test_dd_write", 4.0)
    estimate.add("test_iozone", 10.0)
    assert estimate.left(["test_dd_write", "test_iozone", "test_dd_read"]) == 3.0 + 10.0 + 16.0 / 3

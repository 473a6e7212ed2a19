"""Live progress lines and the session's time shares (pure)."""

from __future__ import annotations

import threading
import time

import pytest

from pytest_fsbench.metrics import Direction, Metric
from pytest_fsbench.measure.progress import Progress, fit, heartbeat_line, run_line, unwrap
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


def test_a_wrapped_line_is_read_whole_again():
    line = "fsbench: left out 6 tests this machine cannot run (ext3-raid0, ext4-raid10): " + "each needs md " * 12
    lines = ["case  metric", *fit(line), "    indented more: a table's own", "next"]
    assert len(fit(line)) > 1
    assert unwrap(lines) == ["case  metric", line.strip(), "    indented more: a table's own", "next"]


def test_a_case_line_says_where_the_session_is_within_120_columns():
    from pytest_fsbench.measure.progress import case_lines, clock

    assert clock(42) == "0:42" and clock(3725) == "1:02:05" and clock(-1) == "0:00"
    lines = case_lines(3, 40, "test_dd_write[ext4-single-1M]", "passed", 2.14, "dd.write 1577 MB/s", 12.0, 160.0)
    assert lines == ["[ 3/40] test_dd_write[ext4-single-1M] passed 2.1 s: dd.write 1577 MB/s  0:12 spent, about 2:40 left"]
    assert case_lines(40, 40, "t[a]", "failed", 1.0, "", 70.0, 0.0)[0].endswith("1:10 spent, done")
    assert case_lines(1, 2, "t[a]", "passed", 1.0, "", 1.0, None)[0].endswith("time left unknown")
    name = "test_iozone[btrfs-raid10-compress=zstd-" + "x" * 120 + "]"
    first, second = case_lines(7, 40, name, "skipped", 0.1, "needs md " * 29 + "needs md", 5.0, 50.0)
    assert len(first) <= 120 and first.startswith("[ 7/40] test_iozone[btrfs") and first.endswith("] skipped 0.1 s:")
    assert len(second) == 120 and second.startswith("  needs md") and second.endswith("md  about 0:50 left")  # room for why


def test_a_case_line_gives_way_on_a_narrow_terminal_and_reads_whole_again():
    """80 columns (issue 35): the headline and the time go below, indented as a wrapped line is, so
    that unwrap() gives the one line back; the time spent stays (issue 43: a line without it read
    unlike its neighbours)."""
    from pytest_fsbench.measure.progress import case_lines

    line = "[ 3/40] test_dd_write[ext4-single-1M] passed 2.1 s: dd.write 1577 MB/s  0:12 spent, about 2:40 left"
    assert case_lines(3, 40, "test_dd_write[ext4-single-1M]", "passed", 2.14, "dd.write 1577 MB/s", 12.0, 160.0,
                      width=120) == [line]  # it fits: as it is
    assert case_lines(3, 40, "test_dd_write[ext4-single-1M]", "passed", 2.14, "dd.write 1577 MB/s", 12.0, 160.0,
                      width=90) == ["[ 3/40] test_dd_write[ext4-single-1M] passed 2.1 s:",
                                    "  dd.write 1577 MB/s  0:12 spent, about 2:40 left"]
    name, headline = "test_dd_write[uml-ext4-raid0-1M]", "dd.write 414.5 MB/s"
    lines = case_lines(2, 40, name, "passed", 14.8, headline, 15.0, 266.0, width=80)
    assert lines == ["[ 2/40] test_dd_write[uml-ext4-raid0-1M] passed 14.8 s:",
                     "  dd.write 414.5 MB/s  0:15 spent, about 4:26 left"]
    assert unwrap(lines) == ["[ 2/40] test_dd_write[uml-ext4-raid0-1M] passed 14.8 s: dd.write 414.5 MB/s  0:15 spent, "
                             "about 4:26 left"]
    study = "test_iozone[btrfs-single-compress=no-mount=datacow,datasum-cache=drop-16M-512M]"  # 80 wide alone
    first, second = case_lines(12, 30, study, "passed", 41.3, "iozone.write 123.4 MB/s", 500.0, 1200.0, width=80)
    assert len(first) == 80 and first.startswith("[12/30] test_iozone[btrfs-single-") and "..." in first
    assert first.endswith("-16M-512M] passed 41.3 s:") and second == "  iozone.write 123.4 MB/s  8:20 spent, about 20:00 left"
    assert all(len(line) <= 40 for line in case_lines(12, 30, study, "failed", 41.3, "x " * 80, 500.0, None, width=40))


def test_lines_take_the_terminals_width_up_to_120_columns(monkeypatch):
    from pytest_fsbench.measure.progress import terminal_width

    monkeypatch.setenv("COLUMNS", "80")
    assert terminal_width() == 80
    monkeypatch.setenv("COLUMNS", "200")
    assert terminal_width() == 120
    monkeypatch.setenv("COLUMNS", "12")
    assert terminal_width() == 40  # narrower: the terminal wraps them itself


def test_the_time_left_is_the_mean_of_the_cases_of_each_kind_or_the_plans():
    from pytest_fsbench.measure.progress import Estimate

    estimate = Estimate(prior={"test_iozone": 30.0})
    assert estimate.left([("test_dd_write[a]", "test_dd_write")]) is None  # nothing done, no plan for it
    # the plan's, for its function in a guest too
    assert estimate.left([("test_iozone[a]", "test_iozone"), ("test_iozone[uml-a]", "test_iozone uml")]) == 60.0
    estimate.add("test_dd_write[a]", "test_dd_write", 2.0)
    estimate.add("test_dd_write[b]", "test_dd_write", 4.0)
    estimate.add("test_iozone[a]", "test_iozone", 10.0)
    assert estimate.left([("test_dd_write[c]", "test_dd_write"), ("test_iozone[b]", "test_iozone"),
                          ("test_dd_read[a]", "test_dd_read")]) == pytest.approx(3.0 + 10.0 + 16.0 / 3)


def test_the_time_left_takes_each_cases_own_plan_as_the_cases_done_correct_it():
    """A study's plan by test name (issue 36): its claims' cases at their expected runs. The
    btrfs-options quick scale: an IOzone run 4.72 s, a target 0.91 s; 6 runs (warm-up included)
    for a case of no claim, 21 expected for a claim's."""
    from pytest_fsbench.measure.progress import Estimate

    plain, claim = 0.91 + 6 * 4.72, 0.91 + 21 * 4.72
    names = ["test_iozone[ext3-single]", "test_iozone[btrfs-single-zlib]", "test_iozone[btrfs-single-no]"]
    estimate = Estimate(prior={names[0]: plain, names[1]: claim, names[2]: claim})
    cases = [(name, "test_iozone") for name in names]
    assert estimate.left(cases) == pytest.approx(plain + 2 * claim)  # the plan's sum, as the session starts
    estimate.add(names[0], "test_iozone", 2 * plain)  # twice the plan: the rest is expected twice as long
    assert estimate.left(cases[1:]) == pytest.approx(2 * 2 * claim)
    # by kind (the kernel's) when the plan names none: a uml case's plan is its function's, at the uml cases' pace
    by_kind = Estimate(prior={"test_iozone": plain})
    by_kind.add("test_iozone[uml-a]", "test_iozone uml", 3 * plain)
    assert by_kind.left([("test_iozone[uml-b]", "test_iozone uml"), ("test_iozone[b]", "test_iozone")]) == \
        pytest.approx(3 * plain + plain)


def test_a_virtual_machines_boot_is_counted_once_not_in_each_case_left():
    """Recorded: `--kernel=vm --fs=xfs,ext4,btrfs -k "dd and write" --runs=1 --dd-size=16M` under
    TCG on a 2-core machine: the first case took 142.3 s, 130 s of it waiting for the guest to
    boot; the other two took 11.7 s and 11.3 s. Counting the boot in the first case's time, the
    two left were expected to take 4:45 (issue 35); without it, the session said about 0:24 (they
    took 0:23)."""
    from pytest_fsbench.measure.progress import Estimate

    left = [("test_dd_write[vm-ext4-single-1M]", "test_dd_write vm"), ("test_dd_write[vm-btrfs-single-1M]",
                                                                      "test_dd_write vm")]
    once = Estimate()
    once.add("test_dd_write[vm-xfs-single-1M]", "test_dd_write vm", 142.3, once=130.0)
    assert once.left(left) == pytest.approx(2 * 12.3)
    assert once.left(left) == pytest.approx(11.7 + 11.3, rel=0.1)
    every = Estimate()
    every.add("test_dd_write[vm-xfs-single-1M]", "test_dd_write vm", 142.3)
    assert every.left(left) == pytest.approx(284.6)  # as it was
    # a host case (kind of its own) does not inherit the guest's pace, nor the boot
    assert once.left([("test_dd_write[xfs-single-1M]", "test_dd_write")]) == pytest.approx(12.3)


def test_without_a_plan_earlier_sessions_give_each_kinds_seconds_and_the_cases_done_their_pace():
    """Issue 43: a bench's first case ran on the host (1.3 s), the rest mostly in a User-mode Linux
    guest, whose cases took four times as long; with nothing but the case done the estimate said
    0:38 where 2:24 remained. An earlier session of this machine gives each kind its seconds (per
    run, target included, at this session's runs a case), the cases done their pace, for kinds
    not done yet too."""
    from pytest_fsbench.measure.progress import Estimate, history_prior
    from pytest_fsbench.store.results import Timing

    earlier = [Timing("benchmarks/test_dd.py::test_dd_write[ext4-single-1M]", "host", 4, 2.0, 0.4),
               Timing("benchmarks/test_dd.py::test_dd_write[uml-ext4-raid0-1M]", "uml", 4, 8.0, 1.6),
               Timing("benchmarks/test_dd.py::test_dd_write[uml-xfs-raid1-1M]", "uml", 4, 8.0, 1.6)]
    prior = history_prior(earlier, runs=8)  # twice the runs now
    assert prior == pytest.approx({"test_dd_write": 4.8, "test_dd_write uml": 19.2})
    left = [("test_dd_write[uml-ext4-raid0-1M]", "test_dd_write uml")] * 6
    estimate = Estimate(prior=prior)
    estimate.add("test_dd_write[ext4-single-1M]", "test_dd_write", 2.4)  # half the plan: a quieter machine
    assert estimate.left(left) == pytest.approx(6 * 19.2 / 2)  # the host's pace for the guest's kind too
    without = Estimate()
    without.add("test_dd_write[ext4-single-1M]", "test_dd_write", 2.4)
    assert without.left(left) == pytest.approx(6 * 2.4)  # as it was: the host case's seconds for each


def test_a_path_longer_than_the_line_is_never_broken_and_unwrap_gives_the_line_back():
    """At 80 columns (pytest gives its tests' children COLUMNS=80) a store's path of 82 characters
    came back from unwrap() with a space inside: fit had broken it in two."""
    path = "/srv/benchmarks/nightly-results/a-store-on-a-small-filesystem-of-its-own/storefs/fsbench.db"
    line = f"fsbench: the session's end could not be recorded (result store {path}: disk I/O error): session 1"
    parts = fit(line, 80)
    assert f"  {path}:" in parts and all(len(p) <= 80 for p in parts if path not in p)
    assert unwrap(parts) == [line]

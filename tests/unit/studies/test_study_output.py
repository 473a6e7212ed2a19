"""Where `fsbench study` writes its page: beside the SQLite store it uses (a PostgreSQL store's
page goes to the default store's directory), unless -o names the file."""

from __future__ import annotations

import json
import os
import shutil
import signal
import statistics
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from pytest_fsbench import cli, studies
from pytest_fsbench.errors import UsageError
from pytest_fsbench.measure.progress import unwrap
from pytest_fsbench.studies import launch

DATA = Path(__file__).resolve().parents[2] / "data" / "report"
STUDY = studies.study("compression")


def default_page(extra: list[str], cwd: Path) -> Path:
    store = launch.study_store(launch.study_args(STUDY, "quick", extra, cwd))
    return cli.study_output(None, STUDY.name, store)


def test_the_page_goes_beside_the_default_store(tmp_path, monkeypatch):
    monkeypatch.delenv("FSBENCH_STORE", raising=False)
    assert default_page([], tmp_path) == tmp_path / "fsbench-results" / "study-compression.html"


def test_the_store_of_fsbench_store_is_the_studys_too(tmp_path, monkeypatch):
    monkeypatch.setenv("FSBENCH_STORE", str(tmp_path / "team" / "s.db"))
    assert default_page([], tmp_path) == tmp_path / "team" / "study-compression.html"


def test_the_page_goes_beside_the_store_pytest_is_given(tmp_path):
    page = default_page([f"--store={tmp_path / 'mine' / 'x.db'}"], tmp_path)
    assert page == tmp_path / "mine" / "study-compression.html"


def test_a_server_store_sends_the_page_to_the_default_stores_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    page = default_page(["--store=postgresql://bench@db.example/fsbench"], tmp_path)
    assert page == tmp_path / "fsbench-results" / "study-compression.html"


def test_o_names_the_file_and_must_be_one_that_can_be_written(tmp_path):
    store = tmp_path / "fsbench.db"
    assert cli.study_output(str(tmp_path / "page.html"), STUDY.name, store) == tmp_path / "page.html"
    with pytest.raises(UsageError, match="the study's page is a file"):
        cli.study_output("-", STUDY.name, store)
    with pytest.raises(UsageError, match="does not exist"):
        cli.study_output(str(tmp_path / "no" / "page.html"), STUDY.name, store)


def recorded_session(store: Path) -> Callable[[list[str], Path], int]:
    """A stand-in for pytest: the stored report session, recorded as this study's arguments."""
    def execute_pytest(args: list[str], cwd: Path, case_seconds=None, study=None) -> int:
        store.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(DATA / "sessions.db", store)
        with sqlite3.connect(store) as db:
            db.execute("UPDATE sessions SET args = ? WHERE id = 2", (json.dumps({"argv": args}),))
        return 0
    return execute_pytest


def test_the_study_writes_its_page_beside_the_store_and_says_where(tmp_path, monkeypatch, capsys):
    plan = launch.Plan([], 1, 1, 1.0, "test", 1, 1, tmp_path, 1 << 40)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(launch, "plan", lambda *args: plan)
    monkeypatch.setattr(launch, "execute_pytest", recorded_session(tmp_path / "fsbench-results" / "fsbench.db"))
    assert cli.main(["study", "compression"]) == 0
    page = tmp_path / "fsbench-results" / "study-compression.html"
    assert f"fsbench study: wrote {page}: " in " ".join(unwrap(capsys.readouterr().out.splitlines()))  # wrapped to fit
    assert "<h2>At a glance</h2>" in page.read_text()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fsbench-results"]


def test_an_option_the_user_gives_replaces_the_scales(tmp_path):
    """`fsbench study NAME --runs=10`: pytest refuses an option of one value given twice, so the
    user's replaces the scale's; a repeatable option is added to the scale's."""
    args = launch.study_args(STUDY, "quick", ["--runs=10", "--fs-opt=btrfs:compress=zstd"], tmp_path)
    assert [a for a in args if a.startswith("--runs")] == ["--runs=10"]
    scale_opts = [a for a in STUDY.scale("quick")["args"] if a.startswith("--fs-opt")]
    assert [a for a in args if a.startswith("--fs-opt")] == [*scale_opts, "--fs-opt=btrfs:compress=zstd"]


def test_the_plans_minutes_come_from_the_measured_seconds_of_each_test_function():
    scale = {"run_seconds": {"test_iozone": 4.0, "test_dd_write": 1.0}, "target_seconds": {"test_iozone": 0.5},
             "seconds_basis": "measured here", "minutes": 99, "minutes_basis": "old"}
    tests = ["p/test_iozone.py::test_iozone[btrfs-single-16M]", "p/test_iozone.py::test_iozone[ext4-single-16M]",
             "p/test_dd.py::test_dd_write[btrfs-single-1M]"]
    shipped = launch.shipped_seconds(scale)
    minutes, basis, taken = launch.estimate([None, shipped], scale, tests, runs=9)
    assert minutes * 60 == pytest.approx(launch.OUTSIDE_SECONDS + launch.SESSION_SECONDS + 2 * (0.5 + 9 * 4.0) + 9 * 1.0)
    assert basis.endswith("measured here") and taken is shipped
    # a test function the scale has no seconds for: the scale's measured total, as before
    assert launch.estimate([shipped], scale, [*tests, "p/test_fio.py::test_fio[x]"], runs=9) == (99.0, "old", None)
    # the scale's own time of a session's rest, where it gives one
    minutes, _, _ = launch.estimate([launch.shipped_seconds({**scale, "session_seconds": 70})], scale, tests, runs=9)
    assert minutes * 60 == pytest.approx(launch.OUTSIDE_SECONDS + 70 + 2 * (0.5 + 9 * 4.0) + 9 * 1.0)


def test_a_guests_cases_are_a_kind_of_their_own():
    """A case in a guest kernel runs at the guest's pace (under TCG many times the host's): its
    seconds are those of its kind, "test_iozone vm", never the host's test_iozone."""
    assert launch.planned_kind("p/test_iozone.py::test_iozone[vm-zfs-single-1M]", {"vm"}) == "test_iozone vm"
    assert launch.planned_kind("p/test_iozone.py::test_iozone[zfs-single-1M]", {"vm"}) == "test_iozone"
    scale = {"run_seconds": {"test_iozone": 4.0}, "seconds_basis": "host only", "minutes": 47, "minutes_basis": "m"}
    tests = ["p/test_iozone.py::test_iozone[zfs-single-1M]", "p/test_iozone.py::test_iozone[vm-zfs-single-1M]"]
    assert launch.estimate([launch.shipped_seconds(scale)], scale, tests, 5, guests={"vm"})[:2] == (47.0, "m")
    both = launch.shipped_seconds({**scale, "run_seconds": {"test_iozone": 4.0, "test_iozone vm": 40.0}})
    assert launch.estimate([both], scale, tests, 5, guests={"vm"})[0] * 60 == pytest.approx(
        launch.OUTSIDE_SECONDS + launch.SESSION_SECONDS + 5 * 4.0 + 5 * 40.0)


def test_the_session_is_given_the_plans_seconds_per_case_for_its_time_left(tmp_path):
    """By test name, a claim's cases at their expected runs (issue 36: they were given the scale's
    --runs), and the session's first estimate is the plan's: the plan's minutes are the sum the
    session starts from, the session's own seconds and the command's outside it."""
    scale = {"run_seconds": {"test_iozone": 4.0, "test_dd_write": 1.0}, "target_seconds": {"test_iozone": 0.5},
             "seconds_basis": "measured"}
    tests = ["p/test_iozone.py::test_iozone[a]", "p/test_iozone.py::test_iozone[b]", "p/test_dd.py::test_dd_write[a]"]
    shipped = launch.shipped_seconds(scale)
    seconds = launch.planned_seconds(shipped, tests, 9, {"test_iozone[b]": 21})
    assert seconds == {"test_iozone[a]": 0.5 + 9 * 4.0, "test_iozone[b]": 0.5 + 21 * 4.0, "test_dd_write[a]": 9.0}
    minutes, _, taken = launch.estimate([None, shipped], scale, tests, 9, {"test_iozone[b]": 21})
    assert taken == shipped
    assert minutes * 60 == pytest.approx(launch.OUTSIDE_SECONDS + launch.SESSION_SECONDS + sum(seconds.values()))
    assert launch.planned_seconds(launch.shipped_seconds({"minutes": 5}), tests, runs=9) == {}
    assert launch.planned_seconds(shipped, ["p/test_fio.py::test_fio[x]", *tests], runs=9).keys() == seconds.keys()
    # paced storage (--storage-rate): its own seconds a run where the scale gives them
    paced = launch.shipped_seconds({**scale, "paced_run_seconds": {"test_iozone": 13.0}})
    assert launch.planned_seconds(paced, ["p/test_iozone.py::test_iozone[a-storage=32MBps]"], 2) == {
        "test_iozone[a-storage=32MBps]": 0.5 + 2 * 13.0}
    # the variables reach the session: a real pytest run checks them from a test of its own
    (tmp_path / "test_env.py").write_text("import os\n\ndef test_env():\n    assert os.environ['FSBENCH_PLAN_SECONDS']"
                                          " and os.environ['FSBENCH_STUDY'] == 'compression --scale=quick'\n")
    assert launch.execute_pytest(["-q", "-s", "test_env.py"], tmp_path, seconds, "compression --scale=quick") == 0


def test_ctrl_c_lets_the_session_tear_its_targets_down(tmp_path):
    """Ctrl-C reaches `fsbench study` and its pytest alike (one process group): the study waits
    for the session to tear down and end, then stops. Found here: it killed the session 0.25 s
    after the signal (subprocess.run's way), leaving its target mounted and its loop devices."""
    (tmp_path / "test_slow.py").write_text(
        "import pathlib, time\nimport pytest\n\n@pytest.fixture\ndef target():\n    yield\n"
        "    time.sleep(1)  # a teardown that takes a moment, as unmounting does\n"
        "    pathlib.Path('torn-down').write_text('yes')\n\n"
        "def test_slow(target):\n    pathlib.Path('started').write_text('yes')\n    time.sleep(60)\n")
    study = start_new_group([sys.executable, "-c", "from pytest_fsbench.studies import launch; "
                             "launch.execute_pytest(['-q', 'test_slow.py'], __import__('pathlib').Path('.'))"], tmp_path)
    deadline = time.monotonic() + 60
    while not (tmp_path / "started").exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    os.killpg(study.pid, signal.SIGINT)
    study.wait(timeout=60)
    assert study.returncode != 0 and (tmp_path / "torn-down").exists()


def start_new_group(argv: list[str], cwd: Path) -> subprocess.Popen:
    """A process in a group of its own, SIGINT at its default (as at a terminal)."""
    return subprocess.Popen(argv, cwd=cwd, start_new_session=True, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))


#: the tests the btrfs-options study's quick scale collected here (pytest --collect-only -q)
BTRFS_QUICK = [f"pytest_fsbench/benchmarks/test_iozone.py::test_iozone[{case}-16M-512M]" for case in (
    "btrfs-single-compress=no-mount=datacow,datasum-cache=drop", "btrfs-single-compress=no-mount=datacow,datasum-cache=direct",
    "btrfs-raid0-compress=no-mount=datacow,datasum-cache=drop", "btrfs-raid10-compress=no-mount=datacow,datasum-cache=drop",
    "btrfs-single-compress=no-mount=nodatacow,nodatasum-cache=drop",
    "btrfs-single-compress=zlib-mount=datacow,datasum-cache=drop",
    "btrfs-single-compress=zlib-mount=nodatacow,nodatasum-cache=drop",
    "ext4-single-cache=drop", "ext3-single-cache=drop")] + [
    f"pytest_fsbench/benchmarks/test_dd.py::test_dd_write[btrfs-single-compress={c}-mount=datacow,datasum-cache=drop-"
    f"data={d}-1M]" for c in ("no", "zlib") for d in ("random", "zeros")] + [
    # the compression claims' cases again, on storage paced to the study's disk (--storage-rate=none,32)
    f"pytest_fsbench/benchmarks/test_iozone.py::test_iozone[btrfs-single-compress={c}-mount={m}-storage=32MBps-"
    "cache=drop-16M-128M]" for c, m in (("no", "datacow,datasum"), ("zlib", "datacow,datasum"),
                                         ("zlib", "nodatacow,nodatasum"))]


def test_a_claims_tests_are_those_its_two_sides_select():
    checks = {check.id: check for check in studies.study("btrfs-options").checks()}
    # a claim on the study's storage takes the cases paced to it; the others, those on the images' own
    assert launch.claim_tests(checks["compress-raises-write-single"], BTRFS_QUICK) == [
        "test_iozone[btrfs-single-compress=zlib-mount=datacow,datasum-storage=32MBps-cache=drop-16M-128M]",
        "test_iozone[btrfs-single-compress=no-mount=datacow,datasum-storage=32MBps-cache=drop-16M-128M]"]
    assert launch.claim_tests(checks["nodatacow-little-effect"], BTRFS_QUICK) == [
        "test_iozone[btrfs-single-compress=no-mount=nodatacow,nodatasum-cache=drop-16M-512M]",
        "test_iozone[btrfs-single-compress=no-mount=datacow,datasum-cache=drop-16M-512M]"]
    # raid0 is not raid10's prefix; ext4's side names no options
    assert launch.claim_tests(checks["two-disks-raise-write"], BTRFS_QUICK)[0].startswith("test_iozone[btrfs-raid0-")
    assert launch.claim_tests(checks["btrfs-writes-like-ext4"], BTRFS_QUICK)[1] == \
        "test_iozone[ext4-single-cache=drop-16M-512M]"
    # dd's claim on random data takes only the random cases of dd write
    assert launch.claim_tests(checks["compress-gain-is-the-data"], BTRFS_QUICK) == [
        "test_dd_write[btrfs-single-compress=zlib-mount=datacow,datasum-cache=drop-data=random-1M]",
        "test_dd_write[btrfs-single-compress=no-mount=datacow,datasum-cache=drop-data=random-1M]"]


def test_a_claims_precision_is_half_its_room():
    make = lambda expect, pct, tol=10.0: studies.Check("x", "", "", "dd.write", {}, {}, expect, tol, "study", {}, pct)
    assert make("higher", 125.9).precision() == 50.0  # at most +-50 %
    assert make("lower", -54.5).precision() == 27.2
    assert make("higher", 4.5).precision() == 2.2
    assert make("similar", 1.1).precision() == 4.5  # (10 - 1.1) / 2
    assert make("similar", None, 25.0).precision() == 12.5
    assert make("higher", None).precision() is None  # no size given: the scale's runs
    assert make("higher", 0.5).precision() == 1.0  # never below +-1 %


def test_claim_runs_take_each_cases_tightest_claim_and_leave_uncomparable_claims_their_runs():
    found = launch.claim_runs(studies.study("btrfs-options"), BTRFS_QUICK, {"disks": "loop images on one disk"})
    plain = "test_iozone[btrfs-single-compress=no-mount=datacow,datasum-cache=drop-16M-512M]"
    assert found.precision[plain] == 2.2  # btrfs-writes-like-ext4's, the tightest of its four claims
    assert not any("raid0" in test for test in found.precision)  # two-disk claims: not comparable on one disk
    assert any(line.startswith("runs for two-disks-raise-write: the scale's (not comparable here")
               for line in found.lines)
    separate = launch.claim_runs(studies.study("btrfs-options"), BTRFS_QUICK, {"disks": "separate"})
    assert separate.precision["test_iozone[btrfs-raid0-compress=no-mount=datacow,datasum-cache=drop-16M-512M]"] == 12.5
    args = launch.with_claim_runs(["--runs=5", "--store=s.db"], found, 20)
    assert args[-1] == "--store=s.db" and "--max-runs=20" in args
    # the claims' metrics decide when it stops, not a figure the page cache serves (IOzone's reread)
    assert f"--until-ci-case={plain}@iozone.write,iozone.read=2.2%" in args
    assert "--max-runs=30" in launch.with_claim_runs(["--max-runs=30", "--store=s.db"], found, 20)
    assert launch.with_claim_runs(["--max-runs=30", "--store=s.db"], found, 20).count("--max-runs=20") == 0


def test_expected_runs_grow_with_the_noise_and_stop_at_a_look():
    assert launch.expected_runs(50.0, 11.0, 5, 20) == 10  # no 98.75 % median interval at 5 runs
    assert launch.expected_runs(12.5, 11.0, 5, 20) == 10
    assert launch.expected_runs(4.5, 11.0, 5, 20) == 20  # the budget
    assert launch.expected_runs(4.5, 3.0, 5, 20) == 10
    assert launch.level_runs(0.95) == 6 and launch.level_runs(0.9875) == 8
    # the plan's minutes take the expected runs of the tests that repeat until decided
    scale = {"run_seconds": {"test_iozone": 4.0}, "seconds_basis": "measured"}
    tests = ["p/test_iozone.py::test_iozone[a]", "p/test_iozone.py::test_iozone[b]"]
    minutes, _, _ = launch.estimate([launch.shipped_seconds(scale)], scale, tests, 6, {"test_iozone[b]": 21})
    assert minutes * 60 == pytest.approx(launch.OUTSIDE_SECONDS + launch.SESSION_SECONDS + 6 * 4.0 + 21 * 4.0)


def test_the_help_says_what_the_quick_scales_take():
    minutes = [int(s.scale("quick")["minutes"]) for s in studies.studies().values()]
    assert cli.QUICK_MINUTES == f"{min(minutes)} to {max(minutes)}"


def test_earlier_sessions_give_the_median_of_each_kind_and_the_runs_each_claim_case_took():
    """Two stored sessions' times (store.Timing, as Store.test_times reads them): a run's seconds
    are each session's runs' total over their number, the median over the sessions; a claim's
    case is expected to take the runs it took before (the median, rounded up)."""
    from pytest_fsbench.store.results import Timing
    one = launch.Earlier(2, "t2", [Timing("p.py::test_dd_write[a]", "host", 4, 8.0, 1.0),
                                   Timing("p.py::test_iozone[vm-zfs]", "vm", 2, 60.0, 3.0)], 100.0)
    two = launch.Earlier(1, "t1", [Timing("p.py::test_dd_write[a]", "host", 5, 20.0, 2.0)], 40.0)
    seconds = launch.measured_seconds([one, two])
    assert seconds.run == {"test_dd_write": 3.0, "test_iozone vm": 30.0}  # median of 2.0 and 4.0; the guest's own
    assert seconds.target == {"test_dd_write": 1.5, "test_iozone vm": 3.0}
    assert seconds.session == statistics.median([100.0 - 8.0 - 1.0 - 60.0 - 3.0, 40.0 - 20.0 - 2.0])
    assert seconds.basis.startswith("from 2 earlier sessions of this scale in this store: sessions 2, 1, the newest "
                                    "started t2; the median of each: test_dd_write 3.00 s a run, 1.50 s a target; ")
    assert launch.runs_before([one, two]) == {"test_dd_write[a]": 5, "test_iozone[vm-zfs]": 2}
    assert launch.measured_seconds([]) is None


LOADS = {"run_seconds": {"test_iozone": 4.0}, "target_seconds": {"test_iozone": 1.0}, "session_seconds": 10,
         "seconds_basis": "busy", "others_cpu": 70,
         "loads": [{"others_cpu": 0, "run_seconds": {"test_iozone": 2.0}, "target_seconds": {"test_iozone": 0.5},
                    "session_seconds": 4, "seconds_basis": "alone", "minutes": 12},
                   {"others_cpu": 30, "run_seconds": {"test_iozone": 2.2}, "target_seconds": {"test_iozone": 0.5},
                    "session_seconds": 4, "seconds_basis": "beside tests"}]}


def test_a_scale_measured_at_several_loads_is_planned_at_the_load_now():
    """btrfs-options' quick scale took 12 min alone, 14 at 30 % and 25 beside jobs using 70 % of
    the CPUs: a plan from one of them was 2x off on another day (issue 36)."""
    assert launch.shipped_seconds(LOADS, 0.0).run == {"test_iozone": 2.0}
    assert launch.shipped_seconds(LOADS, 15.0).run == {"test_iozone": pytest.approx(2.1)}
    halfway = launch.shipped_seconds(LOADS, 50.0)  # between the two nearest, 30 and 70 %
    assert halfway.run == {"test_iozone": pytest.approx(3.1)} and halfway.target == {"test_iozone": 0.75}
    assert halfway.session == 7.0
    assert "other processes using 50 % of the CPUs" in halfway.basis and "measured at 3 loads (at 0 %, alone; " \
        "at 30 %, beside tests; at 70 %, busy)" in halfway.basis
    # beyond what was measured: the nearest, and the plan says it may take longer
    busier = launch.shipped_seconds(LOADS, 95.0)
    assert busier.run == {"test_iozone": 4.0} and busier.basis.endswith("so it may take longer")
    assert launch.shipped_seconds(LOADS, -3.0).run == {"test_iozone": 2.0}
    # the load unknown, or one load measured: the scale's own seconds as they were
    assert launch.shipped_seconds(LOADS).run == {"test_iozone": 4.0}
    one = {k: v for k, v in LOADS.items() if k != "loads"}
    assert launch.shipped_seconds(one, 0.0).run == {"test_iozone": 4.0}


def test_an_earlier_sessions_seconds_are_taken_at_the_load_now():
    from pytest_fsbench.store.results import Timing
    busy = launch.Earlier(1, "t1", [Timing("p.py::test_iozone[a]", "host", 10, 40.0, 1.0)], 60.0, others=70.0)
    assert launch.measured_seconds([busy]).run == {"test_iozone": 4.0}  # no scale: as measured
    seconds = launch.measured_seconds([busy], LOADS, 0.0)
    assert seconds.run == {"test_iozone": 2.0} and seconds.target == {"test_iozone": 0.5}
    assert "(taken at the load now, other processes using 0 % of the CPUs, from theirs, 70 %)" in seconds.basis
    unknown = launch.Earlier(1, "t1", busy.tests, 60.0)
    assert launch.measured_seconds([unknown], LOADS, 0.0).run == {"test_iozone": 4.0}


def test_the_list_gives_a_scale_measured_at_several_loads_its_least_and_most_minutes():
    assert cli.quick_minutes(LOADS | {"minutes": 27}) == "12-27"
    assert cli.quick_minutes({"minutes": 7}) == "7"

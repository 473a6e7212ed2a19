"""Where `fsbench study` writes its page: beside the SQLite store it uses (a PostgreSQL store's
page goes to the default store's directory), unless -o names the file."""

from __future__ import annotations

import json
import shutil
import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest

from pytest_fsbench import cli, studies
from pytest_fsbench.errors import UsageError
from pytest_fsbench.studies import launch

DATA = Path(__file__).resolve().parents[2] / "data" / "report"
STUDY = studies.study("compression")


def default_page(extra: list[str], cwd: Path) -> Path:
    store = cli.study_store(launch.study_args(STUDY, "quick", extra, cwd))
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
    def execute_pytest(args: list[str], cwd: Path, case_seconds=None) -> int:
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
    assert f"fsbench study: wrote {page}: " in capsys.readouterr().out
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
    minutes, basis = launch.estimate(scale, tests, runs=9)
    assert minutes * 60 == pytest.approx(launch.SESSION_SECONDS + 2 * (0.5 + 9 * 4.0) + 9 * 1.0)
    assert basis.endswith("measured here")
    # a test function the scale has no seconds for: the scale's measured total, as before
    assert launch.estimate(scale, [*tests, "p/test_fio.py::test_fio[x]"], runs=9) == (99.0, "old")


def test_the_session_is_given_the_plans_seconds_per_case_for_its_time_left(tmp_path):
    scale = {"run_seconds": {"test_iozone": 4.0, "test_dd_write": 1.0}, "target_seconds": {"test_iozone": 0.5}}
    seconds = launch.case_seconds(scale, runs=9)
    assert seconds == {"test_iozone": 0.5 + 9 * 4.0, "test_dd_write": 9.0}
    assert launch.case_seconds({"minutes": 5}, runs=9) == {}
    # the variable reaches the session: a real pytest run prints it from a test of its own
    (tmp_path / "test_env.py").write_text("import os\n\ndef test_env():\n    print(os.environ['FSBENCH_PLAN_SECONDS'])\n")
    assert launch.execute_pytest(["-q", "-s", "test_env.py"], tmp_path, seconds) == 0

"""The regression gate as a user meets it: save a baseline, re-run unchanged and pass, change a
real thing and fail with a clear message; kill a session with kill -9 and --resume it."""

from __future__ import annotations

import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import run_pytest

pytestmark = pytest.mark.root
REPO = Path(__file__).resolve().parents[2]


def common(tmp_path: Path) -> list[str]:
    return ["benchmarks/test_dd.py", "-k", "write", f"--image-dir={tmp_path / 'images'}", "--image-size=512M",
            "--dd-size=64M", f"--store={tmp_path / 'fsbench.db'}"]


def scale_baseline(db: Path, session: int, factor: float) -> None:
    """Multiply a stored session's dd.write samples: a baseline whose outcome is certain."""
    con = sqlite3.connect(db)
    con.execute("UPDATE metrics SET value = value * ? WHERE name = 'dd.write' AND run_id IN (SELECT r.id FROM runs r "
                "JOIN cases c ON r.case_row = c.id WHERE c.session_id = ?)", (factor, session))
    con.commit()
    con.close()


def test_the_gate_fails_a_certain_regression_and_passes_a_certain_improvement(tmp_path, no_leftovers):
    """Outcomes that noise cannot change: the same configuration against a baseline made ten
    times faster (a regression, however this session drifts) or ten times slower."""
    args = [*common(tmp_path), "--fs=btrfs", "--runs=6"]
    saved = run_pytest([*args, "--save=base"], cwd=REPO)
    assert saved.returncode == 0, saved.stdout[-3000:]
    db = tmp_path / "fsbench.db"
    con = sqlite3.connect(db)
    con.execute("INSERT INTO sessions (token, started, status, args, manifest) SELECT token || '-fast', started, "
                "status, args, manifest FROM sessions WHERE id = 1")
    con.commit()
    con.close()
    copy_session(db, 1, 2)
    scale_baseline(db, 1, 10.0)
    scale_baseline(db, 2, 0.1)

    worse = run_pytest([*args, "--compare=1", "--fail-on-regression=5%"], cwd=REPO)
    assert worse.returncode == 1, worse.stdout[-3000:]
    assert "FAILED benchmarks/test_dd.py::test_dd_write[btrfs-single-1M]" in worse.stdout
    line = next(l for l in worse.stdout.splitlines() if l.startswith("btrfs-single dd.write bs=1M"))
    assert " worse: a regression beyond the 5% allowed (baseline median " in line and "n=6/6" in line

    better = run_pytest([*args, "--compare=2", "--fail-on-regression=5%"], cwd=REPO)
    assert better.returncode == 0, better.stdout[-3000:]
    assert "0 worse, 1 better, 0 unchanged" in better.stdout


def copy_session(db: Path, source: int, target: int) -> None:
    """Copy session source's cases, runs and metrics to the (existing) session row target."""
    con = sqlite3.connect(db)
    for (case_id,) in con.execute("SELECT id FROM cases WHERE session_id = ?", (source,)).fetchall():
        cur = con.execute("INSERT INTO cases (session_id, test, case_id, spec, workload, workload_params, cache, data,"
                          " status, stopped_by, manifest) SELECT ?, test, case_id, spec, workload, workload_params,"
                          " cache, data, status, stopped_by, manifest FROM cases WHERE id = ?", (target, case_id))
        new_case = cur.lastrowid
        for (run_id,) in con.execute("SELECT id FROM runs WHERE case_row = ?", (case_id,)).fetchall():
            cur = con.execute("INSERT INTO runs (case_row, idx, warmup, started, finished, seconds, cache_applied)"
                              " SELECT ?, idx, warmup, started, finished, seconds, cache_applied FROM runs WHERE id = ?",
                              (new_case, run_id))
            con.execute("INSERT INTO metrics (run_id, name, params, value, unit, direction) SELECT ?, name, params,"
                        " value, unit, direction FROM metrics WHERE run_id = ?", (cur.lastrowid, run_id))
    con.commit()
    con.close()


def test_a_costly_mount_option_fails_the_gate(tmp_path, no_leftovers):
    """A real effect: zstd at level 15 forced on incompressible data costs most of btrfs's write
    throughput, far beyond any drift between two sessions."""
    args = [*common(tmp_path), "--fs=btrfs", "--runs=6"]
    saved = run_pytest([*args, "--save=base"], cwd=REPO)
    assert saved.returncode == 0, saved.stdout[-3000:]
    slower = run_pytest([*args, "--fs-opt=btrfs:compress-force=zstd:15", "--compare=base",
                         "--fail-on-regression=5%"], cwd=REPO)
    assert slower.returncode == 1, slower.stdout[-3000:]
    assert "FAILED benchmarks/test_dd.py::test_dd_write[btrfs-single-1M]" in slower.stdout
    line = next(l for l in slower.stdout.splitlines() if l.startswith("btrfs-single dd.write bs=1M"))
    assert " worse: a regression beyond the 5% allowed (baseline median " in line
    assert "n=6/6" in line
    assert "the filesystem options changed: baseline none, now compress-force=zstd:15" in line


def test_compare_needs_a_known_baseline(tmp_path):
    proc = run_pytest([*common(tmp_path), "--compare=nothing-saved"], cwd=REPO)
    assert proc.returncode == pytest.ExitCode.USAGE_ERROR
    assert "no baseline or session 'nothing-saved'" in proc.stderr
    proc = run_pytest([*common(tmp_path), "--fail-on-regression=5%"], cwd=REPO)
    assert "--fail-on-regression needs a baseline: add --compare NAME" in proc.stderr


def runs_per_case(db: Path) -> dict[str, int]:
    con = sqlite3.connect(db)
    rows = con.execute("SELECT c.test, COUNT(r.id) FROM cases c LEFT JOIN runs r ON r.case_row = c.id AND r.warmup = 0"
                       " GROUP BY c.id").fetchall()
    con.close()
    return dict(rows)


def run_ids(db: Path) -> set[int]:
    con = sqlite3.connect(db)
    ids = {row[0] for row in con.execute("SELECT id FROM runs WHERE warmup = 0")}
    con.close()
    return ids


def finished_tests(db: Path) -> int:
    if not db.exists():
        return 0
    con = sqlite3.connect(db)
    try:
        return con.execute("SELECT COUNT(*) FROM tests").fetchone()[0]
    except sqlite3.OperationalError:
        return 0
    finally:
        con.close()


def test_kill_9_then_resume_loses_and_repeats_nothing(tmp_path, no_leftovers):
    db = tmp_path / "fsbench.db"
    args = [*common(tmp_path), "--fs=ext4,btrfs", "--layout=single,raid1", "--runs=3"]
    proc = subprocess.Popen([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args], cwd=REPO,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    deadline = time.monotonic() + 300
    while finished_tests(db) < 1:
        assert proc.poll() is None, proc.communicate()[0][-3000:]
        assert time.monotonic() < deadline
        time.sleep(0.1)
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=60)
    before = run_ids(db)
    assert subprocess.run([sys.executable, "-m", "pytest_fsbench.cli", "cleanup"], capture_output=True).returncode == 0

    resumed = run_pytest([*args, "--resume"], cwd=REPO)
    assert resumed.returncode == 0, resumed.stdout[-3000:]
    assert "finished in session 1 before it was interrupted" in resumed.stdout
    after = runs_per_case(db)
    assert sorted(after) == ["benchmarks/test_dd.py::test_dd_write[btrfs-raid1-1M]",
                             "benchmarks/test_dd.py::test_dd_write[btrfs-single-1M]",
                             "benchmarks/test_dd.py::test_dd_write[ext4-single-1M]"]
    assert set(after.values()) == {3}, after  # every case exactly its 3 runs: none repeated
    assert before <= run_ids(db)  # every run completed before the kill is still there
    con = sqlite3.connect(db)
    assert con.execute("SELECT id, status FROM sessions").fetchall() == [(1, "complete")]
    con.close()

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


def test_unchanged_passes_and_a_costly_mount_option_fails(tmp_path, no_leftovers):
    args = [*common(tmp_path), "--fs=btrfs", "--runs=6"]
    saved = run_pytest([*args, "--save=base"], cwd=REPO)
    assert saved.returncode == 0, saved.stdout[-3000:]

    # unchanged: the generous threshold and strict alpha keep this test itself from flaking on
    # a noisy machine; the gate's false-alarm rate at the defaults is measured by
    # benchmarks/gate_evidence.py, not here
    same = run_pytest([*args, "--compare=base", "--fail-on-regression=30%", "--alpha=0.01"], cwd=REPO)
    assert same.returncode == 0, same.stdout[-3000:]
    assert "fsbench comparison with base" in same.stdout and "1 worse" not in same.stdout

    # a real change: zstd at level 15, forced on incompressible data, costs most of the throughput
    slower = run_pytest([*args, "--fs-opt=btrfs:compress-force=zstd:15", "--compare=base",
                         "--fail-on-regression=5%"], cwd=REPO)
    assert slower.returncode == 1, slower.stdout[-3000:]
    assert "FAILED benchmarks/test_dd.py::test_dd_write[btrfs-single-1M]" in slower.stdout
    line = next(l for l in slower.stdout.splitlines() if l.startswith("btrfs-single dd.write bs=1M"))
    assert " worse: a regression beyond the 5% allowed (baseline median " in line
    assert "n=6/6" in line and "p=0.002" in line
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

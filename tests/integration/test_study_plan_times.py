"""A study's plan takes its time from this machine's own earlier sessions of the study and scale
(issue 36: seconds measured once elsewhere were 2-5x off here): two real, small sessions of the
iozone-linux-fs quick scale (one IOzone case, 16 MB, 2 runs) in a store of their own, then the plan,
whose minutes are the arithmetic of what the store recorded, done here again from its tables."""

from __future__ import annotations

import datetime as dt
import json
import sqlite3
import statistics
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_fsbench import studies
from pytest_fsbench.measure.progress import unwrap
from pytest_fsbench.studies import launch

#: the quick scale narrowed to one IOzone case, small
SMALL = ["-k", "ext4", "--iozone-file=16M", "--iozone-record=1M", "--iozone-tests=write,read", "--runs=2",
         "--warmup=0", "--image-size=1G"]


def fsbench_study(tmp_path: Path, *more: str, small: tuple[str, ...] = tuple(SMALL)) -> subprocess.CompletedProcess:
    """The study command; its stdout with each line it wrapped to the terminal joined again."""
    done = subprocess.run([sys.executable, "-m", "pytest_fsbench.cli", "study", "iozone-linux-fs", *small,
                           f"--image-dir={tmp_path / 'images'}", f"--store={tmp_path / 'fsbench.db'}", *more],
                          capture_output=True, text=True, cwd=tmp_path, timeout=900)
    done.stdout = "\n".join(unwrap(done.stdout.splitlines()))
    return done


def seconds_by_hand(store: Path, session_id: int) -> tuple[float, float, float]:
    """A session's seconds of a run, of a target and of the rest, from its tables (one test)."""
    with sqlite3.connect(store) as db:
        run = db.execute("SELECT AVG(r.wall_seconds) FROM runs r JOIN cases c ON r.case_row = c.id"
                         " WHERE c.session_id = ?", (session_id,)).fetchone()[0]
        target, runs_total = db.execute(
            "SELECT (SELECT SUM(build_seconds + teardown_seconds) FROM targets WHERE session_id = ?),"
            " (SELECT SUM(r.wall_seconds) FROM runs r JOIN cases c ON r.case_row = c.id WHERE c.session_id = ?)",
            (session_id, session_id)).fetchone()
        started, finished = db.execute("SELECT started, finished FROM sessions WHERE id = ?", (session_id,)).fetchone()
    wall = (dt.datetime.fromisoformat(finished) - dt.datetime.fromisoformat(started)).total_seconds()
    return run, target, max(0.0, wall - runs_total - target)


@pytest.mark.root
def test_the_plan_takes_the_median_seconds_of_the_earlier_sessions_of_its_scale(tmp_path, no_leftovers):
    store = tmp_path / "fsbench.db"
    first = fsbench_study(tmp_path, "--plan")
    assert first.returncode == 0, first.stderr
    assert "(from the seconds per run and per target measured for this scale: " in first.stdout
    for number in (1, 2):
        done = fsbench_study(tmp_path, "-o", str(tmp_path / f"page{number}.html"))
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    with sqlite3.connect(store) as db:
        rows = db.execute("SELECT id, status, args FROM sessions ORDER BY id").fetchall()
    assert [(i, status) for i, status, _ in rows] == [(1, "complete"), (2, "complete")]
    assert {json.loads(args)["study"] for _, _, args in rows} == {"iozone-linux-fs --scale=quick"}

    planned = fsbench_study(tmp_path, "--plan")
    assert planned.returncode == 0, planned.stderr
    assert "(from 2 earlier sessions of this scale in this store: sessions 2, 1, the newest started " \
           in planned.stdout

    # the arithmetic: of each session its mean run, its target and its rest; the median of the two
    study = studies.study("iozone-linux-fs")
    args = launch.study_args(study, "quick", [*SMALL, f"--image-dir={tmp_path / 'images'}", f"--store={store}"],
                             tmp_path)
    plan = launch.plan(study, "quick", args, tmp_path)
    run, target, rest = (statistics.median(values) for values in zip(*(seconds_by_hand(store, i) for i in (1, 2))))
    assert plan.tests == 1 and plan.runs == 2
    assert plan.minutes * 60 == pytest.approx(launch.OUTSIDE_SECONDS + rest + target + 2 * run)
    [(name, seconds)] = plan.case_seconds.items()  # by the test's name, as the session knows it
    assert name.startswith("test_iozone[") and seconds == pytest.approx(target + 2 * run)

    # other options than the earlier sessions had (a larger file): their times are not this plan's
    other = fsbench_study(tmp_path, "--plan", small=tuple(a.replace("=16M", "=32M") for a in SMALL))
    assert other.returncode == 0, other.stderr
    assert "(from the seconds per run and per target measured for this scale: " in other.stdout

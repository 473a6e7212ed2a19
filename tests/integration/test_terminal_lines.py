"""The terminal of a real short session (issue 35): one line per case with its place in the
session, no test file's name before every case, the legend once, every line within 120 columns;
-v keeps pytest's own line per test and adds a line per run, -q writes pytest's letters only.
`fsbench sessions` then says what each of those sessions ran, in text and JSON."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
CASE_LINE = re.compile(r"^\[ ?(\d+)/(\d+)\] (test_dd_\w+\[\w+-single-1M\]) (passed|skipped) [\d.]+ s(: .*)?  "
                       r"\d+:\d\d spent, (about \d+:\d\d left|done)$")


def session(tmp_path: Path, *more: str) -> subprocess.CompletedProcess:
    """A real session at a terminal 200 columns wide: fsbench's lines must stay within 120."""
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "benchmarks/test_dd.py",
                           "--fs=ext4,btrfs,xfs", "--layout=single", "--runs=2", "--warmup=0", "--dd-size=16M",
                           f"--store={tmp_path / 'fsbench.db'}", f"--image-dir={tmp_path / 'images'}", *more],
                          cwd=REPO, capture_output=True, text=True, timeout=600,
                          env={**os.environ, "COLUMNS": "200"})


def own_lines(out: str) -> list[str]:
    """Every line but pytest's separators (=== and ---, as wide as the terminal)."""
    return [line for line in out.splitlines() if not re.match(r"^[=-]{3}", line) and not line.endswith(("===", "---"))]


@pytest.mark.root
def test_a_session_writes_one_line_per_case_within_120_columns(tmp_path, no_leftovers):
    done = session(tmp_path)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    lines = done.stdout.splitlines()
    cases = [found for line in lines if (found := CASE_LINE.match(line))]
    assert [(int(c[1]), int(c[2])) for c in cases] == [(k, 6) for k in range(1, 7)], done.stdout
    assert cases[-1][6] == "done" and all(c[6].startswith("about") for c in cases[:-1])
    assert all(c[4] == "passed" and re.match(r": dd\.(write|read) [\d.]+ MB/s$", c[5]) for c in cases)
    assert not [line for line in lines if "benchmarks/test_dd.py" in line], done.stdout  # no file name per case
    assert not [line for line in lines if line.startswith("fsbench ext4-single dd: run")]  # no line per run
    unwrapped = done.stdout.replace("\n  ", " ")  # a wrapped line's rest is indented by two
    assert unwrapped.count("ci95: the median's 95% interval") == 1, done.stdout  # the legend once
    assert unwrapped.count("params of every row: bs=1M,data=random,size=16M") == 1, done.stdout
    too_wide = [line for line in own_lines(done.stdout) if len(line) > 120]
    assert not too_wide, too_wide
    assert re.search(r"^=+ 6 passed in [\d.]+s", lines[-1])


@pytest.mark.root
def test_verbose_and_quiet_sessions_keep_pytests_own_lines(tmp_path, no_leftovers):
    verbose = session(tmp_path, "-v", "-k", "write")
    assert verbose.returncode == 0, verbose.stdout[-3000:] + verbose.stderr[-2000:]
    assert re.search(r"^benchmarks/test_dd\.py::test_dd_write\[ext4-single-1M\] PASSED", verbose.stdout, re.M)
    assert re.search(r"^fsbench ext4-single dd: run 2/2 [\d.]+ s, dd\.write [\d.]+ MB/s$", verbose.stdout, re.M)
    assert [int(found[1]) for found in map(CASE_LINE.match, verbose.stdout.splitlines()) if found] == [1, 2, 3]
    quiet = session(tmp_path, "-q", "-k", "read")
    assert quiet.returncode == 0, quiet.stdout[-3000:] + quiet.stderr[-2000:]
    assert quiet.stdout.splitlines()[0].startswith("...") and not CASE_LINE.search(quiet.stdout)
    assert "fsbench ext4-single" not in quiet.stdout


@pytest.mark.root
def test_sessions_say_what_each_session_ran(tmp_path, no_leftovers):
    done = session(tmp_path, "-k", "write", "--fs-opt=btrfs:compress=zstd", "-q")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    store = f"--store={tmp_path / 'fsbench.db'}"
    listed = subprocess.run([sys.executable, "-m", "pytest_fsbench.cli", "sessions", store], capture_output=True,
                            text=True, timeout=60)
    assert listed.returncode == 0, listed.stderr
    lines = listed.stdout.splitlines()
    assert lines[1].split()[0] == "1" and all(len(line) <= 120 for line in lines), listed.stdout
    said = " ".join(line.strip() for line in lines[2:])
    assert said.startswith("ext4,btrfs,xfs x single; options btrfs:compress=zstd; tests benchmarks/test_dd.py "
                           "-k write; kernel host (" + os.uname().release + "), 3 tests recorded"), listed.stdout
    document = subprocess.run([sys.executable, "-m", "pytest_fsbench.cli", "sessions", "--json", store],
                              capture_output=True, text=True, timeout=60)
    [found] = json.loads(document.stdout)["sessions"]
    assert found["ran"]["selection"] == {"files": ["benchmarks/test_dd.py"], "-k": "write"}
    assert found["ran"]["filesystems"] == ["ext4", "btrfs", "xfs"] and found["ran"]["kernel"] == os.uname().release
    assert found["ran"]["measured"] == ["btrfs-single", "ext4-single", "xfs-single"] and found["ran"]["tests"] == 3

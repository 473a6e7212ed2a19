"""The terminal of a real short session (issue 35): one line per case with its place in the
session, no test file's name before every case, the legend once, every line within 120 columns
(within 80 on an 80-column terminal, a table's rows stacked); -v keeps pytest's own line per test and adds
a line per run, -q writes pytest's letters only.
`fsbench sessions` then says what each of those sessions ran, in text and JSON."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_fsbench.measure.progress import unwrap
from pytest_fsbench.views.tables import unstack

REPO = Path(__file__).resolve().parents[2]
#: a case's line (on a narrow terminal without the time spent, or in two lines that unwrap joins)
CASE_LINE = re.compile(r"^\[ ?(\d+)/(\d+)\] (test_dd_\w+\[\w+-single-1M\]) (passed|skipped) [\d.]+ s(: .*?)?  "
                       r"(?:\d+:\d\d spent, )?(about \d+:\d\d left|done)$")


def session(tmp_path: Path, *more: str, columns: int = 200) -> subprocess.CompletedProcess:
    """A real session at a terminal `columns` wide (by default 200: fsbench's lines must stay within 120)."""
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "benchmarks/test_dd.py",
                           "--fs=ext4,btrfs,xfs", "--layout=single", "--runs=2", "--warmup=0", "--dd-size=16M",
                           f"--store={tmp_path / 'fsbench.db'}", f"--image-dir={tmp_path / 'images'}", *more],
                          cwd=REPO, capture_output=True, text=True, timeout=600,
                          env={**os.environ, "COLUMNS": str(columns)})


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


#: a row of the results table of the sessions here, whole: case, metric, median, unit, runs, range
RESULT_ROW = re.compile(r"^test_dd_write\[(ext4|btrfs|xfs)-single-1M\] +dd\.write +[\d.]+ +(MB/s +)?2 +range [\d.]+\.\.[\d.]+")
#: pytest's own header lines (its platform, plugins, root), which fsbench does not lay out
PYTESTS_OWN = ("platform ", "rootdir: ", "configfile: ", "plugins: ", "cachedir: ")


@pytest.mark.root
def test_an_80_column_terminal_gets_prose_within_80_columns_and_tables_stacked(tmp_path, no_leftovers):
    """COLUMNS=80 (issue 35: an 80-column terminal was given 120-column lines to wrap itself):
    every line of prose fsbench writes is within 80 columns (wrapped, its rest indented by two,
    so execute_pytest's unwrap reads it whole); the results table, wider than that, has each row
    stacked (its case on a line of its own, every other cell on the next), never wrapped, and
    unstack reads its rows whole; each case's line, wrapped or not, reads whole again."""
    done = session(tmp_path, "-k", "write", columns=80)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    raw = done.stdout.splitlines()
    start = next(i for i, line in enumerate(raw) if "fsbench results" in line)
    # the table, too wide for 80 columns, stacked: each case on a line of its own, its cells under it
    table = raw[start + 1:start + 9]
    # (issue 43: within 80 columns, the unit, the same in every row, said once below it)
    assert table[0] == "case" and table[1].split()[:4] == ["metric", "median", "n", "ci95"], done.stdout
    assert all(line.startswith("test_dd_write[") for line in table[2::2]), done.stdout
    assert all(line.startswith("    dd.write  ") for line in table[3::2]), done.stdout
    assert all(len(line) <= 80 for line in table), table
    header, *rows = unstack(table)
    assert header.split()[:5] == ["case", "metric", "median", "n", "ci95"], header
    assert "unit of every row: MB/s" in " ".join(unwrap(raw))
    assert all(RESULT_ROW.match(row) for row in rows) and not raw[start + 9].startswith("test_"), done.stdout
    prose = [line for line in own_lines(done.stdout) if line not in table and not line.startswith(PYTESTS_OWN)]
    too_wide = [line for line in prose if len(line) > 80]
    assert not too_wide, too_wide
    assert any(line.startswith("  ") for line in prose), done.stdout  # some were wrapped to fit
    whole = unwrap(raw)
    cases = [found for line in whole if (found := CASE_LINE.match(line))]
    assert [(int(c[1]), int(c[2])) for c in cases] == [(1, 3), (2, 3), (3, 3)], "\n".join(whole)
    assert all(re.match(r": dd\.write [\d.]+ MB/s$", c[5]) for c in cases)
    assert "ci95: the median's 95% interval" in "\n".join(whole)  # the legend, wrapped, reads whole


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

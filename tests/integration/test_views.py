"""One real session, paired and gated against a saved baseline, through every view: the
terminal's tables and the gate's lines, `fsbench compare`, the HTML report made during the session
(--report) and after it (`fsbench report`), and the JSON and PTS exports. Each comparison must
read the same everywhere: the same verdict word, the same interval level on its label, the same
estimate, interval and p (against the baseline: adjusted by each run's --control, which both
sessions measure by default, in every view, beside the medians in MB/s)."""

from __future__ import annotations

import json
import math
import re
import subprocess
import sys
from pathlib import Path

import pytest
from lxml import etree, html

from conftest import execute_pytest
from pytest_fsbench.measure.progress import unwrap
from pytest_fsbench.views.tables import clauses, unstack

pytestmark = pytest.mark.root
REPO = Path(__file__).resolve().parents[2]
REFERENCE, VARIANT = "test_dd_write[ext4-single-1M]", "test_dd_write[ext4-single-mount=sync-1M]"
#: a gate line: case, gate verdict, metric, params, medians, unit, change, [level% CI low, high], p, n, comparison word
GATE_LINE = re.compile(r"^(?P<case>\S+) (?P<gate>regression|within bounds|inconclusive): (?P<metric>\S+) \S+ "
                       r"(?P<base>\S+) -> (?P<new>\S+) (?P<unit>\S+)"
                       r"(?P<adjusted> \(medians [+-][\d.]+%\), adjusted by the control:)? "
                       r"(?P<change>[+-][\d.]+%) \[(?P<level>[\d.]+)% CI "
                       r"(?P<low>[+-][\d.]+%), (?P<high>[+-][\d.]+%)\] p(?:=|(?=<))(?P<p><?[\d.]+) n=(?P<n>\S+) "
                       r"(?P<verdict>worse|better|not significant)")
VERDICTS = {"regression": {"worse"}, "within bounds": {"worse", "better", "not significant"},
            "inconclusive": {"worse", "not significant", "better"}}


def fsbench(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pytest_fsbench.cli", *args], capture_output=True, text=True,
                          cwd=REPO, timeout=300)


def columns(line: str) -> list[str]:
    return re.split(r"\s{2,}", line.strip())


#: a note below a table that says the one value a column left out of it has in every row
EVERY_ROW = re.compile(r"\b(\w+) of every row: (\S+)")


def text_table(lines: list[str], title: str) -> dict[str, dict[str, str]]:
    """A comparison table printed after the line holding title: case -> column -> cell, a column
    said once below the table (its value the same in every row) among them; its rows stacked to fit
    the terminal are read whole."""
    lines = unstack(unwrap(lines))
    start = next(i for i, line in enumerate(lines) if title in line) + 1
    header = columns(lines[start])
    rows = {}
    for end, line in enumerate(lines[start + 1:], start + 1):
        cells = columns(line)
        if len(cells) != len(header):
            break
        rows.setdefault(cells[0], dict(zip(header, cells)))  # a case's figure, before its counts of the work
    once = dict(EVERY_ROW.findall(lines[end]))
    return {case: {**once, **row} for case, row in rows.items()}


def rows_of(table: etree._Element) -> list[list[str]]:
    return [cells for cells in ([td.text_content() for td in tr.iter("td")] for tr in table.iter("tr")) if cells]


def table_after(page: etree._Element, heading: str) -> etree._Element:
    """The table after the h2 that starts with heading."""
    [h2] = [h for h in page.iter("h2") if h.text_content().startswith(heading)]
    return next(h2.itersiblings("table"))


def table_cells(page: etree._Element, heading: str) -> list[list[str]]:
    return rows_of(table_after(page, heading))


def html_table(page: etree._Element, heading: str) -> dict[str, dict[str, str]]:
    """The table after the h2 that starts with heading: first cell -> column -> cell."""
    table = table_after(page, heading)
    header = [th.text_content() for th in table.iter("th")]
    found: dict[str, dict[str, str]] = {}
    for cells in rows_of(table):  # a case's figure, before its counts of the work
        found.setdefault(cells[0], dict(zip(header, cells)))
    return found


def comparison(row: dict[str, str]) -> tuple:
    """(change, interval, level, p, verdict) of a comparison table's row, its level from the header."""
    [label] = [k for k in row if re.fullmatch(r"ci[\d.]+", k)]
    return row["change"].split()[0].rstrip("*"), row[label], label[2:], row["p"], row["verdict"]


def from_line(match: re.Match) -> tuple:
    return (match["change"], f"[{match['low']}, {match['high']}]", match["level"], match["p"], match["verdict"])


def from_record(record: dict) -> tuple:
    low, high = record["interval_pct"]
    return (f"{record['change_pct']:+.1f}%", f"[{low:+.1f}%, {high:+.1f}%]", f"{record['level_pct']:g}", record["p"],
            record["verdict"])


def test_every_view_says_the_same(tmp_path, no_leftovers):
    store, during, after = tmp_path / "fsbench.db", tmp_path / "during.html", tmp_path / "after.html"
    common = ["benchmarks/test_dd.py", "-k", "write", "--fs=ext4", "--dd-size=8M", "--runs=6", "--image-size=512M",
              "--control", f"--image-dir={tmp_path / 'images'}", f"--store={store}"]  # --control: off by default
    saved = execute_pytest([*common, "--save=base"], cwd=REPO)
    assert saved.returncode == 0, saved.stdout[-3000:]
    done = execute_pytest([*common, "--compare=base", "--fail-on-regression=5%", "--paired=ext4:mount=sync",
                       f"--report={during}"], cwd=REPO)
    assert done.returncode in (0, 1), done.stdout[-3000:] + done.stderr[-2000:]  # the gate decides which
    lines = done.stdout.splitlines()

    # the terminal: the comparison with the baseline, the paired table, the gate's lines
    base_table = text_table(lines, "fsbench comparison with base")
    paired_table = text_table(lines, "fsbench paired comparison")
    gates = {m["case"]: m for m in map(GATE_LINE.match, lines) if m}
    assert set(base_table) == {REFERENCE} and set(paired_table) == {VARIANT}
    assert set(gates) == {"ext4-single", "ext4-single-mount=sync"}, [l for l in lines if l.startswith("ext4-single")]
    base, paired = comparison(base_table[REFERENCE]), comparison(paired_table[VARIANT])
    assert from_line(gates["ext4-single"]) == base
    assert from_line(gates["ext4-single-mount=sync"]) == paired
    for match in gates.values():
        assert match["verdict"] in VERDICTS[match["gate"]] and match["level"] == "90"
    assert base_table[REFERENCE]["base"] == gates["ext4-single"]["base"]
    # the medians in MB/s, the control's adjustment named beside them (issue 32)
    assert base_table[REFERENCE]["unit"] == gates["ext4-single"]["unit"] == "MB/s"
    assert base_table[REFERENCE]["change"].endswith(" adjusted by the control")
    assert gates["ext4-single"]["adjusted"]
    assert paired_table[VARIANT]["reference"] == gates["ext4-single-mount=sync"]["base"]

    # the answer first: a line against the baseline and one for the variant against its reference
    answer = lines[next(i for i, line in enumerate(lines) if "fsbench verdicts" in line) + 1:
                   next(i for i, line in enumerate(lines) if "fsbench results" in line)]
    assert len(answer) == 2 and {line.split(" (", 1)[0] for line in answer} == {
        "session 2 vs base", "sync vs default"}, answer
    # each line with its own gate's word (an inconclusive one says why: "(inconclusive (disturbed))")
    sync_line = next(line for line in answer if line.startswith("sync vs default (ext4-single-1M): dd.write "))
    assert f"({gates['ext4-single-mount=sync']['gate']}" in sync_line, (sync_line, gates)
    base_line = next(line for line in answer if line.startswith("session 2 vs base (ext4-single-1M"))
    assert f"({gates['ext4-single']['gate']}" in base_line, (base_line, gates)

    # fsbench compare: the same comparison with the baseline
    compared = fsbench("compare", "base", "last", f"--store={store}")
    assert compared.returncode == (base[-1] == "worse"), compared.stderr  # exit 1 on a worse one
    said = unwrap(compared.stdout.splitlines())
    # the answer first, the same change (the comparison's word: this compare has no rule)
    in_session = next(line for line in answer if line.startswith("session 2 vs base"))
    assert said[1].split(" (")[:2] == in_session.split(" (")[:2], (said[1], in_session)
    assert f"({base[-1]})" in said[1] and "; the work: " in said[1], said[1]
    assert comparison(text_table(said, "session 2 vs base (")[REFERENCE]) == base

    # the report made during the session and the one made after it: the same tables, and the gate's lines
    made = fsbench("report", "last", "--compare=base", f"--store={store}", f"-o={after}")
    assert made.returncode == 0, made.stderr
    # without --compare, a gated session's report compares as its gate did (issue 43: it had no answer at its top)
    plain = tmp_path / "plain.html"
    made = fsbench("report", "last", f"--store={store}", f"-o={plain}")
    assert made.returncode == 0 and "(session 2 against base)" in made.stderr, made.stderr
    gate_lines = {clauses(line)[0] for line in lines if GATE_LINE.match(line)}  # a note of several lines said once
    for page_file in (during, after, plain):
        page = html.fromstring(page_file.read_text())
        assert page.find_class("answer")[0].find("h2").text_content().startswith("The gate's verdicts: ")
        assert [li.text_content() for li in page.find_class("answer")[0].iter("li")] == answer, page_file
        assert comparison(html_table(page, "Change vs base")[REFERENCE]) == base, page_file
        assert comparison(html_table(page, "Paired: ")[VARIANT]) == paired, page_file
        assert {clauses(cells[2])[0] for cells in table_cells(page, "The gate's lines")} == gate_lines, page_file
        glance = {cells[0]: cells for cells in rows_of(page.find_class("glance")[0]) if len(cells) == 6}
        change, interval, level, _, verdict = paired
        # the reference fixed (issue 43: ranked best first, it flipped), the variant against it: the paired comparison
        assert glance[REFERENCE][2] == "reference"
        assert glance[VARIANT][2:5] == [change, interval, f"{verdict} (paired by round)"]
        assert f"<th>{level}% CI</th>" in etree.tostring(page.find_class("glance")[0], encoding="unicode")

    # the exports: the paired comparison as a record and as the line, the gate's lines in the manifest
    exported = fsbench("export", "last", f"--store={store}")
    assert exported.returncode == 0, exported.stderr
    entries = {b["fullname"].split("::")[-1]: b for b in json.loads(exported.stdout)["benchmarks"]
               if b["extra_info"]["metric"] == "dd.write"}
    record = entries[VARIANT]["extra_info"]["paired"]
    assert from_record(record) == paired and "paired" not in entries[REFERENCE]["extra_info"]
    assert record["reference"].endswith(REFERENCE)
    assert {clauses(entry["line"])[0] for b in entries.values()
            for entry in b["extra_info"]["manifest"].get("gate", [])} == gate_lines
    pts = fsbench("export", "last", "--format=pts", f"--store={store}")
    assert pts.returncode == 0, pts.stderr
    [variant_entry] = [e for result in etree.fromstring(pts.stdout.encode()).iter("Result")
                       if result.findtext("Title") == "fsbench dd.write" for e in result.iter("Entry")
                       if e.findtext("Identifier") == "ext4-single-mount=sync"]
    line = json.loads(variant_entry.findtext("JSON"))["fsbench-paired"]
    assert line == record["line"] and line in gates["ext4-single-mount=sync"].string

    # the medians: the terminal's results table, every report's case table and the export agree
    start = next(i for i, line in enumerate(lines) if "fsbench results" in line) + 2
    column = lines[start - 1].split().index("median")  # the params column is left out when every row shares them
    results = {words[0]: {"median": words[column]} for words in (line.split() for line in lines[start:start + 2])}
    assert set(results) == {REFERENCE, VARIANT}
    for page_file in (during, after):
        cases = html_table(html.fromstring(page_file.read_text()), "Every case")
        assert {case: row["median"] for case, row in cases.items()} == \
            {case: row["median"] for case, row in results.items()}
    assert all(math.isclose(float(results[case]["median"]), entries[case]["stats"]["median"], rel_tol=5e-4)
               for case in (REFERENCE, VARIANT))

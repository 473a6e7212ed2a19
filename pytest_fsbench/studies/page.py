"""A study's own views on its report page: where its cases ran (the host, or a guest kernel:
which, emulated or not, with which ZFS), the findings checked (the headline), the published
numbers beside fsbench's, where the study was blind, and what this machine could not run."""

from __future__ import annotations

import math
import re

from ..views.report import Report, _breakable, _e, _table
from ..verdicts.stats import plain
from ..store.facts import emulation
from .launch import option_value
from . import (CONTRADICTED, REPRODUCED, VERDICTS, Beside, Study, Verdict, beside, changes_beside, judge, ratio_text,
               session_conditions, suspect_note)

VERDICT_CLASS = {REPRODUCED: "better", CONTRADICTED: "worse"}


def verdicts(study: Study, report: Report) -> list[Verdict]:
    measured = session_conditions(report.session.get("manifest", {}))
    return [judge(check, report.rows, report.alpha, measured) for check in study.checks()]


def findings_section(found: list[Verdict]) -> str:
    rows = [[v.check.claim, v.check.source, "fsbench" if v.check.by == "fsbench" else "the study", v.verdict, v.detail]
            for v in found]
    counts = ", ".join(f"{sum(1 for v in found if v.verdict == k)} {k}" for k in VERDICTS)
    return (f"<h2>Findings checked</h2><p>{counts}, of {len(found)}.</p>"
            + _table(["claim", "source", "claimed by", "verdict", "measured: a vs b medians, change [interval]"], rows,
                     [VERDICT_CLASS.get(v.verdict, "") for v in found])
            + "<p class='note'>reproduced: a significant change in the claimed direction (one-sided rank test at the "
              "report's alpha; for 'similar', the whole interval within the tolerance); contradicted: significant the "
              "other way (or, for 'similar', the whole interval outside it); not comparable: measured under other "
              "conditions than the claim depends on (named in its row), so neither; not decided otherwise, or not "
              "measured here.</p>")


def beside_section(study: Study, report: Report) -> str:
    """The published numbers beside fsbench's medians (always a table: where none has a case here,
    its one row says why), then the published changes beside fsbench's."""
    items = beside(study, report.rows)
    changes = changes_beside(study, report.rows)
    parts = ["<h2>Published numbers beside fsbench's</h2><p class='note'>Absolute values differ with hardware "
             "(and here the targets are loop devices on one virtual disk): the ratio says how far apart the two "
             "machines are, and whether that distance is the same across configurations. Published values are "
             "converted to MB/s = 10<sup>6</sup> B/s with the factor below each table. <i>fsbench ran</i>: the "
             "options of fsbench's cases in the row; where they are not the study's, the last section says what "
             "stands in and why.</p>"]
    groups: dict[str, list[Beside]] = {}
    for i in items:
        groups.setdefault(source_parts(i.entry.get("source", ""))[0], []).append(i)
    for table, found in groups.items():
        parts.append(f"<h3>{_e(table)}</h3>" + published_table(found))
    if not items:
        parts.append(_empty_table(["source", *FLAT_HEADER[1:]], _no_numbers(study, changes)))
    if items:
        rules = {r.get("factor_note", "") for r in study.fsbench.get("published", []) if r.get("factor_note")}
        parts += [f"<p class='note'>{_e(note)}</p>" for note in sorted(rules)]
        if any(i.from_cache for i in items):
            parts.append(f"<p class='note'>{CACHE_NOTE}</p>")
        parts += [f"<p class='note'>Not compared: {_e(i.entry.get('source', ''))}, {_e(i.entry.get('test', ''))} "
                  f"{i.entry['value']:g} {_e(i.entry.get('unit', ''))}: {_e(suspect_note(i))}.</p>"
                  for i in items if suspect_note(i)]
    if changes:
        rows = [[c.entry.get("source", ""), c.entry.get("fs", ""), c.entry.get("layout", ""), c.entry.get("options", ""),
                 c.ran, c.entry.get("test", ""), _params(c.entry), f"{c.entry['value']:+g}%",
                 "" if c.measured_pct is None else f"{c.measured_pct:+.1f}%", f"{c.n[0]}/{c.n[1]}"] for c in changes]
        parts.append("<h3>Published changes beside fsbench's</h3>" + _table(
            ["source", "fs", "layout", "options", "fsbench ran", "test", "parameters", "published change",
             "fsbench change of medians", "runs"], rows, numeric={7, 8}))
    return "".join(parts)


#: what names a published number's configuration in its table: every column but its test and value
CONFIGURATION = ("row", "fs", "layout", "options", "fsbench ran", "parameters", "statistic")
#: one number a row, as a table that does not group by configuration shows it
FLAT_HEADER = [*CONFIGURATION[:6], "test", CONFIGURATION[6], "published", "published MB/s", "fsbench median MB/s",
               "fsbench / published"]
CACHE_NOTE = ("(cache): the page cache served fsbench's figure (of all the matching cases, or of as many as it says): "
              "less than half of its bytes reached the disks while it ran (the <i>from</i> column of Every case "
              "says how much), so it measured the memory, and its ratio says nothing of the storage.")


def configuration(item: Beside) -> tuple[str, ...]:
    """A published number's cells in CONFIGURATION's order: where in its table, what it measured and how."""
    entry = item.entry
    return (source_parts(entry.get("source", ""))[1], entry.get("fs", ""), entry.get("layout", ""),
            entry.get("options", ""), item.ran, _params(entry), entry.get("statistic", ""))


def by_configuration(items: list[Beside]) -> dict[tuple[str, ...], dict[str, Beside]] | None:
    """A table's numbers by configuration, then by test (write, rewrite, ...); None where that
    does not make the table shorter (each configuration has one test) or would hide a number
    (a configuration has a test twice)."""
    grouped: dict[tuple[str, ...], dict[str, Beside]] = {}
    for item in items:
        tests = grouped.setdefault(configuration(item), {})
        if item.entry.get("test", "") in tests:
            return None
        tests[item.entry.get("test", "")] = item
    return grouped if len(grouped) < len(items) else None


def shared_columns(configurations: list[tuple[str, ...]]) -> dict[int, str]:
    """The configuration's columns that have one value in every row, by their index: said once
    above the table (an empty one not at all), not in each row. The row in the source table is
    shown unless no row has one; a table of one row keeps its columns."""
    first = configurations[0]
    same = [k for k in range(len(CONFIGURATION)) if all(c[k] == first[k] for c in configurations)]
    return {k: first[k] for k in same if not first[k] or (k and len(configurations) > 1)}


def shared_note(shared: dict[int, str]) -> str:
    said = "; ".join(f"{CONFIGURATION[k]} {shared[k]}" for k in sorted(shared) if shared[k])
    return f"<p class='note'>Every row of this table: {_e(said)}.</p>" if said else ""


#: the most tests side by side in one table (three columns each): more would not fit a 1400 px window
MOST_TESTS = 4


def tests_in_tables(tests: list[str]) -> list[list[str]]:
    """The tests in tables of at most MOST_TESTS each, as even as can be: six make two of three."""
    size = math.ceil(len(tests) / math.ceil(len(tests) / MOST_TESTS))
    return [tests[i:i + size] for i in range(0, len(tests), size)]


def published_table(items: list[Beside]) -> str:
    """One source table's numbers: a row per configuration with its tests side by side where the
    configurations have several tests (write, rewrite, read, reread; past MOST_TESTS, in more
    than one table), else a row per number; the columns every row shares are said once above."""
    grouped = by_configuration(items)
    if grouped is None:
        return flat_table(items)
    shared = shared_columns(list(grouped))
    kept = [k for k in range(len(CONFIGURATION)) if k not in shared]
    tests = list(dict.fromkeys(i.entry.get("test", "") for i in items))
    return (shared_note(shared) + "".join(grouped_table(grouped, kept, chunk) for chunk in tests_in_tables(tests))
            + "<p class='note'>Per test: the published value in MB/s (as printed: hover over it), fsbench's median "
              "MB/s and fsbench / published.</p>")


def grouped_table(grouped: dict[tuple[str, ...], dict[str, Beside]], kept: list[int], tests: list[str]) -> str:
    """A row per configuration that has one of the tests: its kept columns, then each test's three cells."""
    head = ("<thead><tr>" + "".join(f"<th rowspan='2'>{_e(CONFIGURATION[k])}</th>" for k in kept)
            + "".join(f"<th colspan='3' class='test'>{_e(t)}</th>" for t in tests) + "</tr><tr>"
            + "<th class='first'>published</th><th>fsbench</th><th>ratio</th>" * len(tests) + "</tr></thead>")
    body = ["<tr>" + "".join(f"<td>{_breakable(config[k])}</td>" for k in kept)
            + "".join(_test_cells(by_test.get(t)) for t in tests) + "</tr>"
            for config, by_test in grouped.items() if any(t in by_test for t in tests)]
    return f"<table class='published'>{head}<tbody>{''.join(body)}</tbody></table>"


def _test_cells(item: Beside | None) -> str:
    """A test's three cells in a configuration's row: published MB/s, fsbench's median, the ratio
    (a number right-aligned on one line; words, such as a suspect value as printed, may wrap)."""
    if item is None:
        return "<td class='first'></td><td></td><td></td>"
    printed = f"{item.entry['value']:g} {item.entry.get('unit', '')}".strip()
    published = printed if item.published_mb_s is None else plain(item.published_mb_s)
    measured = "" if item.measured is None else plain(item.measured) + item.cache_mark
    ratio = "not compared" if item.entry.get("suspect") else ratio_text(item)
    cached = "cache" if item.from_cache else ""
    return (_cell(published, item.published_mb_s is not None, "first", f"as published: {printed}")
            + _cell(measured, True, cached) + _cell(ratio, ratio[:1].isdigit(), cached))


def _cell(text: str, number: bool, cls: str = "", title: str = "") -> str:
    classes = " ".join(c for c in ("n" if number else "", cls) if c)
    attributes = (f' class="{classes}"' if classes else "") + (f' title="{_e(title)}"' if title else "")
    return f"<td{attributes}>{_e(text)}</td>"


def flat_table(items: list[Beside]) -> str:
    """A row per published number (its configuration has no other test here)."""
    shared = shared_columns([configuration(i) for i in items])
    rows = [[*configuration(i)[:6], i.entry.get("test", ""), configuration(i)[6],
             f"{i.entry['value']:g} {i.entry.get('unit', '')}",
             "" if i.published_mb_s is None else plain(i.published_mb_s),
             "" if i.measured is None else plain(i.measured) + i.cache_mark, ratio_text(i)] for i in items]
    columns = [FLAT_HEADER.index(CONFIGURATION[k]) for k in shared]
    kept = [j for j in range(len(FLAT_HEADER)) if j not in columns]
    numeric = {n for n, j in enumerate(kept) if j in {9, 10, 11}}
    return shared_note(shared) + _table([FLAT_HEADER[j] for j in kept], [[row[j] for j in kept] for row in rows],
                                        numeric=numeric)


def source_parts(source: str) -> tuple[str, str]:
    """A published number's source as its table, named once above it, and where in that table:
    ("Results table (untitled, only table in the article)", "row 1: Ext3")."""
    match = re.match(r"(.*?), ((?:row|rows|column|line) .*)$", source)
    return (match.group(1), match.group(2)) if match else (source, "")


def _no_numbers(study: Study, changes: list) -> str:
    """Why the table of published numbers has no row."""
    if study.fsbench.get("no_published_values"):
        return str(study.fsbench["no_published_values"])
    if not study.fsbench.get("published"):
        return ("The study publishes no absolute number fsbench can place on its cases; its numbers are changes in "
                "percent" + (", beside fsbench's below." if changes else ", and none has a case in this session."))
    return "None of the published numbers has a case in this session."


def _empty_table(header: list[str], why: str) -> str:
    """A table of no rows but one that says why."""
    head = "".join(f"<th>{_e(h)}</th>" for h in header)
    return (f"<table><thead><tr>{head}</tr></thead><tbody><tr><td colspan='{len(header)}'>{_e(why)}</td></tr>"
            "</tbody></table>")


def _params(entry: dict) -> str:
    return ", ".join(f"{k}={v}" for k, v in entry.get("params", {}).items() if not k.endswith("_kb"))


def caveats_section(study: Study) -> str:
    blind = "".join(f"<li>{_e(b)}</li>" for b in study.fsbench.get("blind", []))
    cannot = [[c["what"], c.get("why", ""), c.get("instead", "")] for c in study.fsbench.get("cannot_run", [])]
    return ("<h2>Where the study was blind, and what fsbench ran beside it</h2><ul>" + blind + "</ul>"
            + "<h2>What this machine cannot run as the study did</h2>"
            + _table(["the study's", "why not here", "what stands in"], cannot))


def where_row(case: dict) -> list[str]:
    """A measured case: its id, the kernel it ran under, how its numbers were made, its ZFS."""
    manifest, spec = case.get("manifest", {}), case.get("spec", {})
    kernel, host = manifest.get("kernel"), manifest.get("host", {})
    zfs = host.get("zfs_implementation") or "" if spec.get("fs") == "zfs" else ""
    if isinstance(kernel, dict) and kernel.get("runs_under") == "vm":
        how = "emulated (QEMU's TCG)" if emulation(manifest) == "emulated" else "under KVM"
        where = f"virtual machine {kernel.get('label')}: kernel {kernel.get('release')} in QEMU"
        zfs = f"OpenZFS {kernel.get('openzfs')}" if spec.get("fs") == "zfs" and kernel.get("openzfs") else ""
    elif isinstance(kernel, dict):
        how, where, zfs = "natively", f"User-mode Linux {kernel.get('label')}: kernel {kernel.get('release')}", ""
    else:
        how, where = "natively", f"the host's kernel {host.get('kernel', '')}".rstrip()
    return [case.get("case_id", ""), where, how, zfs]


def where_section(report: Report) -> str:
    """Where each case ran, when the session placed cases in a guest kernel (or its arguments would
    have: --kernel=host+GUEST); the findings compare like with like."""
    rows = list({tuple(where_row(case)) for case in report.cases})
    placing = option_value(report.session.get("args", {}).get("argv", []), "--kernel", "host").startswith("host+")
    if all(row[2] == "natively" and row[1].startswith("the host") for row in rows) and not placing:
        return ""
    parts = [("<h2>Where the cases ran</h2><p class='note'>Each case ran under the host's kernel where it could; "
              "with --kernel=host+vm a case the host cannot run (a ZFS option zfs-fuse lacks, md RAID) ran in a "
              "virtual machine, with the cases of its filesystem and layout, which it is compared with. Numbers "
              "measured under QEMU's CPU emulation compare only with each other: a finding whose two sides ran one "
              "emulated and one natively is not decided, and its line says so.</p>")]
    if rows:
        parts.append(_table(["case", "ran under", "measured", "ZFS"], sorted(list(row) for row in rows)))
    if placing and not any(row[1].startswith("virtual machine") for row in rows):
        parts.append("<p class='note'>No case of this session ran in a virtual machine: none needed one here, or "
                     "none could boot (its cases were skipped with the reason; fsbench study NAME --plan says "
                     "which).</p>")
    return "".join(parts)


def preface(study: Study, report: Report, scale: str) -> str:
    head = (f"<p><b>{_e(study.title)}</b>: {_e(study.citation)}. "
            f"fsbench re-ran it at the <b>{_e(scale)}</b> scale: {_e(study.scale(scale).get('note', ''))}.</p>")
    return (head + where_section(report) + findings_section(verdicts(study, report)) + beside_section(study, report)
            + caveats_section(study))

"""A study's own views on its report page: where its cases ran (the host, or a guest kernel:
which, emulated or not, with which ZFS), the findings checked (the headline), the published
numbers beside fsbench's, where the study was blind, and what this machine could not run."""

from __future__ import annotations

import re

from ..views.report import Report, _e, _table
from ..verdicts.stats import plain
from ..store.facts import emulation
from .launch import option_value
from . import (CONTRADICTED, REPRODUCED, VERDICTS, Study, Verdict, beside, changes_beside, judge, ratio_text,
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
    header = ["row", "fs", "layout", "options", "fsbench ran", "test", "parameters", "statistic", "published",
              "published MB/s", "fsbench median MB/s", "fsbench / published"]
    groups: dict[str, list] = {}
    for i in items:
        groups.setdefault(source_parts(i.entry.get("source", ""))[0], []).append(i)
    for table, found in groups.items():
        rows = [[source_parts(i.entry.get("source", ""))[1], i.entry.get("fs", ""), i.entry.get("layout", ""),
                 i.entry.get("options", ""), i.ran, i.entry.get("test", ""), _params(i.entry),
                 i.entry.get("statistic", ""), f"{i.entry['value']:g} {i.entry.get('unit', '')}",
                 "" if i.published_mb_s is None else plain(i.published_mb_s),
                 "" if i.measured is None else plain(i.measured), ratio_text(i)] for i in found]
        parts.append(f"<h3>{_e(table)}</h3>" + _table(header, rows, numeric={9, 10, 11}))
    if not items:
        parts.append(_empty_table(["source", *header[1:]], _no_numbers(study, changes)))
    if items:
        rules = {r.get("factor_note", "") for r in study.fsbench.get("published", []) if r.get("factor_note")}
        parts += [f"<p class='note'>{_e(note)}</p>" for note in sorted(rules)]
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

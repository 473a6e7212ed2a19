"""A study's own views on its report page: the findings checked (the headline), the published
numbers beside fsbench's, where the study was blind, and what this machine could not run."""

from __future__ import annotations

from ..report import Report, _e, _table
from ..stats import plain
from . import CONTRADICTED, REPRODUCED, Study, Verdict, beside, changes_beside, judge, ratio_text, suspect_note

VERDICT_CLASS = {REPRODUCED: "better", CONTRADICTED: "worse"}


def verdicts(study: Study, report: Report) -> list[Verdict]:
    return [judge(check, report.rows, report.alpha) for check in study.checks()]


def findings_section(found: list[Verdict]) -> str:
    rows = [[v.check.claim, v.check.source, "fsbench" if v.check.by == "fsbench" else "the study", v.verdict, v.detail]
            for v in found]
    counts = {k: sum(1 for v in found if v.verdict == k) for k in (REPRODUCED, CONTRADICTED)}
    return (f"<h2>Findings checked</h2><p>{counts[REPRODUCED]} reproduced, {counts[CONTRADICTED]} contradicted, "
            f"{len(found) - sum(counts.values())} not decided, of {len(found)}.</p>"
            + _table(["claim", "source", "claimed by", "verdict", "measured: a vs b medians, change [interval]"], rows,
                     [VERDICT_CLASS.get(v.verdict, "") for v in found])
            + "<p class='note'>reproduced: a significant change in the claimed direction (one-sided rank test at the "
              "report's alpha; for 'similar', the whole interval within the tolerance); contradicted: significant the "
              "other way (or, for 'similar', the whole interval outside it); not decided otherwise, or not measured "
              "here.</p>")


def beside_section(study: Study, report: Report) -> str:
    items = beside(study, report.rows)
    changes = changes_beside(study, report.rows)
    parts = ["<h2>Published numbers beside fsbench's</h2><p class='note'>Absolute values differ with hardware "
             "(and here the targets are loop devices on one virtual disk): the ratio says how far apart the two "
             "machines are, and whether that distance is the same across configurations. Published values are "
             "converted to MB/s = 10<sup>6</sup> B/s with the factor below each table.</p>"]
    if study.fsbench.get("no_published_values"):
        parts.append(f"<p>{_e(study.fsbench['no_published_values'])}</p>")
    if items:
        rules = {r.get("factor_note", "") for r in study.fsbench.get("published", []) if r.get("factor_note")}
        rows = [[i.entry.get("source", ""), i.entry.get("fs", ""), i.entry.get("layout", ""), i.entry.get("options", ""),
                 i.entry.get("test", ""), _params(i.entry), i.entry.get("statistic", ""),
                 f"{i.entry['value']:g} {i.entry.get('unit', '')}",
                 "" if i.published_mb_s is None else plain(i.published_mb_s),
                 "" if i.measured is None else plain(i.measured), ratio_text(i)] for i in items]
        parts.append(_table(["source", "fs", "layout", "options", "test", "parameters", "statistic", "published",
                             "published MB/s", "fsbench median MB/s", "fsbench / published"], rows,
                            numeric={8, 9, 10}))
        parts += [f"<p class='note'>{_e(note)}</p>" for note in sorted(rules)]
        parts += [f"<p class='note'>Not compared: {_e(i.entry.get('source', ''))}, {_e(i.entry.get('test', ''))} "
                  f"{i.entry['value']:g} {_e(i.entry.get('unit', ''))}: {_e(suspect_note(i))}.</p>"
                  for i in items if suspect_note(i)]
    if changes:
        rows = [[c.entry.get("source", ""), c.entry.get("fs", ""), c.entry.get("layout", ""), c.entry.get("options", ""),
                 c.entry.get("test", ""), _params(c.entry), f"{c.entry['value']:+g}%",
                 "" if c.measured_pct is None else f"{c.measured_pct:+.1f}%", f"{c.n[0]}/{c.n[1]}"] for c in changes]
        parts.append("<h3>Published changes beside fsbench's</h3>" + _table(
            ["source", "fs", "layout", "options", "test", "parameters", "published change", "fsbench change of medians",
             "runs"], rows, numeric={6, 7}))
    if not items and not changes and not study.fsbench.get("no_published_values"):
        parts.append("<p>None of the published numbers has a case in this session.</p>")
    return "".join(parts)


def _params(entry: dict) -> str:
    return ", ".join(f"{k}={v}" for k, v in entry.get("params", {}).items() if not k.endswith("_kb"))


def caveats_section(study: Study) -> str:
    blind = "".join(f"<li>{_e(b)}</li>" for b in study.fsbench.get("blind", []))
    cannot = [[c["what"], c.get("why", ""), c.get("instead", "")] for c in study.fsbench.get("cannot_run", [])]
    return ("<h2>Where the study was blind, and what fsbench ran beside it</h2><ul>" + blind + "</ul>"
            + "<h2>What this machine cannot run as the study did</h2>"
            + _table(["the study's", "why not here", "what stands in"], cannot))


def preface(study: Study, report: Report, scale: str) -> str:
    head = (f"<p><b>{_e(study.title)}</b>: {_e(study.citation)}. "
            f"fsbench re-ran it at the <b>{_e(scale)}</b> scale: {_e(study.scale(scale).get('note', ''))}.</p>")
    return head + findings_section(verdicts(study, report)) + beside_section(study, report) + caveats_section(study)

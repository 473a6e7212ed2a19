"""A session as one self-contained HTML page: what ran on which system, box plots of every
headline metric across cases, size curves for swept IOzone record and file sizes, a summary
table per case, with a baseline a change table and a forest plot, and for --paired (or kernel
A/B) variants the same against their reference cases, paired by round. Figures are inline SVG, so
the file opens offline and can be mailed or attached to a CI job.

`report_data` reads the store into plain data; `figure_list` and `render` are pure."""

from __future__ import annotations

import html
import json
import re
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from matplotlib.figure import Figure

from ..measure import cache_check
from ..verdicts import changes
from . import answer, change_points, figures
from ..verdicts.baseline import PAIRED_WITH, as_the_gate_compared, compare_pairs, compared_sides, paired_pairs
from ..metrics import Direction, in_summary, is_headline, params_text, short_test
from ..sizes import parse_size
from ..verdicts.gate import INCONCLUSIVE, REGRESSION, WITHIN
from ..verdicts.stats import PAIRED, RANK, Comparison, Summary, compare, plain, summarize
from ..store.results import Series, SeriesKey, Store, canonical
from .tables import (HOLES, adjustment_note, comparison_header, comparison_rows, compression_text, interval_label,
                     unnamed_options, WORK_LEGEND, table_order, time_shares, work_text)
from ..store.facts import emulation
from ..options import output_mark

#: the workload parameters a size curve can be drawn against, with the axis they give
SIZE_AXES = {"record": "record size", "file": "file size"}


@dataclass(frozen=True)
class Row:
    """One headline series of one case, for the summary table and the figures."""

    series: Series
    summary: Summary
    label: str  # the test's id, e.g. test_dd_write[ext4-single-1M]
    workload_params: dict[str, str]
    warmups: int
    stopped_by: str | None
    cpu_pct: float | None  # the measured tool's own processes (cpu.tool), else the machine's user+system
    compression: float | None
    cache: str = "drop"  # the case's cache policy and data, which workload_params do not always name
    data: str = "random"
    spec: dict = field(default_factory=dict)  # the case: fs, layout, options
    disk_share: float | None = None  # median % of its bytes that reached the disks (None: not checked)
    emulation: str | None = None  # emulated (a virtual machine under TCG), kvm, or None: natively (vm.emulation)
    others_cpu: float | None = None  # median % of all CPUs other processes used during the runs (cpu.others)
    work: str = ""  # the case's work per byte moved, in short (tables.work_text)

    @property
    def configuration(self) -> dict[str, str]:
        """Everything that sets this case's runs apart besides the target: workload parameters,
        cache policy and data."""
        return {**self.workload_params, "cache": self.cache, "data": self.data}


@dataclass(frozen=True)
class Report:
    session_id: int
    session: dict
    cases: list[dict]
    rows: list[Row]
    base_label: str | None = None
    changes: list[tuple[str, Series, Comparison]] = field(default_factory=list)
    alpha: float = 0.05
    allowed_pct: float | None = None
    times: dict[str, float | None] = field(default_factory=dict)
    history: list[changes.ChangePoint] = field(default_factory=list)  # of this session's cases, on its host
    paired: list[tuple[str, Series, Comparison]] = field(default_factory=list)  # variants against their references
    answer: list[answer.Compared] = field(default_factory=list)  # every comparison, as the page's first lines say it
    bases: dict[SeriesKey, Series] = field(default_factory=dict)  # each compared series' newest in the baseline


def side_medians(series: list[Series], names: tuple[str, ...]) -> dict[tuple, float]:
    """(test, workload, workload_params, metric) -> median, for the side metrics a row shows."""
    return {(s.key.test, s.key.workload, s.key.workload_params, s.key.metric): summarize(s.values).median
            for s in series if s.key.metric in names and s.values}


def report_data(store: Store, session_id: int, base_ids: list[int] | None = None, base_label: str | None = None,
                alpha: float = 0.05, allowed_pct: float | None = None) -> Report:
    meta = store.session_export(session_id)
    all_series = store.series(session_id)
    counts = store.run_counts(session_id)
    by_test = {(c["test"], c["workload"], canonical(c["workload_params"])): c for c in meta["cases"]}
    side = side_medians(all_series, ("cpu.user", "cpu.system", "cpu.tool", "cpu.others", "fs.compressratio"))
    shares = cache_check.share_index(all_series)
    by_case: dict[tuple[str, str, str], list[Series]] = defaultdict(list)
    for s in all_series:
        by_case[(s.key.test, s.key.workload, s.key.workload_params)].append(s)
    rows = []
    for s in all_series:
        if not s.values or not in_summary(s.key.metric, s.unit):
            continue
        key = (s.key.test, s.key.workload, s.key.workload_params)
        case = by_test.get(key, {})
        user, system, tool = side.get((*key, "cpu.user")), side.get((*key, "cpu.system")), side.get((*key, "cpu.tool"))
        how = emulation(case.get("manifest", {}))
        label = short_test(s.key.test) + (" (emulated)" if how == "emulated" else "")
        rows.append(Row(s, summarize(s.values), label, json.loads(s.key.workload_params),
                        counts.get(key, (0, 0))[0], case.get("stopped_by"),
                        tool if tool is not None else None if user is None or system is None else user + system,
                        side.get((*key, "fs.compressratio")), case.get("cache", "drop"),
                        case.get("data", "random"), case.get("spec", {}), cache_check.figure_share(shares, s),
                        how, side.get((*key, "cpu.others")), work_text(by_case[key])))
    changes, bases, kernels = [], {}, ("", "")
    if base_ids:
        computed = compare_pairs(store, base_ids, session_id, alpha)
        changes = in_table_order(as_the_gate_compared(computed, meta["cases"], base_ids))
        bases, kernels = compared_sides(store, base_ids, session_id)
    paired = in_table_order(paired_pairs(store, session_id, meta["cases"], alpha))
    said = answer.report_answer(meta["cases"], changes, paired, base_label, bases, kernels, f"session {session_id}")
    return Report(session_id, meta["session"], meta["cases"], rows, base_label, changes, alpha, allowed_pct,
                  store.time_totals(session_id), history_of(store, meta), paired, said, bases)


def history_of(store: Store, meta: dict) -> list[changes.ChangePoint]:
    """The change points, on the session's machine, of the cases this session measured, up to
    this session."""
    host = meta["session"].get("manifest", {}).get("hostname")
    if not host:
        return []
    tests = {case["test"] for case in meta["cases"]}
    return [c for c in changes.detect(store, host)
            if c.history.key.test in tests and c.session.session_id <= meta["session"]["id"]]


def in_table_order(changes: list[tuple[str, Series, Comparison]]) -> list[tuple[str, Series, Comparison]]:
    """The order of fsbench compare's table (tables.table_order)."""
    return sorted(changes, key=table_order)


def _group_title(workload: str, metric: str, params: dict) -> str:
    extra = params_text(json.dumps(params)) if params else ""
    return f"{metric}" + (f" [{extra}]" if extra else "") + f" ({workload})"


def box_groups(rows: list[Row]) -> dict[tuple[str, str, str], list[Row]]:
    """Rows drawn in one box plot: same workload, metric and metric parameters."""
    groups: dict[tuple[str, str, str], list[Row]] = defaultdict(list)
    for row in rows:
        if is_headline(row.series.key.metric):
            groups[(row.series.key.workload, row.series.key.metric, row.series.key.params)].append(row)
    return groups


def curve_panels(rows: list[Row], axis: str) -> dict[tuple[str, str], dict[str, dict[str, list[figures.CurvePoint]]]]:
    """For a swept size parameter (record or file): (workload, unit) -> metric -> line -> points,
    where a line is a case with every other parameter fixed (named by the case and the parameters
    that vary between the workload's cases). Only sizes measured at two or more values make curves."""
    swept = [r for r in rows if is_headline(r.series.key.metric) and r.workload_params.get(axis)
             and "," not in r.workload_params[axis] and "-" not in r.workload_params[axis]]
    varying: dict[str, list[str]] = {}
    for workload in {r.series.key.workload for r in swept}:
        mine = [r for r in swept if r.series.key.workload == workload]
        keys = sorted({k for r in mine for k in r.configuration} - {axis})
        varying[workload] = [k for k in keys if len({r.configuration.get(k) for r in mine}) > 1]
    lines: dict[tuple[str, str], dict[str, dict[str, list[figures.CurvePoint]]]] = defaultdict(
        lambda: defaultdict(lambda: defaultdict(list)))
    for row in swept:
        workload = row.series.key.workload
        line = " ".join([row.series.case_id] + [f"{k}={row.configuration.get(k)}" for k in varying[workload]])
        lo, hi = row.summary.median_ci
        lines[(workload, row.series.unit)][row.series.key.metric][line].append(
            figures.CurvePoint(parse_size(row.workload_params[axis]), row.summary.median, lo, hi))
    return {key: {metric: dict(by_line) for metric, by_line in panels.items()}
            for key, panels in lines.items()
            if any(len(points) >= 2 for by_line in panels.values() for points in by_line.values())}


def figure_list(report: Report) -> list[tuple[str, str, Figure]]:
    """(file name, title, figure) of every figure of the report, in page order."""
    found = []
    for (workload, metric, params), rows in box_groups(report.rows).items():
        title = _group_title(workload, metric, json.loads(params))
        first = rows[0].series
        labels = figures.distinct_labels([r.label for r in rows])
        fig = figures.box_plot(title, list(zip(labels, (r.series.values for r in rows))), first.unit, first.direction)
        found.append((f"box-{len(found) + 1:02d}-{metric.replace('.', '-')}", title, fig))
    for axis, axis_name in SIZE_AXES.items():
        for (workload, unit), panels in curve_panels(report.rows, axis).items():
            direction = next(r.series.direction for r in report.rows if r.series.key.workload == workload
                             and r.series.unit == unit)
            title = f"{workload}: throughput against {axis_name}"
            found.append((f"{axis}-{len(found) + 1:02d}-{workload}", title,
                          figures.size_curves(title, panels, unit, direction, axis_name)))
    for name, label, pairs in (("forest", f"change vs {report.base_label or 'baseline'}", report.changes),
                               ("forest-paired", "each --paired variant vs its reference, by round", report.paired)):
        if pairs:
            drawn = [figures.Change(f"{case} {s.key.metric}", cmp.shift_pct, cmp.pct_ci[0], cmp.pct_ci[1],
                                    cmp.verdict, cmp.significant) for case, s, cmp in pairs]
            used, _ = interval_label(pairs, report.alpha)
            title = (f"{label} ({(1 - 2 * used) * 100:.3g}% intervals)" if used
                     else f"{label} (each at its level)")
            found.append((name, title, figures.forest_plot(title, drawn, report.allowed_pct)))
    return found


def figure_paths(report: Report, directory: Path, fmt: str) -> list[Path]:
    """The files write_figures would write."""
    return [directory / f"{name}.{fmt}" for name, _, _ in figure_list(report)]


def write_figures(report: Report, directory: Path, fmt: str) -> list[Path]:
    directory.mkdir(parents=True, exist_ok=True)
    return [figures.save(fig, directory / name, fmt) for name, _, fig in figure_list(report)]


# --- the page ---------------------------------------------------------------------------------

STYLE = """
body { font: 14px/1.45 system-ui, sans-serif; margin: 1.5em auto; max-width: 92em; padding: 0 1em; color: #222 }
h1 { font-size: 1.5em } h2 { font-size: 1.2em; border-bottom: 1px solid #ccc; margin-top: 2em }
table { border-collapse: collapse; margin: .6em 0; font-size: 13px }
th, td { border: 1px solid #ddd; padding: 2px 6px; text-align: left; vertical-align: top; overflow-wrap: break-word }
td.n { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap }
tr.worse td { background: #fde8e8 } tr.better td { background: #e8f6e8 }
.answer ul { list-style: none; padding: 0 } .answer li { padding: 4px 8px; margin: 2px 0; border-left: 4px solid #bbb;
  background: #f6f6f6; font-size: 15px } .answer li.worse { border-color: #c62828; background: #fde8e8 }
.answer li.better { border-color: #2e7d32; background: #e8f6e8 } .answer li.undecided { border-color: #c77c00;
  background: #fff4e0 }
.glance tr.group th { background: #f3f3f3 } .glance tr.best td { font-weight: bold }
figure { margin: 1em 0 } figure svg { max-width: 100%; height: auto }
details pre { font-size: 12px; background: #f6f6f6; padding: .5em; overflow-x: auto }
.note { color: #555; font-size: 13px }
table.published th, table.published td { padding: 2px 4px } table.published th.test { text-align: center }
table.published .first { border-left: 2px solid #bbb } td.cache { color: #777; font-style: italic; white-space: normal }
"""


def _e(value: object) -> str:
    return html.escape(str(value))


def _table(header: list[str], rows: list[list[str]], classes: list[str] | None = None,
           numeric: set[int] = frozenset()) -> str:
    head = "".join(f"<th>{_e(h)}</th>" for h in header)
    body = [_row(row, numeric, classes[i] if classes else "") for i, row in enumerate(rows)]
    thead = f"<thead><tr>{head}</tr></thead>" if any(header) else ""  # no empty bordered row above a key-value table
    return f"<table>{thead}<tbody>{''.join(body)}</tbody></table>"


def _breakable(value: object) -> str:
    """Escaped text that may wrap after a comma, semicolon or equals sign (long option lists),
    so a wide table fits the page without breaking inside a word."""
    return re.sub(r"([,;=])(?=\S)", r"\1<wbr>", _e(value))


def _row(row: list[str], numeric: set[int], cls: str = "") -> str:
    cells = "".join(f'<td class="n">{_e(c)}</td>' if j in numeric else f"<td>{_breakable(c)}</td>"
                    for j, c in enumerate(row))
    attribute = f' class="{cls}"' if cls else ""
    return f"<tr{attribute}>{cells}</tr>"


def _gib(n: object) -> str:
    return f"{int(n) / 2**30:.1f} GiB" if isinstance(n, (int, float)) else "?"


def system_table(session: dict) -> str:
    m = session.get("manifest", {})
    rows = [["host", m.get("hostname", "?")], ["kernel", m.get("kernel", "?")],
            ["CPU", f"{m.get('cpu', '?')} ({m.get('cpus', '?')} CPUs)"], ["RAM", _gib(m.get("ram_bytes"))],
            ["fsbench", f"{m.get('fsbench', '?')} (commit {m.get('fsbench_commit') or 'unknown'})"],
            ["ZFS implementation", m.get("zfs_implementation") or "none"], ["devices", m.get("devices", "?")],
            ["command line", "pytest " + " ".join(session.get("args", {}).get("argv", []))],
            ["session", f"{session.get('id')} ({session.get('token')}), {session.get('started')} to "
                        f"{session.get('finished') or 'unfinished'}, {session.get('status')}"]]
    return _table(["", ""], rows)


def versus_best(best: Row, other: Row, alpha: float, paired: bool = False) -> tuple[str, str, str]:
    """(change, interval, verdict) of another case against the best one: fsbench compare's
    comparison of its runs with the best's (one-sided at alpha each way; paired by round when the
    two are a --paired case and variant), its estimated change and (1 - 2 alpha) interval, "" where
    there is none."""
    method = PAIRED if paired and len(best.series.values) == len(other.series.values) else RANK
    try:
        cmp = compare(best.series.values, other.series.values, best.series.direction, alpha, method=method)
    except ValueError as exc:
        return "", "", f"not tested ({exc})"
    change = f"{cmp.shift_pct:+.1f}%"
    if not cmp.has_interval:
        return change, "", f"too few runs to tell (n={cmp.n_baseline}/{cmp.n_candidate})"
    return (change, f"[{cmp.pct_ci[0]:+.1f}%, {cmp.pct_ci[1]:+.1f}%]",
            cmp.verdict + (" (paired by round)" if method == PAIRED else ""))


def glance_rows(ranked: list[Row], alpha: float, pairs: frozenset[frozenset[str]] = frozenset()) -> list[list[str]]:
    """One group's rows, best median first: case, median, the change from the best (the estimated
    shift, as in every comparison), its interval, the verdict and the runs' CV. pairs: the tests
    that were measured as --paired case and variant, compared paired by round. A figure the page
    cache served is not compared with a best that came from the storage (it measured the memory);
    where every figure came from the cache, none is the best: the first is only the highest (or
    lowest), and the others are compared with it, memory with memory."""
    best = ranked[0]
    from_cache = cache_check.served_from_cache(best.disk_share)
    top = "best" if not from_cache else "highest" if best.series.direction is Direction.HIGHER else "lowest"
    rows = [[_glance_label(best), plain(best.summary.median), top, "", "", f"{best.summary.cv * 100:.0f}%"]]
    for other in ranked[1:]:
        paired = frozenset((best.series.key.test, other.series.key.test)) in pairs
        change, interval, verdict = ("", "", "not compared")
        if from_cache or not cache_check.served_from_cache(other.disk_share):
            change, interval, verdict = versus_best(best, other, alpha, paired)
        rows.append([_glance_label(other), plain(other.summary.median), change, interval, verdict,
                     f"{other.summary.cv * 100:.0f}%"])
    return rows


def pair_tests(report: Report) -> frozenset[frozenset[str]]:
    """The tests of each --paired case and its variant (kernel A/B too), from the variants' manifests."""
    return frozenset(frozenset(pair) for pair in references(report).items())


def references(report: Report) -> dict[str, str]:
    """Each --paired (or kernel A/B) variant's test -> its reference case's test (the variants'
    manifests name them)."""
    return {case["test"]: case["manifest"][PAIRED_WITH]["reference"] for case in report.cases
            if case["manifest"].get(PAIRED_WITH)}


def paired_glance_rows(rows: list[Row], alpha: float, theirs: dict[str, str]) -> list[list[str]]:
    """One group's rows where --paired variants (or kernel A/B) are among them, the reference fixed
    (issue 43: ranked best first, the reference flipped from metric to metric): each reference case,
    then each of its variants against it, paired by round; a case no pair names against the group's
    first case."""
    tests = [row.series.key.test for row in rows]
    variants = [v for v in tests if theirs.get(v) in tests]
    anchor = next(row for row in rows if row.series.key.test not in variants)
    found = []
    for row in rows:
        test = row.series.key.test
        if test in variants:
            continue  # after its reference
        if row is anchor or test in theirs.values():
            found.append([_glance_label(row), plain(row.summary.median), "reference", "", "",
                          f"{row.summary.cv * 100:.0f}%"])
        else:
            found.append([_glance_label(row), plain(row.summary.median), *versus_best(anchor, row, alpha),
                          f"{row.summary.cv * 100:.0f}%"])
        for variant in (rows[tests.index(v)] for v in variants if theirs[v] == test):
            found.append([_glance_label(variant), plain(variant.summary.median),
                          *versus_best(row, variant, alpha, paired=True), f"{variant.summary.cv * 100:.0f}%"])
    return found


def _glance_label(row: Row) -> str:
    return row.label + (" (served from cache)" if cache_check.served_from_cache(row.disk_share) else "")


def _glance_group(title: str, rows: list[Row], alpha: float, theirs: dict[str, str]) -> str:
    first = rows[0].series
    heading = f"{title}: {first.unit}, {first.direction.value} is better"
    tests = {row.series.key.test for row in rows}
    paired = any(v in tests and r in tests for v, r in theirs.items())
    found = (paired_glance_rows(rows, alpha, theirs) if paired
             else glance_rows(glance_order(rows), alpha, frozenset(frozenset(p) for p in theirs.items())))
    cells = [_row(cells, {1, 2, 3, 5}, "best" if cells[2] == "best" else "") for cells in found]
    return f"<tbody><tr class='group'><th colspan='6'>{_e(heading)}</th></tr>{''.join(cells)}</tbody>"


def glance_order(rows: list[Row]) -> list[Row]:
    """Best median first among the figures that reached the storage; a figure the page cache
    served ranks after every one that did not, however high (it measured the memory)."""
    higher = rows[0].series.direction is Direction.HIGHER
    return sorted(rows, key=lambda r: (cache_check.served_from_cache(r.disk_share),
                                       -r.summary.median if higher else r.summary.median))


def at_a_glance(report: Report) -> str:
    """Per box plot: the best case and how far each other one is from it, with its noise and
    whether the difference is significant; one table, a group of rows per box plot."""
    groups, theirs = [], references(report)
    for (workload, metric, params), rows in box_groups(report.rows).items():
        if len(rows) < 2:
            continue
        groups.append(_glance_group(_group_title(workload, metric, json.loads(params)), rows, report.alpha, theirs))
    if not groups:
        return ""
    level = f"{(1 - 2 * report.alpha) * 100:.3g}"
    against = "vs the reference" if theirs else "vs the best"
    head = "".join(f"<th>{h}</th>" for h in ("case", "median", "change", f"{level}% CI", against, "CV"))
    first = ("Per box plot each reference case first (a --paired case, or the first kernel), then each of its "
             "variants against it, paired by round as in the paired table; a case no pair names against the "
             "plot's first case" if theirs else "Per box plot the best median first, then each other case against it")
    return (f"<h2>At a glance</h2><table class='glance'><thead><tr>{head}</tr></thead>{''.join(groups)}</table>"
            f"<p class='note'>{first}: change = the estimated shift (as in every comparison; not the ratio of the "
            f"medians), {level}% CI = its interval; {against} = fsbench compare's verdict on its runs, one-sided at "
            f"alpha={report.alpha:g} (worse, better, or not significant: the runs overlap too much to tell apart); "
            "CV = the runs' coefficient of variation (their noise). A figure served from cache (less than half of its "
            "bytes reached the disks) ranks after every one from the storage and is not compared with them; where "
            "every figure of a plot was, none is the best.</p>")


#: the colour of an answer's line by its worst word
ANSWER_CLASSES = {"regression": "worse", "worse": "worse", "inconclusive": "undecided", "better": "better",
                  "within bounds": "better"}


def answer_banner(report: Report) -> str:
    """The page's first lines (issue 43): one per comparison, its reference fixed, the worst first;
    under a rule, the gate's verdicts with their count (regressions first)."""
    entries = answer.answer_entries(report.answer)
    if not entries:
        return ""
    gated = [c.word.partition(" (")[0] for c in report.answer if c.gate]
    plural = {REGRESSION: "regressions", INCONCLUSIVE: "inconclusive", WITHIN: "within bounds"}
    heading = ("The gate's verdicts: " + ", ".join(f"{gated.count(word)} {word if gated.count(word) == 1 else plural[word]}"
                                                   for word in (REGRESSION, INCONCLUSIVE, WITHIN))
               if gated else "The answer")
    items = "".join(f"<li class='{ANSWER_CLASSES.get(word, '')}'>{_e(line)}</li>" for word, line in entries)
    return (f"<section class='answer'><h2>{_e(heading)}</h2><ul>{items}</ul><p class='note'>One line per "
            "comparison, each against its reference: the baseline, or the first configuration of a pair (a --paired "
            "variant, or the second kernel, is the one compared); the change is the estimated shift, the word the "
            "gate's under a rule, else the comparison's; the work: the counts that moved.</p></section>")


def summary_table(report: Report) -> str:
    header = ["case", "metric", "params", "median", "unit", "IQR", "median 95% CI", "n", "warm-ups",
              "stopped by", "tool CPU %", "others' CPU %", "compression", "work", "from"]
    rows = []
    for r in report.rows:
        s = r.summary
        source = cache_check.source_label(r.disk_share)
        rows.append([r.label, r.series.key.metric, params_text(r.series.key.params), plain(s.median), r.series.unit,
                     f"{s.iqr:.3g}", f"{plain(s.median_ci[0])} .. {plain(s.median_ci[1])}", str(s.n), str(r.warmups),
                     r.stopped_by or "-", "" if r.cpu_pct is None else f"{r.cpu_pct:.0f}",
                     "" if r.others_cpu is None else f"{r.others_cpu:.0f}",
                     compression_text(r.compression, r.spec.get("fs", ""), r.data, "x"), r.work,
                     f"served from cache ({r.disk_share:.0f}% reached the disks)" if source == "cache" else source])
    holes = any(HOLES in row[12] for row in rows)
    worked = any(row[13] for row in rows)
    numeric = {3, 5, 7, 8, 10, 11}
    options = [unnamed_options(r.series.case_id, r.series.options) for r in report.rows]
    if any(options):  # options its name does not say (a session's one --fs-opt value) beside the case
        header.insert(1, "options")
        rows = [[row[0], said, *row[1:]] for row, said in zip(rows, options)]
        numeric = {i + 1 for i in numeric}
    return _table(header, rows, numeric=numeric) + (
        f"<p class='note'>work: {_e(WORK_LEGEND)}.</p>" if worked else "") + (
        f"<p class='note'>compression, {HOLES}: with compression on, ZFS writes no block for a record of zeros (a "
        "hole), so the achieved ratio, which counts only the blocks written, stays about 1.00 although nothing of "
        "the zeros reached the disks.</p>" if holes else "")


def change_table(report: Report, pairs: list[tuple[str, Series, Comparison]] | None = None,
                 base: str | None = None) -> str:
    """fsbench compare's table of the changes against the baseline (or of pairs, their base
    column titled base)."""
    paired = pairs is not None
    pairs = report.changes if pairs is None else pairs
    used, label = interval_label(pairs, report.alpha)
    header = list(comparison_header(base or report.base_label or "base", label))
    rows = [list(r) for r in comparison_rows(pairs, show_level=used is None, bases=None if paired else report.bases)]
    classes = [row[-1] if "*" in row[7] else "" for row in rows]
    words = answer.stored_gate_words(report.cases)
    gated = [words.get((s.key.test, s.key.metric, s.key.params, paired), "") for _, s, _ in sorted(pairs, key=table_order)]
    if any(gated):  # the gate's word beside the comparison's: "inconclusive (disturbed)" where it said so
        header.append("gate")
        for row, word in zip(rows, gated):
            row.append(word)
    if not any(row[1] for row in rows):
        header, rows = header[:1] + header[2:], [row[:1] + row[2:] for row in rows]
    tested = (f"one-sided at alpha={used:.3g}; change = estimated shift, ci = its "
              f"{(1 - 2 * used) * 100:.3g}% interval" if used is not None
              else "each row one-sided at its own level (in its interval's label)")
    metric = header.index("metric")
    numeric = {metric + 2, metric + 3, metric + 6, metric + 7}  # base, new, the interval, p
    return _table(header, rows, classes, numeric=numeric) + (
        f"<p class='note'>* and a coloured row: significant, {tested}; n = runs (Ns: baseline sessions)/runs"
        f"{_e(adjustment_note(pairs))}" + ("; gate: the gate's verdict on the figure under its rule" if any(gated)
                                           else "") + ".</p>")


def time_table(report: Report) -> str:
    rows = [[name, "not recorded" if seconds is None else f"{seconds:.1f}",
             "" if share is None else f"{share * 100:.1f}%"] for name, seconds, share in time_shares(report.times)]
    return _table(["step", "seconds", "share of the session"], rows, numeric={1, 2}) + (
        "<p class='note'>measured: the measured commands of the kept runs; the rest: pytest, Python, the result "
        "store, monitoring and skipped cases (the session's wall time less every recorded step; that wall time is "
        "to the second, so a rest less than a second below zero is shown as 0).</p>")


def gate_rows(report: Report) -> list[list[str]]:
    """Per gated metric: its case, failed or passed, and the gate's line (kept in the case's manifest)."""
    return [[short_test(case["test"]), "failed" if entry["failed"] else "passed", entry["line"]]
            for case in report.cases for entry in case["manifest"].get("gate", [])]


def guest_kernels(report: Report, runs_under: str = "uml") -> list[str]:
    """The labels of the guest kernels (uml, or vm) the session's cases ran under."""
    found = [case["manifest"].get("kernel") for case in report.cases]
    return sorted({k["label"] for k in found if isinstance(k, dict) and k.get("runs_under") == runs_under})


def emulated_kernels(report: Report) -> list[str]:
    """The labels of the vm kernels whose cases were measured under QEMU's CPU emulation."""
    return sorted({case["manifest"]["kernel"]["label"] for case in report.cases
                   if emulation(case["manifest"]) == "emulated"})


def case_details(report: Report) -> str:
    parts = []
    for case in report.cases:
        manifest = {k: v for k, v in case["manifest"].items() if k != "host"}
        summary = (f"{short_test(case['test'])}: {case['workload']} {params_text(json.dumps(case['workload_params']))}"
                   f"; cache {case['cache']}; data {case['data']}; {case['status']}")
        kernel = manifest.get("kernel")
        if isinstance(kernel, dict) and kernel.get("runs_under") == "uml":
            summary += f"; in guest kernel {kernel.get('label')} ({kernel.get('release')}, User-mode Linux)"
        elif isinstance(kernel, dict) and kernel.get("runs_under") == "vm":
            how = "EMULATED: QEMU's TCG" if emulation(manifest) == "emulated" else "KVM"
            zfs = f", OpenZFS {kernel['openzfs']}" if kernel.get("openzfs") else ""
            summary += f"; in virtual machine {kernel.get('label')} ({kernel.get('release')}{zfs}, {how})"
        parts.append(f"<details><summary>{_e(summary)}</summary><pre>{_e(json.dumps(manifest, indent=1, sort_keys=True))}"
                     "</pre></details>")
    return "".join(parts)


def render(report: Report, title: str | None = None, preface: str = "") -> str:
    """The whole page; preface: HTML placed after the system table (a study's own views)."""
    session = {**report.session, "id": report.session_id}
    title = title or f"fsbench session {report.session_id}"
    body = [f"<h1>{_e(title)}</h1>", answer_banner(report), at_a_glance(report), "<h2>The machine and the session</h2>",
            system_table(session), preface]
    body.append("<h2>Figures</h2><p class='note'>Boxes: quartiles and median of the measured runs (warm-ups "
                "discarded), whiskers 1.5 IQR; every run is a point. MB = 10<sup>6</sup> bytes.</p>")
    for name, fig_title, fig in figure_list(report):
        body.append(f"<figure id='{_e(name)}' aria-label='{_e(fig_title)}'>{figures.svg(fig)}</figure>")
    if report.changes:
        body += [f"<h2>Change vs {_e(report.base_label or 'baseline')}</h2>", change_table(report)]
    if report.paired:
        body += ["<h2>Paired: each --paired variant against its reference, by round</h2>",
                 change_table(report, report.paired, "reference") +
                 "<p class='note'>The variant's runs against its reference case's runs of the same rounds "
                 "(signed-rank test on the rounds' log ratios), as the session compared them.</p>"]
    gated = gate_rows(report)
    if gated:
        body += ["<h2>The gate's lines</h2>", _table(["case", "outcome", "the gate's line"], gated) +
                 "<p class='note'>Each gated metric's verdict (regression, within bounds, inconclusive) and whether it "
                 "failed its case (an inconclusive one does only with --inconclusive=fail).</p>"]
    if report.history:
        body += ["<h2>History on this machine</h2>",
                 "<p class='note'>Where each case's series of session medians changed level (fsbench changes: "
                 "candidate splits by binary segmentation, kept when Student's t-test gives p &lt; "
                 f"{changes.MAX_PVALUE:g}), with what differed.</p>",
                 "<pre>" + _e("\n".join(line for c in report.history for line in change_points.change_lines(c, False)))
                 + "</pre>", f"<figure id='history'>{figures.svg(change_points.figure(report.history))}</figure>"]
    body += ["<h2>Every case</h2>", summary_table(report), "<h2>Where the time went</h2>", time_table(report),
             "<h2>How each target was built</h2>",
             "<p class='note'>Per case: the commands that built the target, the options as applied, the "
             "devices and where the runs measured.</p>", case_details(report)]
    if not report.rows:
        body.insert(2, "<p><b>This session measured nothing.</b></p>")
    guests = guest_kernels(report)
    if guests:
        body.insert(2, f"<p class='note'><b>Measured in a guest kernel</b> (User-mode Linux): the cases "
                       f"{_e(', '.join(f'{label}-*' for label in guests))}. Compare them with each other (kernels, "
                       "filesystems, layouts), not their absolute throughput with a host's.</p>")
    vms, emulated = guest_kernels(report, "vm"), emulated_kernels(report)
    if vms:
        how = (f"The cases {_e(', '.join(f'{label}-*' for label in emulated))} are <b>emulated</b>: QEMU emulated "
               "the CPU (TCG, no usable KVM), so compare them with each other only, never with a host's or a KVM "
               "guest's numbers." if emulated else "Compare them with other virtual machines', not with a host's.")
        body.insert(2, f"<p class='note'><b>Measured in a virtual machine</b> (QEMU, virtio disks with cache=none): "
                       f"the cases {_e(', '.join(f'{label}-*' for label in vms))}. {how}</p>")
    return ("<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
            f"<meta name='generator' content='{output_mark('report')}'>"
            f"<title>{_e(title)}</title><style>{STYLE}</style></head><body>" + "\n".join(body) + "</body></html>\n")

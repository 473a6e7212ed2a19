"""Plain-text tables for the terminal summary and `fsbench compare` (pure)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from ..case import options_from_text
from ..measure import cache_check
from ..measure.progress import WIDTH, fit
from ..filesystems import DRIVERS
from ..metrics import WORK_NAMES, in_summary, is_compared, params_text, short_test
from ..verdicts.gate import COUNT_NOTE, EVENT_COUNTS, EVENT_NOTE
from ..verdicts.stats import SESSIONS, Comparison, level_text, p_text, plain, summarize
from ..store.results import Series, SeriesKey

VERDICT_ORDER = {"worse": 0, "better": 1, "not significant": 2}


def align(rows: Sequence[Sequence[str]]) -> list[str]:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return ["  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in rows]


#: how a stacked row's cells are indented under its first cell: deeper than fit()'s two, so that
#: progress.unwrap() leaves them on their own line
STACK_INDENT = "    "

#: the note that says a column's one value, when the column is left out of a table (issue 35)
EVERY_ROW = {"params": "params of every row: {}", "unit": "unit of every row: {}",
             "stopped": "every row stopped by: {}", "options": "options of every row: {}", "n": "n of every row: {}",
             "from": "every row from: {}"}


def widest(lines: Sequence[str]) -> int:
    return max((len(line) for line in lines), default=0)


def stacked(rows: Sequence[Sequence[str]]) -> list[str]:
    """Each row's first cell (the case) on a line of its own, its other cells aligned on the next,
    indented by STACK_INDENT (a table whose rows are wider than the terminal: issue 35)."""
    rest = align([row[1:] for row in rows])
    return [line for row, cells in zip(rows, rest) for line in (row[0], STACK_INDENT + cells)]


def unstack(lines: Sequence[str]) -> list[str]:
    """Each stacked table's rows (stacked(), stacked_in_parts(): from its header's "case" line on)
    on one line each again, their cells two spaces apart, for a program that reads a table's columns; every other
    line as it was."""
    found: list[str] = []
    inside = pending = joined = False  # in a stacked table; the line before is a first cell, alone yet; or joined
    for line in lines:
        if pending and line.startswith(STACK_INDENT) and line.strip() and (inside or found[-1] == "case"):
            found[-1] += "  " + line.strip()
            inside, pending, joined = True, False, True
        elif joined and line.startswith(PART_INDENT) and line.strip():  # a row stacked in parts
            found[-1] += "  " + line.strip()
        else:
            found.append(line)
            pending = bool(line) and not line.startswith(" ")
            inside, joined = inside and pending, False
    return found


def same_in_every_row(header: Sequence[str], rows: Sequence[Sequence[str]], names: Sequence[str]) -> list[int]:
    """The columns among names whose cell is the same in every row (params: in every row that has
    some; a count of the work has none, and was measured with its case's)."""
    def cells(i: int, name: str) -> set[str]:
        return {row[i] for row in rows if row[i] or name != "params"}

    return [i for i, name in enumerate(header) if name in names and rows and len(cells(i, name)) == 1]


def without(header: Sequence[str], rows: Sequence[Sequence[str]], columns: Sequence[int]):
    """(header, rows) without columns."""
    kept = [i for i in range(len(header)) if i not in columns]
    return [header[i] for i in kept], [[row[i] for i in kept] for row in rows]


def said_once(header: Sequence[str], rows: Sequence[Sequence[str]], columns: Sequence[int]):
    """(header, rows) without columns, and the notes that say each one's value once below the table."""
    notes = [EVERY_ROW[header[i]].format(rows[0][i]) for i in columns]
    return (*without(header, rows, columns), notes)


def fitted(header: Sequence[str], rows: Sequence[Sequence[str]], width: int,
           spared: Sequence[str] = ("unit",)) -> tuple[list[str], list[str]]:
    """(the table's lines, notes for below it) within width where it can be (issue 35): the table
    as it is when it fits; else without each column among `spared` whose value is the same in every
    row, said once in a note instead; else each row stacked, its case on a line of its own and every
    other column on the next. No cell is cut: a stacked row's cells may still be wider than a
    narrow terminal."""
    lines = align([header, *rows])
    if widest(lines) <= width:
        return lines, []
    narrower, cells, notes = said_once(header, rows, same_in_every_row(header, rows, spared))
    lines = align([narrower, *cells])
    if widest(lines) <= width:
        return lines, notes
    lines = stacked([header, *rows])
    if widest(lines) <= width:
        return lines, []
    lines = stacked([narrower, *cells])
    return (lines, notes) if widest(lines) <= width else (stacked_in_parts([narrower, *cells], width), notes)


#: how the further lines of a row's cells stacked in parts are indented (stacked_in_parts)
PART_INDENT = STACK_INDENT * 2


def stacked_in_parts(rows: Sequence[Sequence[str]], width: int) -> list[str]:
    """Each row's case on a line of its own, its other cells on as few lines as fit width (issue
    43: stacked comparison rows were 88-111 columns on an 80-column terminal): the first part
    indented by STACK_INDENT, each further one by PART_INDENT, every part's columns aligned across
    the rows; unstack joins them again. A single cell wider than a line is left whole."""
    widths = [max(len(row[i]) for row in rows) for i in range(1, len(rows[0]))]
    parts: list[list[int]] = [[]]
    for i, w in enumerate(widths):
        indent = len(STACK_INDENT if len(parts) == 1 else PART_INDENT)
        used = indent + sum(widths[j] + 2 for j in parts[-1])
        if parts[-1] and used + w > width:
            parts.append([])
        parts[-1].append(i)
    found = []
    for row in rows:
        found.append(row[0])
        for k, part in enumerate(parts):
            indent = STACK_INDENT if k == 0 else PART_INDENT
            found.append(indent + "  ".join(row[i + 1].ljust(widths[i]) for i in part).rstrip())
    return found


def unnamed_options(case_id: str, options: str) -> str:
    """The options of a case its id does not name (a session's one --fs-opt value, which every case
    of that filesystem has, is left out of the ids: issue 43 found it named nowhere but in a gate
    line's note), as CaseSpec.options_text gives them; "" for none."""
    named = case_id.split("-")
    parts = [f"{key}={value}" for key, value in options_from_text(options).items()]
    return ",".join(part for part in parts if part.replace(" ", "_") not in named)


def options_cell(s: Series, base: Series | None = None) -> str:
    """The options column of a comparison: the case's unnamed options, and the baseline's where
    they were others: "mount=nodelalloc (baseline: none)"."""
    mine = unnamed_options(s.case_id, s.options)
    if base is None or base.options == s.options:
        return mine
    return f"{mine or 'none'} (baseline: {base.options})"


def _median(series: list[Series], name: str) -> float | None:
    found = [s for s in series if s.key.metric == name]
    return summarize(found[0].values).median if found and found[0].values else None


def latest(results) -> list:
    """The last result of each test's workload (interleaved rounds add one result per round)."""
    by_key = {}
    for r in results:
        first = r.series[0].key if r.series else None
        by_key[(r.test, first.workload if first else "", first.workload_params if first else "")] = r
    return list(by_key.values())


def results_table(results, width: int = WIDTH) -> list[str]:
    """case, metric, median, unit, n, +-CI of the median, CPU and compression beside it; a column
    blank in every row is left out, and so are the params and what stopped the runs when every row
    has the same (named once below the table, with a short legend of the columns shown: issue 35).
    Within width where it can be (fitted): the unit said once too, else each case on a line of its
    own; the notes below fit width."""
    header = ("case", "options", "metric", "params", "median", "unit", "n", "ci95", "cpu%", "others%", "compress",
              "work", "from", "stopped")
    rows = []
    for result in latest(results):
        user, system = _median(result.series, "cpu.user"), _median(result.series, "cpu.system")
        tool, others = _median(result.series, "cpu.tool"), _median(result.series, "cpu.others")
        ratio = _median(result.series, "fs.compressratio")
        shares = cache_check.share_index(result.series)
        work = work_text(result.series)
        for s in result.series:
            if not in_summary(s.key.metric, s.unit):
                continue
            summary = summarize(s.values)
            rows.append((short_test(result.test) + (" emulated" if result.emulated else ""),
                         unnamed_options(s.case_id, s.options), s.key.metric, params_text(s.key.params), plain(summary.median),
                         s.unit, str(summary.n), interval_text(summary),
                         cpu_text(tool, user, system), "" if others is None else f"{others:.0f}",
                         compression_text(ratio, result.fs, result.data), work,
                         cache_check.source_label(cache_check.figure_share(shares, s)), result.stopped_by or "-"))
            work = ""  # a run's work is the case's, said on its first row
    blank = [i for i in range(len(header)) if rows and not any(row[i] for row in rows)]
    header, rows = without(header, rows, blank)
    header, rows, shared = said_once(header, rows, same_in_every_row(header, rows, ("options", "params", "stopped")))
    lines, notes = fitted(header, rows, width, spared=("unit", "from"))
    if any(result.emulated for result in latest(results)):
        lines += fit("emulated: measured in a virtual machine whose CPU QEMU emulates (TCG, no usable KVM): compare "
                     "these numbers with each other only, never with the host's or a KVM guest's", width)
    legend = [text for name, text in LEGEND if name in header]
    return lines + fit("; ".join(legend + shared + notes) + " (every column: the docs' report page)", width)


#: what the work column holds (work_text)
WORK_LEGEND = ("device bytes per byte written (x; read when it wrote none), flushes (f) and commits (c) per GB "
               "written, counted on the devices after each run")

#: the terminal's short legend of each column it shows (the docs' report page says more)
LEGEND = (("ci95", "ci95: the median's 95% interval, +-% (under 6 runs: the runs' range)"),
          ("cpu%", "cpu%: the tool's % of all CPUs"),
          ("others%", "others%: other processes' %"),
          ("compress", "compress: the achieved ratio"),
          ("work", f"work: {WORK_LEGEND}"),
          ("from", f"from: storage, or cache when under {cache_check.FROM_CACHE_BELOW:.0f}% of the bytes reached the disks"))


def work_text(series: list[Series]) -> str:
    """A case's work per byte moved, in short: 1.00x 22f 7.5c (device bytes per byte written,
    flushes and commits per GB written; a read-only case's device bytes per byte read); "" when
    nothing was counted."""
    amp = _median(series, "work.write_amp")
    amp = _median(series, "work.read_amp") if amp is None else amp
    parts = [] if amp is None else [f"{amp:.2f}x"]
    for name, letter in (("work.flushes_per_gb", "f"), ("work.commits_per_gb", "c")):
        value = _median(series, name)
        if value is not None:
            parts.append((f"{value:.0f}" if value >= 10 else f"{value:.2g}") + letter)
    return " ".join(parts)


#: what a compression ratio of zeros stored as holes is shown with
HOLES = "zeros stored as holes"


def compression_text(ratio: float | None, fs: str, data: str, suffix: str = "") -> str:
    """The achieved compression ratio; on zeros, where the filesystem stores them as holes (ZFS
    with compression on), said so: the ratio (about 1) counts none of them."""
    if ratio is None:
        return ""
    driver = DRIVERS.get(fs)
    holes = data == "zeros" and driver is not None and driver.zeros_as_holes
    return f"{ratio:.2f}{suffix}" + (f" ({HOLES})" if holes else "")


def cpu_text(tool: float | None, user: float | None, system: float | None) -> str:
    if tool is not None:
        return f"{tool:.0f}"
    return "" if user is None or system is None else f"{user + system:.0f} machine"


def interval_text(summary) -> str:
    """The median's 95% interval as +-% of it; for n < 6, where there is none, the range min..max."""
    if summary.n < 6:
        return f"range {plain(summary.min)}..{plain(summary.max)}"
    if not summary.median:
        return ""
    half = (summary.median_ci[1] - summary.median_ci[0]) / 2 / summary.median * 100
    return "" if math.isnan(half) else f"+-{half:.1f}%"


def table_order(pair: tuple[str, Series, Comparison]) -> tuple:
    """The comparison tables' order: the figures worse first, then by case and metric; the counts of the
    work after them, in the same order."""
    case, s, cmp = pair
    return (s.key.metric in WORK_NAMES, VERDICT_ORDER[cmp.verdict], case, s.key.metric)


def comparison_rows(pairs: Sequence[tuple[str, Series, Comparison]], show_level: bool = False,
                    bases: Mapping[SeriesKey, Series] | None = None) -> list[tuple[str, ...]]:
    """A comparison table's rows (COMPARISON_HEADER's columns), in table_order; bases: each
    compared series' newest series in the baseline, whose options the options column names
    where they were others."""
    rows = []
    for case, s, cmp in sorted(pairs, key=table_order):
        marker = "*" if cmp.significant else " "
        n = f"{cmp.n_baseline}/{cmp.n_candidate}" if cmp.method != SESSIONS else f"{cmp.sessions}s/{cmp.n_candidate}"
        level = f"{level_text(cmp)}% " if show_level else ""
        adjusted = f" adjusted by {cmp.adjusted_by}" if cmp.adjusted_by else ""
        rows.append((case, options_cell(s, (bases or {}).get(s.key)), s.key.metric, params_text(s.key.params),
                     plain(cmp.baseline_median),
                     plain(cmp.candidate_median), s.unit,
                     f"{cmp.shift_pct:+.1f}%{marker}".rstrip() + adjusted,
                     f"{level}[{cmp.pct_ci[0]:+.1f}%, {cmp.pct_ci[1]:+.1f}%]", p_text(cmp.p_value), n, cmp.verdict))
    return rows


def interval_label(pairs: Sequence[tuple[str, Series, Comparison]], alpha: float) -> tuple[float | None, str]:
    """(the one level every comparison was tested at, None when they differ; the interval column's
    label): each comparison's own level, never another's (a sequential gate tests each look below
    alpha, so its intervals are wider than 1 - 2 alpha)."""
    levels = sorted({cmp.alpha for _, _, cmp in pairs}) or [alpha]
    used = levels[0] if len(levels) == 1 else None
    return used, f"ci{(1 - 2 * used) * 100:.3g}" if used is not None else "ci"


def adjustment_note(pairs: Sequence[tuple[str, Series, Comparison]]) -> str:
    """What a row whose change is adjusted by the control compared (empty when none is)."""
    if not any(cmp.adjusted_by for _, _, cmp in pairs):
        return ""
    return ("; adjusted by the control: the change, interval, p and verdict compare each run's figure over "
            "its --control run's (the base and new medians stay the figures')")


def comparison_header(base: str, label: str) -> tuple[str, ...]:
    return ("case", "options", "metric", "params", base, "new", "unit", "change", label, "p", "n", "verdict")


def comparison_lines(pairs: Sequence[tuple[str, Series, Comparison]], alpha: float, base: str = "base",
                     width: int = WIDTH, bases: Mapping[SeriesKey, Series] | None = None) -> list[str]:
    """The comparison table, labelled with the level its tests ran at (interval_label); the options
    and params every row shares said once below it (a column blank in every row left out); within
    width where it can be (fitted), its note below it within width. What changed in the work beside
    the speed is the answer's to say (views/answer.py), once."""
    used, label = interval_label(pairs, alpha)
    header = comparison_header(base, label)
    rows = comparison_rows(pairs, show_level=used is None, bases=bases)
    if not rows:
        return ["no case here has samples in the baseline to compare with"]
    counts = {v: sum(1 for r in rows if r[-1] == v) for v in VERDICT_ORDER}
    methods = sorted({cmp.method for _, _, cmp in pairs})
    if used is None:
        tested = "each row one-sided at its own level (in its interval's label)"
        interval = "its interval at that level"
    else:
        tested = f"one-sided at alpha={used:.3g}" + (f" (the sequential gate's per-look level for --alpha={alpha:g})"
                                                     if abs(used - alpha) > 1e-9 else "")
        interval = (f"its {(1 - 2 * used) * 100:.3g}% interval (each end a one-sided {(1 - used) * 100:.3g}% "
                    "bound)")
    header, rows = without(header, rows, [i for i, name in enumerate(header) if name == "options"
                                          and not any(row[i] for row in rows)])
    header, rows, shared = said_once(header, rows, same_in_every_row(header, rows, ("options", "params")))
    lines, notes = fitted(header, rows, width, spared=("unit", "n"))
    return lines + fit(
        f"{counts['worse']} worse, {counts['better']} better, {counts['not significant']} not significant; * = significant, "
        f"{tested} ({', '.join(methods)}); change = estimated shift, ci = {interval}; n = runs (Ns: sessions)/runs"
        f"{adjustment_note(pairs)}" + "".join(f"; {note}" for note in shared + notes), width)


def change_text(cmp: Comparison, times: bool = True) -> str:
    """A change as a person reads it at a glance: +98%, -31%, under 1% to one significant digit
    (-0.04%, not -0%); with times, a count's three times or more as x12 (or /12), and one from 0 as
    new."""
    if cmp.baseline_median == 0:
        return "new" if cmp.candidate_median > 0 else "+0%"
    ratio = cmp.candidate_median / cmp.baseline_median
    if times and (ratio >= 3 or 0 < ratio <= 1 / 3):
        times = ratio if ratio >= 3 else 1 / ratio
        return ("x" if ratio >= 3 else "/") + (f"{times:.0f}" if times >= 10 else f"{times:.1f}")
    if 0 < abs(cmp.shift_pct) < 0.5:
        return f"{cmp.shift_pct:+.1g}%"
    return f"{cmp.shift_pct:+.0f}%"


def comparison_table(results, alpha: float, width: int = WIDTH,
                     bases: Mapping[SeriesKey, Series] | None = None) -> list[str]:
    pairs = [(short_test(r.test), s, cmp) for r in latest(results) for s, cmp in r.comparisons
             if is_compared(s.key.metric, s.unit)]
    return comparison_lines(pairs, alpha, width=width, bases=bases)


def paired_table(results, alpha: float, width: int = WIDTH) -> list[str]:
    """Each --paired variant against its reference case, paired by round."""
    pairs = [(short_test(s.key.test), s, cmp) for r in results for s, cmp in r.paired
             if is_compared(s.key.metric, s.unit)]
    return comparison_lines(pairs, alpha, base="reference", width=width) if pairs else []


def gate_entries(results) -> list[tuple[str, bool, str]]:
    """(the gate's line, whether it failed its case, its figure) of each gated figure, in the
    session's order."""
    return [(line, failed, s.key.metric) for r in latest(results) for s, line, failed in r.judgement.gated]


def clauses(line: str) -> list[str]:
    """A gate line's clauses: split at each "; " outside brackets and parentheses."""
    found, depth, start = [], 0, 0
    for i, char in enumerate(line):
        depth += char in "([" and 1 or char in ")]" and -1 or 0
        if depth == 0 and line.startswith("; ", i):
            found.append(line[start:i])
            start = i + 2
    return found + [line[start:]]


#: the notes every line of a kind of figure carries, said once below the gate's lines instead
SAID_BELOW = {COUNT_NOTE.removeprefix("; "): "work.*", EVENT_NOTE.removeprefix("; "): ", ".join(EVENT_COUNTS)}


#: a clause shorter than this ("within the 5% allowed") stays in its line: it belongs to the verdict,
#: and a line of its own would cost more than it saves
SHORTEST_NOTE = 40


def gate_section(entries: Sequence[tuple[str, bool, str]], width: int = WIDTH, failures_shown: bool = True) -> list[str]:
    """The gate's lines, each note said once (issue 43): a clause that several lines of a case
    carry (the options that changed since the baseline, what would decide an inconclusive speed)
    on a line of its own after the case's lines, naming the figures it is about; the notes of every
    count of the work once at the end. A line that failed its case is said in full under pytest's
    FAILURES (failures_shown): here its verdict and change only. entries: (line, failed, the
    figure's metric). Within width (fit)."""
    by_case: dict[str, list[tuple[list[str], bool, str]]] = {}
    for line, failed, metric in entries:
        by_case.setdefault(line.partition(" ")[0], []).append((clauses(line), failed, metric))
    found, below = [], []
    for case, items in by_case.items():
        full = [(parts, metric) for parts, failed, metric in items if not (failed and failures_shown)]
        shared: dict[str, list[str]] = {}
        for parts, metric in full:
            for clause in parts[1:]:
                if clause in SAID_BELOW:
                    below.append(clause)
                elif len(clause) >= SHORTEST_NOTE and sum(clause in other[1:] for other, _ in full) > 1:
                    shared.setdefault(clause, []).append(metric)
        for parts, failed, _ in items:
            if failed and failures_shown:
                found += fit(f"{parts[0]}; failed its case: the whole line is under FAILURES above", width)
                continue
            kept = [c for c in parts[1:] if c not in shared and c not in SAID_BELOW]
            found += fit("; ".join([parts[0], *kept]), width)
        notes: dict[str, list[str]] = {}
        for clause, figures in shared.items():
            whose = "each of its lines above" if len(figures) == len(full) else ", ".join(dict.fromkeys(figures))
            notes.setdefault(whose, []).append(clause)
        for whose, said in notes.items():
            found += fit(f"{case}, {whose}: {'; '.join(said)}", width)
    for clause in dict.fromkeys(below):
        found += fit(f"{SAID_BELOW[clause]}: {clause}", width)
    return found



#: the session's start and end are stored to the second, so its wall time, and "the rest" taken
#: from it, can be off by up to this much either way
WALL_RESOLUTION = 1.0


def time_shares(totals: dict[str, float | None]) -> list[tuple[str, float | None, float | None]]:
    """(step, seconds, share of the session) for each step of Store.time_totals, then "the rest"
    (pytest, Python, the store, monitoring, skipped cases): the session's wall time less every
    recorded step. Shares are None without the session's wall time. A rest below zero by no more
    than the wall time's resolution is that rounding, and is 0; one further below zero is kept (a
    step counted twice, or a clock gone wrong, is a bug to see)."""
    wall = totals.get("session")
    steps = [(name, seconds) for name, seconds in totals.items() if name != "session"]
    rows = [(name, seconds, None if not wall or seconds is None else seconds / wall) for name, seconds in steps]
    if wall:
        rest = wall - sum(seconds for _, seconds in steps if seconds is not None)
        if -WALL_RESOLUTION <= rest < 0:
            rest = 0.0
        rows.append(("the rest", rest, rest / wall))
    return rows


def time_line(totals: dict[str, float | None]) -> str:
    """One line: how much of the session was measured work, and where the rest went."""
    wall = totals.get("session")
    parts = [f"{name} {'not recorded' if seconds is None else f'{seconds:.0f} s'}"
             + ("" if share is None else f" ({share * 100:.0f}%)") for name, seconds, share in time_shares(totals)]
    head = f"time: session {wall:.0f} s: " if wall else "time: "
    return head + ", ".join(parts)

"""The published site's pages (`fsbench publish`), pure: tracks and records in, HTML text out.

index.html: cases x hosts, each cell the host's word on the case (its newest gate verdicts, or
its newest level against the one before) and a trend line; cases/CASE.html: every host's
headline figures session by session; cases/CASE/HOST.html: every figure of the case on that host,
its work counts beside its speed, and a row per session linked to its report; changes.html:
the regressions and change points, newest first. Charts are inline SVG written here (a site
of a fleet's year holds thousands: matplotlib would take minutes); each change point is a
line of class "change" with its session, change and p as data attributes.
"""

from __future__ import annotations

import functools
import hashlib
import html
import math
import re
import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import pairwise

from ..metrics import WORK_NAMES, Direction, params_text
from ..options import output_mark
from ..verdicts.changes import ChangePoint
from ..verdicts.gate import INCONCLUSIVE, REGRESSION
from ..verdicts.stats import plain
from .history import RECENT, Case, Track, Verdict
from .report import STYLE

#: the words each page carries near its top (options.output_mark), so a later publish knows it for its own
MARK = "published site"
#: the change points (and regressions) one page of the list holds
CHANGES_PER_PAGE = 400
#: at most this many of a chart's change points are labelled with their change (all have a tooltip)
LABELLED = 12
COLOURS = {"worse": "#d62728", "better": "#2ca02c", "unchanged": "#777777", REGRESSION: "#d62728",
           INCONCLUSIVE: "#ff7f0e"}

SITE_STYLE = STYLE + """
.scroll { overflow-x: auto } table.grid td { padding: 2px 4px }
table.grid thead th { position: sticky; top: 0; background: #fff }
table.grid th.case { position: sticky; left: 0; background: #fff; font-weight: normal; z-index: 1 }
td.worse, td.regression { background: #fde8e8 } td.better { background: #e8f6e8 }
td.inconclusive { background: #fff3e0 } td.cell { white-space: nowrap; font-size: 12px } td.cell svg { display: block }
figure.chart { margin: .4em 0 1.2em } figure.chart figcaption { font-size: 13px; color: #333 }
svg.chart text { font: 11px system-ui, sans-serif; fill: #444 } svg.chart .axis { stroke: #bbb; stroke-width: 1 }
svg .interval { fill: #1f77b4; fill-opacity: .18; stroke: none }
svg .medians { fill: none; stroke: #1f77b4; stroke-width: 1.3 }
svg .interval, svg .medians { vector-effect: non-scaling-stroke }
svg .level { stroke: #555; stroke-width: 2 } svg .change { stroke-width: 1.5; stroke-dasharray: 4 3 }
nav.pages a { margin-right: .6em } div.pair { display: flex; flex-wrap: wrap; gap: 0 1.5em }
div.pair figure.chart { width: 440px } tr.changed td { background: #fff8e1 }
"""


def _e(value: object) -> str:
    return html.escape(str(value))


def slug(text: str) -> str:
    """A file name of a case's or host's name: letters, digits and . _ = - only, the rest one -;
    a long one cut, with a digest of the whole so it stays apart from others."""
    found = re.sub(r"[^A-Za-z0-9._=-]+", "-", text).strip("-.") or "x"
    if len(found) > 96:
        found = found[:80] + "-" + hashlib.sha1(text.encode()).hexdigest()[:10]
    return found


@functools.cache  # a page's links name a case's pages: a fleet's site asks 20,000 times for 40 cases
def case_slug(case: Case) -> str:
    """test_dd_write[ext4-single-1M] with bs=1M,size=16M: test_dd_write-ext4-single-1M--bs=1M-size=16M."""
    params = params_text(case.workload_params)
    return slug(slug(case.label) + (f"--{slug(params)}" if params else ""))


def case_path(case: Case) -> str:
    return f"cases/{case_slug(case)}.html"


def host_path(case: Case, host: str) -> str:
    return f"cases/{case_slug(case)}/{slug(host)}.html"


def report_path(session: int) -> str:
    return f"reports/session-{session}.html"


def session_link(session: int, reports: frozenset[int], root: str) -> str:
    """A session's id, linked to its report where the site holds one."""
    if session in reports:
        return f"<a href='{root}{report_path(session)}'>{session}</a>"
    return str(session)


#: what a page says of a session without a link
UNLINKED = ("A session's id links to its report where the site holds one: fsbench publish DIR --reports=newest "
            "writes each host's newest session's, --reports=all every one's, fsbench report ID -o "
            "DIR/reports/session-ID.html any one.")


def page(title: str, body: Sequence[str], root: str = "") -> str:
    nav = (f"<p class='note'><a href='{root}index.html'>cases x hosts</a> · "
           f"<a href='{root}changes.html'>regressions and change points</a></p>")
    return ("<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
            f"<meta name='generator' content='{output_mark(MARK)}'>"
            f"<meta name='viewport' content='width=device-width'><title>{_e(title)}</title>"
            f"<style>{SITE_STYLE}</style></head><body>{nav}<h1>{_e(title)}</h1>" + "\n".join(body)
            + "</body></html>\n")


def _number(value: float) -> str:
    return plain(value) if math.isfinite(value) else str(value)


def better(direction: Direction) -> str:
    return "higher is better" if direction is Direction.HIGHER else "lower is better"


def metric_title(track: Track) -> str:
    params = params_text(track.key.params)
    name = WORK_NAMES.get(track.key.metric)
    shown = f"{track.key.metric} ({name})" if name else track.key.metric
    return f"{shown}{f' [{params}]' if params else ''}: {track.unit}, {better(track.direction)}"


def change_text(change: ChangePoint) -> str:
    """A change point in a few words: its change, verdict and p, and what differed where it came."""
    pct = f"{change.change_pct:+.1f}%" if math.isfinite(change.change_pct) else "from 0"
    differed = "; ".join(f"{what} {old} -> {new}" for what, old, new in change.differences())
    return (f"{_number(change.before)} -> {_number(change.after)} {change.history.unit} {pct} {change.verdict} "
            f"(p={change.pvalue:.2g}) at session {change.session.session_id}; "
            + (f"differs: {differed}" if differed else "kernel, fs options and fsbench commit the same"))


# --- charts -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Frame:
    """Where a chart draws: its size, its margins, the positions along x it spans (count) and the
    range of values along y."""

    width: float
    height: float
    count: int
    low: float
    high: float
    left: float = 58
    right: float = 8
    top: float = 28
    bottom: float = 20

    def x(self, index: float) -> float:
        return round(self.left + (index + 0.5) * (self.width - self.left - self.right) / max(self.count, 1), 1)

    def y(self, value: float) -> float:
        return round(self.top + (self.high - value) / (self.high - self.low) * (self.height - self.top - self.bottom),
                     1)



def frame(lows: Sequence[float], highs: Sequence[float], count: int, width: float, height: float,
          **margins: float) -> Frame:
    finite = [v for v in (*lows, *highs) if math.isfinite(v)] or [0.0]
    low, high = min(finite), max(finite)
    pad = (high - low) * 0.05 or abs(high) * 0.05 or 1.0
    return Frame(width, height, count, low - pad, high + pad, **margins)


def _change_line(f: Frame, change: ChangePoint, x: float, row: int | None) -> str:
    """A change point's dashed line at x, labelled with its change in label row row (None: no label)."""
    colour = COLOURS.get(change.verdict, "#777777")
    pct = f"{change.change_pct:+.1f}%" if math.isfinite(change.change_pct) else "from 0"
    near_end = x + LABEL_WIDTH > f.width - f.right
    label = (f"<text x='{x - 2 if near_end else x + 2}' y='{10 + 11 * row}' fill='{colour}'"
             f"{' text-anchor=' + chr(39) + 'end' + chr(39) if near_end else ''}>{_e(pct)}</text>"
             if row is not None else "")
    return (f"<line class='change {change.verdict}' data-session='{change.session.session_id}' "
            f"data-change='{pct}' data-p='{change.pvalue:.2g}' x1='{x}' x2='{x}' y1='{f.top - 4}' "
            f"y2='{f.height - f.bottom}' stroke='{colour}'><title>{_e(change_text(change))}</title></line>{label}")


#: the width a change point's label takes, in px
LABEL_WIDTH = 44


def label_rows(xs: Sequence[float], rows: int = 2) -> list[int | None]:
    """For change points at xs (left to right), the label row of each that does not overlap an
    earlier label in that row (None: no room, the line's tooltip says it)."""
    ends = [-math.inf] * rows
    found: list[int | None] = []
    for x in xs:
        row = next((r for r in range(rows) if x >= ends[r]), None)
        if row is not None and len([f for f in found if f is not None]) < LABELLED:
            ends[row] = x + LABEL_WIDTH
            found.append(row)
        else:
            found.append(None)
    return found


#: a chart's data are drawn in a group scaled so a session is one unit along x and this many
#: units span its values along y: whole numbers, written fast (a fleet's year is millions of them)
Y_UNITS = 1000


def _polyline(xs: Sequence[int], ys: Sequence[int]) -> str:
    return " ".join([f"{x},{y}" for x, y in zip(xs, ys)])


def chart(track: Track, axis: Sequence[int] | None = None, width: int = 760, height: int = 180) -> str:
    """A track session by session: each session's median (the line) and its median's 95 %
    interval (the band), each level's median (grey) and each change point (dashed, coloured by
    its verdict, labelled with its change). axis: the sessions along x (the page's, so its charts
    line up; default: the track's own)."""
    axis = list(axis) if axis is not None else track.sessions
    where = {s: i for i, s in enumerate(axis)}
    at = [where[s] for s in track.sessions]
    count = len(axis)
    f = frame(track.lows, track.highs, count, width, height)
    parts = [f"<svg class='chart' xmlns='http://www.w3.org/2000/svg' width='{width}' height='{height}' "
             f"viewBox='0 0 {width} {height}' role='img' aria-label='{_e(metric_title(track))} on {_e(track.host)}'>",
             f"<line class='axis' x1='{f.left}' x2='{f.left}' y1='{f.top}' y2='{height - f.bottom}'/>",
             f"<line class='axis' x1='{f.left}' x2='{width - f.right}' y1='{height - f.bottom}' "
             f"y2='{height - f.bottom}'/>"]
    for value in (f.low, (f.low + f.high) / 2, f.high):
        parts.append(f"<text x='{f.left - 4}' y='{f.y(value) + 4}' text-anchor='end'>{_e(_number(value))}</text>")
    for index in sorted({0, count // 2, count - 1}):
        anchor = "start" if index == 0 else "end" if index == count - 1 and count > 1 else "middle"
        parts.append(f"<text x='{f.x(index)}' y='{height - 6}' text-anchor='{anchor}'>"
                     f"{_e(track.facts.sessions[axis[index]][2][:10])}</text>")
    step, span = (width - f.left - f.right) / max(count, 1), f.high - f.low
    scale = Y_UNITS / span

    def ys(values: Sequence[float]) -> list[int]:
        return [round((f.high - v) * scale) for v in values]

    band = _polyline([*at, *reversed(at)], ys([*track.highs, *reversed(track.lows)]))
    parts.append(f"<g transform='translate({f.left + step / 2:.2f} {f.top}) scale({step:.5f} "
                 f"{(height - f.top - f.bottom) / Y_UNITS:.5f})'><polygon class='interval' points='{band}'/>"
                 f"<polyline class='medians' points='{_polyline(at, ys(track.medians))}'/></g>")
    bounds = [0, *(c.index for c in track.changes), len(at)]
    for start, stop in pairwise(bounds):
        level = f.y(statistics.median(track.medians[start:stop]))
        parts.append(f"<line class='level' x1='{f.x(at[start]) - 1}' x2='{f.x(at[stop - 1]) + 1}' y1='{level}' "
                     f"y2='{level}'/>")
    if count <= 60:
        parts += [f"<circle cx='{f.x(i)}' cy='{f.y(v)}' r='2' fill='#1f77b4'/>" for i, v in zip(at, track.medians)]
    xs = [round((f.x(at[c.index - 1]) + f.x(at[c.index])) / 2, 1) for c in track.changes]
    parts += [_change_line(f, c, x, row) for c, x, row in zip(track.changes, xs, label_rows(xs))]
    parts.append("</svg>")
    return "".join(parts)


def sparkline(track: Track, width: int = 110, height: int = 26) -> str:
    """A small trend line of a track (at most one point per two pixels: bucket medians), its
    change points as short coloured ticks."""
    count = len(track.medians)
    buckets = max(1, min(count, width // 2))
    edges = [round(i * count / buckets) for i in range(buckets + 1)]
    values = [statistics.median(track.medians[a:b]) for a, b in pairwise(edges) if b > a]
    f = frame(values, values, len(values), width, height, left=1, right=1, top=3, bottom=3)
    ticks = "".join(
        f"<line class='change {c.verdict}' data-session='{c.session.session_id}' x1='{x}' x2='{x}' y1='0' "
        f"y2='{height}' stroke='{COLOURS.get(c.verdict, '#777777')}'/>"
        for c in track.changes for x in [f.x((c.index - 0.5) * len(values) / count)])
    line = " ".join(f"{f.x(i)},{f.y(v)}" for i, v in enumerate(values))
    return (f"<svg class='spark' xmlns='http://www.w3.org/2000/svg' width='{width}' height='{height}'>{ticks}"
            f"<polyline class='medians' points='{line}'/></svg>")


# --- the pages --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Cell:
    """One host's word on one case in the index."""

    track: Track  # the case's primary track on the host
    verdict: Verdict


def cell_html(cell: Cell, root_to_host: str) -> str:
    """A host's cell: the trend line, the newest median, the gate's verdicts on the newest session,
    and the newest change point (its verdict, change and date; "work" where of a work count)."""
    v, track = cell.verdict, cell.track
    said = [", ".join(dict.fromkeys(v.gate))] if v.gate else []
    if v.change is not None:
        c = v.change
        pct = f"{c.change_pct:+.1f}%" if math.isfinite(c.change_pct) else "from 0"
        said.append(f"{c.verdict} {pct} {c.session.started[:10]}" + ("" if c.history.key.metric == track.key.metric
                                                                     else " (work)" if c.history.key.metric
                                                                     .startswith("work.") else " (other figure)"))
    else:
        said.append("no change point")
    title = f"{track.host}: newest session {v.session}" + (f"; {c.history.key.metric}: {change_text(c)}"
                                                           if v.change is not None else "")
    return (f"<td class='cell {v.word}' data-host='{_e(track.host)}' title='{_e(title)}'><a href='{root_to_host}'>"
            f"{sparkline(track)}</a>{_e(_number(track.medians[-1]))}<br>{'<br>'.join(_e(x) for x in said)}</td>")


def index_page(title: str, hosts: Sequence[str], rows: Sequence[tuple[Case, dict[str, Cell]]],
               facts: Sequence[str]) -> str:
    """Cases x hosts; facts: lines saying what the site holds."""
    head = "".join(f"<th>{_e(h)}</th>" for h in hosts)
    body = []
    for case, cells in rows:
        first = next(iter(cells.values())).track
        label = (f"<a href='{case_path(case)}'>{_e(case.label)}</a><br><span class='note'>"
                 f"{_e(first.key.metric)} ({_e(first.unit)})</span>")
        tds = "".join(cell_html(cells[h], host_path(case, h)) if h in cells else "<td>-</td>" for h in hosts)
        body.append(f"<tr data-case='{_e(case.label)}'><th class='case'>{label}</th>{tds}</tr>")
    note = ("<p class='note'>Each cell: the case's first figure session by session on that host (its change points "
            "as coloured ticks), its newest median, the gate's verdicts on the newest session where it was gated, and "
            "the newest change point of the case's headline figures (else of its work per byte moved, marked work): "
            "its verdict, change and the day it came. The cell is red where the gate found a regression in the "
            f"newest session or a headline figure's level of the last {RECENT} sessions is worse than the one before "
            "it, green where better, amber where the gate was inconclusive. -: the host never ran the case. A cell "
            "links to the host's page of the case.</p>")
    return page(title, [*(f"<p>{_e(line)}</p>" for line in facts),
                        f"<div class='scroll'><table class='grid'><thead><tr><th>case</th>{head}</tr></thead>"
                        f"<tbody>{''.join(body)}</tbody></table></div>", note])


def case_page(case: Case, by_host: dict[str, list[Track]]) -> str:
    """Every host's headline figures of a case, session by session."""
    body = [f"<p>workload {_e(next(iter(by_host.values()))[0].key.workload)} "
            f"{_e(params_text(case.workload_params))}; each host's headline figures, session by session (band: each "
            "session's median's 95% interval; grey: each level's median; dashed: a change point, its change above "
            "it). Every figure, the work counts and each session's report: each host's page (its name).</p>"]
    for host, found in by_host.items():
        body.append(f"<h2 id='{_e(slug(host))}'><a href='{case_slug(case)}/{slug(host)}.html'>{_e(host)}</a></h2>")
        axis = sessions_of(t for t in found if t.headline)
        body.append("<div class='pair'>" + "".join(_figure(track, axis, small=True) for track in found
                                                   if track.headline) + "</div>")
    return page(f"{case.label} {params_text(case.workload_params)}".strip(), body, "../")


def sessions_of(tracks: Iterable[Track]) -> list[int]:
    """The sessions of some tracks, in order (the axis their charts share)."""
    return sorted({s for t in tracks for s in t.sessions})


#: a small chart's width (a case's page, two a row)
SMALL = 440


def _figure(track: Track, axis: Sequence[int], small: bool = False) -> str:
    caption = (f"{metric_title(track)}; {len(track.medians)} sessions, {len(track.changes)} change point"
               f"{'s' * (len(track.changes) != 1)}" + ("" if small else "; band: each session's median's 95% "
                                                         "interval; grey: each level's median; dashed: a change point"))
    drawn = chart(track, axis, SMALL, 160) if small else chart(track, axis)
    return f"<figure class='chart'>{drawn}<figcaption>{_e(caption)}</figcaption></figure>"


#: the newest sessions a host's page lists; every session is on the pages of its month
NEWEST = 30


def month_path(case: Case, host: str, month: str) -> str:
    return f"cases/{case_slug(case)}/{slug(host)}--{month}.html"


@dataclass(frozen=True)
class Sessions:
    """The sessions of a case on a host, as its tables list them."""

    axis: list[int]  # in order
    months: dict[str, list[int]]  # each month (YYYY-MM, of its start) and its sessions, in order
    kernels: dict[int, str]  # a session's kernel where it differs from the session before's, else ""
    marks: dict[int, list[str]]  # the change points that came at a session


def sessions_table(found: Sequence[Track]) -> Sessions:
    axis = sessions_of(found)
    facts = found[0].facts
    context: dict[int, int] = {}  # each session's context, as its first track gives it
    for t in reversed(found):
        context.update(zip(t.sessions, t.contexts))
    months: dict[str, list[int]] = {}
    kernels: dict[int, str] = {}
    last = None
    for s in axis:
        months.setdefault(facts.sessions[s][2][:7], []).append(s)
        kernel = facts.contexts[context[s]][0]
        kernels[s], last = ("" if kernel == last else kernel), kernel
    marks: dict[int, list[str]] = {}
    for t in found:
        for c in t.changes:
            marks.setdefault(c.session.session_id, []).append(f"{t.key.metric} {c.verdict}")
    return Sessions(axis, months, kernels, marks)


def table(found: Sequence[Track], listed: Sessions, sessions: Iterable[int], reports: frozenset[int],
          marked: bool = True) -> str:
    """A row per session (as given: newest first) with each headline figure's median, interval and
    runs and each work count's median, linked to its report; marked: with the change points that
    came at each (a month's page has none: where a change point lies moves as sessions come)."""
    head = ["session", "started (UTC)", "kernel"]
    for t in found:
        head += [f"{t.key.metric} ({t.unit})", "95% CI", "n"] if t.headline else [f"{t.key.metric} ({t.unit})"]
    if marked:
        head.append("change points")
    columns = [(t, {s: i for i, s in enumerate(t.sessions)}, t.headline) for t in found]
    rows = []
    for s in sessions:
        cells = [session_link(s, reports, "../../"), found[0].facts.sessions[s][2][:16].replace("T", " "),
                 _e(listed.kernels.get(s, ""))]
        for t, where, headline in columns:
            i = where.get(s)
            if headline:
                cells += ["", "", ""] if i is None else [
                    _number(t.medians[i]), f"{_number(t.lows[i])}–{_number(t.highs[i])}", str(t.runs[i])]
            else:
                cells.append("" if i is None else _number(t.medians[i]))
        mark = listed.marks.get(s) if marked else None
        if marked:
            cells.append(_e("; ".join(mark)) if mark else "")
        rows.append(f"<tr{' class=changed' if mark else ''}><td>" + "<td>".join(cells))
    note = ("<p class='note'>A row per complete session, newest first: each headline figure's median, its 95% "
            "interval (order statistics; under 6 runs the runs' range) and runs; each work count's median (per byte "
            "moved, where the session counted it)" + ("; the figures a change point came at the session in, and its "
                                                       "verdict (its change and p: the charts)" if marked else "")
            + f"; the kernel where it changed. {UNLINKED}</p>")
    return (f"<div class='scroll'><table><thead><tr>{''.join(f'<th>{_e(h)}' for h in head)}</tr></thead><tbody>"
            + "\n".join(rows) + "</tbody></table></div>" + note)


def host_page(case: Case, host: str, found: Sequence[Track], listed: Sessions, reports: frozenset[int]) -> str:
    """Every figure of a case on a host: its charts, then its newest sessions, and its months."""
    body = [f"<p><a href='../{case_slug(case)}.html#{_e(slug(host))}'>every host</a></p>"]
    body += [_figure(track, listed.axis) for track in found]
    months = " · ".join(f"<a href='{slug(host)}--{month}.html'>{month}</a> ({len(found_)})"
                        for month, found_ in reversed(listed.months.items()))
    body += [f"<h2>The newest {min(NEWEST, len(listed.axis))} sessions</h2>",
             table(found, listed, listed.axis[::-1][:NEWEST], reports),
             f"<p>Every session, by the month it started (sessions): {months}</p>"]
    return page(f"{case.label} on {host}", body, "../../")


def month_page(case: Case, host: str, found: Sequence[Track], listed: Sessions, month: str,
               reports: frozenset[int]) -> str:
    body = [f"<p><a href='{slug(host)}.html'>{_e(case.label)} on {_e(host)}</a></p>",
            table(found, listed, listed.months[month][::-1], reports, marked=False),
            "<p class='note'>The change points: the charts of the case's page on the host, and the list of them.</p>"]
    return page(f"{case.label} on {host}, {month}", body, "../../")


@dataclass(frozen=True)
class Event:
    """A row of the regressions and change points list."""

    started: str
    session: int
    host: str
    case: Case
    what: str  # the figure, or "gate"
    verdict: str
    text: str


def events(tracks: Sequence[Track], regressions: Sequence[tuple[str, int, str, Case, str]]) -> list[Event]:
    """Every change point of every track and every gate regression (started, session, host, case,
    the gate's line), newest first."""
    found = [Event(c.session.started, c.session.session_id, t.host, t.case, t.key.metric, c.verdict,
                   change_text(c)) for t in tracks for c in t.changes]
    found += [Event(started, session, host, case, "gate", REGRESSION, line)
              for started, session, host, case, line in regressions]
    return sorted(found, key=lambda e: (e.started, e.session, e.host, e.what), reverse=True)


def changes_pages(found: Sequence[Event], reports: frozenset[int]) -> dict[str, str]:
    """The list as pages of CHANGES_PER_PAGE rows: changes.html, changes-2.html, ..."""
    chunks = [found[i:i + CHANGES_PER_PAGE] for i in range(0, len(found), CHANGES_PER_PAGE)] or [[]]
    names = ["changes.html", *(f"changes-{k}.html" for k in range(2, len(chunks) + 1))]
    pages = {}
    for number, (name, chunk) in enumerate(zip(names, chunks)):
        nav = ("<nav class='pages'>" + "".join(f"<a href='{n}'>{k + 1}</a>" if n != name else f"<b>{k + 1}</b>"
                                               for k, n in enumerate(names)) + "</nav>") if len(names) > 1 else ""
        shade = {"worse": "worse", REGRESSION: "worse", "better": "better"}
        rows = "\n".join(
            f"<tr class='{shade.get(e.verdict, '')}'>"
            f"<td>{_e(e.started[:10])}<td>{session_link(e.session, reports, '')}<td>{_e(e.host)}"
            f"<td><a href='{host_path(e.case, e.host)}'>{_e(e.case.label)}</a><td>{_e(e.what)}<td>{_e(e.verdict)}"
            f"<td>{_e(e.text)}" for e in chunk)
        head = "".join(f"<th>{h}</th>" for h in ("date", "session", "host", "case", "figure", "verdict", "what"))
        body = [f"<p>{len(found)} in all, newest first; page {number + 1} of {len(names)}.</p>", nav,
                f"<div class='scroll'><table><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table></div>", nav,
                "<p class='note'>A change point: where a figure's series of session medians on a host changed level "
                "(fsbench changes: binary segmentation, kept where Student's t-test between the levels gives a p below "
                "the threshold), with what differed between that session and the one before. A gate regression: the "
                f"gate's line of a session that failed a case. {UNLINKED}</p>"]
        pages[name] = page("Regressions and change points", body)
    return pages


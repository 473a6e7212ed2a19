"""Change points as a person reads them: the `fsbench changes` lines and the figure of each changed
series (what verdicts/changes.py found). matplotlib (figures.py) is imported only to draw a figure:
it is half the start of a command that prints these lines (fsbench fleet, fsbench changes)."""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from itertools import pairwise
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import UsageError
from ..verdicts.changes import MIN_SESSIONS, Analysis, ChangePoint, History
from ..options import check_replaceable, file_to_write

if TYPE_CHECKING:
    from matplotlib.figure import Figure


def figure_path(text: str, store: Path | str | None = None) -> Path:
    """--figure's file, checked before anything is read (written to now, as every output is:
    issue 44, one in a read-only directory was accepted when no figure was drawn), never the
    store: its suffix chooses the format."""
    from . import figures

    path = Path(text)
    if path.suffix[1:] not in figures.FORMATS:
        raise UsageError(f"--figure {text}: name a .svg or .png file (its suffix chooses the format)")
    if not path.parent.is_dir():
        raise UsageError(f"--figure {text}: the directory {path.parent} does not exist; make it or name "
                         "another file")
    try:
        path = file_to_write(text)
        check_replaceable(path, "figure", [store] if isinstance(store, Path) else [])
    except ValueError as exc:
        raise UsageError(f"--figure {text}: {exc}") from None
    return path


def _value(value: float) -> str:
    return f"{value:.4g}"


def _commit(text: str) -> str:
    return text[:12] if len(text) == 40 else text


def change_lines(change: ChangePoint, with_host: bool) -> list[str]:
    h, points = change.history, change.history.points
    where = f" on {h.host}" if with_host else ""
    pct = f"{change.change_pct:+.1f}%" if math.isfinite(change.change_pct) else "from 0"
    lines = [f"{h.label}{where} ({h.unit}, {h.direction.value} is better)",
             f"  session {change.session.session_id} (started {change.session.started}): "
             f"{_value(change.before)} -> {_value(change.after)} {h.unit} {pct} {change.verdict} "
             f"(p={change.pvalue:.2g}; the medians of "
             f"sessions {points[change.start].session_id}-{change.previous.session_id} and "
             f"{change.session.session_id}-{points[change.stop - 1].session_id})"]
    differences = change.differences()
    if not differences:
        return lines + [f"  the same as in session {change.previous.session_id}: kernel, fs options and "
                        "fsbench commit (what changed is elsewhere: the machine, its disks, its load)"]
    shown = [f"{name} {_commit(old)} -> {_commit(new)}" for name, old, new in differences]
    return lines + [f"  differs from session {change.previous.session_id}: {'; '.join(shown)}"]


def lines(analysis: Analysis, store_path: str) -> list[str]:
    """The `fsbench changes` text."""
    if not analysis.hosts:
        return [f"fsbench changes: no complete sessions in {store_path}"]
    out = [f"fsbench changes: host {host}: {len(ids)} complete session{'s' if len(ids) != 1 else ''} in "
           f"{store_path}; change points need at least {MIN_SESSIONS}"
           for host, ids in analysis.hosts.items() if len(ids) < MIN_SESSIONS]
    hosts = {host: ids for host, ids in analysis.hosts.items() if len(ids) >= MIN_SESSIONS}
    if not hosts:
        return out
    sessions = "; ".join(f"host {host}: {len(ids)} complete sessions ({ids[0]}-{ids[-1]})"
                         for host, ids in hosts.items())
    out.append(f"fsbench changes: {sessions}; {len(analysis.histories)} series; change points in each series "
               f"of session medians (binary segmentation, kept where the t-test between the levels gives p < "
               f"{analysis.max_pvalue:g})")
    if analysis.left_out:
        out.append(f"fsbench changes: {analysis.left_out} series with fewer than {MIN_SESSIONS} sessions "
                   "left out")
    for change in analysis.changes:
        out += change_lines(change, len(analysis.hosts) > 1)
    count, changed = len(analysis.changes), len({id(c.history) for c in analysis.changes})
    out.append(f"fsbench changes: {count} change point{'s' if count != 1 else ''} in {changed} of "
               f"{len(analysis.histories)} series" if count
               else f"fsbench changes: no change points in {len(analysis.histories)} series")
    return out


def figure(changes: Sequence[ChangePoint]) -> Figure:
    """Each changed series: its session medians in session order, a dashed line where the level
    changed (coloured by its verdict) and each level's median. In panel i the medians' line has
    gid "medians-i", its change point j "change-i-j" (at x = index - 0.5) and level k "level-i-k"."""
    from matplotlib.figure import Figure

    from . import figures
    grouped: dict[int, tuple[History, list[ChangePoint]]] = {}
    for change in changes:
        grouped.setdefault(id(change.history), (change.history, []))[1].append(change)
    fig = Figure(figsize=(figures.WIDTH, 0.8 + 2.3 * max(len(grouped), 1)), layout="constrained")
    axes = fig.subplots(max(len(grouped), 1), 1, squeeze=False)[:, 0]
    hosts = sorted({h.host for h, _ in grouped.values()})
    for i, (history, found) in enumerate(grouped.values()):
        _panel(axes[i], i, history, found, len(hosts) > 1)
    figures.set_title(fig, f"Change points across sessions ({', '.join(hosts) or 'none'}; dashed: a change, "
                      f"grey: each level's median)")
    return fig


def _panel(ax, i: int, history: History, found: Sequence[ChangePoint], with_host: bool) -> None:
    from . import figures

    medians = [p.median for p in history.points]
    xs = list(range(len(medians)))
    ax.plot(xs, medians, marker="o", markersize=4, color=figures.COLOURS[0], gid=f"medians-{i}")
    bounds = [0, *(c.index for c in found), len(medians)]
    for k, (a, b) in enumerate(pairwise(bounds)):
        ax.plot([a - 0.3, b - 0.7], [statistics.median(medians[a:b])] * 2, color="#555555", linewidth=2,
                gid=f"level-{i}-{k}")
    for j, change in enumerate(found):
        ax.axvline(change.index - 0.5, color=figures.VERDICT_COLOURS[change.verdict], linestyle="--",
                   gid=f"change-{i}-{j}")
        ax.annotate(f" {change.change_pct:+.1f}% at session {change.session.session_id}",
                    (change.index - 0.5, 1), xycoords=("data", "axes fraction"), va="top", fontsize="small",
                    color=figures.VERDICT_COLOURS[change.verdict])
    step = max(1, len(xs) // 16)
    ax.set_xticks(xs[::step], [str(p.session_id) for p in history.points][::step])
    ax.set_xlabel("session")
    ax.set_ylabel(figures.unit_label(history.unit))
    where = f" on {history.host}" if with_host else ""
    title = f"{history.label}{where} ({figures.better(history.direction)})"
    ax.set_title(figures.wrap(title, figures.WIDTH - 0.5, "medium"), loc="left", fontsize="medium")
    ax.grid(alpha=0.3)


def write_figure(changes: Sequence[ChangePoint], path: Path) -> Path:
    from . import figures

    fig = figure(changes)
    return figures.save(fig, path.with_suffix(""), path.suffix[1:])

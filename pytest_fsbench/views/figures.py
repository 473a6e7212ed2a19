"""The report's figures, pure: samples in, a matplotlib Figure out (no pyplot state, no files).
`svg()` turns a figure into inline SVG text, `save()` writes it as PNG or SVG.

Each drawn summary carries an id (`gid`) saying what it is, so a test (or a reader of the SVG)
can find the median a box plot drew and check it against the store's."""

from __future__ import annotations

import io
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import matplotlib
from matplotlib.figure import Figure
from matplotlib.font_manager import FontProperties
from matplotlib.textpath import TextToPath

from ..metrics import Direction
from ..sizes import format_size
from ..options import output_mark

matplotlib.rcParams.update({
    "svg.fonttype": "none",  # text stays text: smaller, searchable, selectable
    "svg.hashsalt": "fsbench",  # the same figure gives the same SVG ids
    "font.size": 9,
})

FORMATS = ("png", "svg")
WIDTH = 7.5  # inches: one column of an A4 page or a laptop window at 100 %
COLOURS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf")


#: inches a plot with row labels (box and forest plots) keeps for itself, however long its labels
PLOT_WIDTH = 6.3


def label_width(labels: Sequence[str]) -> float:
    """A figure wide enough for its longest row label beside a plot of PLOT_WIDTH inches (0.7
    inches go to the axis' ticks and the layout's pads): labels widen the figure, never narrow
    the plot (a study page's 58-character labels had left it less than half its figure)."""
    return max(WIDTH, PLOT_WIDTH + 0.7 + 0.065 * max((len(label) for label in labels), default=0))


TITLE_MARGIN = 0.25  # inches of a figure's width its title and legend leave free (the layout's pads)


def text_width(text: str, size: str | float = "large") -> float:
    """Inches the text takes in the figures' font at a size (points, or a name like "large":
    the size of the figures' titles)."""
    width, _, _ = TextToPath().get_text_width_height_descent(text, FontProperties(size=size), ismath=False)
    return width / 72


def wrap(text: str, width: float, size: str | float = "large") -> str:
    """The text broken into lines no wider than width inches: after a space or a comma (so a
    metric's [parameters] break between parameters), and within a word only when it is wider
    than a line on its own."""
    lines: list[str] = []
    line = ""
    for piece in re.split(r"(?<=[ ,])", text):
        if line and text_width((line + piece).rstrip(), size) > width:
            lines.append(line.rstrip())
            line = ""
        while len(piece.rstrip()) > 1 and text_width(piece.rstrip(), size) > width:
            cut = 1
            while cut < len(piece) - 1 and text_width(piece[:cut + 1], size) <= width:
                cut += 1
            lines.append(piece[:cut])
            piece = piece[cut:]
        line += piece
    if line.strip():
        lines.append(line.rstrip())
    return "\n".join(lines)


def set_title(fig: Figure, title: str) -> None:
    """The figure's title at its left edge, wrapped to the figure's width; the figure grows by
    the lines a wrap adds, so the plot keeps its height."""
    width, height = fig.get_size_inches()
    text = wrap(title, width - TITLE_MARGIN)
    line_height = 1.25 * FontProperties(size="large").get_size_in_points() / 72
    fig.set_size_inches(width, height + text.count("\n") * line_height)
    fig.suptitle(text, x=0.01, ha="left")


def legend_columns(labels: Sequence[str], width: float, most: int = 4) -> int:
    """The most columns (up to most) in which a legend of these labels fits the width: each
    entry is its marker, a pad and its text, the columns spaced by 2 em."""
    em = FontProperties(size="medium").get_size_in_points() / 72
    entry = max((text_width(label, "medium") for label in labels), default=0.0) + 2.8 * em
    for columns in range(min(most, len(labels)), 1, -1):
        if columns * entry + (columns - 1) * 2.0 * em <= width - TITLE_MARGIN:
            return columns
    return 1


def better(direction: Direction) -> str:
    return "higher is better" if direction is Direction.HIGHER else "lower is better"


def unit_label(unit: str) -> str:
    """The unit as an axis states it (MB is 10^6 bytes throughout fsbench)."""
    return {"MB/s": "MB/s (10^6 B/s)", "ops/s": "operations/s", "ms": "ms", "%": "%", "s": "seconds"}.get(unit, unit)


def distinct_labels(labels: Sequence[str]) -> list[str]:
    """Case labels with what all of them share left out, so a plot's labels leave it its width:
    test_iozone[btrfs-single-compress=no-16M] and test_iozone[btrfs-single-compress=zlib-16M]
    become compress=no and compress=zlib. A label that would be left empty is "default" where the
    others differ from it by options only (ext4-single-1M beside ext4-single-mount=nodelalloc-1M:
    issue 43 found the one labelled by its case id, the other by its option), else keeps its case id."""
    ids = [label.partition("[")[2].rstrip("]") or label for label in labels]
    if len(ids) < 2:
        return ids
    parts = [case.split("-") for case in ids]
    shared = set.intersection(*(set(p) for p in parts))
    left = [[t for t in p if t not in shared] for p in parts]
    options_only = all("=" in t for p in left for t in p)
    found = [" ".join(p) or ("default" if options_only else case) for p, case in zip(left, ids)]
    return found if len(set(found)) == len(found) else ids


def box_plot(title: str, groups: Sequence[tuple[str, Sequence[float]]], unit: str, direction: Direction) -> Figure:
    """One box per group (a case), every sample drawn as a point over its box. The median line of
    box i has gid "median-i"."""
    labels = [label for label, _ in groups]
    fig = Figure(figsize=(label_width(labels), 0.5 + 0.45 * max(len(groups), 2)), layout="constrained")
    ax = fig.add_subplot()
    data = [list(values) for _, values in groups]
    positions = list(range(1, len(groups) + 1))
    drawn = ax.boxplot(data, positions=positions, orientation="horizontal", widths=0.6, showfliers=False, whis=1.5,
                       medianprops={"color": "black", "linewidth": 2}, boxprops={"color": "#555555"})
    for i, line in enumerate(drawn["medians"]):
        line.set_gid(f"median-{i}")
    for i, values in enumerate(data):
        # evenly spread offsets instead of random jitter: the same data give the same picture
        offsets = [(k - (len(values) - 1) / 2) * min(0.5 / max(len(values), 1), 0.06) for k in range(len(values))]
        ax.scatter(values, [positions[i] + o for o in offsets], s=14, color=COLOURS[i % len(COLOURS)], alpha=0.8,
                   zorder=3, gid=f"samples-{i}")
    ax.set_yticks(positions, labels)
    ax.invert_yaxis()
    ax.set_xlabel(f"{unit_label(unit)}, {better(direction)} {'→' if direction is Direction.HIGHER else '←'}")
    set_title(fig, title)
    ax.grid(axis="x", alpha=0.3)
    return fig


@dataclass(frozen=True)
class CurvePoint:
    x: float  # bytes (record or file size)
    median: float
    low: float  # the median's interval
    high: float


def size_curves(title: str, panels: dict[str, dict[str, Sequence[CurvePoint]]], unit: str, direction: Direction,
                x_name: str = "record size") -> Figure:
    """Throughput against a size on a log2 axis: one panel per test (panels: test -> case -> its
    points), one line per case with the median and its interval. Each line has gid
    "curve-<panel>-<case>" and one point per size measured."""
    names = list(panels)
    columns = min(len(names), 2)
    rows = (len(names) + columns - 1) // columns
    fig = Figure(figsize=(WIDTH, 0.6 + 2.6 * rows), layout="constrained")
    axes = fig.subplots(rows, columns, squeeze=False)
    cases = sorted({case for lines in panels.values() for case in lines})
    for index, name in enumerate(names):
        ax = axes[index // columns][index % columns]
        for case, points in sorted(panels[name].items()):
            points = sorted(points, key=lambda p: p.x)
            colour = COLOURS[cases.index(case) % len(COLOURS)]
            xs = [p.x for p in points]
            ax.plot(xs, [p.median for p in points], marker="o", color=colour, label=case, gid=f"curve-{index}-{case}")
            ax.fill_between(xs, [p.low for p in points], [p.high for p in points], color=colour, alpha=0.15,
                            linewidth=0)
        ax.set_xscale("log", base=2)
        ticks = sorted({p.x for lines in panels[name].values() for p in lines})
        ax.set_xticks(ticks, [format_size(int(t)) for t in ticks])
        ax.minorticks_off()
        ax.set_title(wrap(name, WIDTH / columns - 1.0), loc="left")
        ax.set_xlabel(x_name)
        ax.set_ylabel(unit_label(unit))
        ax.grid(alpha=0.3)
    for index in range(len(names), rows * columns):
        axes[index // columns][index % columns].set_visible(False)
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncols=legend_columns(labels, WIDTH), frameon=False)
    set_title(fig, f"{title} ({better(direction)}; band: the median's 95% interval)")
    return fig


@dataclass(frozen=True)
class Change:
    label: str
    shift_pct: float
    low: float
    high: float
    verdict: str  # worse, better, not significant
    significant: bool


VERDICT_COLOURS = {"worse": "#d62728", "better": "#2ca02c", "not significant": "#555555"}


def forest_plot(title: str, changes: Sequence[Change], allowed_pct: float | None = None) -> Figure:
    """Each change with its interval, one row each; the allowed regression drawn as dashed lines
    at -allowed% and +allowed% (which side is worse depends on the metric; the row's colour says
    its verdict). The marker of row i has gid "change-i"."""
    fig = Figure(figsize=(label_width([c.label for c in changes]), 0.8 + 0.32 * max(len(changes), 2)),
                 layout="constrained")
    ax = fig.add_subplot()
    for i, c in enumerate(changes):
        colour = VERDICT_COLOURS.get(c.verdict, "#555555")
        low, high = max(c.low, -100.0), min(c.high, 1000.0)  # an open interval is drawn to the edge
        ax.plot([low, high], [i, i], color=colour, linewidth=2)
        ax.plot([c.shift_pct], [i], marker="D" if c.significant else "o", color=colour, markersize=6,
                gid=f"change-{i}")
    ax.axvline(0, color="black", linewidth=0.8)
    if allowed_pct is not None:
        for x in (-allowed_pct, allowed_pct):
            ax.axvline(x, color="#ff7f0e", linestyle="--", linewidth=1, gid="allowed")
    ax.set_yticks(range(len(changes)), [c.label for c in changes])
    ax.invert_yaxis()
    ax.set_xlabel("change, %" + ("; dashed: the allowed change" if allowed_pct is not None else "")
                  + "; diamond: significant")
    set_title(fig, title)
    ax.grid(axis="x", alpha=0.3)
    return fig


def svg(fig: Figure) -> str:
    """The figure as an inline <svg> element (no XML prolog, no DOCTYPE)."""
    buffer = io.StringIO()
    fig.savefig(buffer, format="svg", metadata={"Date": None})
    text = buffer.getvalue()
    return text[text.index("<svg"):]


def save(fig: Figure, path: Path, fmt: str) -> Path:
    if fmt not in FORMATS:
        raise ValueError(f"figure format {fmt!r}: choose {' or '.join(FORMATS)}")
    target = path.parent / f"{path.name}.{fmt}"
    mark = {"Date": None, "Creator": output_mark("figure")} if fmt == "svg" else {"Software": output_mark("figure")}
    partial = target.with_name(f".{target.name}.{os.getpid()}.partial")
    try:  # whole or not at all (options.write_whole)
        fig.savefig(partial, format=fmt, dpi=150, metadata=mark)
        os.replace(partial, target)
    except BaseException:
        partial.unlink(missing_ok=True)
        raise
    return target

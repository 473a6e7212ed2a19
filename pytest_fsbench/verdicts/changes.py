"""A store's history: the sessions where a case's headline metric, or its work per byte moved,
changed level.

A nightly job adds a session a night. Each case's headline metric is then a series of session
medians, in session order, one series per machine (a different machine is a different
experiment). Its change points are found in two steps, as Apache Otava's e-divisive means finds
them (Fleming et al., "Hunter", ICPE 2023), without Otava (which pins numpy and pulls cloud clients
into every install): binary segmentation (least squares on the log medians, as ruptures' Binseg
finds them, on numpy's prefix sums) proposes candidate splits, then the weakest candidate (the largest
p of Student's t-test between the levels on its two sides, two-sided, on log medians) is dropped
until every one left is below --max-pvalue, each test taken between its neighbouring candidates.
Each change is told with what differed between the session before it and the session where it
came: the kernel, the case's filesystem options and fsbench's commit.

`analyse(store, host)` (or `detect`, only the change points) and `figure(changes)` are what a
view calls; `lines` is the `fsbench changes` text.
"""

from __future__ import annotations

import functools
import math
import platform
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import pairwise

import numpy as np
from scipy.special import stdtr

from ..errors import UsageError
from ..metrics import Direction, is_count, params_text, short_test
from ..store.facts import kernel_of
from ..store.results import SeriesKey, SessionRow, Store

__all__ = ["MAX_PVALUE", "MIN_SESSIONS", "Analysis", "ChangePoint", "History", "Point", "analyse",
           "chosen_host", "detect", "max_pvalue"]

#: with fewer sessions a split leaves one or two sessions on a side: too few to tell a level from noise
MIN_SESSIONS = 5
#: the default --max-pvalue, chosen on real sessions (docs/gate.md: gate_evidence.py --changes): at
#: most about 1 false change point per 100 unchanged sessions, and the most steps found within that
MAX_PVALUE = 0.005
#: the fewest sessions on either side of a candidate split (one session is no level)
MIN_SEGMENT = 2
#: the most candidate splits binary segmentation proposes in one series
MAX_CANDIDATES = 24
#: a level with at most this many splits to weigh is split in Python, a longer one with numpy
SHORT = 48
#: a level of more medians than this is summed up with numpy (its squared deviations in another
#: order: the same to about 1e-15)
LONG_LEVEL = 64
#: the smallest step of a count of the work's session medians that is a change (%): unchanged sessions'
#: counts move by less (when the journal commits)
COUNT_RESOLUTION_PCT = 1.0


@dataclass(frozen=True)
class Point:
    """One session of a series: the median of its measured runs and what it ran with."""

    session_id: int
    started: str
    median: float
    kernel: str
    options: str  # the case's filesystem options as asked, and as the mount applied them
    commit: str  # fsbench's git commit


#: what is compared between the session before a change and the session where it came
CONTEXT = (("kernel", "kernel"), ("fs options", "options"), ("fsbench commit", "commit"))


@dataclass(frozen=True)
class History:
    """One case's headline metric on one machine, a point per complete session, oldest first."""

    host: str
    key: SeriesKey
    unit: str
    direction: Direction
    #: a tuple of Points, or any sequence of them; one that holds its medians as a column (its
    #: .medians) gives them without a Point made for each (a published site draws thousands)
    points: Sequence[Point]

    @functools.cached_property
    def medians(self) -> Sequence[float]:
        found = getattr(self.points, "medians", None)
        return found if found is not None else [p.median for p in self.points]

    @property
    def label(self) -> str:
        params = params_text(self.key.params)
        return f"{short_test(self.key.test)} {self.key.metric}" + (f" [{params}]" if params else "")


@dataclass(frozen=True)
class ChangePoint:
    """Where a history's level changed: points[index] is the first of the new level, which lasts
    until stop; the level before began at start (the previous change point, or the first point)."""

    history: History
    index: int
    start: int
    stop: int
    pvalue: float  # the t-test between the two levels (on log medians, two-sided)

    @property
    def session(self) -> Point:
        return self.history.points[self.index]

    @property
    def previous(self) -> Point:
        return self.history.points[self.index - 1]

    @functools.cached_property
    def before(self) -> float:
        return statistics.median(self.history.medians[self.start:self.index])

    @functools.cached_property
    def after(self) -> float:
        return statistics.median(self.history.medians[self.index:self.stop])

    @property
    def change_pct(self) -> float:
        return (self.after / self.before - 1) * 100 if self.before else math.inf

    @property
    def verdict(self) -> str:
        """better, worse, or unchanged (the levels' means differ, their medians do not)."""
        if self.after == self.before:
            return "unchanged"
        higher = self.after > self.before
        return "better" if higher == (self.history.direction is Direction.HIGHER) else "worse"

    def differences(self) -> list[tuple[str, str, str]]:
        """(what, before, after) for each of CONTEXT that differs between the two sessions."""
        return [(name, getattr(self.previous, attr), getattr(self.session, attr)) for name, attr in CONTEXT
                if getattr(self.previous, attr) != getattr(self.session, attr)]


@dataclass(frozen=True)
class Analysis:
    hosts: dict[str, list[int]]  # each machine asked for, with its complete sessions
    histories: list[History]  # the series with at least MIN_SESSIONS sessions
    left_out: int  # series with fewer sessions (a case added lately)
    changes: list[ChangePoint]
    max_pvalue: float


def chosen_host(host: str | None, all_hosts: bool) -> str | None:
    """The machine whose sessions are read (None: every machine): --host, else this one."""
    if host is not None and all_hosts:
        raise UsageError(f"--host {host} and --all-hosts: choose one")
    return None if all_hosts else host or platform.node()


def max_pvalue(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not 0 < value < 1:
        raise UsageError(f"--max-pvalue {text}: give a probability above 0 and below 1, e.g. {MAX_PVALUE}")
    return value


def complete_sessions(store: Store, host: str | None) -> list[SessionRow]:
    rows = store.sessions()
    if host is not None and all(row.host != host for row in rows):
        known = ", ".join(sorted({row.host for row in rows})) or "none (no sessions yet)"
        raise UsageError(f"host {host!r}: no session of that machine in {store.path} (hosts here: {known}); "
                         "name one with --host, or --all-hosts")
    return [row for row in rows if row.status == "complete" and (host is None or row.host == host)]


def options_of(asked: str, case: dict) -> str:
    """The options asked for, and as applied: findmnt's OPTIONS column, or ZFS's properties."""
    applied = case.get("applied", {})
    mount, properties = applied.get("mount", ""), applied.get("properties", "")
    if mount and not mount.startswith("unavailable"):
        return f"{asked}; mounted {mount.splitlines()[0].split()[-1]}"
    if properties and not properties.startswith("unavailable"):
        pairs = [line.split()[:2] for line in properties.splitlines() if len(line.split()) >= 2]
        return f"{asked}; set {','.join('='.join(pair) for pair in pairs)}"
    return asked


def histories(store: Store, sessions: Sequence[SessionRow]) -> list[History]:
    """Every case's headline metrics and its work per byte moved, one series per machine, a point
    per session in order (from the cases' summaries: a host's year of sessions in a second)."""
    found: dict[tuple, tuple[SeriesKey, str, Direction, list[Point]]] = {}
    summaries = store.case_summaries(row.id for row in sessions)
    for row in sessions:
        commit = str(row.manifest.get("fsbench_commit") or "unknown")
        for case in summaries.get(row.id, []):
            kernel, options = kernel_of(row.manifest, case.manifest), options_of(case.options, case.manifest)
            for metric, params, unit, direction, values in case.figures:
                if not values:
                    continue
                where = (row.host, case.test, case.workload, case.workload_params, metric, params)
                if where not in found:
                    found[where] = (SeriesKey(case.test, case.workload, case.workload_params, metric, params), unit,
                                    Direction(direction), [])
                found[where][3].append(Point(row.id, row.started, statistics.median(values), kernel, options, commit))
    return [History(where[0], key, unit, direction, tuple(points))
            for where, (key, unit, direction, points) in found.items()]


Level = tuple[int, float, float]  # a run of log medians: how many, their mean, their squared deviations


def level_of(values: Sequence[float]) -> Level:
    """A level's count, mean and squared deviations; values all alike are a level without any
    spread, exactly (their mean, rounded, can be a bit off each: a count of the work that never
    moved gave change points of nothing but that rounding)."""
    if min(values) == max(values):
        return len(values), values[0], 0.0
    mean = statistics.fmean(values)
    if len(values) > LONG_LEVEL:
        deviations = np.asarray(values) - mean
        return len(values), mean, float(deviations @ deviations)
    return len(values), mean, sum((x - mean) ** 2 for x in values)


def t_test(left: Sequence[float], right: Sequence[float]) -> float:
    """Student's two-sided t-test (pooled variance) that two sets of log medians share one mean;
    sides without any spread are the same level only when their means are equal."""
    return levels_differ(level_of(left), level_of(right))


def levels_differ(left: Level, right: Level) -> float:
    """t_test's p from each side's count, mean and squared deviations."""
    (n, left_mean, left_squares), (m, right_mean, right_squares) = left, right
    difference = right_mean - left_mean
    squares = left_squares + right_squares
    df = n + m - 2
    if df < 1:
        return 1.0
    if squares == 0:
        return 0.0 if difference else 1.0
    t = difference / math.sqrt(squares / df * (1 / n + 1 / m))
    return float(2 * stdtr(df, -abs(t)))


def candidates(logs: Sequence[float]) -> list[int]:
    """Binary segmentation's candidate splits (the index of each new level's first session), as many
    as MIN_SEGMENT-long levels allow, up to MAX_CANDIDATES: least squares, each step splitting the
    level whose best split lowers the squared deviations most (ruptures' Binseg with the l2 cost,
    min_size=MIN_SEGMENT, jump=1, whose splits a test checks these against), on prefix sums, so a
    year of nightly sessions takes a millisecond, not half a second (issue 43: a fleet's year)."""
    n = len(logs)
    most = min(n // MIN_SEGMENT - 1, MAX_CANDIDATES)
    if most < 1:
        return []
    x = np.asarray(logs, dtype=float)
    x = x - x.mean()  # the same splits, fewer digits lost in the sums
    sums, squares = np.concatenate(([0.0], np.cumsum(x))), np.concatenate(([0.0], np.cumsum(x * x)))
    at = np.arange(n + 1, dtype=float)
    listed_sums, listed_squares = sums.tolist(), squares.tolist()

    def best_split(a: int, b: int) -> tuple[int | None, float]:
        """The split of x[a:b] that lowers its squared deviations most, and by how much (of equal
        gains the last split, as ruptures); a short level in Python, where numpy's calls cost more."""
        first, last = a + MIN_SEGMENT, b - MIN_SEGMENT + 1
        if first >= last:
            return None, 0.0
        if last - first <= SHORT:
            s, q = listed_sums, listed_squares
            whole = q[b] - q[a] - (s[b] - s[a]) ** 2 / (b - a)
            gain, split = max((whole - (q[k] - q[a] - (s[k] - s[a]) ** 2 / (k - a))
                               - (q[b] - q[k] - (s[b] - s[k]) ** 2 / (b - k)), k) for k in range(first, last))
            return split, gain
        s, q, k = sums[first:last], squares[first:last], at[first:last]
        left = q - squares[a] - (s - sums[a]) ** 2 / (k - a)
        right = squares[b] - q - (sums[b] - s) ** 2 / (b - k)
        gains = (squares[b] - squares[a] - (sums[b] - sums[a]) ** 2 / (b - a)) - left - right
        best = gains.size - 1 - int(np.argmax(gains[::-1]))
        return first + best, float(gains[best])

    bounds, found = [0, n], {}
    while len(bounds) - 2 < most:
        for a, b in pairwise(bounds):
            if (a, b) not in found:
                found[(a, b)] = best_split(a, b)
        split, _ = max((found[(a, b)] for a, b in pairwise(bounds)), key=lambda f: f[1])
        if split is None:
            break
        bounds = sorted([*bounds, split])
    return bounds[1:-1]


def significant(logs: Sequence[float], splits: Sequence[int], max_p: float) -> list[tuple[int, float]]:
    """(split, p) of the splits left once the weakest one (largest p between its neighbours) is
    dropped while any p is at or above max_p. Each level's count, mean and squared deviations are
    reckoned once, and a dropped split changes only its neighbours' tests (the two levels it
    parted are one now)."""
    levels: dict[tuple[int, int], Level] = {}

    def level(a: int, b: int) -> Level:
        if (a, b) not in levels:
            levels[(a, b)] = level_of(logs[a:b])
        return levels[(a, b)]

    def p(k: int) -> float:
        return levels_differ(level(bounds[k], bounds[k + 1]), level(bounds[k + 1], bounds[k + 2]))

    bounds = [0, *splits, len(logs)]
    pvalues = [p(k) for k in range(len(splits))]
    while pvalues:
        weakest = max(range(len(pvalues)), key=pvalues.__getitem__)  # the first of equal ones
        if pvalues[weakest] < max_p:
            return list(zip(bounds[1:-1], pvalues))
        del bounds[weakest + 1], pvalues[weakest]
        for k in (weakest - 1, weakest):
            if 0 <= k < len(pvalues):
                pvalues[k] = p(k)
    return []


def change_points(history: History, max_p: float = MAX_PVALUE) -> list[ChangePoint]:
    """The change points of the session medians (level_changes)."""
    return [ChangePoint(history, index, start, stop, p)
            for index, start, stop, p in level_changes([p.median for p in history.points],
                                                       is_count(history.key.metric), max_p)]


def level_changes(medians: Sequence[float], count: bool = False,
                  max_p: float = MAX_PVALUE) -> list[tuple[int, int, int, float]]:
    """(index, start, stop, p) of each change point of a series of session medians (as a
    ChangePoint holds them), on a log scale (a level is a ratio of speed; a series with a zero
    median on its own scale). A count of the work barely moves between unchanged sessions, so a
    t-test finds any step in it; a step smaller than COUNT_RESOLUTION_PCT is no change of the
    work. Pure, on numbers alone: what a view that draws thousands of series calls."""
    logs = [math.log(m) for m in medians] if all(m > 0 for m in medians) else list(medians)  # a zero has no log
    found = significant(logs, candidates(logs), max_p)
    bounds = [0, *(index for index, _ in found), len(medians)]
    changes = [(bounds[k + 1], bounds[k], bounds[k + 2], p) for k, (_, p) in enumerate(found)]
    if count:
        changes = [c for c in changes if not abs(level_change_pct(medians, *c[:3])) < COUNT_RESOLUTION_PCT]
    return changes


def level_change_pct(medians: Sequence[float], index: int, start: int, stop: int) -> float:
    """The change of the median level from medians[start:index] to medians[index:stop], in %."""
    before, after = statistics.median(medians[start:index]), statistics.median(medians[index:stop])
    return (after / before - 1) * 100 if before else math.inf


def analyse(store: Store, host: str | None, max_p: float = MAX_PVALUE) -> Analysis:
    """The change points of every case's headline series of complete sessions on host (None:
    every machine, each its own series); only machines and series with MIN_SESSIONS sessions."""
    sessions = complete_sessions(store, host)
    hosts: dict[str, list[int]] = {host: []} if host is not None else {}
    for row in sessions:
        hosts.setdefault(row.host, []).append(row.id)
    enough = [row for row in sessions if len(hosts[row.host]) >= MIN_SESSIONS]
    every = histories(store, enough)
    kept = sorted((h for h in every if len(h.points) >= MIN_SESSIONS), key=lambda h: (h.host, h.label))
    changes = [change for h in kept for change in change_points(h, max_p)]
    return Analysis(hosts, kept, len(every) - len(kept), changes, max_p)


def detect(store: Store, host: str | None, max_p: float = MAX_PVALUE) -> list[ChangePoint]:
    """Only the change points of analyse (what a view draws or lists)."""
    return analyse(store, host, max_p).changes

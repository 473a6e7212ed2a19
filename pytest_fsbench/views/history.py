"""A store's history as the published site shows it (`fsbench publish`): each complete session's
figures summed up once (median, the median's 95 % interval, runs), then a track per figure and
host, a point per session in order, with the change points `fsbench changes` finds in it
(verdicts/changes.py's level_changes, on the same medians), and each host's word on each case.

Pure: summaries in (as the store gives them), plain points out; points in, tracks out.
"""

from __future__ import annotations

import functools
import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from ..metrics import Direction, is_count, is_headline, short_test
from ..store.facts import kernel_of
from ..store.results import CaseSummary, SeriesKey, SessionRow
from ..verdicts import changes
from ..verdicts.gate import INCONCLUSIVE, REGRESSION, line_verdict
from ..verdicts.stats import median_ci_ranks


@functools.cache
def _ranks(n: int) -> tuple[int, int]:
    low, high, _ = median_ci_ranks(n)
    return low, high


def figure(values: Sequence[float]) -> tuple[int, float, float, float]:
    """(runs, median, and the median's 95 % interval) of one session's runs of a figure, as
    verdicts.stats.summarize gives them (order statistics; under 6 runs the runs' range)."""
    ordered = sorted(values)
    low, high = _ranks(len(ordered))
    return len(ordered), statistics.median(ordered), ordered[low - 1], ordered[high - 1]


#: a track's key: (host, test, workload, workload params, metric, params, unit, direction)
TrackKey = tuple[str, str, str, str, str, str, str, str]


@dataclass(frozen=True)
class SessionPoints:
    """A complete session's contribution to the tracks (session_points)."""

    #: (test, workload, workload params) -> (the kernel it ran under, its options as asked and applied)
    contexts: dict[tuple[str, str, str], tuple[str, str]]
    #: (test, workload, workload params) -> the gate's [verdict, failed, line] on the case
    gates: dict[tuple[str, str, str], list[list]]
    #: (track key, (runs, median, low, high)), a figure of a case each
    points: list[tuple[TrackKey, tuple[int, float, float, float]]]


def session_points(row: SessionRow, cases: Iterable[CaseSummary]) -> SessionPoints:
    contexts, gates, points = {}, {}, []
    for case in cases:
        where = (case.test, case.workload, case.workload_params)
        contexts[where] = (kernel_of(row.manifest, case.manifest), changes.options_of(case.options, case.manifest))
        if case.manifest.get("gate"):
            gates[where] = [[line_verdict(e["line"]), bool(e["failed"]), e["line"]] for e in case.manifest["gate"]]
        for metric, params, unit, direction, values in case.figures:
            if values:
                points.append(((row.host, *where, metric, params, unit, direction), figure(values)))
    return SessionPoints(contexts, gates, points)


@dataclass(frozen=True)
class Facts:
    """What the tracks share: each session's (host, token, started, fsbench commit) and each
    context's (kernel, options)."""

    sessions: dict[int, tuple[str, str, str, str]]
    contexts: list[tuple[str, str]]


@dataclass(frozen=True)
class Case:
    """What one page shows: a test with its workload parameters (a case's figures share them)."""

    test: str
    workload: str
    workload_params: str  # canonical JSON

    @property
    def label(self) -> str:
        return short_test(self.test)


@dataclass
class Track:
    """One figure of one case on one host: a point per complete session, oldest first."""

    host: str
    key: SeriesKey
    unit: str
    direction: Direction
    facts: Facts = field(repr=False)
    sessions: list[int] = field(default_factory=list)
    runs: list[int] = field(default_factory=list)
    medians: list[float] = field(default_factory=list)
    lows: list[float] = field(default_factory=list)
    highs: list[float] = field(default_factory=list)
    contexts: list[int] = field(default_factory=list)  # each point's index in facts.contexts
    changes: list[changes.ChangePoint] = field(default_factory=list)
    mark: str = ""  # a digest of its points (what a publish compares with the last one's)

    @property
    def case(self) -> Case:
        return Case(self.key.test, self.key.workload, self.key.workload_params)

    @property
    def headline(self) -> bool:
        return is_headline(self.key.metric)

    @functools.cached_property
    def started(self) -> list[str]:
        return [self.facts.sessions[s][2] for s in self.sessions]

    def kernel(self, index: int) -> str:
        return self.facts.contexts[self.contexts[index]][0]

    def history(self) -> changes.History:
        """The track as verdicts/changes.py reads a series (its points carry what differed)."""
        return changes.History(self.host, self.key, self.unit, self.direction, Points(self))

    def point(self, index: int) -> changes.Point:
        session = self.sessions[index]
        started, commit = self.facts.sessions[session][2:4]
        return changes.Point(session, started, self.medians[index], *self.facts.contexts[self.contexts[index]],
                             commit)

    def detect(self, found: Sequence[Sequence]) -> None:
        """Keep the change points level_changes found in the medians: (index, start, stop, p)."""
        history = self.history() if found else None
        self.changes = [changes.ChangePoint(history, int(i), int(a), int(b), float(p)) for i, a, b, p in found]


class Points(Sequence):
    """A track's points as a History holds them, each made when asked for (a year of a fleet has
    millions), with the medians as a column."""

    def __init__(self, track: Track) -> None:
        self.track = track
        self.medians = track.medians

    def __len__(self) -> int:
        return len(self.track.sessions)

    def __getitem__(self, index):
        if isinstance(index, slice):
            return [self.track.point(i) for i in range(*index.indices(len(self)))]
        return self.track.point(index if index >= 0 else len(self) + index)


def detect(medians: Sequence[float], metric: str, max_p: float) -> list[tuple[int, int, int, float]]:
    """The change points of a track's medians, as `fsbench changes` finds them; none in a track
    of fewer than changes.MIN_SESSIONS sessions (which `fsbench changes` leaves out)."""
    if len(medians) < changes.MIN_SESSIONS:
        return []
    return changes.level_changes(medians, is_count(metric), max_p)


#: a change point of the newest this many sessions of a host is news: the index colours its cell
RECENT = 7


@dataclass(frozen=True)
class Verdict:
    """A host's word on a case: the newest session's gate verdicts on it, and the newest change
    point of the case's figures (its newest level against the one before), with how many
    sessions ago that level began."""

    session: int  # the newest session
    gate: tuple[str, ...]  # its gate's verdicts on the case (none: not gated)
    failed: bool  # the gate failed the case
    change: changes.ChangePoint | None
    age: int = 0  # sessions of the host since the change point's (0: it came in the newest)

    @property
    def word(self) -> str:
        """regression (the gate's, in the newest session), worse or better (a change point of a
        headline figure in the last RECENT sessions), inconclusive (the gate's), or "": nothing new."""
        if REGRESSION in self.gate:
            return REGRESSION
        c = self.change
        if c is not None and self.age < RECENT and is_headline(c.history.key.metric) and c.verdict != "unchanged":
            return c.verdict
        return INCONCLUSIVE if INCONCLUSIVE in self.gate else ""


def verdict(case_tracks: Sequence[Track], newest: int, gate: Sequence[Sequence]) -> Verdict:
    """A host's verdict on a case from the case's tracks on the host, its newest session and that
    session's gate entries on the case: the newest change point of its headline figures (of two
    as new, a worse one), else of its work counts."""
    def newest_of(tracks: Sequence[Track]) -> tuple[changes.ChangePoint | None, int]:
        latest = [(t.changes[-1], len(t.sessions) - 1 - t.changes[-1].index) for t in tracks if t.changes]
        return min(latest, key=lambda found: (found[1], found[0].verdict != "worse"), default=(None, 0))

    change, age = newest_of([t for t in case_tracks if t.headline])
    if change is None:
        change, age = newest_of(case_tracks)
    return Verdict(newest, tuple(v for v, _, _ in gate), any(f for _, f, _ in gate), change, age)


def primary(case_tracks: Sequence[Track]) -> Track:
    """The track a case is drawn by where there is room for one: its first headline figure in
    MB/s, else ops/s, else seconds, else any headline figure, else the first."""
    order = {"MB/s": 0, "ops/s": 1, "s": 2}
    return min(case_tracks, key=lambda t: (not t.headline, order.get(t.unit, 3), t.key.metric, t.key.params))

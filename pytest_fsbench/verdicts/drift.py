"""How far a session's result moves between sessions on one machine when nothing changed, pooled
from the store's history, so a baseline of one or two sessions gets an honest prediction interval.

For every headline series of one full configuration (test, filesystem, layout, every fs, mount
and mkfs option, workload parameters, cache policy, data, metric, kernel) with several complete
sessions on this host, the sessions' log medians spread about their mean; pooling the squared deviations
of all series, each with its k - 1 degrees of freedom, gives one standard deviation of a session's
log median — the runs' own noise in a median included, so it predicts how far a new session of an
unchanged system lands. Its degrees of freedom are at most the sessions' less one: a machine-wide
slowdown moves all of a session's series together. A real change inside the history counts as drift too: the estimate errs
towards fewer alarms. Pure, but for `from_store`.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from scipy.special import stdtrit

from .disturbance import Load, disturbed, load_of
from ..metrics import is_headline
from ..store.facts import kernel_of
from ..store.results import SeriesKey, Store, canonical

#: the fewest pooled degrees of freedom the gate relies on (a t quantile on fewer is too wide to use)
MIN_DF = 4
#: the power the smallest detectable change is stated at
POWER = 0.8


@dataclass(frozen=True)
class Drift:
    sd: float  # of a session's log median, about its series' mean
    df: int  # pooled degrees of freedom: the sum over series of sessions - 1
    series: int  # series that had several sessions
    sessions: int  # sessions they came from

    @property
    def pct(self) -> float:
        """sd as a percentage of the median."""
        return math.expm1(self.sd) * 100

    def text(self) -> str:
        return (f"this machine's drift between sessions: sd {self.pct:.1f}% of a session's median, pooled from "
                f"{self.series} series of {self.sessions} sessions ({self.df} degrees of freedom)")


def pooled(medians: Iterable[Sequence[float]], sessions: int = 0) -> Drift | None:
    """The pooled drift of several series' session medians (None: no series has two sessions)."""
    squares, df, count = 0.0, 0, 0
    for values in medians:
        logs = [math.log(v) for v in values if v > 0]
        if len(logs) < 2:
            continue
        mean = statistics.fmean(logs)
        squares += sum((x - mean) ** 2 for x in logs)
        df += len(logs) - 1
        count += 1
    if df == 0:
        return None
    # a machine-wide slowdown moves every series of its session alike, so the series are not
    # independent: no more degrees of freedom than the sessions give
    return Drift(math.sqrt(squares / df), min(df, sessions - 1) if sessions else df, count, sessions)


def detectable_pct(drift: Drift, baseline_sessions: int, alpha: float, power: float = POWER) -> float:
    """The smallest slowdown (in %) a session's median reveals against baseline_sessions sessions'
    mean with the given power, one-sided at alpha, at this drift."""
    t = float(stdtrit(drift.df, 1 - alpha)) + float(stdtrit(drift.df, power))
    return -math.expm1(-t * drift.sd * math.sqrt(1 + 1 / baseline_sessions)) * 100


#: a series of one full configuration: its key (test, workload and its parameters, metric and its
#: parameters), the case's spec (filesystem, layout, every fs, mount and mkfs option; a guest's
#: kernel), its cache policy and data, and the kernel it ran under
Configuration = tuple[SeriesKey, str, str, str, str]


def configurations(export: dict) -> dict[tuple[str, str, str], tuple[str, str, str, str]]:
    """(test, workload, workload parameters) -> (spec, cache, data, kernel) of a session's cases
    (export: Store.session_export's). A case's id names its options only where the session's cases
    differ in them, so the spec, not the test's name, tells one configuration from another."""
    session = export["session"]["manifest"]
    return {(case["test"], case["workload"], canonical(case["workload_params"])):
            (canonical(asked(case["spec"])), str(case["cache"]), str(case["data"]), kernel_of(session, case["manifest"]))
            for case in export["cases"]}


def asked(spec: dict) -> dict:
    """The spec as the user asked for it: without the options as mounted, which sessions stored
    before them lack, so a series is not split where only the record grew."""
    return {key: value for key, value in spec.items() if key != "mounted"}


def session_medians(store: Store, session_ids: Iterable[int]) -> Mapping[Configuration, list[float]]:
    """Each headline series' median in each of the sessions that has it, one series per full
    configuration: sessions that differ in an --fs-opt, a cache policy or a kernel are never pooled
    (issue 32: 3 plain and 3 nodelalloc sessions made one series, "drift" sd 74 %)."""
    found: dict[Configuration, list[float]] = {}
    for session_id in session_ids:
        cases = configurations(store.session_export(session_id))
        for s in store.series(session_id):
            if len(s.values) >= 2 and is_headline(s.key.metric):
                case = cases.get((s.key.test, s.key.workload, s.key.workload_params), ("", "", "", ""))
                found.setdefault((s.key, *case), []).append(statistics.median(s.values))
    return found


def from_store(store: Store, host: str, exclude: Iterable[int] = (), calm: Load | None = None) -> Drift | None:
    """The pooled drift of this host's complete sessions (but those excluded), each series one
    full configuration, or None when they give fewer than MIN_DF degrees of freedom. calm: the
    baseline's load; sessions that other processes disturbed beyond it are left out, as the gate
    would not judge them (issue 32: 80 real sessions, the loaded ones pooled into the drift left
    the gate catching a real -50 % in 1 of 8 sessions)."""
    left_out = set(exclude)
    ids = [s.id for s in store.sessions(host=host) if s.status == "complete" and s.id not in left_out]
    if calm is not None:
        ids = [i for i in ids if disturbed(load_of(store.series(i)), calm) is None]
    drift = pooled(session_medians(store, ids).values(), len(ids))
    return drift if drift is not None and drift.df >= MIN_DF else None

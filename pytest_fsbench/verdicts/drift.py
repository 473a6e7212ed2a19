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
    assumed: int = 0  # the degrees of freedom of PRIOR_SD pooled in (with_prior), 0 for none

    @property
    def pct(self) -> float:
        """sd as a percentage of the median."""
        return math.expm1(self.sd) * 100

    def text(self) -> str:
        if self.assumed:
            history = (f" pooled with {self.df - self.assumed} degrees of freedom of this machine's "
                       f"{self.sessions} sessions" if self.df > self.assumed else "")
            return (f"drift between sessions: sd {self.pct:.1f}% of a session's median, assumed until this machine's "
                    f"repeated sessions give {MIN_DF} degrees of freedom (sd {math.expm1(PRIOR_SD) * 100:.0f}% on "
                    f"{self.assumed} degrees of freedom, measured on a shared 2-core VM){history}")
        return (f"this machine's drift between sessions: sd {self.pct:.1f}% of a session's median, pooled from "
                f"{self.series} series of {self.sessions} sessions ({self.df} degrees of freedom)")


#: what a session's log median is taken to drift by between sessions on a machine whose store does
#: not know yet (issue 41: with no drift in the test, 37-44 % of unchanged sessions against a
#: one-session baseline failed when sessions drifted by 10-24 %): the drift measured between quiet
#: sessions of dd write on ext4 on this project's shared 2-core VM (log sd 0.24, issue 32), weighed
#: as MIN_DF degrees of freedom, so a t interval on it keeps false alarms below alpha up to a drift
#: of about 30 %, and this machine's own history replaces it as it grows
PRIOR_SD = 0.24


def with_prior(history: Drift | None) -> Drift:
    """The drift the gate uses: this machine's history once it gives MIN_DF degrees of freedom,
    else PRIOR_SD on MIN_DF degrees of freedom pooled with what history there is."""
    if history is not None and history.df >= MIN_DF:
        return history
    df, sd = (history.df, history.sd) if history is not None else (0, 0.0)
    pooled_sd = math.sqrt((MIN_DF * PRIOR_SD ** 2 + df * sd ** 2) / (MIN_DF + df))
    return Drift(pooled_sd, MIN_DF + df, history.series if history else 0, history.sessions if history else 0,
                 assumed=MIN_DF)


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


def history(store: Store, host: str, exclude: Iterable[int] = (), calm: Load | None = None) -> Drift | None:
    """The pooled drift of this host's complete sessions (but those excluded), each series one
    full configuration, on however few degrees of freedom (None: no series has two sessions).
    calm: the baseline's load; sessions that other processes disturbed beyond it are left out, as
    the gate would not judge them (issue 32: 80 real sessions, the loaded ones pooled into the
    drift left the gate catching a real -50 % in 1 of 8 sessions)."""
    left_out = set(exclude)
    ids = [s.id for s in store.sessions(host=host) if s.status == "complete" and s.id not in left_out]
    if calm is not None:
        ids = [i for i in ids if disturbed(load_of(store.series(i)), calm) is None]
    return pooled(session_medians(store, ids).values(), len(ids))


def for_gate(store: Store, host: str, exclude: Iterable[int] = (), calm: Load | None = None) -> Drift:
    """The drift the gate compares a session with (--drift=machine): this host's history, assumed
    until it tells (with_prior)."""
    return with_prior(history(store, host, exclude, calm))


def from_store(store: Store, host: str, exclude: Iterable[int] = (), calm: Load | None = None) -> Drift | None:
    """history, or None when it gives fewer than MIN_DF degrees of freedom."""
    drift = history(store, host, exclude, calm)
    return drift if drift is not None and drift.df >= MIN_DF else None

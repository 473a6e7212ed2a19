"""What a session compares with: the sessions of a baseline in the store, their samples, the
comparison of a new series with them, and the checks that a gate on them can fire at all; and
a --paired (or kernel A/B) variant's series against its reference case's, by round."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .disturbance import Load, disturbed, load_of
from .drift import Drift
from ..errors import UsageError
from ..metrics import CONTROL, Direction, is_compared, is_count, is_headline, short_test
from .gate import look_level
from .stats import (ADJUSTED_BY_CONTROL, COUNTS, PAIRED, SESSIONS, Comparison, compare, comparison_from_dict,
                    comparison_to_dict, with_figures)
from ..store.facts import check_emulation, emulations
from ..store.results import Series, SeriesKey, Store


class Baseline:
    """The sessions of --compare NAME (oldest first); one session is a baseline of one.

    alpha: the level of a comparison across sessions; looks: the runs at which a sequential gate
    looks (empty: it looks once), which set the per-look level of a run-by-run comparison;
    control: whether this session measures --control, so throughputs compare as its ratios; adjust
    (--control=adjust): adjusted by their estimated relation to the control instead (CUPED)."""

    def __init__(self, store: Store, name: str, session_ids: list[int], *, alpha: float = 0.05,
                 looks: tuple[int, ...] = (), control: bool = False, drift: Drift | None = None,
                 adjust: bool = False) -> None:
        if not session_ids:
            raise UsageError(f"--compare {name}: names only this session; compare with another")
        self.store = store
        self.name = name
        self.session_ids = session_ids
        self.alpha = alpha
        self.looks = looks
        self.control = control
        self.drift = drift  # this machine's drift between sessions, when its history tells
        self.adjust = adjust
        self._series: dict[SeriesKey, list[Series]] | None = None

    @property
    def across_sessions(self) -> bool:
        """Whether the gate compares session medians (several baseline sessions, or the machine's
        drift known and no control runs to compare ratios of), so more runs in this session cannot
        decide it."""
        return self.sessions > 1 or (self.drift is not None and not self.has_control)

    @property
    def has_control(self) -> bool:
        """Whether this session measures --control and the baseline has control runs to match."""
        return self.control and any(key.metric == CONTROL for key in self.series())

    @property
    def newest(self) -> int:
        return self.session_ids[-1]

    @property
    def sessions(self) -> int:
        return len(self.session_ids)

    def check(self) -> None:
        """A baseline without samples cannot gate anything."""
        if not any(self.store.measured_runs(i) for i in self.session_ids):
            raise UsageError(f"--compare {self.name}: session {self.newest} holds no measured "
                             "runs (every case was skipped or failed); compare with a session that measured")

    def fewest_runs(self) -> int:
        """The fewest runs of any series of the newest baseline session."""
        return min((len(s.values) for s in self.store.series(self.newest)), default=0)

    def test_level(self, baseline_runs: int) -> float:
        """The one-sided level of a run-by-run comparison: the gate's per-look level."""
        return look_level(self.alpha, baseline_runs, self.looks)

    def series(self) -> dict[SeriesKey, list[Series]]:
        """The samples by series key, one Series per baseline session that has it."""
        if self._series is None:
            self._series = {}
            for session_id in self.session_ids:
                for s in self.store.series(session_id):
                    self._series.setdefault(s.key, []).append(s)
        return self._series

    def load(self, key: SeriesKey) -> Load:
        """What else used the machine during the baseline's runs of the case key belongs to."""
        return load_of(s for k, group in self.series().items() if same_case(k, key) for s in group)

    def controlled(self, series: Series, control: Sequence[float] | None
                   ) -> tuple[list[tuple[float, ...]], tuple[float, ...], str] | None:
        """With --control: the baseline sessions' and this series' runs as ratios to their runs'
        control, or with --control=adjust adjusted by the control (cuped), and how, as a line names
        it; None when a side has no control for every run."""
        if not self.control or control is None or not normalised_by_control(series):
            return None
        figures = self.series().get(series.key, [])
        controls = self.series().get(control_key(series.key), [])
        mine = ratios(series.values, control)
        theirs = [ratios(f.values, c.values) for f, c in zip(figures, controls)]
        if mine is None or len(figures) != len(controls) or any(t is None for t in theirs):
            return None
        how = ADJUSTED_BY_CONTROL
        if self.adjust:
            pairs = [(f.values, c.values) for f, c in zip(figures, controls)] + [(series.values, tuple(control))]
            theta = control_theta(pairs)
            *theirs, mine = cuped(pairs, theta)
            how = f"{ADJUSTED_BY_CONTROL} (theta {theta:.2f})"
        return [t for t in theirs if t is not None and len(t) >= 2], mine, how

    def comparison(self, series: Series, control: Sequence[float] | None = None) -> Comparison | None:
        """The series against the baseline: as ratios to the control with --control; on the
        machine's drift or its sessions' spread across sessions; else the one session's runs
        (None when there is nothing to compare). A count of the work is compared with every
        baseline run pooled, whatever the drift (count_comparison)."""
        if is_count(series.key.metric):
            return self.count_comparison(series)
        basis = self.controlled(series, control)
        if basis is not None:
            bases, mine, how = basis
            if not bases or len(mine) < 2:
                return None
            try:
                if len(bases) > 1:
                    cmp = compare(bases, mine, series.direction, self.alpha, method=SESSIONS)
                else:
                    cmp = compare(bases[0], mine, series.direction, self.test_level(len(bases[0])))
            except ValueError:  # a zero figure has no ratio on a log scale
                return None
            figures = [v for f in self.series().get(series.key, []) for v in f.values]
            return with_figures(cmp, figures, series.values, how)
        bases = [b for b in self.series().get(series.key, []) if len(b.values) >= 2]
        if not bases or len(series.values) < 2:
            return None
        try:
            if self.drift is not None:
                return compare([b.values for b in bases], series.values, series.direction, self.alpha,
                               method=SESSIONS, drift=(self.drift.sd, self.drift.df))
            if len(bases) > 1:
                return compare([b.values for b in bases], series.values, series.direction, self.alpha,
                               method=SESSIONS)
            return compare(bases[0].values, series.values, series.direction, self.test_level(len(bases[0].values)))
        except ValueError:  # a zero or negative sample cannot be compared on a log scale
            return None

    def count_comparison(self, series: Series) -> Comparison | None:
        """A count of the work against every baseline session's runs pooled: no machine's drift
        moves a count, so runs are compared with runs across sessions, at the per-look level."""
        runs = [v for b in self.series().get(series.key, []) for v in b.values]
        if len(runs) < 2 or len(series.values) < 2:
            return None
        try:
            return compare(runs, series.values, series.direction, self.test_level(len(runs)), method=COUNTS)
        except ValueError:
            return None


#: the units of figures a control's speed scales (MB/s and the like)
RATE_UNITS = ("MB/s", "ops/s")


def control_key(key: SeriesKey) -> SeriesKey:
    """The key of the control series measured beside a figure's runs."""
    return SeriesKey(key.test, key.workload, key.workload_params, CONTROL, "{}")


def normalised_by_control(series: Series) -> bool:
    """Whether a figure is compared as its ratio to the control: a headline throughput or rate,
    which a slower machine lowers as it lowers the control (a time rises instead, and a share of
    CPU is no speed at all)."""
    return is_headline(series.key.metric) and series.direction is Direction.HIGHER and series.unit in RATE_UNITS


def ratios(values: Sequence[float], control: Sequence[float]) -> tuple[float, ...] | None:
    """Each run's figure over the same run's control (None unless they pair up one to one)."""
    if len(values) != len(control) or not all(c > 0 for c in control):
        return None
    return tuple(v / c for v, c in zip(values, control))


#: the range of cuped's theta: a figure moves with the machine's speed at most as the control does,
#: and never against it (a negative slope within a session is noise, not a machine that writes faster
#: when it is slower)
THETA_RANGE = (0.0, 1.0)


def control_theta(pairs: Sequence[tuple[Sequence[float], Sequence[float]]]) -> float:
    """CUPED's theta: the slope of a run's log figure on its control's log, estimated within sessions
    (each session's runs about their session's means, pooled: cov / var), so a real change between
    sessions never enters it; clipped to THETA_RANGE, 0 when the controls do not vary. With the
    least-squares theta the adjusted runs spread no more than the figures within the sessions."""
    sxy = sxx = 0.0
    for figures, controls in pairs:
        if len(figures) < 2 or len(figures) != len(controls):
            continue
        y, x = np.log(np.asarray(figures, float)), np.log(np.asarray(controls, float))
        sxy += float(((x - x.mean()) * (y - y.mean())).sum())
        sxx += float(((x - x.mean()) ** 2).sum())
    if sxx <= 0:
        return 0.0
    return min(max(sxy / sxx, THETA_RANGE[0]), THETA_RANGE[1])


def cuped(pairs: Sequence[tuple[Sequence[float], Sequence[float]]], theta: float) -> list[tuple[float, ...]]:
    """Each session's figures adjusted by the control: log figure - theta x (log control - the mean
    log control of all runs), back on the figure's scale; theta 0 leaves them as they are, 1 is the
    ratio to the control (times a constant)."""
    logs = [np.log(np.asarray(c, float)) for _, c in pairs]
    centre = float(np.mean(np.concatenate(logs))) if logs else 0.0
    return [tuple(float(v) for v in np.exp(np.log(np.asarray(f, float)) - theta * (x - centre)))
            for (f, _), x in zip(pairs, logs)]


def control_ratios(series: list[Series]) -> dict[SeriesKey, tuple[float, ...]]:
    """A session's headline figures as their runs' ratios to their --control runs, where every run
    has one (the others are left out)."""
    by_key = {s.key: s for s in series}
    found = {}
    for s in series:
        control = by_key.get(control_key(s.key)) if is_headline(s.key.metric) and s.key.metric != CONTROL else None
        values = ratios(s.values, control.values) if control is not None else None
        if values is not None:
            found[s.key] = values
    return found


def compare_pairs(store: Store, base_ids: list[int], new_id: int, alpha: float, given: str | None = None):
    """Each headline series of new_id against the baseline: one session's runs, or the spread of
    several sessions' medians; adjusted by the control (each run's figure over its --control run's)
    when every session measured it beside the figure, as the gate compares them, the medians staying
    the figures' own. A case measured emulated on one side only is a UsageError."""
    theirs: dict[str, str | None] = {}
    for base_id in base_ids:
        theirs.update(emulations(store.case_manifests(base_id)))
    check_emulation(theirs, emulations(store.case_manifests(new_id)),
                    given or f"comparing session {new_id} with {', '.join(map(str, base_ids))}")
    bases = [store.series(base_id) for base_id in base_ids]
    base_ratios = [control_ratios(found) for found in bases]
    new = store.series(new_id)
    new_ratios = control_ratios(new)
    pairs = []
    for s in new:
        figures = [b.values for found in bases for b in found if b.key == s.key and len(b.values) >= 2]
        if not figures or len(s.values) < 2 or not is_compared(s.key.metric, s.unit):
            continue
        if is_count(s.key.metric):  # runs pooled across the baseline's sessions: no drift moves a count
            try:
                pairs.append((short_test(s.key.test), s, compare([v for values in figures for v in values], s.values,
                                                                  s.direction, alpha, method=COUNTS)))
            except ValueError:
                pass
            continue
        adjusted = s.key in new_ratios and all(s.key in theirs for found, theirs in zip(bases, base_ratios)
                                               if any(b.key == s.key for b in found))
        mine, b = ((new_ratios[s.key], [found[s.key] for found in base_ratios if s.key in found]) if adjusted
                   else (s.values, figures))
        b = [values for values in b if len(values) >= 2]
        try:
            cmp = (compare(b, mine, s.direction, alpha, method=SESSIONS) if len(b) > 1
                   else compare(b[0], mine, s.direction, alpha))
        except ValueError:
            continue
        if adjusted:
            cmp = with_figures(cmp, [v for values in figures for v in values], s.values, ADJUSTED_BY_CONTROL)
        pairs.append((short_test(s.key.test), s, cmp))
    return pairs


def disturbances(store: Store, base_ids: Sequence[int], new_id: int, keys: Sequence[SeriesKey],
                 rule=disturbed) -> dict[tuple[str, str, str], str]:
    """(test, workload, workload params) -> the line saying the case's runs in new_id were disturbed
    beyond its runs in the baseline sessions, for the cases of keys that were; rule=busier_baseline:
    the line saying the baseline's runs were disturbed beyond these."""
    found = {}
    for key in {(k.test, k.workload, k.workload_params): k for k in keys}.values():
        line = rule(load_of(case_series(store, new_id, key)),
                    load_of(s for i in base_ids for s in case_series(store, i, key)))
        if line is not None:
            found[(key.test, key.workload, key.workload_params)] = line
    return found


def case_series(store: Store, session_id: int, key: SeriesKey) -> list[Series]:
    """The series of key's case in a session."""
    return [s for s in store.series(session_id, test=key.test) if same_case(s.key, key)]


def same_case(a: SeriesKey, b: SeriesKey) -> bool:
    """Whether two series were measured by one case: its test, workload and workload parameters."""
    return (a.test, a.workload, a.workload_params) == (b.test, b.workload, b.workload_params)


#: the key of a case's manifest that keeps the gate's comparisons with the baseline, so a report
#: made later shows the very comparisons the gate's lines state (its level, its adjustment)
COMPARED = "compared"


def compared_record(baseline_ids: Sequence[int], comparisons: Sequence[tuple[Series, Comparison]]) -> dict:
    """The gate's comparisons of a case, as its manifest keeps them."""
    return {"baseline": list(baseline_ids),
            "comparisons": [{"metric": s.key.metric, "params": s.key.params,
                             "comparison": comparison_to_dict(cmp)} for s, cmp in comparisons]}


def gated_against(cases: Sequence[dict]) -> list[int]:
    """The baseline sessions the session's gate compared its cases with, as its manifests keep them
    (one list for the whole session; [] when it gated nothing or its cases name different ones)."""
    found = {tuple(case["manifest"][COMPARED]["baseline"]) for case in cases if case.get("manifest", {}).get(COMPARED)}
    return list(found.pop()) if len(found) == 1 else []


def compared_name(argv: Sequence[str]) -> str | None:
    """The --compare value a session's command line gave (--compare=NAME or --compare NAME)."""
    for i, arg in enumerate(argv):
        if arg.startswith("--compare="):
            return arg.partition("=")[2]
        if arg == "--compare" and i + 1 < len(argv):
            return argv[i + 1]
    return None


def gated_baseline(store: Store, session_id: int) -> tuple[list[int], str | None]:
    """(the baseline sessions, their name) the session's gate compared with, or ([], None): what a
    report of it compares with when none is named (issue 43: a gated session's report opens with
    the gate's verdicts). Its manifests keep the sessions' ids, which are this store's: a session
    pushed into another store keeps its first store's, so they count only while --compare's name
    (a baseline's, or a session's id) still names them here."""
    meta = store.session_export(session_id)
    ids = gated_against(meta["cases"])
    name = compared_name(meta["session"].get("args", {}).get("argv", []))
    if not ids or name is None:
        return [], None
    named = store.baselines().get(name, [int(name)] if name.isdigit() else [])
    if session_id in ids or not set(ids) <= set(named):
        return [], None
    return ids, name


def compared_sides(store: Store, base_ids: Sequence[int], session_id: int) -> tuple[dict[SeriesKey, Series],
                                                                                  tuple[str, str]]:
    """What the answer names of a comparison's sides: each series of the baseline sessions by its
    key, the newest (whose options it had); and (the baseline's host kernel, the session's) where
    they differ, else ("", "")."""
    bases = {s.key: s for base_id in base_ids for s in store.series(base_id)}
    manifests = store.manifests([base_ids[-1], session_id])
    theirs, mine = (manifests.get(i, {}).get("kernel", "") for i in (base_ids[-1], session_id))
    return bases, (theirs, mine) if theirs and mine and theirs != mine else ("", "")


def gate_comparisons(cases: Sequence[dict], base_ids: Sequence[int]) -> dict[tuple[str, str, str],
                                                                            Comparison]:
    """(test, metric, params) -> the comparison the session's gate made against exactly these
    baseline sessions (cases: Store.session_export's)."""
    found = {}
    for case in cases:
        record = case["manifest"].get(COMPARED)
        if not record or record["baseline"] != list(base_ids):
            continue
        for entry in record["comparisons"]:
            key = (case["test"], entry["metric"], entry["params"])
            found[key] = comparison_from_dict(entry["comparison"])
    return found


def as_the_gate_compared(pairs: list[tuple[str, Series, Comparison]], cases: Sequence[dict],
                         base_ids: Sequence[int]) -> list[tuple[str, Series, Comparison]]:
    """Each comparison as the new session's gate made it against the same baseline, where it did
    (its level, its drift, its adjustment: one answer per comparison, in the report and in
    fsbench compare alike); the others as computed (cases: the new session's, Store.session_export's)."""
    gated = gate_comparisons(cases, base_ids)
    return [(case, s, gated.get((s.key.test, s.key.metric, s.key.params), cmp)) for case, s, cmp in pairs]


#: the key of a variant case's manifest that names its reference case (kept so a report made
#: after the session pairs them as the session did)
PAIRED_WITH = "paired_with"


def pair_up(references: list[Series], variants: list[Series], rounds: int,
            alpha: float) -> list[tuple[Series, Comparison]]:
    """Each variant series against the reference's series of the same workload, parameters and
    metric, paired by round, once both have all their rounds (a side with rounds to go, or one
    that lost a round, pairs nothing)."""
    def by_key(found: list[Series]) -> dict[tuple[str, ...], Series]:
        return {(s.key.workload, s.key.workload_params, s.key.metric, s.key.params): s for s in found}

    refs = by_key(references)
    pairs = []
    for key, v in by_key(variants).items():
        r = refs.get(key)
        if r is None or not len(r.values) == len(v.values) == rounds:
            continue
        try:  # a count of the work is no drifting figure that pairing by round would steady
            pairs.append((v, compare(r.values, v.values, v.direction, alpha,
                                     method=COUNTS if is_count(v.key.metric) else PAIRED)))
        except ValueError:  # a zero figure has no ratio on a log scale
            continue
    return pairs


def paired_pairs(store: Store, session_id: int, cases: list[dict], alpha: float):
    """Each headline series of the session's --paired (or kernel A/B) variants against its
    reference case, as the session compared them, from what the store keeps: the variant case's
    manifest names its reference and the rounds (cases: Store.session_export's)."""
    pairs = []
    for case in cases:
        paired = case["manifest"].get(PAIRED_WITH)
        if not paired:
            continue
        found = pair_up(store.series(session_id, test=paired["reference"]),
                        store.series(session_id, test=case["test"]), int(paired["rounds"]), alpha)
        pairs += [(short_test(s.key.test), s, cmp) for s, cmp in found if is_compared(s.key.metric, s.unit)]
    return pairs

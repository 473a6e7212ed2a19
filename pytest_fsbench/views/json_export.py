"""A session as JSON in the shape of pytest-benchmark's files (machine_info, commit_info,
benchmarks with stats), so tooling that reads those can read fsbench's. Each benchmark entry is
one metric of one case; its unit and direction are in extra_info (pytest-benchmark's are always
seconds, lower is better). A --paired (or kernel A/B) variant's entries carry its comparison
with the reference case (extra_info.paired), in the words and numbers the tables print; the gate's
lines are in each case's manifest."""

from __future__ import annotations

import json
import math

from .. import __version__
from ..measure import cache_check
from ..metrics import metric_label
from ..verdicts.baseline import PAIRED_WITH, paired_pairs
from ..verdicts.stats import DEFAULT_ALPHA, comparison_record, format_comparison, summarize
from ..store.results import Store
from ..store.facts import emulation
from ..options import output_mark


def _finite(value: float) -> float | None:
    return None if math.isnan(value) or math.isinf(value) else value


def paired_record(series, cmp, reference: str) -> dict[str, object]:
    """A variant's comparison with its reference case, for the exports."""
    return {"reference": reference, **comparison_record(cmp),
            "line": format_comparison(metric_label(series.key.metric, series.key.params), cmp, series.unit)}


def benchmark_stats(values, s) -> dict[str, object]:
    """Every field of pytest-benchmark's stats, computed as it computes them (its compare reads
    each: ops, outliers and total too; a stddev of one value is 0, not missing)."""
    stddev = s.stddev if s.n > 1 and math.isfinite(s.stddev) else 0.0
    beyond_stddev = sum(1 for v in values if v < s.mean - stddev or v > s.mean + stddev)
    total = sum(values)
    return {
        "min": s.min, "max": s.max, "mean": s.mean, "median": s.median, "stddev": stddev,
        "q1": s.q1, "q3": s.q3, "iqr": s.iqr, "rounds": s.n, "iterations": 1,
        "iqr_outliers": len(s.outliers), "stddev_outliers": beyond_stddev,
        "outliers": f"{beyond_stddev};{len(s.outliers)}", "data": list(values),
        "ld15iqr": min((v for v in values if v >= s.q1 - 1.5 * s.iqr), default=s.min),
        "hd15iqr": max((v for v in values if v <= s.q3 + 1.5 * s.iqr), default=s.max),
        "ops": s.n / total if total else 0, "total": total,
    }


def benchmark_entry(series, cases_by_test: dict[str, dict], shares: dict | None = None,
                    paired: dict | None = None) -> dict[str, object]:
    s = summarize(series.values)
    share = cache_check.figure_share(shares or {}, series)
    case = cases_by_test.get(series.key.test, {})
    params = json.loads(series.key.params)
    name = series.key.test.split("::")[-1]
    return {
        "group": series.key.workload,
        "name": f"{name} {series.key.metric}" + "".join(f"[{k}={v}]" for k, v in sorted(params.items())),
        "fullname": series.key.test,
        "params": params,
        "param": case.get("case_id"),
        "stats": benchmark_stats(series.values, s),
        "extra_info": {
            "metric": series.key.metric, "unit": series.unit, "direction": series.direction.value,
            "case": series.case_id, "workload_params": json.loads(series.key.workload_params),
            "median_ci95": [_finite(x) for x in s.median_ci], "mean_ci95": [_finite(x) for x in s.mean_ci],
            "sem": _finite(s.sem), "cv": _finite(s.cv), "cache": case.get("cache"), "data": case.get("data"),
            "stopped_by": case.get("stopped_by"), "manifest": case.get("manifest"),
            "emulated": emulation(case.get("manifest") or {}) == "emulated",
            "disk_share_pct": share, "served_from_cache": None if share is None else cache_check.served_from_cache(share),
            **({"paired": paired[series.key]} if paired and series.key in paired else {}),
        },
    }


def export_session(store: Store, session_id: int) -> dict[str, object]:
    meta = store.session_export(session_id)
    session = meta["session"]
    cases_by_test = {c["test"]: c for c in meta["cases"]}
    manifest = session["manifest"]
    every = store.series(session_id)
    shares = cache_check.share_index(every)
    paired = paired_index(store, session_id, meta["cases"])
    return {
        "machine_info": {"node": manifest.get("hostname"), "release": manifest.get("kernel"),
                         "cpu": {"brand_raw": manifest.get("cpu"), "count": manifest.get("cpus")},
                         "python_version": manifest.get("python"), **manifest},
        "commit_info": {"id": manifest.get("fsbench_commit"), "project": "fsbench"},
        "benchmarks": [benchmark_entry(s, cases_by_test, shares, paired) for s in every],
        "datetime": session["started"],
        "version": __version__,
        "fsbench_session": session,
        "_written_by": output_mark("export"),  # first of the sorted keys: near the top
    }


def paired_index(store: Store, session_id: int, cases: list[dict]) -> dict:
    """SeriesKey -> the export's record of each variant series' comparison with its reference (at
    the default --alpha, as a session without --alpha compares them)."""
    references = {c["test"]: c["manifest"][PAIRED_WITH]["reference"] for c in cases if c["manifest"].get(PAIRED_WITH)}
    return {s.key: paired_record(s, cmp, references[s.key.test])
            for _, s, cmp in paired_pairs(store, session_id, cases, DEFAULT_ALPHA)}


# --- the commands' --json documents: the same verdicts and numbers as their text -----------------


def outcome_record(outcome) -> dict[str, object]:
    """One `fsbench compare` comparison (a gate.Outcome) as its row and gate line say it."""
    s, cmp = outcome.series, outcome.comparison
    return {"case": outcome.case, "test": s.key.test, "metric": s.key.metric,
            "params": json.loads(s.key.params), "workload_params": json.loads(s.key.workload_params),
            "unit": s.unit, "direction": s.direction.value,
            **comparison_record(cmp), "gate": outcome.gate, "failed": outcome.failed,
            "disturbed": outcome.disturbed, "busier_baseline": outcome.busier,
            "line": format_comparison(metric_label(s.key.metric, s.key.params), cmp, s.unit)}


def comparison_document(base_ids: list[int], new_id: int, hosts: dict[int, str], notes: list[str],
                        found: list, rules, alpha: float, status: int) -> dict[str, object]:
    """`fsbench compare --json`: the sessions, the rules, every comparison and the exit status."""
    return {"base_sessions": base_ids, "new_session": new_id, "hosts": {str(i): h for i, h in hosts.items()},
            "notes": notes, "alpha": alpha,
            "rules": [{"metric": r.metric, "allowed_pct": r.threshold_pct} for r in rules],
            "comparisons": [outcome_record(o) for o in found],
            "failed": sum(o.failed for o in found), "exit_status": status}


def sessions_document(store_path: str, rows, ran: dict[int, dict] | None = None) -> dict[str, object]:
    """`fsbench sessions --json`: the store's sessions, as the table lists them, each with what it
    ran (store.facts.ran: filesystems, layouts, options, paired, kernels, selection, kernel, tests)."""
    ran = ran or {}
    return {"store": str(store_path),
            "sessions": [{"id": r.id, "token": r.token, "started": r.started, "finished": r.finished,
                          "status": r.status, "host": r.host, "ran": ran.get(r.id, {})} for r in rows]}


def change_record(change) -> dict[str, object]:
    """One change point (changes.ChangePoint) with the sessions on each side and what differed."""
    h, points = change.history, change.history.points
    return {"host": h.host, "series": h.label, "test": h.key.test, "metric": h.key.metric,
            "params": json.loads(h.key.params), "workload_params": json.loads(h.key.workload_params),
            "unit": h.unit, "direction": h.direction.value, "session": change.session.session_id,
            "started": change.session.started, "before": change.before, "after": change.after,
            "change_pct": _finite(change.change_pct), "verdict": change.verdict, "p": change.pvalue,
            "before_sessions": [points[change.start].session_id, change.previous.session_id],
            "after_sessions": [change.session.session_id, points[change.stop - 1].session_id],
            "differences": [{"what": what, "before": old, "after": new}
                            for what, old, new in change.differences()]}


def changes_document(analysis, store_path: str) -> dict[str, object]:
    """`fsbench changes --json`: the machines and their sessions, the series read and each change point."""
    return {"store": str(store_path), "max_pvalue": analysis.max_pvalue, "hosts": analysis.hosts,
            "series": [h.label for h in analysis.histories], "left_out": analysis.left_out,
            "changes": [change_record(c) for c in analysis.changes]}

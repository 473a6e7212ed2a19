"""Whether a figure came from the storage or from a cache: its own I/O set against what the disk
monitor saw reach the target's member devices while it ran.

A tool that says how many bytes a figure moved (dd, IOzone, fio) gives each figure an `io`
("read" or "write", bytes). Within one measured command the figures take the devices' bytes in the
order they ran (IOzone's read before its reread), each at most what it needs; what a filesystem
compresses needs only bytes / ratio. The share of its need that a figure got is stored as
`disk.share` (%) beside it, and a figure whose median share is below FROM_CACHE_BELOW is "served
from cache" in every view. Zeros are not checked: a filesystem may store them as holes.
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Iterable

from ..metrics import Direction, Metric
from ..store.results import Series, canonical

SHARE = "disk.share"
#: below this share (%) of its bytes reaching the devices, a figure was served from a cache
FROM_CACHE_BELOW = 50.0


def shares(metrics: Iterable[Metric], read_bytes: float, write_bytes: float,
           ratio: float | None = None) -> list[Metric]:
    """disk.share of each figure that declares its I/O, in run order (see the module's docstring)."""
    left = {"read": float(read_bytes), "write": float(write_bytes)}
    found = []
    for metric in metrics:
        if metric.io is None or metric.io[1] <= 0:
            continue
        kind, nbytes = metric.io
        needed = nbytes / max(ratio or 1.0, 1.0)
        seen = min(needed, left[kind])
        left[kind] -= seen
        found.append(Metric(SHARE, 100.0 * seen / needed, "%", Direction.HIGHER,
                            {**metric.params, "metric": metric.name}))
    return found


def share_key(metric: str, params_json: str) -> str:
    """The params (canonical JSON) of the disk.share series that checks this figure."""
    return canonical({**json.loads(params_json), "metric": metric})


def share_index(series: Iterable[Series]) -> dict[tuple[str, str, str, str], float]:
    """Each disk.share series' median, by (test, workload, workload params, params); the store
    keeps params as canonical JSON, as share_key makes them."""
    return {(s.key.test, s.key.workload, s.key.workload_params, s.key.params): statistics.median(s.values)
            for s in series if s.key.metric == SHARE and s.values}


def figure_share(index: dict[tuple[str, str, str, str], float], figure: Series) -> float | None:
    """The median disk.share of a figure (None: not checked)."""
    key = figure.key
    return index.get((key.test, key.workload, key.workload_params, share_key(key.metric, key.params)))


def served_from_cache(share: float | None) -> bool:
    return share is not None and share < FROM_CACHE_BELOW


def cache_note(share: float | None, cache: str | None = None) -> str:
    """'' for a figure from the storage or not checked; else why it is marked."""
    if not served_from_cache(share):
        return ""
    asked = " as --cache=warm asks" if cache == "warm" else ""
    return f"served from cache{asked}: {share:.0f}% of its bytes reached the disks"


def source_label(share: float | None) -> str:
    """'storage', 'cache' or '' (not checked), for a table column."""
    if share is None:
        return ""
    return "cache" if served_from_cache(share) else "storage"

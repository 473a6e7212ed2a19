"""Whether a figure came from the storage or from a cache: its own I/O set against what the disk
monitor saw reach the target's member devices while it ran.

A tool that says how many bytes a figure moved (dd, IOzone, fio, bonnie++, Filebench) gives each
figure an `io` ("read" or "write", bytes; or both, for a figure of concurrent reads and writes like
Filebench's IO Summary). Within one measured command the figures take the devices' bytes in the
order they ran (IOzone's read before its reread), each at most what it needs; what a filesystem
compresses needs only bytes / ratio. Figures that describe the same bytes (Filebench's ops/s beside
its MB/s) share one share. The share of its need that a figure got is stored as `disk.share` (%)
beside it, and a figure whose median share is below FROM_CACHE_BELOW is "served from cache" in
every view. Zeros are not checked: a filesystem may store them as holes.
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
    """disk.share of each figure that declares its I/O, in run order (see the module's docstring).

    A figure of reads and writes (several io parts) takes each part's bytes from its kind; its
    share is what it got of all it needed. A figure `same_io_as` an earlier one gets its share.
    """
    left = {"read": float(read_bytes), "write": float(write_bytes)}
    found = []
    earlier: dict[tuple[str, tuple[tuple[str, str], ...]], float] = {}
    for metric in metrics:
        params = tuple(sorted(metric.params.items()))
        if metric.same_io_as is not None:
            share = earlier.get((metric.same_io_as, params))
        else:
            share = _take(io_parts(metric.io), left, max(ratio or 1.0, 1.0))
        if share is None:
            continue
        earlier[(metric.name, params)] = share
        found.append(Metric(SHARE, share, "%", Direction.HIGHER, {**metric.params, "metric": metric.name}))
    return found


def io_parts(io: tuple[str, int] | tuple[tuple[str, int], ...] | None) -> tuple[tuple[str, int], ...]:
    """A figure's io as (kind, bytes) pairs: none, one, or one per kind."""
    if io is None:
        return ()
    if isinstance(io[0], str):
        return (io,)  # type: ignore[return-value]
    return io  # type: ignore[return-value]


def _take(parts: tuple[tuple[str, int], ...], left: dict[str, float], ratio: float) -> float | None:
    """The share (%) of its bytes a figure takes from what is left of each kind (None: no bytes)."""
    needed = seen = 0.0
    for kind, nbytes in parts:
        need = max(nbytes, 0) / ratio
        got = min(need, left[kind])
        left[kind] -= got
        needed, seen = needed + need, seen + got
    return None if needed <= 0 else 100.0 * seen / needed


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

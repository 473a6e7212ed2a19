"""Ordering assertions: "btrfs raid10 writes faster than ext4 single", "zfs compression=gzip beats
off on compressible data" — true only when the difference is significant, with the gate's
message style."""

from __future__ import annotations

from collections.abc import Sequence

from ..metrics import Direction
from .stats import compare, format_comparison


def assert_better(metric: str, better: tuple[str, Sequence[float]], worse: tuple[str, Sequence[float]],
                  direction: Direction, unit: str = "", alpha: float = 0.05) -> None:
    """Raise AssertionError unless better's samples are significantly better than worse's.

    better and worse are (label, samples); the message reads like the regression gate's, from
    worse to better: "ext4-single -> btrfs-raid10 dd.write 410 -> 620 MB/s +51.2% [...] p=0.002"."""
    (better_label, better_values), (worse_label, worse_values) = better, worse
    cmp = compare(worse_values, better_values, direction, alpha)
    line = f"{worse_label} -> {better_label} {format_comparison(metric, cmp, unit)}"
    if cmp.verdict != "better":
        raise AssertionError(f"{better_label} is not significantly better than {worse_label}: {line}")


class SessionResults:
    """The measured samples of this session's cases, for ordering tests that run after them."""

    def __init__(self, session) -> None:
        self.session = session

    def samples(self, case_id: str, metric: str, test: str = "") -> tuple[tuple[float, ...], Direction, str]:
        """(samples, direction, unit) of metric in case_id, in the last test whose id contains
        test; no samples when none was measured in this session."""
        found = [s for s in self.session.store.series(self.session.session_id)
                 if s.case_id == case_id and s.key.metric == metric and test in s.key.test]
        if not found:
            return (), Direction.HIGHER, ""
        return found[-1].values, found[-1].direction, found[-1].unit

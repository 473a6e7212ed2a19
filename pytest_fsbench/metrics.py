"""Metrics: a value with a unit and a direction (is higher or lower better)."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum


class Direction(str, Enum):
    HIGHER = "higher"  # throughput, ops/s
    LOWER = "lower"  # time, latency


@dataclass(frozen=True)
class Metric:
    """One measured value. Throughput is always MB/s (10^6 bytes per second)."""

    name: str
    value: float
    unit: str
    direction: Direction
    params: dict[str, str] = field(default_factory=dict)

    def to_dict(self) -> dict[str, object]:
        return {
            "name": self.name,
            "value": self.value,
            "unit": self.unit,
            "direction": self.direction.value,
            "params": dict(self.params),
        }


MB = 1_000_000

#: metrics that describe a run (CPU, device counters, compression) rather than measure the
#: workload: shown beside the headline figures, gated only when a rule names them
SIDE_METRICS = ("cpu.", "disk.", "fs.")


def is_headline(name: str) -> bool:
    return not name.startswith(SIDE_METRICS)


def mb_per_s(nbytes: float, seconds: float) -> float:
    """Throughput in MB/s (10^6 bytes/s)."""
    return nbytes / seconds / MB

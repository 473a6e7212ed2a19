"""Metrics: a value with a unit and a direction (is higher or lower better)."""

from __future__ import annotations

import json
import re
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
    #: the figure's own I/O, ("read" or "write", bytes), or several such pairs for a figure of both
    #: (Filebench's IO Summary), where the tool says how much it moved: what the disk monitor checks
    #: it against (cache_check); not stored, the check's share is
    io: tuple[str, int] | tuple[tuple[str, int], ...] | None = None
    #: the name of an earlier figure of the same command and params whose bytes this figure's are
    #: (Filebench's ops/s beside its MB/s): it gets that figure's share and takes no bytes itself
    same_io_as: str | None = None

    def to_dict(self) -> dict[str, object]:
        return {
            "name": self.name,
            "value": self.value,
            "unit": self.unit,
            "direction": self.direction.value,
            "params": dict(self.params),
        }


MB = 1_000_000

#: unit -> (dimension, factor to the dimension's base unit)
UNITS: dict[str, tuple[str, float]] = {
    "MB/s": ("throughput", 1.0), "GB/s": ("throughput", 1000.0), "kB/s": ("throughput", 1e-3),
    "KB/s": ("throughput", 1e-3), "MiB/s": ("throughput", 1.048576),
    "KiB/s": ("throughput", 1.024e-3), "GiB/s": ("throughput", 1073.741824),
    "s": ("time", 1.0), "ms": ("time", 1e-3), "us": ("time", 1e-6), "min": ("time", 60.0),
    "ops/s": ("rate", 1.0), "IOPS": ("rate", 1.0), "%": ("percent", 1.0),
    # the work a run did (measure/work.py): bytes, requests and commits, and the same per byte moved
    "MB": ("bytes", 1.0), "GB": ("bytes", 1000.0), "req": ("requests", 1.0), "commits": ("commits", 1.0),
    "x": ("bytes per byte", 1.0), "req/MB": ("requests per MB", 1.0), "/GB": ("events per GB", 1.0),
}


def in_mb_per_s(value: float, unit: str) -> tuple[float, str]:
    """A throughput in any unit of UNITS as MB/s (fsbench's one throughput unit); other values
    unchanged."""
    dimension, factor = UNITS.get(unit, ("", 1.0))
    return (value * factor, "MB/s") if dimension == "throughput" else (value, unit)


@dataclass(frozen=True)
class MetricSpec:
    """Metric names a workload produces (a regular expression) and their unit, so a rule about a
    metric can be checked before anything runs."""

    pattern: str
    unit: str
    shown: str  # the names as a person reads them, e.g. "iozone.<test>"

    def matches(self, name: str) -> bool:
        return re.fullmatch(self.pattern, name) is not None


#: metrics measured around every run, whatever the workload
RUN_METRICS: tuple[MetricSpec, ...] = (
    MetricSpec(r"cpu\.(user|system|iowait|tool|others)", "%", "cpu.user|system|iowait|tool|others"),
    MetricSpec(r"disk\.(read|write)", "MB", "disk.read|write"),
    MetricSpec(r"disk\.others", "MB/s", "disk.others"),
    MetricSpec(r"disk\.(read|write)_ops", "ops", "disk.read_ops|write_ops"),
    MetricSpec(r"disk\.share", "%", "disk.share"),
    MetricSpec(r"fs\.compressratio", "x", "fs.compressratio"),
    MetricSpec(r"control\.write", "MB/s", "control.write"),
    MetricSpec(r"work\.(written|read)", "MB", "work.written|read"),
    MetricSpec(r"work\.(write|read)_requests", "req", "work.write_requests|read_requests"),
    MetricSpec(r"work\.(flushes|discards)", "req", "work.flushes|discards"),
    MetricSpec(r"work\.commits", "commits", "work.commits"),
    MetricSpec(r"work\.(write|read)_amp", "x", "work.write_amp|read_amp"),
    MetricSpec(r"work\.requests_per_mb", "req/MB", "work.requests_per_mb"),
    MetricSpec(r"work\.(flushes|commits)_per_gb", "/GB", "work.flushes_per_gb|commits_per_gb"),
)

#: metrics that describe a run (CPU, device counters, compression, the work it did) rather than
#: measure the workload: shown beside the headline figures, gated only when a rule names them
SIDE_METRICS = ("cpu.", "disk.", "fs.", "control.", "work.")
#: the work a run did (measure/work.py): counts other processes do not change
WORK = "work."
#: a rule's short name for every count of the work per byte moved (--fail-on-regression=work:5%)
ALL_WORK = "work"
#: the work per byte the workload moved, which ALL_WORK gates
WORK_PER_BYTE = ("work.write_amp", "work.read_amp", "work.requests_per_mb", "work.flushes_per_gb",
                 "work.commits_per_gb")
#: how prose names each count of the work per byte moved
WORK_NAMES = {"work.write_amp": "device bytes per byte written", "work.read_amp": "device bytes per byte read",
              "work.requests_per_mb": "requests per MB", "work.flushes_per_gb": "flushes per GB",
              "work.commits_per_gb": "commits per GB"}
#: the key of a case's manifest that says where its work was counted
WORK_COUNTED = "work_counted"
#: --control's reference: the machine's direct-I/O write speed just before each run
CONTROL = "control.write"


def is_headline(name: str) -> bool:
    return not name.startswith(SIDE_METRICS)


def is_count(name: str) -> bool:
    """Whether a metric counts the work a run did (device bytes, requests, flushes, commits): a
    figure other processes do not change."""
    return name.startswith(WORK)


def mb_per_s(nbytes: float, seconds: float) -> float:
    """Throughput in MB/s (10^6 bytes/s)."""
    return nbytes / seconds / MB


SUMMARY_UNITS = ("MB/s", "ops/s", "s")


def in_summary(name: str, unit: str) -> bool:
    """The tables show each workload's headline figures; every metric is in the store."""
    return unit in SUMMARY_UNITS and is_headline(name) and "flowop" not in name


def is_compared(name: str, unit: str) -> bool:
    """What every comparison view compares: the headline figures, and beside them the work per
    byte moved (issue 41)."""
    return in_summary(name, unit) or name in WORK_PER_BYTE


def params_text(params_json: str) -> str:
    return ",".join(f"{k}={v}" for k, v in sorted(json.loads(params_json).items()))


def metric_label(metric: str, params_json: str) -> str:
    """A figure as the gate's lines and the exports name it: dd.write bs=1M,data=random,size=8M."""
    return f"{metric} {params_text(params_json)}".rstrip()


def short_test(test: str) -> str:
    return test.split("::")[-1]

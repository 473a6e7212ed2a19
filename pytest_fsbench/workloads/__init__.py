"""Workloads: pure argv builders and output parsers, one module per tool."""

from ..metrics import RUN_METRICS, MetricSpec
from . import bonnie, dd, filebench, fio, iozone, kernel_build

#: every metric fsbench can measure (PTS profiles' metrics, pts.*, have the profile's own units)
KNOWN_METRICS: tuple[MetricSpec, ...] = (
    *dd.METRICS, *iozone.METRICS, *filebench.METRICS, *fio.METRICS, *bonnie.METRICS, *kernel_build.METRICS,
    *RUN_METRICS, MetricSpec(r"pts\.[\w.-]+", "", "pts.<profile>"),
)

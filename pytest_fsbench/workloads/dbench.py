"""dbench: the file-server load of Samba's NetBench traces, replayed by N clients for a time
(the classic filesystem benchmark mmtests and PTS run).

    dbench -D WORKDIR -t SECONDS CLIENTS

dbench 4 prints a line per second while it runs, then a table of the operations it replayed and
one summary line:

     Operation      Count    AvgLat    MaxLat
     ----------------------------------------
     NTCreateX       7377     0.032     7.170
     ...
    Throughput 45.8373 MB/sec  2 clients  2 procs  max_latency=109.952 ms

The throughput counts the bytes the clients read and wrote after the warm-up (a fifth of the
run), divided by the time, in 10^6 bytes per second (dbench computes 1e-6 * bytes / t): fsbench's
MB/s. Latencies are milliseconds; "(sync open)" / "(sync dirs)" may follow "MB/sec". A run whose
client failed prints no Throughput line (and exits 1): ParseError.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from ..errors import ParseError
from ..metrics import Direction, Metric, MetricSpec
from .params import ONE, Param, positive

METRICS = (
    MetricSpec(r"dbench\.throughput", "MB/s", "dbench.throughput"),
    MetricSpec(r"dbench\.(max_latency|op_avg_latency|op_max_latency)", "ms",
               "dbench.max_latency|op_avg_latency|op_max_latency"),
)
#: programs the cases need (program -> Debian package); checked before a target is built
TOOLS = {"dbench": "dbench"}
PARAMS = (
    Param("dbench-clients", "1,4", "dbench client counts", positive),
    Param("dbench-time", "20", "dbench run time in seconds (the first fifth is warm-up)", positive, kind=ONE),
)
_SUMMARY = re.compile(r"^Throughput\s+(?P<mbs>[0-9.eE+-]+)\s+MB/sec.*?\s(?P<clients>\d+)\s+clients\s+\d+\s+procs"
                      r"\s+max_latency=(?P<lat>[0-9.]+)\s+ms\s*$", re.MULTILINE)
_OPERATION = re.compile(r"^\s*(?P<op>[A-Za-z]+)\s+(?P<count>\d+)\s+(?P<avg>[0-9.]+)\s+(?P<max>[0-9.]+)\s*$")


def parse_dbench(output: str) -> list[Metric]:
    """Throughput, the worst latency, and each operation's average and worst latency."""
    summary = _SUMMARY.search(output)
    if summary is None:
        raise ParseError("dbench", "no Throughput line (a client failed?)", output)
    metrics = [Metric("dbench.throughput", float(summary["mbs"]), "MB/s", Direction.HIGHER),
               Metric("dbench.max_latency", float(summary["lat"]), "ms", Direction.LOWER)]
    table = output[output.find(" Operation"):summary.start()] if " Operation" in output else ""
    for line in table.splitlines():
        row = _OPERATION.match(line)
        if row and row["op"] != "Operation":
            metrics += [Metric("dbench.op_avg_latency", float(row["avg"]), "ms", Direction.LOWER, {"op": row["op"]}),
                        Metric("dbench.op_max_latency", float(row["max"]), "ms", Direction.LOWER, {"op": row["op"]})]
    return metrics


@dataclass(frozen=True)
class Dbench:
    """clients: concurrent clients replaying the load; seconds: run time (dbench counts only what
    follows its warm-up, a fifth of it)."""

    clients: int = 1
    seconds: int = 20
    name: str = "dbench"

    def __post_init__(self) -> None:
        if self.clients < 1 or self.seconds < 1:
            raise ValueError(f"dbench needs clients >= 1 and seconds >= 1, got {self.clients} and {self.seconds}")

    @property
    def timeout(self) -> float:
        return self.seconds * 3 + 300.0  # setup and cleanup of the clients' trees

    def files(self) -> dict[str, str]:
        return {}

    def prepare_argvs(self, workdir: Path, scratch: Path) -> list[list[str]]:
        return []

    def argv(self, workdir: Path, scratch: Path) -> list[str]:
        return ["dbench", "-D", str(workdir), "-t", str(self.seconds), str(self.clients)]

    def parse(self, output: str) -> list[Metric]:
        return parse_dbench(output)

    def params(self) -> dict[str, str]:
        return {"clients": str(self.clients), "seconds": str(self.seconds)}

    def space_needed(self, copy_on_write: bool) -> int:
        """Each client's tree of the NetBench load holds about 30 MB at its peak."""
        return self.clients * 40_000_000 * (2 if copy_on_write else 1)

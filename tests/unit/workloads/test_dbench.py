"""dbench: argv, and parsing of real captured outputs (tests/data/dbench)."""

from pathlib import Path

import pytest

from pytest_fsbench.errors import ParseError
from pytest_fsbench.metrics import Direction
from pytest_fsbench.workloads import KNOWN_METRICS, PARAMS, missing_tools
from pytest_fsbench.workloads.dbench import Dbench, parse_dbench

DATA = Path(__file__).parents[2] / "data" / "dbench"


def by_name(metrics):
    return {(m.name, m.params.get("op", "")): m for m in metrics}


def test_argv_and_params():
    dbench = Dbench(clients=4, seconds=30)
    assert dbench.argv(Path("/mnt/t/fsbench"), Path("/scratch")) == ["dbench", "-D", "/mnt/t/fsbench", "-t", "30", "4"]
    assert dbench.params() == {"clients": "4", "seconds": "30"}
    with pytest.raises(ValueError, match="clients >= 1"):
        Dbench(clients=0)


@pytest.mark.parametrize("name, throughput, max_latency, flush_avg", [
    ("ext4-1client.txt", 42.6143, 109.538, 10.140),
    ("ext4-2clients.txt", 45.8373, 109.952, 14.117),
    ("ext4-4clients.txt", 103.837, 205.022, 19.290),
])
def test_parse_real_outputs(name, throughput, max_latency, flush_avg):
    metrics = by_name(parse_dbench((DATA / name).read_text()))
    assert metrics[("dbench.throughput", "")].value == throughput
    assert metrics[("dbench.throughput", "")].unit == "MB/s"
    assert metrics[("dbench.throughput", "")].direction is Direction.HIGHER
    assert metrics[("dbench.max_latency", "")].value == max_latency
    assert metrics[("dbench.op_avg_latency", "Flush")].value == flush_avg
    ops = {op for (name_, op) in metrics if name_ == "dbench.op_avg_latency"}
    assert {"NTCreateX", "Close", "ReadX", "WriteX", "Flush"} <= ops and "Operation" not in ops
    assert all(m.unit == "ms" and m.direction is Direction.LOWER for (n, _), m in metrics.items() if "latency" in n)


def test_a_failed_client_is_a_parse_error():
    with pytest.raises(ParseError, match="(?s)cannot parse dbench output: no Throughput line.*Child failed with status 1"):
        parse_dbench((DATA / "missing-directory.txt").read_text())


def test_registered_with_its_metrics_and_parameters():
    assert any(spec.matches("dbench.throughput") for spec in KNOWN_METRICS)
    assert [p.name for p in PARAMS if p.name.startswith("dbench-")] == ["dbench-clients", "dbench-time"]


def test_a_missing_dbench_is_a_reason_before_anything_is_built():
    assert missing_tools(["fsbench", "dbench_clients"], which=lambda program: None) == [
        "dbench is not installed (Debian package dbench)"]
    assert missing_tools(["fsbench", "dbench_clients"], which=lambda program: "/usr/bin/" + program) == []
    assert missing_tools(["fsbench"], which=lambda program: None) == []  # no workload's parameters

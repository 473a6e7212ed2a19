import pytest

from pytest_fsbench.case import CaseSpec
from pytest_fsbench.errors import UsageError
from pytest_fsbench.metrics import Direction, Metric
from pytest_fsbench.verdicts.thresholds import parse_threshold, violations

RAID10 = CaseSpec("btrfs", "raid10")
WRITE = Metric("dd.write", 41.2, "MB/s", Direction.HIGHER, {"bs": "1M"})


def test_failure_message_names_case_metric_value_and_limit():
    rule = parse_threshold("dd.write>=100MB/s")
    assert violations([rule], RAID10, [WRITE]) == ["btrfs-raid10 dd.write bs=1M 41.2 MB/s < 100 MB/s"]


def test_passes_at_or_above_limit():
    assert violations([parse_threshold("dd.write>=41.2MB/s")], RAID10, [WRITE]) == []


def test_units_are_converted():
    assert violations([parse_threshold("dd.write>=0.04GB/s")], RAID10, [WRITE]) == []
    assert violations([parse_threshold("dd.write>=40MiB/s")], RAID10, [WRITE]) != []  # 41.9 MB/s


def test_upper_limit_for_times():
    build = Metric("kernel_build.seconds", 950.0, "s", Direction.LOWER)
    assert violations([parse_threshold("kernel_build.seconds<=15min")], RAID10, [build]) == [
        "btrfs-raid10 kernel_build.seconds 950 s > 15 min"
    ]


@pytest.mark.parametrize("scope, applies", [
    ("btrfs", True), ("btrfs-raid10", True), ("btrfs-raid1", False), ("zfs", False), ("btrfs-raid", False),
])
def test_scope(scope, applies):
    rule = parse_threshold(f"{scope}:dd.write>=100MB/s")
    assert bool(violations([rule], RAID10, [WRITE])) is applies


def test_scope_prefix_covers_option_variants():
    spec = CaseSpec("btrfs", "raid10", (("compress", "zstd"),))
    assert violations([parse_threshold("btrfs-raid10:dd.write>=100MB/s")], spec, [WRITE])


def test_other_metrics_are_not_touched():
    assert violations([parse_threshold("dd.read>=100MB/s")], RAID10, [WRITE]) == []


@pytest.mark.parametrize("text, message", [
    ("dd.write>100MB/s", "expected \\[SCOPE:\\]METRIC>=VALUE"),
    ("dd.write>=fast", "expected"),
    ("dd.write>=100furlongs", "unknown unit 'furlongs'"),
])
def test_malformed(text, message):
    with pytest.raises(UsageError, match=message):
        parse_threshold(text)


def test_unit_of_another_dimension_is_an_error():
    with pytest.raises(UsageError, match="is in s but dd.write is measured in MB/s"):
        violations([parse_threshold("dd.write>=100s")], RAID10, [WRITE])

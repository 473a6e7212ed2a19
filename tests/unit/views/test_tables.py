import re

import pytest

from pytest_fsbench.bench import CaseResult, case_key, failure_text
from pytest_fsbench.metrics import Direction
from pytest_fsbench.verdicts.stats import compare
from pytest_fsbench.store.results import Series, SeriesKey
from pytest_fsbench.measure.progress import unwrap
from pytest_fsbench.views.tables import comparison_lines, results_table, unstack

TEST = "benchmarks/test_dd.py::test_dd_write[btrfs-single-1M]"


def series(metric: str, values, unit="MB/s", direction=Direction.HIGHER) -> Series:
    return Series(SeriesKey(TEST, "dd", '{"bs":"1M"}', metric, '{"bs":"1M"}'), "btrfs-single", unit, direction, tuple(values))


def test_round_ids_are_dropped_from_the_key():
    assert case_key("b/t.py::test_x[ext4-single-1M-round3]") == "b/t.py::test_x[ext4-single-1M]"
    assert case_key("b/t.py::test_x[ext4-single-1M]") == "b/t.py::test_x[ext4-single-1M]"


def test_results_table_shows_headline_metrics_with_cpu_and_compression():
    write = series("dd.write", [100, 110, 90, 105, 95, 100])
    side = [series("cpu.user", [10] * 6, "%", Direction.LOWER), series("cpu.system", [20] * 6, "%", Direction.LOWER),
            series("fs.compressratio", [2.0] * 6, "x")]
    earlier_round = CaseResult(TEST, "btrfs-single", [series("dd.write", [100])], None)
    lines = results_table([earlier_round, CaseResult(TEST, "btrfs-single", [write, *side], "runs")])
    assert not lines[2].startswith("test_") and all(len(line) <= 120 for line in lines)  # the latest result only
    # the params every row shares are said once, in the legend; columns blank in every row are left out
    assert lines[0].split() == ["case", "metric", "median", "unit", "n", "ci95", "cpu%", "compress"]
    assert lines[1].split() == ["test_dd_write[btrfs-single-1M]", "dd.write", "100", "MB/s", "6",
                                "+-10.0%", "30", "machine", "2.00"]  # no cpu.tool: the machine's
    legend = " ".join(lines[2:])
    assert "params of every row: bs=1M" in legend and "others%" not in legend and legend.startswith("ci95:")
    assert "every row stopped by: runs" in legend  # what stopped the runs, the same in every row: said once
    tool = series("cpu.tool", [7] * 6, "%", Direction.LOWER)
    lines = results_table([CaseResult(TEST, "btrfs-single", [write, *side, tool], "runs")])
    assert lines[1].split()[6:8] == ["7", "2.00"]
    other = Series(SeriesKey(TEST, "dd", '{"bs":"64K"}', "dd.write", '{"bs":"64K"}'), "btrfs-single", "MB/s",
                   Direction.HIGHER, (50.0,) * 6)
    lines = results_table([CaseResult(TEST, "btrfs-single", [write], "runs"),
                           CaseResult(TEST.replace("1M", "64K"), "btrfs-single", [other], "runs")])
    assert "params" in lines[0].split() and "bs=64K" in lines[2].split() and "params of every row" not in " ".join(lines)
    stopped = results_table([CaseResult(TEST, "btrfs-single", [write], "runs"),
                             CaseResult(TEST.replace("1M", "64K"), "btrfs-single", [other], "ci")])
    assert stopped[0].split()[-1] == "stopped" and stopped[2].split()[-1] == "ci"  # not the same in every row: a column
    # ZFS stores zeros as holes: their ratio of about 1 is said to count none of them
    zeros = CaseResult(TEST, "zfs-single", [write, *side[:2], series("fs.compressratio", [1.0] * 6, "x")], "runs",
                       fs="zfs", data="zeros")
    assert "1.00 (zeros stored as holes)" in results_table([zeros])[1]


LONG = "benchmarks/test_dd.py::test_dd_write[btrfs-single-compress=zstd-data=50%-1M]"


def test_a_table_too_wide_says_its_unit_once_then_stacks_its_rows():
    """Issue 35: a table fits the width it is given; no cell is lost on the way."""
    long = Series(SeriesKey(LONG, "dd", '{"bs":"1M"}', "dd.write", '{"bs":"1M"}'), "btrfs-single", "MB/s",
                  Direction.HIGHER, (283.0,) * 10)
    others = series("cpu.others", [67] * 6, "%", Direction.LOWER)
    results = [CaseResult(LONG, "btrfs-single", [long, others], "runs"),
               CaseResult(TEST, "btrfs-single", [series("dd.write", [390] * 6), others], "runs")]
    assert results_table(results, 200)[0].split()[:5] == ["case", "metric", "median", "unit", "n"]
    # 98 columns with the unit, 92 without it: said once below
    lines = results_table(results, 95)
    assert lines[0].split()[:4] == ["case", "metric", "median", "n"] and "unit of every row: MB/s" in " ".join(lines)
    assert all(len(line) <= 95 for line in lines), lines
    # narrower still: each case on a line of its own, its cells (the unit among them) indented under it
    lines = results_table(results, 60)
    assert lines[:2] == ["case", "    metric    median  unit  n   ci95    others%"], lines
    assert lines[2] == "test_dd_write[btrfs-single-compress=zstd-data=50%-1M]"
    assert lines[3].split() == ["dd.write", "283", "MB/s", "10", "+-0.0%", "67"]
    assert all(len(line) <= 60 for line in lines), lines
    whole = [columns for columns in (re.split(r"\s{2,}", line.strip()) for line in unstack(lines)[:3])]
    assert whole == [["case", "metric", "median", "unit", "n", "ci95", "others%"],
                     ["test_dd_write[btrfs-single-compress=zstd-data=50%-1M]", "dd.write", "283", "MB/s", "10",
                      "+-0.0%", "67"],
                     ["test_dd_write[btrfs-single-1M]", "dd.write", "390", "MB/s", "6", "+-0.0%", "67"]]
    assert unwrap(lines)[:4] == lines[:4]  # a stacked row's cells are not a wrapped line's rest
    base = series("dd.write", [100, 101, 99, 100, 102, 98])
    worse = compare(base.values, [90, 91, 89, 90, 92, 88], Direction.HIGHER)
    lines = comparison_lines([("test_dd_write[btrfs-single-compress=zstd-data=50%-1M]", base, worse)], 0.05,
                             base="reference")
    assert lines[:2] == ["case", "    metric    reference  new  unit  change   ci90             p      n    verdict"]
    assert lines[3].split()[:5] == ["dd.write", "100", "90", "MB/s", "-10.0%*"] and lines[3].endswith("worse")
    assert all(len(line) <= 120 for line in lines), lines


def test_comparison_lines_order_and_counts():
    base = series("dd.write", [100, 101, 99, 100, 102, 98])
    worse = compare(base.values, [90, 91, 89, 90, 92, 88], Direction.HIGHER)
    same = compare(base.values, [100, 101, 99, 100, 102, 98], Direction.HIGHER)
    lines = comparison_lines([("b", base, same), ("a", base, worse)], 0.05)
    assert lines[1].startswith("a ") and lines[1].endswith("worse") and "-10.0%*" in lines[1]
    assert lines[2].endswith("not significant")
    assert lines[3].startswith("1 worse, 0 better, 1 not significant") and "params of every row: bs=1M" in lines[-1]
    assert "params" not in lines[0].split() and all(len(line) <= 120 for line in lines)
    assert comparison_lines([], 0.05) == ["no case here has samples in the baseline to compare with"]


def test_assert_better_needs_significance():
    from pytest_fsbench.verdicts.assertions import assert_better

    slow, fast = [100, 101, 99, 100, 102, 98], [120, 121, 119, 120, 122, 118]
    assert_better("dd.write", ("btrfs-raid10", fast), ("ext4-single", slow), Direction.HIGHER, "MB/s")
    with pytest.raises(AssertionError, match=r"^ext4-single is not significantly better than btrfs-raid10: "
                       r"btrfs-raid10 -> ext4-single dd.write 120 -> 100 MB/s -16.7%"):
        assert_better("dd.write", ("ext4-single", slow), ("btrfs-raid10", fast), Direction.HIGHER, "MB/s")
    with pytest.raises(AssertionError, match="n=2/2 not significant"):  # 2 runs a side can never be significant
        assert_better("dd.write", ("a", fast[:2]), ("b", slow[:2]), Direction.HIGHER, "MB/s")
    # for a time, lower is better
    assert_better("kernel_build.seconds", ("zfs", slow), ("ext4", fast), Direction.LOWER, "s")


def test_the_rest_of_the_time_is_never_a_rounding_minus():
    from pytest_fsbench.views.tables import time_line, time_shares

    steps = {"measured": 60.4, "warm-up runs": 13.0, "preparing": 56.0, "cache policy": 17.0,
             "building targets": 2.0, "tearing down targets": 3.0, "fsbench in runs": 1.0}
    # wall time to the second (152 s) a little short of the steps' 152.4 s: rounding, shown as 0
    rest = time_shares({"session": 152.0, **steps})[-1]
    assert rest[0] == "the rest" and rest[1] == 0.0 and rest[2] == 0.0
    line = time_line({"session": 152.0, **steps})
    assert line.endswith("the rest 0 s (0%)") and "-0" not in line
    # further below zero than the second's rounding: a bookkeeping error, and it shows
    assert time_shares({"session": 150.0, **steps})[-1][1] == pytest.approx(-2.4)
    assert time_line({"session": 150.0, **steps}).endswith("the rest -2 s (-2%)")
    # a positive rest is the rest, whatever its size
    assert time_shares({"session": 152.9, **steps})[-1][1] == pytest.approx(0.5)
    assert time_line({"measured": 1.0, "session": None}) == "time: measured 1 s"


def test_a_gate_failure_fits_the_terminal():
    """Issue 35: pytest prints the failure's text as it is, so each line is fitted here."""
    gate = ("btrfs-single-compress=zstd regression: dd.write bs=1M,data=50%,size=64M 390.4 -> 283 MB/s -30.2% "
            "[90% CI -43.4%, -11.9%] p=0.002 n=10/10 worse (paired by round with btrfs-single)")
    text = failure_text([gate, "a threshold\nits second line"], 80)
    lines = text.splitlines()
    assert all(len(line) <= 80 for line in lines) and lines[1].startswith("  ")
    assert lines[-2:] == ["a threshold", "its second line"]
    assert unwrap(lines)[0] == gate
    assert failure_text([gate], 200) == gate

import zlib

import numpy as np
import psutil
import pytest

from pytest_fsbench.datagen import BLOCK, block_pattern, parse_data, write_data
from pytest_fsbench.errors import UsageError
from pytest_fsbench.monitor import Snapshot, cpu_metrics, disk_metrics


@pytest.mark.parametrize("text, percent", [("zeros", 100), ("random", 0), ("0%", 0), ("50%", 50), ("100%", 100)])
def test_data_specs(text, percent):
    assert parse_data(text).percent == percent


@pytest.mark.parametrize("text", ["101%", "half", "50", "-5%", ""])
def test_bad_data_specs(text):
    with pytest.raises(UsageError, match="use zeros, random, or a compressible percentage"):
        parse_data(text)


@pytest.mark.parametrize("text, ratio", [("random", 1.0), ("25%", 4 / 3), ("50%", 2.0), ("75%", 4.0)])
def test_compressibility_is_what_it_says(tmp_path, text, ratio):
    path = tmp_path / "data"
    write_data(str(path), 4 << 20, parse_data(text))
    data = path.read_bytes()
    assert len(data) == 4 << 20
    achieved = len(data) / len(zlib.compress(data, 6))
    assert achieved == pytest.approx(ratio, rel=0.05)


def test_same_seed_same_data_and_odd_sizes():
    a = block_pattern(50, np.random.default_rng(7), 3)
    b = block_pattern(50, np.random.default_rng(7), 3)
    assert a == b and len(a) == 3 * BLOCK and a[BLOCK // 2:BLOCK] == bytes(BLOCK // 2)


def test_odd_size(tmp_path):
    write_data(str(tmp_path / "x"), 5000, parse_data("50%"))
    assert (tmp_path / "x").stat().st_size == 5000


def cpu(**fields):
    names = psutil.cpu_times()._fields
    return psutil.cpu_times().__class__(**{n: fields.get(n, 0.0) for n in names})


def test_cpu_and_disk_deltas():
    before = Snapshot(cpu(user=10, system=5, idle=100, iowait=1), {"loop0": (0, 0, 0, 0), "loop1": (10, 10, 1, 1)})
    after = Snapshot(cpu(user=40, system=25, idle=130, iowait=11), {"loop0": (2_000_000, 0, 5, 0),
                                                                      "loop1": (1_000_010, 3_000_010, 3, 8)})
    assert {m.name: round(m.value, 3) for m in cpu_metrics(before, after)} == {
        "cpu.user": 33.333, "cpu.system": 22.222, "cpu.iowait": 11.111}
    assert {m.name: m.value for m in disk_metrics(before, after)} == {
        "disk.read": 3.0, "disk.write": 3.0, "disk.read_ops": 7.0, "disk.write_ops": 7.0}


def test_the_tools_own_cpu_is_its_childrens_over_the_wall_time():
    import psutil

    from pytest_fsbench.monitor import snapshot, tool_cpu
    from pytest_fsbench.system import execute

    before = snapshot([])
    execute(["python3", "-c", "sum(range(30_000_000))"])
    after = snapshot([])
    [metric] = tool_cpu([(before, after)])
    assert metric.name == "cpu.tool" and metric.unit == "%"
    # one busy process: at most one CPU's worth, and it did burn CPU
    assert 0 < metric.value <= 100.0 / (psutil.cpu_count() or 1) * 1.05

from pathlib import Path

import pytest

from pytest_fsbench.errors import ParseError
from pytest_fsbench.metrics import Direction
from pytest_fsbench.workloads.datagen import DataSet
from pytest_fsbench.workloads.dd import DdRead, DdWrite, parse_dd

DATA = Path(__file__).parents[2] / "data" / "dd"


def read(name: str) -> str:
    return (DATA / name).read_text()


def test_write_throughput_from_bytes_and_seconds():
    [metric] = DdWrite(block_size="1M", total_size="64M").parse(read("write_64M.txt"))
    assert metric.name == "dd.write"
    assert metric.unit == "MB/s" and metric.direction is Direction.HIGHER
    assert metric.value == pytest.approx(67108864 / 0.0875647 / 1e6)  # dd itself rounds to 766 MB/s
    assert metric.params == {"bs": "1M", "size": "64M", "data": "random"}


def test_read():
    [metric] = DdRead(block_size="1M", total_size="64M").parse(read("read_64M.txt"))
    assert metric.name == "dd.read"
    assert metric.value == pytest.approx(67108864 / 0.00638041 / 1e6)  # dd printed 10.5 GB/s


def test_small_units():
    result = parse_dd(read("write_4K_one_block.txt"))
    assert (result.bytes, result.seconds) == (4096, 0.000585903)


@pytest.mark.parametrize("name", ["fail_no_dir.txt", "truncated.txt", "VERSION.txt"])
def test_outputs_without_a_result_raise(name):
    with pytest.raises(ParseError, match="cannot parse dd output"):
        parse_dd(read(name))


def test_short_copy_is_not_a_result():
    # ENOSPC: dd reports 8 MiB copied of the 16 MiB asked for
    with pytest.raises(ParseError, match="copied 8388608 bytes, expected 16777216"):
        DdWrite(block_size="1M", total_size="16M").parse(read("fail_no_space.txt"))


def test_zeros_come_from_dev_zero():
    write = DdWrite(block_size="64K", total_size="1M", data="zeros")
    assert write.prepare_argvs(Path("/mnt/t/fsbench"), Path("/tmp/s")) == [["rm", "-f", "/mnt/t/fsbench/dd.dat"]]
    assert write.argv(Path("/mnt/t/fsbench"), Path("/tmp/s")) == [
        "dd", "if=/dev/zero", "of=/mnt/t/fsbench/dd.dat", "bs=65536", "count=16", "conv=fdatasync"]


def test_other_data_is_a_data_set_generated_once_per_session():
    write = DdWrite(block_size="1M", total_size="2M", data="50%")
    assert write.prepare_argvs(Path("/m"), Path("/s")) == [["rm", "-f", "/m/dd.dat"]]
    assert write.datasets() == {"dd-source.dat": DataSet(2097152, "50%")}
    assert DdRead(block_size="64K", total_size="2M", data="50%").datasets() == write.datasets()
    assert write.argv(Path("/m"), Path("/s"))[1] == "if=/s/dd-source.dat"
    assert DdWrite(data="zeros").datasets() == {}


def test_read_writes_its_file_once_then_rereads_it():
    read_ = DdRead(block_size="1M", total_size="2M", data="zeros")
    assert read_.prepare_argvs(Path("/m"), Path("/s")) == []
    assert read_.prepare_once_argvs(Path("/m"), Path("/s")) == [
        ["dd", "if=/dev/zero", "of=/m/dd-read.dat", "bs=1048576", "count=2", "conv=fsync"]]
    assert read_.argv(Path("/m"), Path("/s")) == ["dd", "if=/m/dd-read.dat", "of=/dev/null", "bs=1048576"]


def test_figures_declare_their_io():
    metric = DdWrite(block_size="1M", total_size="64M").parse(read("write_64M.txt"))[0]
    assert metric.io == ("write", 64 * 1024 * 1024)


def test_direct_io():
    assert DdRead(total_size="1M").direct_io().argv(Path("/m"), Path("/s"))[-1] == "iflag=direct"
    assert DdWrite(total_size="1M").direct_io().argv(Path("/m"), Path("/s"))[-1] == "oflag=direct"
    assert DdWrite(total_size="1M").direct_io().params()["direct"] == "1"


def test_bad_data():
    with pytest.raises(Exception, match="use zeros, random, or a compressible percentage"):
        DdWrite(data="150%")


def test_total_must_be_whole_blocks():
    with pytest.raises(ValueError, match="not a multiple of block size"):
        DdWrite(block_size="3M", total_size="10M")

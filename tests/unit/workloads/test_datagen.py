import zlib

import numpy as np
import pytest

from pytest_fsbench.workloads.datagen import BLOCK, DataSpec, block_pattern, parse_data, write_data
from pytest_fsbench.errors import UsageError


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


@pytest.mark.parametrize("text, spelled", [("050%", "50%"), ("0%", "random"), ("00%", "random"), ("100%", "100%"),
                                           (" random ", "random"), ("zeros", "zeros")])
def test_one_spelling_per_data(text, spelled):
    """Issue 34: equal data are one case; 100% stays apart from zeros (dd reads /dev/zero for zeros)."""
    assert str(parse_data(text)) == spelled


def test_zero_percent_writes_what_random_writes(tmp_path):
    write_data(str(tmp_path / "a"), 1 << 20, parse_data("0%"))
    write_data(str(tmp_path / "b"), 1 << 20, DataSpec("random"))
    assert (tmp_path / "a").read_bytes() == (tmp_path / "b").read_bytes()

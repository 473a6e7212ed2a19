"""dd: sequential write and read, one freshly built filesystem per case.

    pytest --fs=ext4,btrfs --layout=single,raid1 -k dd
"""

import pytest

from pytest_fsbench.workloads.dd import DdRead, DdWrite

BLOCK_SIZES = ["1M"]
TOTAL_SIZE = "256M"


@pytest.mark.parametrize("bs", BLOCK_SIZES)
def test_dd_write(fsbench, bs):
    fsbench.run(DdWrite(block_size=bs, total_size=TOTAL_SIZE))


@pytest.mark.parametrize("bs", BLOCK_SIZES)
def test_dd_read(fsbench, bs):
    fsbench.run(DdRead(block_size=bs, total_size=TOTAL_SIZE))

"""dd: sequential write and read, one freshly built filesystem per case.

    pytest --fs=ext4,btrfs --layout=single,raid1 -k dd --dd-bs=64K,1M --dd-size=1G
"""

from pytest_fsbench.workloads.dd import DdRead, DdWrite


def test_dd_write(fsbench, dd_bs, dd_size):
    fsbench.measure(DdWrite(block_size=dd_bs, total_size=dd_size, data=fsbench.data))


def test_dd_read(fsbench, dd_bs, dd_size):
    fsbench.measure(DdRead(block_size=dd_bs, total_size=dd_size, data=fsbench.data))

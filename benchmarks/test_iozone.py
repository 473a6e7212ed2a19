"""IOzone: the studies' tests over record-size x file-size sweeps, and throughput mode.

    pytest --fs=btrfs,zfs -k iozone --iozone-record=64K,128K,1M,16M --iozone-file=2xRAM

Each run measures the storage: the write group first, its flush timed (-e), then each other
group as its own command on the kept file with the cache policy applied before it (Iozone's
phases). The file lives on the target; its data pattern is IOzone's own.
"""

import pytest

from pytest_fsbench.sizes import parse_size, resolve_size
from pytest_fsbench.workloads.iozone import NOT_IN_THROUGHPUT, Iozone


def file_size(fsbench, iozone_file: str) -> str:
    return resolve_size(iozone_file, fsbench.ram_bytes)


@pytest.mark.fsbench_own_data("IOzone")
def test_iozone(fsbench, iozone_record, iozone_file, iozone_tests):
    size = file_size(fsbench, iozone_file)
    if parse_size(iozone_record) > parse_size(size):
        pytest.skip(f"record {iozone_record} is larger than the file ({size})")
    fsbench.measure(Iozone(tests=tuple(iozone_tests), record=iozone_record, file=size, flush=True, cpu=True))


@pytest.mark.fsbench_own_data("IOzone")
def test_iozone_throughput(fsbench, iozone_record, iozone_file, iozone_tests, iozone_processes):
    processes = int(iozone_processes)
    per_process = f"{parse_size(file_size(fsbench, iozone_file)) // processes // 1024}K"
    if parse_size(iozone_record) > parse_size(per_process):
        pytest.skip(f"record {iozone_record} is larger than each process's file ({per_process})")
    tests = tuple(t for t in iozone_tests if t not in NOT_IN_THROUGHPUT)
    fsbench.measure(Iozone(tests=tests, record=iozone_record, file=per_process, flush=True,
                       processes=processes))

"""fio: sequential and random reads and writes, with the case's data compressibility.

    pytest --fs=btrfs --fs-opt btrfs:compress=zstd -k fio --data=50% --fio-rw=write,randwrite
"""

from pytest_fsbench.workloads.datagen import parse_data
from pytest_fsbench.workloads.fio import Fio


def test_fio(fsbench, fio_rw, fio_bs, fio_size):
    # fio fills buffers with a compressible share of zeros; 'random' is 0 %, 'zeros' 100 %
    compressible = parse_data(fsbench.data).percent
    fsbench.measure(Fio(rw=fio_rw, bs=fio_bs, size=fio_size, buffer_compress_percentage=compressible))

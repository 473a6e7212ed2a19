"""bonnie++ as the ZFS-features study ran it: block I/O, seeks, file create/stat/delete.

    pytest --fs=zfs -k bonnie --fs-opt zfs:compression=off --fs-opt zfs:compression=on
"""

from pytest_fsbench.workloads.bonnie import Bonnie


def test_bonnie(fsbench, bonnie_size, bonnie_files):
    fsbench.own_data("bonnie++")
    fsbench.measure(Bonnie(size_mb=int(bonnie_size), files_k=int(bonnie_files)))

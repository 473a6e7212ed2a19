"""bonnie++ as the ZFS-features study ran it: block I/O, seeks, file create/stat/delete.

    pytest --fs=zfs -k bonnie --fs-opt zfs:compression=off --fs-opt zfs:compression=on
"""

import pytest

from pytest_fsbench.workloads.bonnie import Bonnie


@pytest.mark.fsbench_own_data("bonnie++")
def test_bonnie(fsbench, bonnie_size, bonnie_files):
    fsbench.measure(Bonnie(size_mb=int(bonnie_size), files_k=int(bonnie_files)))

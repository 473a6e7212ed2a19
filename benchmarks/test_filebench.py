"""Filebench personalities (the studies ran fileserver, webserver, oltp and varmail).

    FSBENCH_FILEBENCH=/opt/filebench/bin/filebench pytest --fs=ext4,btrfs -k filebench
    pytest -k filebench --filebench-scale=paper --filebench-runtime=60    # S1's sizes

The stock personality is read from the Filebench installation and only its variables are set.
Without filebench the case skips before its target is built.
"""

import pytest

from pytest_fsbench.workloads.filebench import Filebench, find_filebench


@pytest.mark.fsbench_own_data("Filebench")
def test_filebench(fsbench, filebench_personality, filebench_scale, filebench_runtime):
    fsbench.measure(Filebench.from_installation(filebench_personality, filebench_scale,
                                            runtime=int(filebench_runtime), binary=find_filebench()))

"""dbench: the NetBench file-server load replayed by N clients (mmtests and PTS run it).

    pytest --fs=ext4,xfs,btrfs -k dbench --dbench-clients=1,4,16 --dbench-time=60
"""

import pytest

from pytest_fsbench.workloads.dbench import Dbench


@pytest.mark.fsbench_own_data("dbench")
def test_dbench(fsbench, dbench_clients, dbench_time):
    fsbench.measure(Dbench(clients=int(dbench_clients), seconds=int(dbench_time)))

"""dbench: the NetBench file-server load replayed by N clients (mmtests and PTS run it).

    pytest --fs=ext4,xfs,btrfs -k dbench --dbench-clients=1,4,16 --dbench-time=60
"""

from pytest_fsbench.workloads.dbench import Dbench


def test_dbench(fsbench, dbench_clients, dbench_time):
    fsbench.own_data("dbench")
    fsbench.measure(Dbench(clients=int(dbench_clients), seconds=int(dbench_time)))

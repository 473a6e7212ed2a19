"""A fsbench PTS profile run through the Phoronix Test Suite on each target fsbench builds, one
PTS run per measured run; every case goes into one PTS result file (identifier = case id).

    pytest --fs=ext4,btrfs --layout=single -k pts --pts-profile=fsbench-iozone \\
        --pts-options='record-size=16m;file-size=2048;test=-i0 #WRITE;cache=-I'
"""


def test_pts(fsbench, pts_workload):
    fsbench.measure(pts_workload)

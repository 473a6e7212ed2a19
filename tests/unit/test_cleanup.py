import os

from pytest_fsbench.cleanup import loop_backing_files, mountpoints, stale
from pytest_fsbench.devices import loop_direct_io

MOUNTINFO = (
    "22 1 254:0 / / rw,relatime - ext4 /dev/vda rw\n"
    "90 22 7:0 / /run/fsbench/123-abcd/mnt/fsbench-123-abcd-1 rw - btrfs /dev/loop0 rw\n"
    "91 22 0:55 / /mnt/with\\040space rw - ext4 /dev/loop1 rw\n"
)
LOSETUP = ('{"loopdevices": [{"name": "/dev/loop0", "back-file": "/var/tmp/fsbench/fsbench-123-abcd-1-0.img", '
           '"dio": true}, {"name": "/dev/loop1", "back-file": "/srv/other.img", "dio": false}]}')


def test_mountpoints_decode_escapes():
    assert mountpoints(MOUNTINFO) == ["/", "/run/fsbench/123-abcd/mnt/fsbench-123-abcd-1", "/mnt/with space"]


def test_loop_listing():
    assert loop_backing_files(LOSETUP) == {"/dev/loop0": "/var/tmp/fsbench/fsbench-123-abcd-1-0.img",
                                           "/dev/loop1": "/srv/other.img"}
    assert loop_direct_io(LOSETUP, "/dev/loop0") is True
    assert loop_direct_io(LOSETUP, "/dev/loop1") is False
    assert loop_direct_io(LOSETUP, "/dev/loop9") is None


def test_only_names_of_dead_sessions_are_stale():
    assert not stale(f"fsbench-{os.getpid()}-abcd-1")  # this process is alive
    assert stale("fsbench-999999999-abcd-1-0.img")
    assert not stale("tank")
    assert not stale("fsbench-data")

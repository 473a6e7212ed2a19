import os
from pathlib import Path

from pytest_fsbench.cleanup import loop_backing_files, stale
from pytest_fsbench.mounts import mounts_under
from pytest_fsbench.devices import loop_direct_io

MOUNTINFO = (
    "22 1 254:0 / / rw,relatime - ext4 /dev/vda rw\n"
    "90 22 7:0 / /run/fsbench/123-abcd/mnt/fsbench-123-abcd-1 rw - btrfs /dev/loop0 rw\n"
    "91 22 0:55 / /mnt/with\\040space rw - ext4 /dev/loop1 rw\n"
)
LOSETUP = ('{"loopdevices": [{"name": "/dev/loop0", "back-file": "/var/tmp/fsbench/fsbench-123-abcd-1-0.img", '
           '"dio": true}, {"name": "/dev/loop1", "back-file": "/srv/other.img", "dio": false}]}')


def test_mounts_under_a_directory_deepest_first(tmp_path):
    info = tmp_path / "mountinfo"
    info.write_text(MOUNTINFO + "92 90 7:1 / /run/fsbench/123-abcd/mnt/fsbench-123-abcd-1/sub rw - ext4 /dev/loop1 rw\n")
    assert mounts_under(Path("/run/fsbench/123-abcd"), info) == [
        "/run/fsbench/123-abcd/mnt/fsbench-123-abcd-1/sub", "/run/fsbench/123-abcd/mnt/fsbench-123-abcd-1"]
    assert mounts_under(Path("/mnt/with space"), info) == []
    assert mounts_under(Path("/mnt"), info) == ["/mnt/with space"]  # octal escape decoded


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

import os
from pathlib import Path

import pytest

from pytest_fsbench.case import CaseSpec
from pytest_fsbench.targets.cleanup import Leftovers, loop_backing_files, stale
from pytest_fsbench.targets.devices import loop_direct_io
from pytest_fsbench.filesystems import DRIVERS, LEFTOVERS, BuildContext, Leftover
from pytest_fsbench.filesystems.btrfs import Btrfs
from pytest_fsbench.targets.mounts import MountOf, mounts_under, parse_findmnt
from pytest_fsbench.system.commands import Completed
from pytest_fsbench.targets.target import NotOnTarget, Target

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


FINDMNT = Path(__file__).parents[2] / "data" / "findmnt"


def test_findmnt_names_the_mount_a_path_is_on():
    assert parse_findmnt((FINDMNT / "on-target.json").read_text()) == MountOf("/tmp/fm/mnt", "/dev/loop0", "btrfs")
    assert parse_findmnt((FINDMNT / "root-disk.json").read_text()) == MountOf("/", "/dev/vda", "ext4")


class Recorder:
    """An executor that answers findmnt with a captured output (the guard's only command)."""

    def __init__(self, answer: str) -> None:
        self.answer, self.calls = answer, []

    def __call__(self, argv, **kwargs):
        self.calls.append(argv)
        return Completed(tuple(argv), 0, self.answer, "", 0.0)


def fake_target(mountpoint: str) -> Target:
    context = BuildContext("fsbench-1-abcd-1", ("/dev/loop0",), mountpoint, "/tmp/dev")
    return Target(CaseSpec("btrfs", "single"), Btrfs(), context, (), [], Path("/tmp/scratch"))


def test_the_guard_accepts_a_path_on_the_target_and_records_it():
    target = fake_target("/tmp/fm/mnt")
    execute = Recorder((FINDMNT / "on-target.json").read_text())
    target.check_holds(Path("/tmp/fm/mnt/pts/local"), execute)
    assert execute.calls == [["findmnt", "-J", "-o", "TARGET,SOURCE,FSTYPE", "--target", "/tmp/fm/mnt/pts/local"]]
    assert target.manifest["measured_on"]["source"] == "/dev/loop0"


def test_the_guard_refuses_a_path_on_the_root_disk_naming_both():
    target = fake_target("/tmp/fm/mnt")
    with pytest.raises(NotOnTarget) as caught:
        target.check_holds(Path("/var/lib/phoronix-test-suite"), Recorder((FINDMNT / "root-disk.json").read_text()))
    assert str(caught.value) == ("btrfs-single: /var/lib/phoronix-test-suite is on / (/dev/vda, ext4), not on the "
                                 "target mounted at /tmp/fm/mnt; nothing measured there is this case's")


def test_a_registry_whose_daemon_and_sessions_are_gone_is_a_leftover(tmp_path):
    """After a kill of every session and of the daemon, the zfs-fuse registry is found and removed."""
    from pytest_fsbench.targets.cleanup import find_leftovers, remove_leftovers
    from pytest_fsbench.system.commands import Completed

    registry = tmp_path / "zfs-fuse"
    (registry / "users").mkdir(parents=True)
    (registry / "users" / "4242-dead").write_text("999999 12.00")  # no such process
    (registry / "daemon").write_text("999998 3.00")
    (registry / "lock").write_text("")

    def execute(argv, **kwargs):
        return Completed(tuple(argv), 0, "", "", 0.0)

    found = find_leftovers(execute, tmp_path / "run", daemon_roots=[registry])
    assert found.registries == [registry] and found.daemons == []
    assert remove_leftovers(found, execute, daemon_roots=[registry]) == []
    assert not registry.exists()


def test_a_path_proven_once_is_proven_again_by_its_device_number(tmp_path):
    """findmnt runs once per path; a later check that finds the same device number trusts it, and
    one that finds another device (something mounted over it, or the target gone) asks again."""
    target = fake_target("/tmp/fm/mnt")
    execute = Recorder((FINDMNT / "on-target.json").read_text())
    target.check_holds(tmp_path, execute)
    target.check_holds(tmp_path, execute)
    assert len(execute.calls) == 1 and target.manifest["measured_on"]["source"] == "/dev/loop0"
    target._proven[str(tmp_path)] = (-1, *target._proven[str(tmp_path)][1:])  # as if the path moved
    with pytest.raises(NotOnTarget):
        target.check_holds(tmp_path, Recorder((FINDMNT / "root-disk.json").read_text()))


def test_the_drivers_declare_what_cleanup_looks_for_and_how_it_is_removed(tmp_path):
    kinds = {leftover.kind: leftover for leftover in LEFTOVERS}
    assert set(kinds) == {leftover.kind for cls in DRIVERS.values() for leftover in cls.leftovers} >= {"zpool", "md array"}
    assert kinds["zpool"].removal("fsbench-1-abcd-2") == ["zpool", "destroy", "fsbench-1-abcd-2"]  # never -f
    (tmp_path / "fsbench-1-abcd-2").touch()
    (tmp_path / "other").touch()
    arrays = Leftover("md array", ("mdadm", "--stop", "{}"), directory=str(tmp_path))
    assert arrays.names(None) == [str(tmp_path / "fsbench-1-abcd-2"), str(tmp_path / "other")]
    assert Leftover("md array", ("mdadm", "--stop", "{}"), directory=str(tmp_path / "absent")).names(None) == []
    pools = Leftover("zpool", ("zpool", "destroy", "{}"), list_argv=("sh", "-c", "echo"))
    assert pools.names(lambda argv, **_: Completed(tuple(argv), 0, "tank\nfsbench-1-abcd-3\n", "", 0.0)) == \
        ["tank", "fsbench-1-abcd-3"]
    assert Leftover("zpool", ("zpool", "destroy", "{}"), list_argv=("no-such-program-here",)).names(None) == []
    found = Leftovers(made=[(pools, "fsbench-1-abcd-3"), (arrays, "/dev/md/fsbench-1-abcd-2")], loops=["/dev/loop9"])
    assert found.lines() == ["zpool: fsbench-1-abcd-3", "md array: /dev/md/fsbench-1-abcd-2", "loops: /dev/loop9"]


@pytest.mark.parametrize("text, state", [
    ('{"pid": 40', {"pid": 4000000}),  # truncated
    ('{"image_dir": "/x"}', {"image_dir": "/x", "pid": 4000000}),  # no pid
    ("[1, 2]", {"pid": 4000000}),
    ('{"pid": 12, "image_dir": "/x"}', {"pid": 12, "image_dir": "/x"}),
])
def test_a_damaged_state_file_still_names_its_session_by_its_directory(tmp_path, text, state):
    """Issue 34: fsbench cleanup ended in JSONDecodeError or KeyError and cleaned nothing."""
    from pytest_fsbench.targets.cleanup import session_alive, session_state

    state_file = tmp_path / "4000000-ab12" / "state.json"
    state_file.parent.mkdir()
    state_file.write_text(text)
    assert session_state(state_file) == state
    unnamed = tmp_path / "odd" / "state.json"
    unnamed.parent.mkdir()
    unnamed.write_text(text[:3])
    assert session_alive(session_state(unnamed)) is True  # whose it is cannot be told: left alone

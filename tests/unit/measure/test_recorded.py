"""Target building, undo and the measuring loop with a recording executor: every command fsbench
would run is recorded instead of run (the Executor is injected for this), so the order of build,
measure and teardown — also when a step fails — is checked without root."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from pytest_fsbench.case import CaseSpec
from pytest_fsbench.targets.devices import Device
from pytest_fsbench.errors import CommandError
from pytest_fsbench.filesystems import driver
from pytest_fsbench.measure.run import apply_cache_policy, measure_run
from pytest_fsbench.system.commands import Completed
from pytest_fsbench.targets.target import build_target
from pytest_fsbench.workloads.dd import DdWrite

DD_OUTPUT = ("16+0 records in\n16+0 records out\n"
             "16777216 bytes (17 MB, 16 MiB) copied, 0.0838 s, 200 MB/s\n")


class Recorder:
    """An Executor that records argv and answers from canned outputs (by the program's name);
    `fail` names a program whose first call fails."""

    def __init__(self, mountpoint_of=None, fail: str | None = None) -> None:
        self.calls: list[list[str]] = []
        self.fail = fail
        self.mountpoint_of = mountpoint_of

    def __call__(self, argv, *, timeout=None, check=True, **kwargs) -> Completed:
        argv = [str(a) for a in argv]
        self.calls.append(argv)
        if self.fail and argv[0] == self.fail:
            self.fail = None
            raise CommandError(argv, 1, "mkfs: simulated failure")
        out = ""
        if argv[0] == "findmnt" and "--target" in argv:  # the shape of tests/data/findmnt/on-target.json
            out = json.dumps({"filesystems": [{"target": str(self.mountpoint_of()), "source": "/dev/loop7",
                                               "fstype": "ext4"}]})
        elif argv[0] == "dd":
            out = DD_OUTPUT
        if argv[0] == "dd":
            return Completed(tuple(argv), 0, "", out, 0.01)  # dd reports on stderr
        return Completed(tuple(argv), 0, out, "", 0.01)

    def programs(self) -> list[str]:
        return [call[0] for call in self.calls]


class FakeDevices:
    """Stands in for loop devices: hands out names and records their release on the undo stack."""

    def available(self) -> int | None:
        return None

    def acquire(self, count, label, undo):
        devices = [Device(f"/dev/loop{7 + i}", 512 << 20, f"/images/{label}-{i}.img", True) for i in range(count)]
        for device in devices:
            undo.push(("losetup", "--detach", device.path))
        return devices


def test_build_then_teardown_in_reverse(tmp_path):
    execute = Recorder()
    spec = CaseSpec("ext4", "single")
    with build_target(spec, driver("ext4"), FakeDevices(), execute, tmp_path, "fsbench-t-1", tmp_path / "scratch",
                      measure_run) as target:
        assert target.mountpoint == tmp_path / "mnt" / "fsbench-t-1" and target.mountpoint.is_dir()
        built = execute.programs()
    assert built[:2] == ["mkfs.ext4", "mount"]
    teardown = execute.calls[len(built):]
    assert [c[0] for c in teardown] == ["umount", "losetup"]  # newest first: unmount, then detach
    assert teardown[1] == ["losetup", "--detach", "/dev/loop7"]
    assert not (tmp_path / "mnt" / "fsbench-t-1").exists()


def test_a_failed_step_undoes_what_was_done(tmp_path):
    execute = Recorder(fail="mkfs.ext4")
    with pytest.raises(CommandError, match="simulated failure"):
        with build_target(CaseSpec("ext4", "single"), driver("ext4"), FakeDevices(), execute, tmp_path, "fsbench-t-2",
                          tmp_path / "scratch", measure_run):
            raise AssertionError("never reached: the build failed")
    assert execute.programs() == ["mkfs.ext4", "losetup"]  # no mount was made, the device is released
    assert not (tmp_path / "mnt" / "fsbench-t-2").exists()


def test_measuring_loop_checks_the_target_then_caches_then_measures(tmp_path):
    holder = {}
    execute = Recorder(mountpoint_of=lambda: holder["mountpoint"])
    drop_caches = tmp_path / "drop_caches"
    with build_target(CaseSpec("ext4", "single"), driver("ext4"), FakeDevices(), execute, tmp_path, "fsbench-t-3",
                      tmp_path / "scratch", measure_run) as target:
        holder["mountpoint"] = target.mountpoint
        start = len(execute.calls)
        measurement = measure_run(DdWrite(total_size="16M", data="zeros"), target, execute, "drop", drop_caches)
        measured = [c[0] for c in execute.calls[start:]]
        for made in target.mountpoint.iterdir():  # nothing is mounted here: the files sit in the directory
            shutil.rmtree(made)
    assert measured[0] == "findmnt"  # the work directory is on the target, checked first
    assert measured.index("sync") < measured.index("dd")  # the cache policy before the measured run
    assert drop_caches.read_text() == "3\n"
    assert next(m for m in measurement.metrics if m.name == "dd.write").value == pytest.approx(200.2, rel=0.01)
    assert measurement.cache == "drop: sync+drop_caches"
    assert Path(target.manifest["measured_on"]["mountpoint"]) == target.mountpoint


def test_a_remount_writes_dirty_pages_back_before_it_unmounts(tmp_path):
    """zfs-fuse hangs when the kernel flushes a FUSE mount's dirty pages to it during an export:
    every eviction comes after a sync."""
    execute = Recorder()
    with build_target(CaseSpec("ext4", "single"), driver("ext4"), FakeDevices(), execute, tmp_path, "fsbench-t-4",
                      tmp_path / "scratch", measure_run) as target:
        start = len(execute.calls)
        done = apply_cache_policy("remount", target, execute, tmp_path / "drop_caches")
        order = [c[0] for c in execute.calls[start:]]
        assert order.index("sync") < order.index("umount") < order.index("mount")
        assert done == "remount: umount/mount + sync+drop_caches"

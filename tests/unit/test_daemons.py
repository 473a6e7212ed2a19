"""A daemon a driver declares (zfs-fuse's) is started, shared and stopped by the generic code in
daemons.py and provisioning.py, which know no filesystem: here a `sleep` stands in for the daemon."""

from __future__ import annotations

import dataclasses
import subprocess
import threading

from pytest_fsbench import daemons
from pytest_fsbench.cleanup import DAEMON_ROOTS
from pytest_fsbench.daemons import PIDFILE, Daemon, SharedDaemon
from pytest_fsbench.filesystems import DAEMONS, DRIVERS, TOOLS, driver
from pytest_fsbench.filesystems.zfs import ZFS_FUSE
from pytest_fsbench.host import Host
from pytest_fsbench.system import Completed

HOST = Host("6.1", frozenset({"ext4", "fuse"}), frozenset(TOOLS), has_md=False, zfs_module=False, is_root=True,
            ram_bytes=8 << 30)


def test_the_drivers_daemons_are_probed_for_and_swept_by_cleanup():
    assert DAEMONS == tuple(dict.fromkeys(d for cls in DRIVERS.values() for d in cls.daemons))
    assert all(daemon.program in TOOLS for daemon in DAEMONS)
    assert DAEMON_ROOTS == tuple(daemon.root for daemon in DAEMONS)


def test_zfs_needs_the_zfs_fuse_daemon_only_as_zfs_fuse():
    assert ZFS_FUSE in DAEMONS and ZFS_FUSE.root.as_posix() == "/run/fsbench/zfs-fuse"
    assert driver("zfs", HOST).needed_daemons() == (ZFS_FUSE,)
    assert driver("zfs", dataclasses.replace(HOST, zfs_module=True)).needed_daemons() == ()  # OpenZFS
    assert driver("ext4", HOST).needed_daemons() == ()


class FakeMachine:
    """Runs the declared daemon's start command as a `sleep` writing its pid file, and answers
    the daemon's `answers` command while that process runs."""

    def __init__(self) -> None:
        self.process: subprocess.Popen | None = None
        self.started: list[list[str]] = []

    def __call__(self, argv, **kwargs) -> Completed:
        if argv[0] == "svcd":
            self.started.append(argv)
            self.process = subprocess.Popen(["sleep", "60"])
            # reaped as soon as it ends, as a daemon (not fsbench's child) is by init
            threading.Thread(target=self.process.wait, daemon=True).start()
            with open(argv[argv.index("--pidfile") + 1], "w") as pidfile:
                pidfile.write(f"{self.process.pid}\n")
            return Completed(tuple(argv), 0, "", "", 0.0)
        serving = self.process is not None and self.process.poll() is None
        return Completed(tuple(argv), 0 if serving else 1, "", "", 0.0)


def test_a_declared_daemon_is_started_once_shared_and_stopped_by_its_last_user(monkeypatch, tmp_path):
    monkeypatch.setattr(daemons, "DAEMONS_ROOT", tmp_path)
    daemon = Daemon("svcd", start=("svcd", "--pidfile", PIDFILE), answers=("svcctl", "ping"), loses="its data")
    machine = FakeMachine()
    first, second = SharedDaemon(daemon, machine, "1-aaaa"), SharedDaemon(daemon, machine, "2-bbbb")
    try:
        first.ensure()
        second.ensure()
        assert machine.started == [["svcd", "--pidfile", str(tmp_path / "svcd" / "daemon.pid")]]
        assert daemons.started_pid(daemon.root) == machine.process.pid
        first.release()
        assert machine.process.poll() is None, "the daemon still serves the second session"
        second.release()
        assert machine.process.wait(timeout=10) is not None  # stopped with its last user
        assert not daemon.root.exists()
    finally:
        if machine.process is not None and machine.process.poll() is None:
            machine.process.kill()
            machine.process.wait()

"""A daemon a driver declares (zfs-fuse's) is started, shared and stopped by the generic code in
daemons.py and provisioning.py, which know no filesystem: here a `sleep` stands in for the daemon."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
import threading

import pytest

from pytest_fsbench.system import daemons
from pytest_fsbench.targets.cleanup import DAEMON_ROOTS
from pytest_fsbench.system.daemons import PIDFILE, Daemon, SharedDaemon
from pytest_fsbench.errors import CommandError
from pytest_fsbench.filesystems import DAEMONS, DRIVERS, TOOLS, driver
from pytest_fsbench.filesystems.zfs import ZFS_FUSE
from pytest_fsbench.system.host import Host
from pytest_fsbench.system.commands import Completed

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


def test_zfs_fuse_takes_zpool_and_zfs_commands_one_at_a_time():
    assert ZFS_FUSE.serializes == ("zpool", "zfs")


def test_a_serialized_program_waits_for_the_registrys_commands_lock_and_others_do_not(monkeypatch, tmp_path):
    monkeypatch.setattr(daemons, "DAEMONS_ROOT", tmp_path)
    daemon = Daemon("svcd", start=("svcd",), answers=("svcctl", "ping"), loses="its data", serializes=("svcctl",))
    executed: list[list[str]] = []

    def record(argv, **kwargs) -> Completed:
        executed.append(argv)
        return Completed(tuple(argv), 0, "", "", 0.0)

    execute = daemons.serialized(record, [daemon])
    execute(["svcctl", "status"])  # no registry: no session uses the daemon, nothing to wait for
    daemon.root.mkdir()
    # another session's command holds the lock: a process of its own, as a session is
    hold = f"import fcntl, time; f = open({str(daemon.root / 'commands')!r}, 'a'); fcntl.flock(f, fcntl.LOCK_EX); " \
           "print('held', flush=True); time.sleep(60)"
    holder = subprocess.Popen([sys.executable, "-c", hold], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline() == "held\n"
        with pytest.raises(CommandError, match="waited 0.3s for another fsbench session's svcd command"):
            execute(["/usr/sbin/svcctl", "destroy", "pool"], timeout=0.3)
        execute(["losetup", "--list"], timeout=0.3)  # not the daemon's: runs at once
    finally:
        holder.kill()
        holder.wait()
    execute(["svcctl", "destroy", "pool"], timeout=5)
    assert executed == [["svcctl", "status"], ["losetup", "--list"], ["svcctl", "destroy", "pool"]]


"""zfs-fuse's daemon, shared by every fsbench session on the machine.

There is one zfs-fuse daemon per machine, so its ownership is explicit and machine-wide, under
/run/fsbench/zfs-fuse: `users/<token>` names each live session that has pools on it (its pid and
start time), `daemon` names the daemon fsbench started (none when it found one running), and
`lock` (flock) serialises starting, stopping and registering; the directory goes with its last
user. A daemon fsbench started stops when its last
user is gone; one that was already running (the system's) is never stopped.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from . import processes
from .errors import ToolMissing
from .system import Runner

ZFSD_ROOT = Path("/run/fsbench/zfs-fuse")
START_TIMEOUT = 20.0


def daemon_answers(run: Runner) -> bool:
    return run(["zpool", "list", "-H"], check=False, timeout=30).returncode == 0


@contextlib.contextmanager
def locked(root: Path) -> Iterator[None]:
    """Hold the registry's lock. The registry is removed when its last user leaves, so a lock
    taken on a file that was removed meanwhile is dropped and taken again on the new one."""
    while True:
        root.mkdir(parents=True, exist_ok=True)
        try:
            handle = open(root / "lock", "a")
        except FileNotFoundError:  # the directory went away between mkdir and open
            continue
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            current = os.stat(root / "lock").st_ino
        except FileNotFoundError:
            current = None
        if current == os.fstat(handle.fileno()).st_ino:
            break
        handle.close()
    try:
        yield
    finally:
        handle.close()  # closing releases the flock


def remove_if_unused(root: Path) -> None:
    """With the lock held: remove the registry when nobody uses it and no daemon of fsbench's runs."""
    if live_users(root, prune=True) or started_pid(root) is not None:
        return
    shutil.rmtree(root / "users", ignore_errors=True)
    (root / "daemon").unlink(missing_ok=True)
    (root / "daemon.pid").unlink(missing_ok=True)
    (root / "lock").unlink(missing_ok=True)
    with contextlib.suppress(OSError):
        root.rmdir()


def live_users(root: Path, prune: bool = False) -> list[str]:
    """Tokens of the sessions registered on the daemon whose process still runs; with prune (and
    the lock held) the entries of dead ones are removed."""
    users = root / "users"
    found = []
    for entry in sorted(users.glob("*")) if users.is_dir() else []:
        if processes.identity_alive(entry.read_text()):
            found.append(entry.name)
        elif prune:
            entry.unlink(missing_ok=True)
    return found


def started_pid(root: Path) -> int | None:
    """The pid of the daemon fsbench started, while that very process runs (`daemon` holds its
    pid and start time, so a pid reused by another process is never taken for it)."""
    try:
        identity = (root / "daemon").read_text()
    except OSError:
        return None
    return int(identity.split()[0]) if processes.identity_alive(identity) else None


def stop_if_unused(root: Path) -> int | None:
    """With the lock held: stop the daemon fsbench started when no live session uses it.
    Returns the pid stopped."""
    pid = started_pid(root)
    if live_users(root, prune=True) or pid is None:
        return None
    processes.stop(pid, "zfs-fuse")
    (root / "daemon").unlink(missing_ok=True)
    (root / "daemon.pid").unlink(missing_ok=True)
    return pid


@dataclass
class ZfsFuseDaemon:
    """One session's use of the machine's zfs-fuse daemon."""

    run: Runner
    token: str
    root: Path = ZFSD_ROOT
    registered: bool = False

    def ensure(self) -> None:
        """Register this session as a user and make sure a daemon answers, starting one if none
        does (also when the one it used has died)."""
        with locked(self.root):
            users = self.root / "users"
            users.mkdir(exist_ok=True)
            (users / self.token).write_text(processes.identity())
            self.registered = True
            if daemon_answers(self.run):
                return
            if started_pid(self.root) is None:
                # zfs-fuse refuses to start while the pid file of a dead one is there
                (self.root / "daemon.pid").unlink(missing_ok=True)
                # no kstat mount: it would be one more mount to leave behind
                self.run(["zfs-fuse", "--pidfile", str(self.root / "daemon.pid"), "--no-kstat-mount"])
                self._wait()
                pid = int((self.root / "daemon.pid").read_text().strip())
                (self.root / "daemon").write_text(processes.identity(pid))
            else:
                self._wait()

    def _wait(self) -> None:
        deadline = time.monotonic() + START_TIMEOUT
        while not daemon_answers(self.run):
            if time.monotonic() > deadline:
                raise ToolMissing("zfs-fuse was started but its daemon does not answer `zpool list`")
            time.sleep(0.2)

    def answers(self) -> bool:
        return daemon_answers(self.run)

    def release(self) -> None:
        """This session is done with the daemon; stop it if fsbench started it and nobody else
        uses it."""
        if not self.registered:
            return
        with locked(self.root):
            (self.root / "users" / self.token).unlink(missing_ok=True)
            self.registered = False
            stop_if_unused(self.root)
            remove_if_unused(self.root)

"""Daemons a filesystem's targets need on the machine that builds them, each shared by every
fsbench session there: zfs-fuse's, which serves every pool of the machine.

A driver declares its daemon (a Daemon: the program, how to start it, the command that answers
while it serves); the targets act on that declaration with this module, and cleanup removes what a
killed session left of it. There is one such daemon per machine, so its ownership is explicit and
machine-wide, under /run/fsbench/<program>: `users/<token>` names each live session that uses it
(its pid and start time), `daemon` names the daemon fsbench started (none when it found one
running), and `lock` (flock) serialises starting, stopping and registering; the directory goes
with its last user. A daemon fsbench started stops when its last user is gone; one that was
already running (the system's) is never stopped.

A daemon may serve some programs' commands only one at a time: zfs-fuse deadlocks (every FUSE
request of every pool waits for ever) when one session's zpool or zfs command runs while another
session's pool is exported, imported or destroyed. `serialized` gives sessions and cleanup an
executor that holds the registry's `commands` lock (flock) around each such command.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from . import processes
from ..errors import CommandError, ToolMissing
from .commands import DEFAULT_TIMEOUT, Completed, Executor

#: each daemon's registry is a directory here, named after its program
DAEMONS_ROOT = Path("/run/fsbench")
START_TIMEOUT = 20.0
PIDFILE = "{pidfile}"  # in a Daemon's start command: where it writes its pid


@dataclass(frozen=True)
class Daemon:
    """A daemon some filesystem's targets need, as its driver declares it."""

    program: str  # what runs it, and the name of its registry
    start: tuple[str, ...]  # starts it in the background; PIDFILE in it stands for the pid file's path
    answers: tuple[str, ...]  # succeeds while the daemon serves
    loses: str  # what the daemon's death takes with it, for the failure of the case it served
    serializes: tuple[str, ...] = ()  # programs whose commands it must serve one at a time
    #: directories it needs that a booted system makes (a fresh /run, in a container or a chroot,
    #: has no /run/lock, and zfs-fuse exits 1 without it, saying why to syslog only)
    directories: tuple[str, ...] = ()
    #: lists what it serves (zfs-fuse: the imported pools), a name a word: one that serves anything not
    #: fsbench's (a name without fsbench's prefix, a user's pool) is not stopped
    serves: tuple[str, ...] = ()

    @property
    def root(self) -> Path:
        return DAEMONS_ROOT / self.program


def daemon_answers(daemon: Daemon, execute: Executor) -> bool:
    return execute(list(daemon.answers), check=False, timeout=30).returncode == 0


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
        if still_there(handle, root / "lock"):
            break
        handle.close()
    try:
        yield
    finally:
        handle.close()  # closing releases the flock


def still_there(handle, path: Path) -> bool:
    """Whether the open file is still the one at path (a registry removed and made again
    meanwhile holds a new file there, which is the one to lock)."""
    try:
        return os.stat(path).st_ino == os.fstat(handle.fileno()).st_ino
    except FileNotFoundError:
        return False


def remove_if_unused(root: Path) -> None:
    """With the lock held: remove the registry when nobody uses it and no daemon of fsbench's runs."""
    if live_users(root, prune=True) or started_pid(root) is not None:
        return
    shutil.rmtree(root / "users", ignore_errors=True)
    (root / "daemon").unlink(missing_ok=True)
    (root / "daemon.pid").unlink(missing_ok=True)
    (root / "lock").unlink(missing_ok=True)
    (root / "commands").unlink(missing_ok=True)
    with contextlib.suppress(OSError):
        root.rmdir()


def serialized(execute: Executor, declared: Iterable[Daemon]) -> Executor:
    """`execute`, but a command of a program a declared daemon serves one at a time waits for the
    machine-wide `commands` lock of that daemon's registry and holds it while it runs. Without a
    registry no session uses fsbench's daemon, and the command runs at once."""
    serializing = {program: daemon.root for daemon in declared for program in daemon.serializes}

    def execute_serialized(argv: list[str], *, timeout: float = DEFAULT_TIMEOUT, check: bool = True,
                           input: str | None = None) -> Completed:
        root = serializing.get(Path(str(argv[0])).name) if argv else None
        if root is None:
            return execute(argv, timeout=timeout, check=check, input=input)
        with commands_lock(root, argv, timeout):
            return execute(argv, timeout=timeout, check=check, input=input)

    return execute_serialized


@contextlib.contextmanager
def commands_lock(root: Path, argv: list[str], timeout: float) -> Iterator[None]:
    """Hold root's `commands` lock, waiting at most timeout seconds for it (a CommandError
    then, naming the command); nothing to hold when the registry is gone."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            handle = open(root / "commands", "a")
        except FileNotFoundError:  # no registry: no session uses the daemon
            handle = None
            break
        while not flocked(handle):
            if time.monotonic() > deadline:
                handle.close()
                raise CommandError([str(a) for a in argv], None, "",
                                   f"waited {timeout:g}s for another fsbench session's {root.name} "
                                   f"command to end (its daemon serves them one at a time)")
            time.sleep(0.05)
        if still_there(handle, root / "commands"):
            break
        handle.close()
    try:
        yield
    finally:
        if handle is not None:
            handle.close()


def flocked(handle) -> bool:
    """Take the file's exclusive flock if nobody holds it."""
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


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


#: the prefix of every name fsbench gives what it makes (fsbench-<token>-...)
OWN_PREFIX = "fsbench-"


def served_by_others(daemon: Daemon, execute: Executor) -> list[str]:
    """What the daemon serves that is not fsbench's (a user's pool imported in it), as its `serves`
    command lists it; nothing when it declares none, or cannot tell (it then serves nobody well)."""
    if not daemon.serves:
        return []
    try:
        done = execute(list(daemon.serves), check=False, timeout=60)
    except CommandError:
        return []
    return [] if done.returncode != 0 else [name for name in done.stdout.split() if not name.startswith(OWN_PREFIX)]


def kept_for_others(program: str, pid: int, others: list[str]) -> str:
    """The line that says why fsbench leaves running a daemon it started."""
    return (f"the {program} daemon fsbench started (pid {pid}) is left running: it also serves "
            f"{', '.join(others)}, which {'is' if len(others) == 1 else 'are'} not fsbench's; once "
            f"{'that is' if len(others) == 1 else 'those are'} exported or destroyed, fsbench cleanup stops it")


def stop_if_unused(root: Path, others: Callable[[], list[str]] = list) -> int | None:
    """With the lock held: stop the daemon fsbench started when no live session uses it and it
    serves nothing but fsbench's own (others(): what else it serves; issue 44: a user's pool
    imported in it was left unusable). Returns the pid stopped."""
    pid = started_pid(root)
    if live_users(root, prune=True) or pid is None or others():
        return None
    processes.stop(pid, root.name)
    (root / "daemon").unlink(missing_ok=True)
    (root / "daemon.pid").unlink(missing_ok=True)
    return pid


@dataclass
class SharedDaemon:
    """One session's use of the machine's daemon."""

    daemon: Daemon
    execute: Executor
    token: str
    registered: bool = False

    @property
    def root(self) -> Path:
        return self.daemon.root

    def ensure(self) -> None:
        """Register this session as a user and make sure a daemon answers, starting one if none
        does (also when the one it used has died)."""
        with locked(self.root):
            users = self.root / "users"
            users.mkdir(exist_ok=True)
            (users / self.token).write_text(processes.identity())
            self.registered = True
            if self.answers():
                return
            if started_pid(self.root) is None:
                # a daemon may refuse to start while the pid file of a dead one is there (zfs-fuse does)
                (self.root / "daemon.pid").unlink(missing_ok=True)
                pidfile = str(self.root / "daemon.pid")
                for directory in self.daemon.directories:
                    Path(directory).resolve().mkdir(parents=True, exist_ok=True)
                self.execute([pidfile if arg == PIDFILE else arg for arg in self.daemon.start])
                self._wait()
                pid = int((self.root / "daemon.pid").read_text().strip())
                (self.root / "daemon").write_text(processes.identity(pid))
            else:
                self._wait()

    def _wait(self) -> None:
        deadline = time.monotonic() + START_TIMEOUT
        while not self.answers():
            if time.monotonic() > deadline:
                raise ToolMissing(f"{self.daemon.program} was started but its daemon does not answer "
                                  f"`{' '.join(self.daemon.answers)}`")
            time.sleep(0.2)

    def answers(self) -> bool:
        return daemon_answers(self.daemon, self.execute)

    def release(self) -> str | None:
        """This session is done with the daemon; stop it if fsbench started it and nobody else
        uses it, unless it serves something not fsbench's: then the line that says so."""
        if not self.registered:
            return None
        with locked(self.root):
            (self.root / "users" / self.token).unlink(missing_ok=True)
            self.registered = False
            pid = started_pid(self.root)
            others = served_by_others(self.daemon, self.execute) if pid and not live_users(self.root) else []
            stop_if_unused(self.root, lambda: others)
            remove_if_unused(self.root)
        return kept_for_others(self.daemon.program, pid, others) if pid and others else None

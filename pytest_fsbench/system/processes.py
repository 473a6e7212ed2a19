"""Is a process alive, and ending one fsbench started. A process is named by its pid and its start
time together, so a pid the kernel has given to a new process is not taken for the old one."""

from __future__ import annotations

import os
import signal
import stat
import time
from pathlib import Path

import psutil

from ..errors import CommandError


def start_time(pid: int) -> float | None:
    try:
        return psutil.Process(pid).create_time()
    except (psutil.NoSuchProcess, psutil.ZombieProcess):
        return None
    except psutil.AccessDenied:  # alive, owned by someone else
        return 0.0


def alive(pid: int, started: float | None = None) -> bool:
    """True while the process runs (and, given started, is still the one that started then)."""
    now = start_time(pid)
    if now is None:
        return False
    return started is None or now == 0.0 or abs(now - started) < 1.0


def identity(pid: int | None = None) -> str:
    """'pid start-time' of a process (default: this one), for registry files."""
    pid = os.getpid() if pid is None else pid
    return f"{pid} {start_time(pid) or 0.0:.2f}"


def identity_alive(text: str) -> bool:
    """Whether the process an identity() names still runs; unreadable text counts as gone."""
    try:
        pid, started = text.split()
        return alive(int(pid), float(started))
    except ValueError:
        return False


def openers(rdev: int, proc: Path = Path("/proc")) -> list[str]:
    """'NAME (pid N)' of every other process with the block device numbered rdev open, read from
    their open file descriptors (issue 34: a device another program had open was overwritten);
    processes whose descriptors cannot be read (gone meanwhile, or not ours to read) are left out."""
    found = []
    for fds in proc.glob("[0-9]*/fd"):
        pid = int(fds.parent.name)
        if pid == os.getpid() or not _holds(fds, rdev):
            continue
        try:
            name = (fds.parent / "comm").read_text().strip()
        except OSError:
            name = "?"
        found.append(f"{name} (pid {pid})")
    return found


def _holds(fds: Path, rdev: int) -> bool:
    try:
        links = list(fds.iterdir())
    except OSError:
        return False
    for link in links:
        try:
            info = os.stat(link)
        except OSError:
            continue
        if stat.S_ISBLK(info.st_mode) and info.st_rdev == rdev:
            return True
    return False


def stop(pid: int, what: str, timeout: float = 20.0) -> None:
    """SIGTERM and wait for the process to end; CommandError when it does not."""
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not alive(pid):
            return
        time.sleep(0.1)
    raise CommandError(["kill", str(pid)], None, "", f"{what} (pid {pid}) did not exit in {timeout:g}s")

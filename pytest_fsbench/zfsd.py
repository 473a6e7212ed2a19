"""zfs-fuse's daemon: started for the session when no daemon answers, stopped afterwards only
if fsbench started it."""

from __future__ import annotations

import os
import signal
import time
from dataclasses import dataclass
from pathlib import Path

from .errors import CommandError, ToolMissing
from .system import Runner


def daemon_answers(run: Runner) -> bool:
    return run(["zpool", "list", "-H"], check=False, timeout=30).returncode == 0


@dataclass
class ZfsFuseDaemon:
    run: Runner
    pidfile: Path
    started_pid: int | None = None

    def ensure(self) -> None:
        """Start zfs-fuse unless a daemon already answers; wait until it does."""
        if self.started_pid is not None or daemon_answers(self.run):
            return
        self.pidfile.parent.mkdir(parents=True, exist_ok=True)
        # no kstat mount: it would be one more mount to leave behind
        self.run(["zfs-fuse", "--pidfile", str(self.pidfile), "--no-kstat-mount"])
        deadline = time.monotonic() + 20
        while not daemon_answers(self.run):
            if time.monotonic() > deadline:
                raise ToolMissing("zfs-fuse was started but its daemon does not answer `zpool list`")
            time.sleep(0.2)
        self.started_pid = int(self.pidfile.read_text().strip())

    def stop(self) -> None:
        """Stop the daemon if this session started it (after the last pool is destroyed)."""
        pid, self.started_pid = self.started_pid, None
        if pid is None:
            return
        stop_pid(pid)
        self.pidfile.unlink(missing_ok=True)


def stop_pid(pid: int, timeout: float = 20.0) -> None:
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.1)
    raise CommandError(["kill", str(pid)], None, "", f"zfs-fuse (pid {pid}) did not exit in {timeout:g}s")

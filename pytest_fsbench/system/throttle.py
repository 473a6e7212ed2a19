"""--storage-rate: storage slower than this machine's, emulated. A study's claim may hold only on
storage slower than something else the machine does (Btrfs's compression gains where the disk is
slower than zlib: a 2009 disk wrote 31.6 MB/s, the loop images here write 26 times faster). The
kernel here has FUSE but no device-mapper (dm-delay), no nbd, and cgroup v1's blkio throttle does
not reach a loop device's I/O (its kernel worker issues it); so a case's loop images live in a
FUSE passthrough (throttle_fuse.py, one daemon per case) that paces every read and write through
it at the rate, both together, as one disk's head would.

The FUSE mount uses direct_io, so the host's page cache holds none of the images' pages: every
read and write of the loop device reaches the daemon (its counters, recorded with each run, show
it). MB/s here is 10^6 bytes a second, fsbench's unit.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

from ..errors import FsbenchError
from .commands import Executor

log = logging.getLogger("fsbench.throttle")

MB = 1_000_000
#: the slowest and fastest rates fsbench emulates (MB/s): below 1, building a case's filesystem
#: takes minutes; above 10,000 the FUSE daemon itself is the slower part
SLOWEST, FASTEST = 1.0, 10_000.0
#: seconds a daemon has to mount, and to end once unmounted
START_TIMEOUT, STOP_TIMEOUT = 20.0, 20.0
#: how often the daemon writes its counters
STATS_SECONDS = 0.1
NONE = "none"
_RATE = re.compile(r"\s*(\d+(?:\.\d+)?)\s*(?:M|MB/s|MBps)?\s*", re.IGNORECASE)


def parse_rate(text: str) -> float:
    """A rate in MB/s: 32, 32M, 32MB/s or 31.6; none is 0 (the images' own storage)."""
    if text.strip().lower() == NONE:
        return 0.0
    match = _RATE.fullmatch(text)
    if match is None:
        raise ValueError("give a rate in MB/s (10^6 bytes a second), e.g. 32 or 32M, or none")
    rate = float(match.group(1))
    if not SLOWEST <= rate <= FASTEST:
        raise ValueError(f"give a rate from {SLOWEST:g} to {FASTEST:g} MB/s (below, building a filesystem takes "
                         "minutes; above, the FUSE daemon is the slower part), or none")
    return rate


def rate_text(rate: float) -> str:
    """'32 MB/s', as a claim's condition and the report name a rate; '' for none."""
    return f"{rate:g} MB/s" if rate else ""


#: the credit (seconds of transfer) an idle storage keeps: each FUSE request spends about a millisecond
#: outside the pacing (the kernel's round trip, libfuse, ctypes), which one request after another would
#: otherwise add to its time (measured: 37.9 MB/s of a 50 MB/s pacing without it)
BURST = 0.01


class TokenBucket:
    """Paces transfers to `rate` bytes a second, reads and writes together (one disk): each waits
    until the storage would have moved it after every earlier one, so N bytes take at least
    N / rate - burst seconds from the first; an idle storage saves no credit beyond `burst`
    seconds (a disk does not go faster for having rested)."""

    def __init__(self, rate: float, burst: float = BURST, clock: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        if rate <= 0:
            raise ValueError(f"a rate above 0 bytes a second, not {rate}")
        self.rate, self.burst = rate, burst
        self._clock, self._sleep = clock, sleep
        self._lock = threading.Lock()
        self._free_at = 0.0
        self.waited = 0.0  # seconds transfers spent waiting, in all

    def take(self, size: int) -> float:
        """Wait until size bytes may move; the seconds waited."""
        with self._lock:
            now = self._clock()
            start = max(now - self.burst, self._free_at)
            self._free_at = start + size / self.rate
            wait = self._free_at - now
            self.waited += max(wait, 0.0)
        if wait > 0:
            self._sleep(wait)
        return max(wait, 0.0)


#: the module the pacing daemon runs (throttle_fuse imports mfusepy, which only --storage-rate needs)
DAEMON_MODULE = "pytest_fsbench.system.throttle_fuse"


class ThrottledStorage:
    """One FUSE passthrough daemon: backing (a directory of real files) seen at mountpoint, every
    read and write paced to rate MB/s. start() mounts it (or raises, with the daemon's words);
    stop() unmounts it, ends the daemon and removes the backing directory, and is safe twice."""

    def __init__(self, backing: Path, mountpoint: Path, rate: float, execute: Executor) -> None:
        self.backing, self.mountpoint, self.rate, self.execute = backing, mountpoint, rate, execute
        self.stats_file = mountpoint.with_name(mountpoint.name + ".stats.json")
        self._process: subprocess.Popen | None = None
        self._log = mountpoint.with_name(mountpoint.name + ".log")

    def argv(self) -> list[str]:
        return [sys.executable, "-m", DAEMON_MODULE, str(self.backing), str(self.mountpoint),
                str(int(self.rate * MB)), str(self.stats_file)]

    def start(self) -> None:
        if not Path("/dev/fuse").exists():
            raise FsbenchError("--storage-rate: this kernel has no FUSE (/dev/fuse is missing; modprobe fuse), so no "
                               "slower storage can be emulated; leave --storage-rate out")
        self.backing.mkdir(parents=True, exist_ok=True)
        self.mountpoint.mkdir(parents=True, exist_ok=True)
        with open(self._log, "wb") as output:
            self._process = subprocess.Popen(self.argv(), stdout=output, stderr=subprocess.STDOUT,
                                             stdin=subprocess.DEVNULL, start_new_session=True)
        deadline = time.monotonic() + START_TIMEOUT
        while not os.path.ismount(self.mountpoint):
            if self._process.poll() is not None or time.monotonic() > deadline:
                said = self._said()
                self.stop()
                raise FsbenchError(f"--storage-rate: the FUSE daemon did not mount {self.mountpoint}"
                                   f"{' (it ended)' if self._process.returncode is not None else ''}: {said}")
            time.sleep(0.05)
        log.info("throttled storage at %s: %g MB/s (pid %d)", self.mountpoint, self.rate, self._process.pid)

    def _said(self) -> str:
        with contextlib.suppress(OSError):
            lines = [line for line in self._log.read_text(errors="replace").splitlines() if line.strip()]
            return lines[-1] if lines else "nothing"
        return "nothing"

    def counters(self) -> dict[str, object]:
        """What the daemon has moved until now: its stats file, once the daemon has written it
        after this call (it does every STATS_SECONDS; at most a second is waited)."""
        asked = time.time()
        deadline = time.monotonic() + 1.0
        while time.monotonic() < deadline:
            with contextlib.suppress(OSError):
                if self.stats_file.stat().st_mtime > asked:
                    break
            time.sleep(STATS_SECONDS / 4)
        with contextlib.suppress(OSError, ValueError):
            found = json.loads(self.stats_file.read_text())
            return found if isinstance(found, dict) else {}
        return {}

    def record(self) -> dict[str, object]:
        """For the case's manifest: the rate, and what passed through it."""
        return {"rate_mb_s": self.rate, "how": "FUSE passthrough (direct_io) paced by a token bucket, reads and "
                "writes together", **self.counters()}

    def stop(self) -> None:
        if os.path.ismount(self.mountpoint):
            if self.execute(["umount", str(self.mountpoint)], check=False, timeout=120).returncode != 0:
                self.execute(["umount", "--lazy", str(self.mountpoint)], check=False, timeout=120)
        if self._process is not None:
            try:
                self._process.wait(STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                log.warning("the FUSE daemon of %s did not end once unmounted; killing it", self.mountpoint)
                self._process.kill()
                self._process.wait(STOP_TIMEOUT)
        shutil.rmtree(self.backing, ignore_errors=True)
        for path in (self._log, self.stats_file):
            path.unlink(missing_ok=True)
        with contextlib.suppress(OSError):
            self.mountpoint.rmdir()

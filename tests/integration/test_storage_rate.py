"""--storage-rate on real loop devices: the images live in a FUSE passthrough that paces their
reads and writes, so a dd of N MB to a filesystem on it takes at least N / rate seconds (a lower
bound the pacing guarantees, whatever this machine's speed), its reads reach the daemon (nothing
is served from the host's cache of the images), the rate is in each case's id and manifest, and
nothing of the daemon is left after the session."""

import json
import os
import sqlite3
import time
from pathlib import Path

import pytest

from conftest import execute_pytest
from pytest_fsbench.system.commands import execute
from pytest_fsbench.system.throttle import BURST, MB, ThrottledStorage

pytestmark = [pytest.mark.root,
              pytest.mark.skipif(not Path("/dev/fuse").exists(), reason="no FUSE in this kernel (/dev/fuse)")]
RATE = 40.0
SIZE = 64  # MiB each dd moves


def fsbench_mounts() -> list[str]:
    return [line for line in Path("/proc/self/mounts").read_text().splitlines() if "fsbench-throttle" in line]


def test_a_dd_on_paced_storage_takes_at_least_its_bytes_over_the_rate(tmp_path):
    store, images = tmp_path / "s.db", tmp_path / "images"
    before = fsbench_mounts()
    done = execute_pytest(["--pyargs", "pytest_fsbench.benchmarks.test_dd", "--fs=ext4", f"--storage-rate={RATE:g}",
                           f"--dd-size={SIZE}M", "--runs=1", "--warmup=0", f"--store={store}",
                           f"--image-dir={images}", "-v"], cwd=tmp_path)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert f"test_dd_write[ext4-single-storage={RATE:g}MBps-1M] PASSED" in done.stdout
    with sqlite3.connect(store) as db:
        speeds = dict(db.execute("SELECT name, value FROM metrics WHERE name IN ('dd.write', 'dd.read')"))
        cases = {test.partition("[")[0].rpartition("::")[2]: (json.loads(spec), json.loads(manifest))
                 for (test, spec, manifest) in db.execute("SELECT test, spec, manifest FROM cases")}
    # N MB in at least N / rate seconds (less the 10 ms an idle storage keeps): dd's MB/s (10^6 B/s, its
    # own byte count over its own time) is at most the rate
    least = (SIZE << 20) / (RATE * MB) - BURST
    assert speeds["dd.write"] <= (SIZE << 20) / least / MB, speeds
    assert speeds["dd.read"] <= (SIZE << 20) / least / MB, speeds
    for test in ("test_dd_write", "test_dd_read"):
        spec, manifest = cases[test]
        assert spec["storage_rate"] == RATE and spec["id"] == f"ext4-single-storage={RATE:g}MBps"
        storage = manifest["storage"]
        assert storage["rate_mb_s"] == RATE and storage["rate_bytes"] == RATE * MB
        assert all(device["storage_rate_mb_s"] == RATE for device in manifest["devices"])
        assert storage["written_bytes"] >= SIZE << 20, storage
    # the read after the cache was dropped reached the daemon: nothing served from the host's cache
    assert cases["test_dd_read"][1]["storage"]["read_bytes"] >= SIZE << 20, cases["test_dd_read"][1]["storage"]
    assert fsbench_mounts() == before, "a paced storage's FUSE mount was left"
    assert not images.exists() or not [p for p in images.iterdir() if p.name.endswith("-storage")], list(images.iterdir())


def test_the_daemon_paces_a_file_and_goes_with_its_mount(tmp_path):
    """The passthrough alone: 8 MB written, then read back, at 16 MB/s take at least half a second
    each (less the 10 ms an idle storage keeps), the bytes
    are the backing file's, and stop() unmounts, ends the daemon and removes the backing directory."""
    storage = ThrottledStorage(tmp_path / "backing", tmp_path / "mnt", 16.0, execute)
    storage.start()
    try:
        data = os.urandom(8 * MB)
        start = time.monotonic()
        (tmp_path / "mnt" / "f").write_bytes(data)
        wrote = time.monotonic() - start
        assert (tmp_path / "backing" / "f").read_bytes() == data
        start = time.monotonic()
        assert (tmp_path / "mnt" / "f").read_bytes() == data
        read = time.monotonic() - start
        counted = storage.counters()
    finally:
        storage.stop()
    assert wrote >= 0.5 - BURST and read >= 0.5 - BURST, (wrote, read)
    assert counted["written_bytes"] == 8 * MB and counted["read_bytes"] >= 8 * MB, counted
    assert not os.path.ismount(tmp_path / "mnt") and not (tmp_path / "backing").exists()
    storage.stop()  # safe twice


def test_fsbench_cleanup_removes_the_paced_storage_of_a_killed_session(tmp_path):
    """kill -9 while a case writes to its paced storage: fsbench cleanup unmounts the FUSE mount
    (its daemon ends with it), detaches the loop device and removes the backing directory."""
    import subprocess
    import sys

    images = tmp_path / "images"
    session = subprocess.Popen([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--pyargs",
                                "pytest_fsbench.benchmarks.test_dd", "-k", "dd_write", "--fs=ext4", "--storage-rate=10",
                                "--dd-size=256M", "--runs=3", "--warmup=0", f"--store={tmp_path / 's.db'}",
                                f"--image-dir={images}"], cwd=tmp_path, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
    token = f"fsbench-{session.pid}-"
    deadline = time.monotonic() + 120
    while not [line for line in fsbench_mounts() if token in line] and time.monotonic() < deadline:
        time.sleep(0.5)
    session.kill()
    session.wait()
    assert [line for line in fsbench_mounts() if token in line], "the session never mounted its paced storage"
    done = subprocess.run([sys.executable, "-m", "pytest_fsbench.cli", "cleanup"], cwd=tmp_path, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert not [line for line in fsbench_mounts() if token in line]
    assert not images.exists() or not [p for p in images.iterdir() if p.name.startswith(token)]
    deadline = time.monotonic() + 20  # a loop device still held when detached goes once its holder does
    while token in execute(["losetup", "--list"]).stdout and time.monotonic() < deadline:
        time.sleep(0.5)
    assert token not in execute(["losetup", "--list"]).stdout
    while token in execute(["ps", "-eo", "args"]).stdout and time.monotonic() < deadline:
        time.sleep(0.5)  # the pacing daemon, signalled, exits once FUSE has let its mount go
    assert token not in execute(["ps", "-eo", "args"]).stdout

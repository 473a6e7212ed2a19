"""The benchmark cases run as a user runs them (pytest in the repository), and a run that is
interrupted or killed leaves nothing behind, or `fsbench cleanup` removes it."""

from __future__ import annotations

import os
import re
import signal
import sqlite3
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from conftest import fsbench_leftovers, execute_pytest, sigint_default
from pytest_fsbench.store.results import Store

pytestmark = pytest.mark.root
REPO = Path(__file__).resolve().parents[2]


def plugin_options(tmp_path: Path, runs: int = 2) -> list[str]:
    return [f"--image-dir={tmp_path / 'images'}", "--image-size=512M", f"--store={tmp_path / 'fsbench.db'}",
            f"--runs={runs}", "--warmup=1"]


def small(tmp_path: Path) -> list[str]:
    """The plugin's options plus the repository's dd cases at a small size."""
    return [*plugin_options(tmp_path), "--dd-size=32M"]


def stored(tmp_path: Path) -> tuple[list, dict]:
    """The last session's series and its export (cases with their manifests)."""
    store = Store(tmp_path / "fsbench.db")
    try:
        session = store.sessions()[-1].id
        return store.series(session), store.session_export(session)
    finally:
        store.close()


def test_dd_cases_record_mb_per_s_everywhere(tmp_path, no_leftovers):
    junit = tmp_path / "junit.xml"
    proc = execute_pytest(["benchmarks/test_dd.py", "--fs=ext4,btrfs,zfs", "--layout=single,raid1",
                       f"--junitxml={junit}", *small(tmp_path)], cwd=REPO)
    out = proc.stdout
    assert proc.returncode == 0, out[-3000:]
    assert "10 passed, 2 skipped" in out
    assert "ext4-raid1: ext4 raid1 needs an md RAID array, and this kernel has no md driver" in out
    assert "fsbench results (median of measured runs; MB/s = 10^6 bytes/s)" in out
    # every row shares its params: named once below the table, not in a column
    # the unit, shared by every row, goes below the table too when the terminal is narrow
    assert re.search(r"test_dd_write\[zfs-raid1-1M\]\s+dd\.write\s+[\d.]+\s+(MB/s\s+)?2\s", out), out[-3000:]
    assert re.search(r"test_dd_write\[zfs-raid1-1M\]\s+dd\.write\s+[\d.]+\s+MB/s\s", out) or \
        "unit of every row: MB/s" in out, out[-3000:]
    assert "params of every row: bs=1M,data=random,size=32M" in out
    series, export = stored(tmp_path)
    assert sorted({s.case_id for s in series}) == ["btrfs-raid1", "btrfs-single", "ext4-single", "zfs-raid1", "zfs-single"]
    dd = [s for s in series if s.key.metric.startswith("dd.")]
    assert len(dd) == 10
    assert all(s.unit == "MB/s" and s.direction.value == "higher" and len(s.values) == 2 and min(s.values) > 0 for s in dd)
    units = {s.key.metric: s.unit for s in series}
    assert units["cpu.system"] == "%" and units["disk.write"] == "MB"
    assert "fs.compressratio" not in units, "no case compresses, so no ratio is asked for after each run"
    writes = [s for s in series if s.key.metric == "disk.write" and "dd_write" in s.key.test and "zfs" not in s.case_id]
    assert all(min(s.values) >= 32 * 1.048576 * 0.95 for s in writes), writes
    for case in export["cases"]:
        assert case["manifest"]["host"]["kernel"] == os.uname().release
        assert case["manifest"]["devices"][0]["direct_io"] is True
        assert case["status"] == "done" and case["stopped_by"] == "runs"
    zfs = next(c for c in export["cases"] if c["case_id"] == "zfs-single")
    assert zfs["manifest"]["host"]["zfs_implementation"] in ("zfs-fuse", "openzfs")
    assert "compression" in zfs["manifest"]["applied"]["properties"]
    assert export["session"]["status"] == "complete"
    props = {p.get("name") for p in ET.parse(junit).iter("property")}
    assert "fsbench.dd.write[bs=1M][data=random][size=32M]" in props


def test_threshold_fails_the_case_with_a_clear_message(tmp_path, no_leftovers):
    proc = execute_pytest(["benchmarks/test_dd.py", "-k", "write", "--fs=ext4,btrfs",
                       "--threshold=btrfs:dd.write>=1000000MB/s", "--threshold=dd.write>=0.001MB/s",
                       *small(tmp_path)], cwd=REPO)
    assert proc.returncode == 1
    assert "1 failed, 1 passed" in proc.stdout
    assert "FAILED benchmarks/test_dd.py::test_dd_write[btrfs-single-1M]" in proc.stdout
    assert re.search(r"^btrfs-single dd\.write bs=1M data=random size=32M [\d.]+ MB/s < 1e\+06 MB/s$",
                     proc.stdout, re.MULTILINE), proc.stdout[-2000:]
    assert {s.case_id for s in stored(tmp_path)[0] if s.key.metric == "dd.write"} == {"ext4-single", "btrfs-single"}


def test_threshold_marker(tmp_path, no_leftovers):
    (tmp_path / "test_marked.py").write_text(
        "import pytest\n"
        "from pytest_fsbench.workloads.dd import DdWrite\n"
        "@pytest.mark.fsbench_threshold('dd.write>=1000000MB/s')\n"
        "def test_fast(fsbench):\n"
        "    fsbench.measure(DdWrite(total_size='16M'))\n")
    proc = execute_pytest(["test_marked.py", "--fs=ext4", *plugin_options(tmp_path)], cwd=tmp_path)
    assert proc.returncode == 1 and "ext4-single dd.write" in proc.stdout and "< 1e+06 MB/s" in proc.stdout



def test_a_test_written_with_the_former_name_run_still_measures(tmp_path, no_leftovers):
    (tmp_path / "test_former.py").write_text(
        "from pytest_fsbench.workloads.dd import DdWrite\n"
        "def test_old(fsbench):\n"
        "    samples = fsbench.run(DdWrite(total_size='16M'))\n"
        "    [write] = [values for name, values in samples.items() if name.startswith('dd.write[')]\n"
        "    assert len(write) == 2 and min(write) > 0\n")
    proc = execute_pytest(["test_former.py", "--fs=ext4", *plugin_options(tmp_path)], cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout[-2000:]
    assert "DeprecationWarning: fsbench.run(workload) is fsbench.measure(workload) now" in proc.stdout


SLOW_CASE = """
import os, time
from pathlib import Path

def test_slow(fsbench_target):
    (fsbench_target.mountpoint / "data").write_bytes(b"x" * 4096)
    Path(os.environ["FSBENCH_READY"]).write_text(str(fsbench_target.mountpoint))
    time.sleep(300)
"""


def start_slow_case(tmp_path: Path, fs: str, layout: str) -> tuple[subprocess.Popen, str]:
    (tmp_path / "test_slow.py").write_text(SLOW_CASE)
    ready = tmp_path / "ready"
    proc = subprocess.Popen(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "test_slow.py", f"--fs={fs}",
         f"--layout={layout}", *plugin_options(tmp_path)],
        cwd=tmp_path, env={**os.environ, "FSBENCH_READY": str(ready)},
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, preexec_fn=sigint_default)
    deadline = time.monotonic() + 120
    while not ready.exists():
        assert proc.poll() is None, proc.communicate()[0][-3000:]
        assert time.monotonic() < deadline, "the case never got its target"
        time.sleep(0.2)
    return proc, ready.read_text()


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
@pytest.mark.parametrize("fs, layout", [("btrfs", "raid1"), ("zfs", "raid10")])
def test_interrupted_case_is_torn_down(tmp_path, no_leftovers, fs, layout, sig):
    proc, mountpoint = start_slow_case(tmp_path, fs, layout)
    try:
        assert any(mountpoint in line for line in fsbench_leftovers(include_live=True))
    finally:  # a failed check must not leave the case sleeping on its target
        proc.send_signal(sig)
        out, _ = proc.communicate(timeout=120)
    assert proc.returncode == pytest.ExitCode.INTERRUPTED, out[-3000:]
    assert not list((tmp_path / "images").glob("*.img"))


@pytest.mark.parametrize("fs, layout", [("btrfs", "raid1"), ("zfs", "raid1")])
def test_killed_run_is_cleaned_up_by_fsbench_cleanup(tmp_path, no_leftovers, fs, layout):
    proc, mountpoint = start_slow_case(tmp_path, fs, layout)
    proc.kill()
    proc.communicate(timeout=60)
    left = fsbench_leftovers()
    assert any(mountpoint in line for line in left) and any("loop" in line for line in left)
    cleanup = subprocess.run([sys.executable, "-m", "pytest_fsbench.cli", "cleanup"],
                             capture_output=True, text=True, timeout=300)
    assert cleanup.returncode == 0, cleanup.stdout + cleanup.stderr
    assert "removing mounts: " + mountpoint in " ".join(cleanup.stdout.split()), cleanup.stdout
    assert not list((tmp_path / "images").glob("*.img"))
    again = subprocess.run([sys.executable, "-m", "pytest_fsbench.cli", "cleanup"], capture_output=True, text=True)
    assert "nothing left behind" in again.stdout


def test_real_devices_get_the_plan_and_are_wiped_after_each_case(tmp_path, two_disks, no_leftovers):
    # (a layout needing more devices than given is refused before anything: test_usage_errors)
    proc = execute_pytest(["benchmarks/test_dd.py", "--fs=btrfs,zfs", "--layout=single,raid1",
                       f"--devices={','.join(two_disks)}", "--dd-size=32M", "--runs=1", "--warmup=0",
                       f"--store={tmp_path / 'fsbench.db'}"], cwd=REPO)
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert f"btrfs-raid1: {two_disks[0]} (1.1 GB" in proc.stdout and "will be overwritten" in proc.stdout
    assert "8 passed" in proc.stdout and "skipped" not in proc.stdout
    for device in two_disks:
        probe = subprocess.run(["blkid", "-p", device], capture_output=True, text=True)
        assert probe.returncode == 2, f"{device} still has a signature: {probe.stdout}"


def test_dangerous_device_is_refused_before_anything_runs(tmp_path, two_disks, no_leftovers):
    subprocess.run(["mkfs.ext4", "-q", two_disks[1]], check=True)
    proc = execute_pytest(["benchmarks/test_dd.py", "--fs=btrfs", "--layout=raid1",
                       f"--devices={','.join(two_disks)}"], cwd=REPO)
    assert proc.returncode == pytest.ExitCode.USAGE_ERROR
    assert f"ERROR: {two_disks[1]} holds an ext4 filesystem signature; pass --wipe-devices" in proc.stderr
    assert "ext4" in subprocess.run(["blkid", "-p", two_disks[1]], capture_output=True, text=True).stdout


@pytest.mark.root
def test_until_ci_case_repeats_one_test_and_leaves_the_others_their_runs(tmp_path):
    """A real session of two dd cases: the one --until-ci-case names looks at --runs (3, where no
    interval at its level exists yet) and then at --max-runs (10), stopping there by its precision
    or its budget; the other makes exactly --runs runs."""
    store = tmp_path / "s.db"
    named = "test_dd_write[ext4-single-data=zeros-1M]"
    done = execute_pytest(["--pyargs", "pytest_fsbench.benchmarks.test_dd", "-k", "test_dd_write", "--fs=ext4",
                           "--data=random,zeros", "--dd-size=16M", "--image-size=1G", "--runs=3", "--warmup=0",
                           f"--image-dir={tmp_path / 'images'}", f"--until-ci-case={named}@dd.write=50%",
                           "--max-runs=10", f"--store={store}"], cwd=tmp_path)
    assert done.returncode == 0, done.stdout[-3000:]
    assert "1 test(s) until their median's 95% CI is within their own +-% (--until-ci-case, at most 10 runs)" \
        in done.stdout
    with sqlite3.connect(store) as db:
        found = {test.rpartition("::")[2]: (runs, stopped) for test, runs, stopped in db.execute(
            "SELECT c.test, COUNT(r.id), c.stopped_by FROM cases c JOIN runs r ON r.case_row = c.id "
            "WHERE r.warmup = 0 GROUP BY c.id")}
    assert found["test_dd_write[ext4-single-data=random-1M]"] == (3, "runs")
    assert found[named][0] == 10 and found[named][1] in ("ci", "max-runs")
    assert len(found) == 2

"""Cases in a guest kernel (User-mode Linux): md RAID for ext4 and XFS built, verified, measured
and torn down inside the guest; the plugin's guest cases with their results in the host's store;
a kernel A/B; a killed session's guest removed by `fsbench cleanup`; a request interrupted in the
guest, which stops it at once; and --memory's limit applied inside the guest."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import time
from pathlib import Path

import psutil
import pytest

from conftest import execute_pytest, gone_soon, interrupted_after, one_target, start_session, sweep
from pytest_fsbench.case import CaseSpec
from pytest_fsbench.filesystems.md import MD_LEVELS
from pytest_fsbench.kernels.guest import GuestError
from pytest_fsbench.kernels.kernel import DEBIAN_UML, GUEST_MEMORY
from pytest_fsbench.system.commands import execute
from pytest_fsbench.sizes import parse_size
from pytest_fsbench.workloads.dd import DdRead, DdWrite

pytestmark = [pytest.mark.root,
              pytest.mark.skipif(not DEBIAN_UML.exists(), reason=f"{DEBIAN_UML} is not installed "
                                 "(Debian package user-mode-linux)")]
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def _boots(uml_boots):
    """Every test here needs the guest kernel to boot."""


def guests_of(marker: str) -> list[int]:
    """Processes of guest kernels whose init path contains marker."""
    return [p.pid for p in psutil.process_iter(["cmdline"])
            if any(arg.startswith("init=") and marker in arg for arg in p.info["cmdline"] or [])]


def small(tmp_path: Path) -> list[str]:
    return [f"--image-dir={tmp_path / 'images'}", "--image-size=512M", f"--store={tmp_path / 'fsbench.db'}",
            "--warmup=0", "--dd-size=16M"]


@pytest.mark.parametrize("layout", list(MD_LEVELS))
@pytest.mark.parametrize("fs", ["ext4", "xfs"])
def test_md_layouts_in_a_guest_kernel(tmp_path, no_leftovers, fs, layout):
    spec = CaseSpec(fs, layout, kernel="uml")
    with one_target(tmp_path, spec, kernels="uml") as target:
        array = f"/dev/md/{target.manifest['commands'][0].split('/dev/md/')[1].split()[0]}"
        mdstat = target.execute(["cat", "/proc/mdstat"]).stdout
        level = "raid" + MD_LEVELS[layout]
        assert f"active {level} " in mdstat, mdstat
        assert f"[{'U' * spec.devices_needed}]" in mdstat or layout == "raid0", mdstat
        detail = target.execute(["mdadm", "--detail", array])
        assert detail.returncode == 0 and f"Raid Level : {level}" in detail.stdout, detail.output
        assert target.execute(["findmnt", "-n", "-o", "FSTYPE", str(target.mountpoint)]).stdout.strip() == fs
        assert target.manifest["kernel"]["runs_under"] == "uml"
        written = target.measure(DdWrite(total_size="16M"), execute, "drop")
        read = target.measure(DdRead(total_size="16M"), execute, "drop")
        assert "host sync+drop_caches" in written.cache
        assert next(m.value for m in written.metrics if m.name == "dd.write") > 0
        assert next(m.value for m in read.metrics if m.name == "dd.read") > 0
        # what dd wrote reached the array's members (at least once; mirrors and parity write more)
        assert next(m.value for m in written.metrics if m.name == "disk.write") >= 16 * 1.048576
        images = [d.backing_file for d in target.devices]
        assert all(Path(image).exists() for image in images)
    assert not any(Path(image).exists() for image in images)
    assert not guests_of(str(tmp_path))
    assert not Path("/run/mdadm/map").exists() or "fsbench" not in Path("/run/mdadm/map").read_text()


def test_guest_cases_run_through_pytest_into_the_hosts_store(tmp_path, no_leftovers):
    done = execute_pytest(["benchmarks/test_dd.py", "--kernel=uml", "--fs=ext4", "--layout=raid5", "--runs=2",
                       f"--report={tmp_path / 'r.html'}", *small(tmp_path)], cwd=REPO)
    assert done.returncode == 0, done.stdout[-3000:]
    assert "2 passed" in done.stdout and "skipped" not in done.stdout.split("short test summary")[-1]
    assert "uml-*: measured in a User-mode Linux guest kernel (/usr/bin/linux.uml" in done.stdout
    db = sqlite3.connect(tmp_path / "fsbench.db")
    cases = db.execute("SELECT case_id, spec, manifest, status FROM cases").fetchall()
    runs = db.execute("SELECT COUNT(*), MIN(cache_applied) FROM runs").fetchone()
    db.close()
    assert sorted(c[0] for c in cases) == ["uml-ext4-raid5", "uml-ext4-raid5"]
    assert all(json.loads(c[1])["kernel"] == "uml" and c[3] == "done" for c in cases)
    kernel = json.loads(cases[0][2])["kernel"]
    assert kernel["runs_under"] == "uml" and kernel["release"] and len(kernel["sha256"]) == 64
    assert runs[0] == 4 and "host sync+drop_caches" in runs[1]
    page = (tmp_path / "r.html").read_text()
    assert "Measured in a guest kernel</b> (User-mode Linux): the cases uml-*." in page
    assert "in guest kernel uml (" in page and "User-mode Linux)" in page
    assert not guests_of(str(tmp_path)) and not list((tmp_path / "images").glob("*.img"))


def test_a_kernel_against_itself_is_a_paired_interleaved_comparison(tmp_path, no_leftovers):
    done = execute_pytest(["benchmarks/test_dd.py", "-k", "dd_write", "--fs=ext2", "--runs=5", "-v",  # a line a run
                       f"--kernel=uml,uml:again={DEBIAN_UML}", *small(tmp_path)], cwd=REPO)
    assert done.returncode == 0, done.stdout[-3000:]
    assert "paired: uml-again-ext2-single against uml-ext2-single, 5 interleaved rounds" in done.stdout
    assert "10 passed" in done.stdout
    table = done.stdout.split("fsbench paired comparison")[1]
    row = next(line for line in table.splitlines() if line.startswith("test_dd_write[uml-again-ext2-single"))
    assert "MB/s" in row and "%, " in row and "5/5" in row  # the change, its interval, rounds a side
    order = [line.split()[1] for line in done.stdout.splitlines() if line.startswith("fsbench uml")]
    assert order[:4] == ["uml-ext2-single", "uml-again-ext2-single", "uml-again-ext2-single", "uml-ext2-single"]


def test_a_killed_sessions_guest_is_removed_by_fsbench_cleanup(tmp_path, no_leftovers):
    proc = start_session(["benchmarks/test_dd.py", "-k", "dd_write", "--kernel=uml", "--fs=ext4", "--layout=raid1",
                          "--runs=30", *small(tmp_path)], REPO)
    marker = f"/run/fsbench/{proc.pid}-"
    deadline = time.monotonic() + 300
    while not list((tmp_path / "images").glob("*.img")):
        assert proc.poll() is None, proc.communicate()[0][-3000:]
        assert time.monotonic() < deadline, "the guest never built its target"
        time.sleep(0.2)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.communicate(timeout=60)
    time.sleep(1)
    left = guests_of(marker)  # UML's helper processes outlive its killed main one (here, always so far)
    swept = sweep()
    assert "removing guests: " in " ".join(swept.split()) or not left, swept
    assert gone_soon(lambda: guests_of(marker))
    assert not list((tmp_path / "images").glob("*.img"))
    assert not list(Path("/run/fsbench").glob(f"{proc.pid}-*"))


def allocated(images: Path) -> int:
    """Bytes written into the sparse images in images (what their blocks hold)."""
    return sum(image.stat().st_blocks * 512 for image in images.glob("*.img"))


def test_a_session_interrupted_while_the_guest_measures_ends_at_once(tmp_path, no_leftovers):
    """SIGTERM while the guest measures a long dd write: its agent serves one request at a time, so
    a teardown asked of it would wait for the write; the guest is stopped at once instead, and the
    session ends interrupted long before the write could have finished, leaving nothing behind."""
    size, images = 16 << 30, tmp_path / "images"
    proc = start_session(["benchmarks/test_dd.py", "-k", "dd_write", "--kernel=uml", "--fs=xfs", "--data=zeros",
                          f"--dd-size={size >> 20}M", "--image-size=20G", "--runs=1", "--warmup=0",
                          f"--image-dir={images}", f"--store={tmp_path / 'fsbench.db'}"], REPO)
    marker = f"/run/fsbench/{proc.pid}-"
    deadline = time.monotonic() + 600  # a hang guard only
    while allocated(images) < 256 << 20:  # mkfs.xfs writes a few MB: past that, dd is writing
        assert proc.poll() is None, proc.communicate()[0][-3000:]
        assert time.monotonic() < deadline, "the guest never started writing"
        time.sleep(0.2)
    start, before = time.monotonic(), allocated(images)
    time.sleep(2)
    written = allocated(images)
    rate = (written - before) / (time.monotonic() - start)  # bytes a second reaching the images
    assert guests_of(marker)
    proc.send_signal(signal.SIGTERM)
    sent = time.monotonic()
    out, _ = proc.communicate(timeout=900)
    took = time.monotonic() - sent
    assert not guests_of(marker), "the guest outlived its interrupted session"
    assert proc.returncode == pytest.ExitCode.INTERRUPTED, out[-3000:]
    assert "fsbench: interrupted; tearing the targets down" in out
    # what dd had still to write, less what the guest's memory could hold dirty, at the rate seen
    left = (size - written - parse_size(GUEST_MEMORY)) / max(rate, 1.0)
    assert took < left, f"the session took {took:.1f} s to end; the write had at least {left:.1f} s to go"
    with sqlite3.connect(tmp_path / "fsbench.db") as db:
        assert db.execute("SELECT status FROM sessions").fetchall() == [("interrupted",)]
    assert not list(images.glob("*.img"))
    assert not list(Path("/run/fsbench").glob(f"{proc.pid}-*"))


def test_a_guest_stopped_in_the_middle_of_a_request_answers_nothing_more(tmp_path, no_leftovers):
    seconds = 600
    with one_target(tmp_path, CaseSpec("ext2", "single", kernel="uml"), kernels="uml") as target:
        images = [Path(d.backing_file) for d in target.devices]
        assert all(image.exists() for image in images) and guests_of(str(tmp_path))
        start = time.monotonic()
        with pytest.raises(KeyboardInterrupt), interrupted_after(2):
            target.execute(["sleep", str(seconds)])
        assert time.monotonic() - start < seconds / 4
        assert not guests_of(str(tmp_path)), "the guest was not stopped at once"
        with pytest.raises(GuestError) as error:
            target.execute(["true"])
        assert str(error.value) == ("guest kernel uml was stopped when its execute request went unanswered "
                                    "(KeyboardInterrupt: signal SIGALRM); what it had built is gone with it")
    assert not any(image.exists() for image in images)


def test_memory_limits_the_runs_in_the_guest_and_is_recorded(tmp_path, no_leftovers):
    """--memory in a guest kernel: its runs go in a memory control group of the guest's own, so a
    warm-cache read of a file larger than the limit comes from the guest's devices (without the
    limit the guest's page cache serves it), and each stored case carries the limit."""
    def session(name: str, *extra: str) -> tuple[float, dict]:
        store = tmp_path / f"{name}.db"
        done = execute_pytest(["benchmarks/test_dd.py", "-k", "dd_read", "--kernel=uml", "--fs=ext4",
                               "--cache=warm", "--dd-size=256M", "--runs=1", "--warmup=0", "--image-size=1G",
                               f"--image-dir={tmp_path / 'images'}", f"--store={store}", *extra], cwd=REPO)
        assert done.returncode == 0, done.stdout[-3000:]
        with sqlite3.connect(store) as db:
            [share] = [v for (p, v) in db.execute("SELECT params, value FROM metrics WHERE name = 'disk.share'")
                       if json.loads(p)["metric"] == "dd.read"]
            [manifest] = [json.loads(m) for (m,) in db.execute("SELECT manifest FROM cases")]
        return share, manifest

    cached, plain = session("plain")
    limited, manifest = session("limited", "--memory=96M")
    assert cached < 50, f"without --memory the guest's warm cache served {100 - cached:.0f}% of the 256M read"
    assert limited >= 50, f"with --memory=96M only {limited:.0f}% of the 256M read reached the guest's devices"
    assert "memory_limit" not in plain
    assert manifest["memory_limit"] == {"bytes": 96 << 20, "cgroup": "v2"}
    assert manifest["kernel"]["runs_under"] == "uml"
    assert not guests_of(str(tmp_path)) and not list((tmp_path / "images").glob("*.img"))


"""Reliability under concurrency, faults and interrupts, caused for real: two live sessions on one
zfs-fuse daemon with `fsbench cleanup` run during a third, a daemon killed mid-case, a result
store whose filesystem fills up, two Ctrl-C in a row, kill -9 with staged data on disk. Each
ends with nothing of fsbench's left on the machine."""

from __future__ import annotations

import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import SESSION_PIDS, execute_pytest, remove_own_leftovers, sigint_default
from pytest_fsbench.filesystems import DAEMONS
from pytest_fsbench.system import daemons, processes
from pytest_fsbench.system.commands import execute
from pytest_fsbench.system.daemons import serialized
from pytest_fsbench.filesystems.zfs import ZFS_FUSE
from pytest_fsbench.kernels.probe import probe

pytestmark = pytest.mark.root
REPO = Path(__file__).resolve().parents[2]
HOST = probe()
needs_zfs_fuse = pytest.mark.skipif(HOST.zfs_impl != "zfs-fuse", reason="needs zfs-fuse (Debian package zfs-fuse)")


def session_args(tmp_path: Path, name: str, runs: int = 3) -> list[str]:
    return [f"--image-dir={tmp_path / name / 'images'}", "--image-size=512M",
            f"--store={tmp_path / name / 'fsbench.db'}", f"--runs={runs}", "--warmup=1"]


STARTED: list[subprocess.Popen] = []


def start(args: list[str], cwd: Path = REPO, env: dict | None = None) -> subprocess.Popen:
    """pytest in a child process with its own process group (a terminal's Ctrl-C reaches the
    whole group: pytest and the tool it runs)."""
    proc = subprocess.Popen([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args], cwd=cwd,
                            env={**os.environ, **(env or {})}, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, start_new_session=True, preexec_fn=sigint_default)
    STARTED.append(proc)
    SESSION_PIDS.add(proc.pid)  # what it leaves, no_leftovers removes even when the test fails
    return proc


@pytest.fixture(autouse=True)
def end_what_a_failed_test_started(tmp_path, no_leftovers):
    """A test that fails while its sessions run lets go of every command it holds (so that none
    waits for ever with a target built), then interrupts them (as Ctrl-C would), so they tear their
    targets down; one stuck is killed. no_leftovers (set up first, so it checks last) then removes
    what they left, this test's sessions' only."""
    yield
    for marks in tmp_path.rglob("marks"):
        (marks / "go").touch()
    while STARTED:
        proc = STARTED.pop()
        if proc.poll() is None:
            try:
                proc.communicate(timeout=30)
                continue
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGINT)
            try:
                proc.communicate(timeout=300)
            except subprocess.TimeoutExpired:  # stuck (on a hung daemon's mount)
                os.killpg(proc.pid, signal.SIGKILL)
                proc.communicate(timeout=60)


def wait_for(predicate, proc: subprocess.Popen, what: str, timeout: float = 180) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert proc.poll() is None, f"the session ended before {what}:\n{proc.communicate()[0][-3000:]}"
        assert time.monotonic() < deadline, f"{what}: not within {timeout:g}s"
        time.sleep(0.1)


def query(db: Path, sql: str) -> list[tuple]:
    if not db.exists():
        return []
    con = sqlite3.connect(db)
    try:
        return con.execute(sql).fetchall()
    except sqlite3.OperationalError:  # the schema is being made
        return []
    finally:
        con.close()


def measured_runs(db: Path) -> int:
    rows = query(db, "SELECT COUNT(*) FROM runs WHERE warmup = 0")
    return rows[0][0] if rows else 0


def registered_users() -> list[str]:
    return daemons.live_users(ZFS_FUSE.root)


def cleanup() -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pytest_fsbench.cli", "cleanup"], capture_output=True,
                          text=True, timeout=300)


HOLD_TARGET = """
import os, time
from pathlib import Path

def test_hold(fsbench_target):
    (fsbench_target.mountpoint / "data").write_bytes(b"x" * 4096)
    Path(os.environ["FSBENCH_READY"]).write_text(str(fsbench_target.mountpoint))
    time.sleep(300)
"""


@needs_zfs_fuse
def test_two_live_sessions_share_the_zfs_daemon_and_cleanup_spares_them(tmp_path, no_leftovers):
    # each measuring session is held in its first write onto its zfs target while a third session
    # is killed and fsbench cleanup runs (not timed: a fast machine ended them before the third had built)
    dd = ["benchmarks/test_dd.py", "--fs=zfs", "--dd-size=32M"]
    onto_target = 'echo "$*" | grep -q "of=/run/fsbench/"'
    measuring = []
    for name in ("a", "b"):
        proc = start([*dd, *session_args(tmp_path, name)], env=holding(tmp_path / name, "dd", onto_target))
        wait_for((tmp_path / name / "marks" / "dd.held").exists, proc, f"session {name} measuring")
        assert any(user.startswith(f"{proc.pid}-") for user in registered_users()), registered_users()
        measuring.append(proc)

    # a third session is killed with its zfs target built; cleanup runs while the others measure
    (tmp_path / "c").mkdir()
    (tmp_path / "c" / "test_hold.py").write_text(HOLD_TARGET)
    ready = tmp_path / "c" / "ready"
    third = start(["test_hold.py", "--fs=zfs", *session_args(tmp_path, "c")], cwd=tmp_path / "c",
                  env={"FSBENCH_READY": str(ready)})
    wait_for(ready.exists, third, "the third session's target")
    os.killpg(third.pid, signal.SIGKILL)
    third.communicate(timeout=60)
    assert all(proc.poll() is None for proc in measuring), "the measuring sessions must still be running"
    swept = cleanup()
    assert swept.returncode == 0, swept.stdout + swept.stderr
    assert f"removing mounts: {ready.read_text()}" in " ".join(swept.stdout.split()), swept.stdout
    assert "daemons:" not in swept.stdout  # the daemon serves two live sessions

    for name, proc in zip("ab", measuring):
        (tmp_path / name / "marks" / "go").touch()
        out, _ = proc.communicate(timeout=600)
        assert proc.returncode == 0, out[-3000:]
        assert "2 passed" in out
    # other fsbench sessions may run on this machine meanwhile: the daemon may serve them, and
    # their run directories are theirs; this test's sessions must have left none
    assert daemons.started_pid(ZFS_FUSE.root) is None or registered_users(), \
        "the daemon fsbench started outlived its last user"
    assert not [d for proc in (*measuring, third) for d in Path("/run/fsbench").glob(f"{proc.pid}-*")]


DAEMON_DIES = """
import os, time
from pathlib import Path
from pytest_fsbench.workloads.dd import DdWrite

def test_1_daemon_dies(fsbench):
    Path(os.environ["FSBENCH_READY"]).write_text(fsbench.session.token)
    while not Path(os.environ["FSBENCH_GO"]).exists():
        time.sleep(0.1)
    fsbench.measure(DdWrite(total_size="16M"))

def test_2_next_case(fsbench):
    fsbench.measure(DdWrite(total_size="16M"))
"""


@needs_zfs_fuse
def test_a_dead_zfs_daemon_fails_its_case_and_the_next_case_gets_a_new_one(tmp_path, no_leftovers):
    (tmp_path / "test_daemon.py").write_text(DAEMON_DIES)
    ready, go = tmp_path / "ready", tmp_path / "go"
    proc = start(["test_daemon.py", "--fs=zfs", "--runs=1", "--warmup=0", f"--image-dir={tmp_path / 'images'}",
                  "--image-size=512M", f"--store={tmp_path / 'fsbench.db'}"], cwd=tmp_path,
                 env={"FSBENCH_READY": str(ready), "FSBENCH_GO": str(go)})
    try:
        wait_for(ready.exists, proc, "the first case's target")
        daemon = daemons.started_pid(ZFS_FUSE.root)
        if daemon is None or registered_users() != [ready.read_text()]:
            pytest.skip("the zfs-fuse daemon here is not fsbench's alone (the system's, or other sessions "
                        "use it): killing it would break what this test does not own")
        os.kill(daemon, signal.SIGKILL)
        while processes.alive(daemon):
            time.sleep(0.05)
    finally:
        go.write_text("")
    out, _ = proc.communicate(timeout=300)
    assert proc.returncode == 1, out[-3000:]
    assert "1 failed, 1 passed" in out
    assert "zfs-single: the zfs-fuse daemon stopped answering during the case (it died or was killed)" in out


def test_a_store_that_fills_up_fails_the_case_and_leaves_nothing(tmp_path, no_leftovers):
    storefs = tmp_path / "storefs"
    storefs.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=24M", "fsbench-test-store", str(storefs)], check=True)
    try:
        db = storefs / "fsbench.db"
        proc = start(["benchmarks/test_dd.py", "-k", "write", "--fs=ext4,btrfs", "--layout=single,raid1",
                      "--dd-size=32M", "--runs=4", f"--image-dir={tmp_path / 'images'}", "--image-size=512M",
                      f"--store={db}"])
        wait_for(lambda: measured_runs(db) >= 1, proc, "the first measured run")
        with open(storefs / "filler", "wb") as filler:  # the store's filesystem fills up mid-session
            try:
                while True:
                    filler.write(b"\0" * (1 << 20))
                    filler.flush()
            except OSError:
                pass
        out, _ = proc.communicate(timeout=600)
        (storefs / "filler").unlink()
        con = sqlite3.connect(db)
        status = con.execute("SELECT status FROM sessions").fetchone()[0]
        con.close()
    finally:
        subprocess.run(["umount", str(storefs)], check=True)
    # issue 34: the session stops at the store's failure, in one line, and is recorded interrupted
    # (from the room it kept for that), not left running
    assert proc.returncode == pytest.ExitCode.INTERRUPTED, out[-3000:]
    assert "INTERNALERROR" not in out and "Traceback" not in out
    assert "database or disk is full; the session stops here" in out
    assert status == "interrupted"
    assert not list((tmp_path / "images").glob("*")), "images or staged data left behind"


@pytest.mark.parametrize("sig, gap", [(signal.SIGINT, 0.3), (signal.SIGINT, 0.05), (signal.SIGTERM, 0.3)])
def test_two_interrupts_in_a_row_leave_a_session_to_resume(tmp_path, no_leftovers, sig, gap):
    """The second signal is ignored from the moment the first arrives (issue 23: it cut the
    report of the first, the teardown or the scratch's removal short, with a chained traceback
    of up to 240 lines)."""
    args = ["benchmarks/test_dd.py", "-k", "write", "--fs=ext4", "--dd-size=256M", "--runs=6",
            f"--image-dir={tmp_path / 'images'}", "--image-size=1G", f"--store={tmp_path / 'fsbench.db'}"]
    db = tmp_path / "fsbench.db"
    proc = start(args)
    wait_for(lambda: measured_runs(db) >= 1, proc, "the first measured run")
    os.killpg(proc.pid, sig)  # SIGINT: a terminal's Ctrl-C, to pytest and dd alike
    time.sleep(gap)
    if proc.poll() is None:
        os.killpg(proc.pid, sig)
    out = proc.communicate(timeout=300)[0]
    assert proc.returncode == pytest.ExitCode.INTERRUPTED, out[-3000:]
    assert "Traceback" not in out and "During handling" not in out, out[-3000:]
    assert query(db, "SELECT status FROM sessions") == [("interrupted",)]
    assert measured_runs(db) < 6
    assert not (tmp_path / "images").exists() or not list((tmp_path / "images").iterdir()), \
        "images or the scratch left behind"

    resumed = execute_pytest([*args, "--resume"], cwd=REPO)
    assert resumed.returncode == 0, resumed.stdout[-3000:]
    assert query(db, "SELECT id, status FROM sessions") == [(1, "complete")]
    assert query(db, "SELECT status, stopped_by FROM cases") == [("done", "runs")]
    assert measured_runs(db) == 6


def test_kill_9_leaves_staged_data_on_disk_that_cleanup_removes(tmp_path, no_leftovers):
    images = tmp_path / "images"
    in_ram = set(Path("/dev/shm").iterdir())
    proc = start(["benchmarks/test_dd.py", "-k", "write", "--fs=ext4", "--dd-size=256M", "--runs=6",
                  f"--image-dir={images}", "--image-size=1G", f"--store={tmp_path / 'fsbench.db'}"])
    staged = lambda: list(images.glob("fsbench-*-scratch/run-*/dd-source.dat"))  # noqa: E731
    wait_for(lambda: bool(staged()), proc, "dd's staged source data")
    assert set(Path("/dev/shm").iterdir()) <= in_ram, "staged data must not be held in RAM"
    os.killpg(proc.pid, signal.SIGKILL)
    proc.communicate(timeout=60)
    assert staged()
    swept = cleanup()
    assert swept.returncode == 0, swept.stdout + swept.stderr
    assert "removing scratch: " in " ".join(swept.stdout.split()), swept.stdout  # a long path goes under its kind
    assert not list(images.glob("*")), list(images.glob("*"))


HELD = """#!/bin/sh
# {program} as fsbench executes it, held once (when {condition}) until the test lets it go, so that a
# signal the test sends arrives while fsbench waits for it; then the real {program}
if [ ! -e "{marks}/{program}.held" ] && {condition}; then
    echo $$ > "{marks}/{program}.held"
    while [ ! -e "{marks}/go" ]; do sleep 0.05; done
fi
exec {real} "$@"
"""

HOLD_THE_END = """
import os, time
from pathlib import Path

def pytest_sessionfinish(session):
    Path(os.environ["FSBENCH_MARKS"], "end.held").write_text("")
    while not Path(os.environ["FSBENCH_MARKS"], "go").exists():
        time.sleep(0.05)
"""


def holding(tmp_path: Path, program: str, condition: str = "true") -> dict[str, str]:
    """The environment of a session whose first `program` (a real one, found on PATH) waits for the
    test's go: a shim of that name ahead on PATH. The shim only waits; the command is the real one."""
    shims, marks = tmp_path / "shims", tmp_path / "marks"
    shims.mkdir(parents=True, exist_ok=True)
    marks.mkdir(exist_ok=True)
    real = shutil.which(program)
    assert real, f"{program} is not installed"
    shim = shims / program
    shim.write_text(HELD.format(program=program, condition=condition, marks=marks, real=real))
    shim.chmod(0o755)
    return {"PATH": f"{shims}:{os.environ['PATH']}", "FSBENCH_MARKS": str(marks), "PYTHONPATH": str(shims)}


def small_dd(tmp_path: Path, *more: str) -> list[str]:
    return ["benchmarks/test_dd.py", "-k", "write", "--dd-size=4M", "--runs=1", "--warmup=0",
            f"--image-dir={tmp_path / 'images'}", "--image-size=512M", f"--store={tmp_path / 'fsbench.db'}", *more]


def nothing_of(proc: subprocess.Popen, tmp_path: Path) -> None:
    """Nothing of the session's is left: images, scratch, run directory (mounts and loops: no_leftovers)."""
    assert not list((tmp_path / "images").glob("*")), list((tmp_path / "images").glob("*"))
    assert not list(Path("/run/fsbench").glob(f"{proc.pid}-*")), "its run directory is left"


@pytest.mark.parametrize("phase, program, extra, status", [
    ("collection", "mkfs.ext4", ["--fs-opt=ext4:mount=noatime"], None),  # the preflight's target, before the store
    ("build", "mkfs.ext4", [], "interrupted"),
    ("measure", "dd", [], "interrupted"),
    ("teardown", "umount", [], "complete"),  # its only test had passed: the teardown it let finish lacked nothing
    ("teardown", "losetup", [], "complete"),
    ("the session's end", None, [], "complete"),
])
def test_a_sigterm_in_any_phase_leaves_nothing(tmp_path, no_leftovers, phase, program, extra, status):
    """A SIGTERM (a CI job cancelled) sent to pytest alone while it waits for a real command of
    each phase. In a teardown (issue 44: during umount or losetup --detach it left the loop
    devices and the images) and at the session's end it lets that finish first."""
    if program is None:
        env = holding(tmp_path, "true")
        (tmp_path / "shims" / "hold_the_end.py").write_text(HOLD_THE_END)
        extra, held = ["-p", "hold_the_end"], tmp_path / "marks" / "end.held"
    else:
        env = holding(tmp_path, program, '[ "$1" = "--detach" ]' if program == "losetup" else "true")
        held = tmp_path / "marks" / f"{program}.held"
    proc = start(small_dd(tmp_path, "--fs=ext4", *extra), env=env)
    wait_for(held.exists, proc, f"{phase}: {program or 'the session end'} running")
    os.kill(proc.pid, signal.SIGTERM)
    time.sleep(0.5)
    (tmp_path / "marks" / "go").write_text("")
    out = proc.communicate(timeout=300)[0]
    assert "Traceback" not in out and "INTERNALERROR" not in out, out[-3000:]
    sessions = query(tmp_path / "fsbench.db", "SELECT status FROM sessions")
    assert sessions == ([(status,)] if status else []), out[-3000:]
    if phase in ("teardown", "the session's end"):
        assert "fsbench: SIGTERM: finishing the " in out, out[-3000:]
    assert proc.returncode == (0 if phase == "the session's end" else pytest.ExitCode.INTERRUPTED), out[-3000:]
    nothing_of(proc, tmp_path)


def test_a_second_sigterm_cuts_a_teardown_short_and_cleanup_removes_the_rest(tmp_path, no_leftovers):
    """Issue 44: after a teardown cut short, `fsbench cleanup` named the loop devices but not the
    images (the run directory, which names the image directory, was gone)."""
    env = holding(tmp_path, "losetup", '[ "$1" = "--detach" ]')
    proc = start(small_dd(tmp_path, "--fs=btrfs", "--layout=raid1"), env=env)
    wait_for((tmp_path / "marks" / "losetup.held").exists, proc, "losetup --detach running")
    os.kill(proc.pid, signal.SIGTERM)
    time.sleep(0.5)
    os.kill(proc.pid, signal.SIGTERM)
    out = proc.communicate(timeout=300)[0]
    (tmp_path / "marks" / "go").write_text("")
    assert proc.returncode == pytest.ExitCode.INTERRUPTED, out[-3000:]
    assert "Traceback" not in out, out[-3000:]
    assert "SIGTERM again: the teardown of btrfs-raid1" in out, out[-3000:]
    assert "a teardown was cut short and left " in out and "fsbench cleanup removes them" in out, out[-3000:]
    images = sorted(p.name for p in (tmp_path / "images").glob("*.img"))
    assert len(images) == 2, images
    listed = subprocess.run([sys.executable, "-m", "pytest_fsbench.cli", "cleanup", "--dry-run"],
                            capture_output=True, text=True, timeout=300).stdout
    listed = " ".join(listed.split())  # a long path goes on a line of its own under its kind
    assert all(f"would remove images: {tmp_path / 'images' / name}" in listed for name in images), listed
    swept = cleanup()
    assert swept.returncode == 0, swept.stdout + swept.stderr
    assert not list((tmp_path / "images").glob("*")), list((tmp_path / "images").glob("*"))
    assert not list(Path("/run/fsbench").glob(f"{proc.pid}-*"))


@pytest.mark.parametrize("phase, program, extra, status", [
    ("collection", "umount", ["--fs-opt=ext4:mount=noatime"], None),  # the preflight's teardown, cut short
    ("measure", "dd", [], "interrupted"),  # the first signal's unwinding ignores the second
    ("the session's end", None, [], "interrupted"),  # found by issue 44's sweep: it stayed 'running'
])
def test_a_second_sigterm_at_any_phase_leaves_nothing_cleanup_does_not_find(tmp_path, no_leftovers, phase, program,
                                                                          extra, status):
    """Two SIGTERMs half a second apart while pytest waits for a real command of each phase: what
    is left (only where a teardown was cut short) is all named by fsbench cleanup --dry-run, images
    and run directory included; the store says the session was interrupted."""
    if program is None:
        env = holding(tmp_path, "true")
        (tmp_path / "shims" / "hold_the_end.py").write_text(HOLD_THE_END)
        extra, held = ["-p", "hold_the_end"], tmp_path / "marks" / "end.held"
    else:
        env, held = holding(tmp_path, program), tmp_path / "marks" / f"{program}.held"
    proc = start(small_dd(tmp_path, "--fs=ext4", *extra), env=env)
    wait_for(held.exists, proc, f"{phase}: {program or 'the session end'} running")
    os.kill(proc.pid, signal.SIGTERM)
    time.sleep(0.5)
    os.kill(proc.pid, signal.SIGTERM)
    out = proc.communicate(timeout=300)[0]
    assert proc.returncode == pytest.ExitCode.INTERRUPTED, out[-3000:]
    assert "Traceback" not in out and "INTERNALERROR" not in out, out[-3000:]
    assert query(tmp_path / "fsbench.db", "SELECT status FROM sessions") == ([(status,)] if status else []), out[-3000:]
    left = [*(tmp_path / "images").glob("fsbench-*"), *Path("/run/fsbench").glob(f"{proc.pid}-*")]
    if phase == "collection":
        assert "a teardown was cut short and left " in out and len(left) == 2, (left, out[-3000:])
    else:
        assert not left, left
    listed = subprocess.run([sys.executable, "-m", "pytest_fsbench.cli", "cleanup", "--dry-run"],
                            capture_output=True, text=True, timeout=300).stdout
    assert all(str(path) in listed for path in left), listed
    # removed as fsbench cleanup removes them, this session's only (cleanup itself would also remove other
    # killed sessions' leftovers, which a test beside this one may be looking at)
    remove_own_leftovers(tmp_path, {proc.pid})
    assert not [*(tmp_path / "images").glob("fsbench-*"), *Path("/run/fsbench").glob(f"{proc.pid}-*")]


@pytest.mark.parametrize("resume", ["--resume", "--resume=1"])
def test_two_processes_resuming_one_session_at_once_one_is_refused(tmp_path, no_leftovers, resume):
    """Issue 44: both --resume were accepted and measured, and the case ended with 13 runs for
    --runs=12, runs of two concurrent targets stored as one sequence."""
    args = [a for a in small_dd(tmp_path, "--fs=ext4") if a != "--runs=1"] + ["--runs=2"]
    first = start(args, env=holding(tmp_path, "dd"))
    wait_for((tmp_path / "marks" / "dd.held").exists, first, "the first session's dd")
    os.kill(first.pid, signal.SIGTERM)
    (tmp_path / "marks" / "go").write_text("")
    first.communicate(timeout=300)
    db = tmp_path / "fsbench.db"
    assert query(db, "SELECT id, status FROM sessions") == [(1, "interrupted")]

    again = holding(tmp_path / "again", "dd")  # the resume that takes the session holds in its first dd
    resumes = [start([*args, resume], env=again) for _ in range(2)]
    held = tmp_path / "again" / "marks" / "dd.held"
    deadline = time.monotonic() + 180
    while not held.exists() and time.monotonic() < deadline and any(p.poll() is None for p in resumes):
        time.sleep(0.1)
    refused = [p for p in resumes if p.poll() is not None]
    assert len(refused) == 1, "both resumes run" if not refused else "both ended"
    [loser], [winner] = refused, [p for p in resumes if p is not refused[0]]
    out = loser.communicate(timeout=60)[0]
    (tmp_path / "again" / "marks" / "go").write_text("")
    won = winner.communicate(timeout=300)[0]
    assert loser.returncode == pytest.ExitCode.USAGE_ERROR, out[-2000:]
    errors = [line for line in out.splitlines() if line.startswith("ERROR:")]
    assert len(errors) == 1 and errors[0].startswith(f"ERROR: {resume}: session 1"), out[-2000:]
    assert f"pid {winner.pid} on " in errors[0], errors
    assert winner.returncode == 0, won[-3000:]
    assert query(db, "SELECT id, status FROM sessions") == [(1, "complete")]
    assert measured_runs(db) == 2


@pytest.mark.parametrize("removed", ["the store's file", "the store's directory"])
def test_a_store_removed_mid_session_is_noticed_and_its_runs_kept(tmp_path, no_leftovers, removed):
    """Issue 44: the store deleted mid-session: exit 0, the last line named the store and session,
    and the file was gone with every run."""
    results, cwd = tmp_path / "results", tmp_path / "cwd"
    results.mkdir()
    cwd.mkdir()
    db = results / "fsbench.db"
    args = [str(REPO / "benchmarks" / "test_dd.py"), "--fs=ext4", "--dd-size=4M", "--runs=2", "--warmup=0",
            f"--image-dir={tmp_path / 'images'}", "--image-size=512M", f"--store={db}"]
    proc = start(args, cwd=cwd, env=holding(tmp_path, "dd"))
    wait_for((tmp_path / "marks" / "dd.held").exists, proc, "the first run's dd")
    if removed == "the store's file":
        db.unlink()
    else:
        shutil.rmtree(results)
    (tmp_path / "marks" / "go").write_text("")
    out = proc.communicate(timeout=300)[0]
    rescued = (results if removed == "the store's file" else cwd) / f"fsbench.rescued-{proc.pid}.db"
    assert proc.returncode == pytest.ExitCode.INTERRUPTED, out[-3000:]
    assert "Traceback" not in out, out[-3000:]
    assert (f"fsbench: result store {db}: its file was removed during the session; everything it held, this "
            f"session's runs too, is kept in {rescued}; the session stops here; --store={rescued} --resume "
            "continues it") in out, out[-3000:]
    assert query(rescued, "SELECT id, status FROM sessions") == [(1, "interrupted")]
    assert measured_runs(rescued) == 1  # the run measured as the file went is kept too
    resumed = execute_pytest([*args[:-1], f"--store={rescued}", "--resume"], cwd=cwd)
    assert resumed.returncode == 0, resumed.stdout[-3000:] + resumed.stderr[-3000:]
    assert query(rescued, "SELECT id, status FROM sessions") == [(1, "complete")], resumed.stdout[-3000:]
    assert measured_runs(rescued) == 4


def test_a_relative_image_dir_from_another_directory(tmp_path, no_leftovers):
    """Issue 44: run from a directory other than the checkout, a relative --image-dir failed dd
    (its data set's link is relative to the link's own directory) and left an empty directory."""
    cwd = tmp_path / "elsewhere"
    cwd.mkdir()
    done = execute_pytest([str(REPO / "benchmarks" / "test_dd.py"), "--fs=ext4", "--dd-size=4M", "--runs=1",
                           "--warmup=0", "--image-dir=relimg/sub", "--image-size=512M",
                           f"--store={tmp_path / 'fsbench.db'}"], cwd=cwd)
    assert done.returncode == 0, done.stdout[-3000:]
    assert f"loop images of 512 MiB in {cwd / 'relimg' / 'sub'}" in done.stdout
    assert "2 passed" in done.stdout
    assert not list(cwd.iterdir()), "the image directory fsbench made is left, or something in it"


HOLD_UNTIL_GO = """
import os, time
from pathlib import Path

def test_hold(fsbench_target):
    Path(os.environ["FSBENCH_READY"]).write_text(str(fsbench_target.mountpoint))
    while not Path(os.environ["FSBENCH_GO"]).exists():
        time.sleep(0.1)
"""


@needs_zfs_fuse
def test_the_zfs_daemon_is_left_running_for_a_pool_that_is_not_fsbench_s(tmp_path, no_leftovers):
    """Issue 44: when the last fsbench session using zfs-fuse ended, fsbench stopped the daemon
    while a user's pool was imported in it; that pool's later `zpool destroy` failed."""
    (tmp_path / "test_hold.py").write_text(HOLD_UNTIL_GO)
    ready, go = tmp_path / "ready", tmp_path / "go"
    proc = start(["test_hold.py", "--fs=zfs", *session_args(tmp_path, "s", runs=1)], cwd=tmp_path,
                 env={"FSBENCH_READY": str(ready), "FSBENCH_GO": str(go)})
    wait_for(ready.exists, proc, "the session's zfs target")
    daemon = daemons.started_pid(ZFS_FUSE.root)
    zpool = serialized(execute, DAEMONS)  # never beside another session's zpool command (it deadlocks zfs-fuse)
    pool = f"userpool{os.getpid()}"
    vdev = tmp_path / "user.img"
    vdev.write_bytes(b"")
    os.truncate(vdev, 128 << 20)
    # issue 44: CI's leftover check counted a live session's registry of the shared daemon as left behind
    checked = subprocess.run([str(REPO / ".ci" / "leftovers")], capture_output=True, text=True, timeout=120)
    assert str(ZFS_FUSE.root) not in checked.stdout + checked.stderr, checked.stderr
    try:
        zpool(["zpool", "create", "-m", "none", pool, str(vdev)])
        go.write_text("")
        out = proc.communicate(timeout=300)[0]
        others = registered_users()  # sessions beside this one keep the daemon up anyway
        assert proc.returncode == 0, out[-3000:]
        assert pool in zpool(["zpool", "list", "-H", "-o", "name"], timeout=60).stdout.split(), out[-3000:]
        if daemon is not None and not others:
            assert (f"fsbench: the zfs-fuse daemon fsbench started (pid {daemon}) is left running: it also serves "
                    f"{pool}, which is not fsbench's") in out, out[-3000:]
            assert processes.alive(daemon)
    finally:
        go.write_text("")
        destroyed = zpool(["zpool", "destroy", pool], check=False, timeout=120)
    assert destroyed.returncode == 0, destroyed.output  # its daemon still served it
    swept = cleanup()  # serving fsbench's own pools alone again, an unused daemon fsbench started is stopped
    assert swept.returncode == 0, swept.stdout + swept.stderr
    assert daemons.started_pid(ZFS_FUSE.root) is None or registered_users()


@pytest.mark.parametrize("sig, after", [(signal.SIGINT, 0.3), (signal.SIGINT, 1.5), (signal.SIGTERM, 1.5)])
def test_an_fsbench_command_interrupted_is_one_line_and_leaves_no_half_output(tmp_path, sig, after):
    """Found by issue 44's sweep: Ctrl-C of `fsbench report` gave a traceback of 30 lines (in its
    imports, or while drawing), and a signal while the page was written could leave half of it."""
    from test_usage_errors import saved_baseline

    store = tmp_path / "fsbench.db"
    saved_baseline(store, "base", runs=6)
    command = Path(sys.executable).with_name("fsbench")  # the command as installed (.venv/bin/fsbench)
    proc = subprocess.Popen([str(command), "report", "base", f"--store={store}", "-o", str(tmp_path / "r.html")],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=sigint_default)
    time.sleep(after)
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=120)
    if proc.returncode == 0:
        pytest.skip(f"the report was written before the signal ({after} s): nothing to interrupt on this machine")
    name = "Ctrl-C" if sig == signal.SIGINT else "SIGTERM"
    assert proc.returncode == 130 and err == (f"fsbench report: interrupted ({name}); nothing is left half written: "
                                              "run it again to finish\n"), err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fsbench.db"]

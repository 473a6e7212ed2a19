"""A team's shared store: real pytest sessions writing to a real PostgreSQL server at once, resumed
there, pushed from a machine's SQLite file, compared and reported from it, a baseline of another
machine refused unless asked, and a server that refuses or is not there named in one line before
anything is built."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import execute_pytest, sigint_default
from pytest_fsbench.store.results import Store

pytestmark = pytest.mark.root
REPO = Path(__file__).resolve().parents[2]


def session_args(tmp_path: Path, name: str, store: str, runs: int = 3) -> list[str]:
    return ["benchmarks/test_dd.py", "--fs=ext4", "--dd-size=16M", f"--image-dir={tmp_path / name}",
            "--image-size=512M", f"--store={store}", f"--runs={runs}", "--warmup=1"]


def fsbench(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pytest_fsbench.cli", *args], capture_output=True, text=True,
                          timeout=300, cwd=REPO)


def test_two_sessions_at_once_lose_and_repeat_no_run(tmp_path, postgres_server, no_leftovers):
    url = postgres_server.new_database()
    procs = [subprocess.Popen([sys.executable, "-m", "pytest", "-p", "no:cacheprovider",
                               *session_args(tmp_path, name, url, runs=4)], cwd=REPO, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True, preexec_fn=sigint_default)
             for name in ("a", "b")]
    outs = [proc.communicate(timeout=600)[0] for proc in procs]
    for proc, out in zip(procs, outs):
        assert proc.returncode == 0, out[-3000:]
    store = Store(url, create=False)
    try:
        sessions = store.sessions()
        assert [s.status for s in sessions] == ["complete", "complete"]
        for s in sessions:
            counts = store.run_counts(s.id)
            assert sorted(counts.values()) == [(1, 4), (1, 4)], counts  # 1 warm-up + 4 runs, each case
        indexes = store.db.execute("SELECT case_row, COUNT(*), COUNT(DISTINCT idx), MIN(idx), MAX(idx) FROM runs"
                                   " GROUP BY case_row").fetchall()
        assert len(indexes) == 4 and all(n == distinct == 5 and low == 0 and high == 4
                                         for _, n, distinct, low, high in indexes)
    finally:
        store.close()


def test_an_interrupted_session_resumes_in_the_shared_store(tmp_path, postgres_server, no_leftovers):
    url = postgres_server.new_database()
    # 30 runs: the interrupt must land while the session still has runs to go (a 16M dd run takes
    # a few hundredths of a second, three could end before the signal)
    args = [*session_args(tmp_path, "r", url, runs=30), "-k", "dd_write"]
    proc = subprocess.Popen([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args], cwd=REPO,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, preexec_fn=sigint_default)
    store = Store(url)
    try:
        deadline = time.monotonic() + 300
        while not store.sessions() or store.measured_runs(store.sessions()[0].id) < 1:
            assert proc.poll() is None, proc.communicate()[0][-3000:]
            assert time.monotonic() < deadline, "no run was measured"
            time.sleep(0.2)
        proc.send_signal(signal.SIGINT)
        out = proc.communicate(timeout=300)[0]
        assert proc.returncode == pytest.ExitCode.INTERRUPTED, out[-3000:]
        [session] = store.sessions()
        assert session.status == "interrupted"
        kept = store.measured_runs(session.id)
        resumed = execute_pytest([*args, "--resume"], cwd=REPO)
        assert resumed.returncode == 0, resumed.stdout[-3000:]
        assert f"resuming session {session.id}" in resumed.stdout
        assert [s.status for s in store.sessions()] == ["complete"]
        assert store.measured_runs(session.id) == 30 and 1 <= kept < 30
    finally:
        store.close()


def test_push_compare_and_report_across_hosts(tmp_path, postgres_server, no_leftovers):
    url = postgres_server.new_database()
    local = tmp_path / "offline.db"
    first = execute_pytest([*session_args(tmp_path, "p", str(local)), "-k", "dd_write"], cwd=REPO)
    assert first.returncode == 0, first.stdout[-3000:]
    pushed = fsbench("push", "last", f"--store={local}", f"--to={url}")
    assert pushed.returncode == 0, pushed.stderr
    assert " ".join(pushed.stdout.split()) == f"fsbench push: session 1 of {local} is session 1 of {url}"
    again = fsbench("push", "1", f"--store={local}", f"--to={url}")
    assert again.returncode == 2 and "is already in" in again.stderr and len(again.stderr.strip().splitlines()) == 1
    # the pushed session stands for another machine's: its manifest names another host
    store = Store(url)
    store.db.execute("UPDATE sessions SET manifest = REPLACE(manifest, ?, ?) WHERE id = 1",
                     (f'"hostname":"{os.uname().nodename}"', '"hostname":"rack-2"'))
    store.save_baseline("base", 1)
    store.close()
    listed = fsbench("sessions", f"--store={url}", "--host=rack-2")
    [header, row, *ran] = listed.stdout.splitlines()
    assert ran and all(line.startswith(" " * 8) for line in ran)  # what the session ran, under its row
    assert listed.returncode == 0 and header.split()[-1] == "host"
    assert row.split()[0] == "1" and row.split()[-1] == "rack-2"

    def here_args(runs: int = 3) -> list[str]:
        return [*session_args(tmp_path, "q", url, runs), "-k", "dd_write", "--compare=base"]

    here = here_args()
    refused = execute_pytest(here, cwd=REPO)
    assert refused.returncode == pytest.ExitCode.USAGE_ERROR
    line = next(ln for ln in refused.stderr.splitlines() if "ERROR" in ln)
    assert "its sessions ran on rack-2" in line and "--across-hosts" in line
    assert not list((tmp_path / "q").glob("*.img")) and not (tmp_path / "q").exists()

    across = execute_pytest([*here, "--across-hosts", "--save=base"], cwd=REPO)
    assert across.returncode == 0, across.stdout[-3000:]
    assert "fsbench comparison with base" in across.stdout
    shared = Store(url)
    [_, saved] = shared.sessions()  # the refused run recorded no session
    shared.close()
    # a name the fleet shares holds every machine's sessions: each machine compares with its own
    own = execute_pytest(here_args(runs=2), cwd=REPO)
    assert own.returncode == 0, own.stdout[-3000:]
    assert f"fsbench: comparing with base (1 session ({saved.id}): gate on" in own.stdout
    compared = fsbench("compare", "last@rack-2", f"last@{os.uname().nodename}", f"--store={url}")
    assert compared.returncode == 0, compared.stderr
    assert "on rack-2" in compared.stdout and "ran on different machines" in compared.stdout
    assert "test_dd_write[ext4-single-1M]" in compared.stdout
    page = tmp_path / "report.html"
    reported = fsbench("report", "last", f"--store={url}", "--compare=base", f"-o={page}")
    assert reported.returncode == 0, reported.stderr
    html = page.read_text()
    assert "<svg" in html and "test_dd_write" in html and "fsbench-test-secret" not in html


@pytest.mark.parametrize("problem", ["wrong password", "no server"])
def test_a_server_that_refuses_is_one_line_before_anything_is_built(tmp_path, postgres_server, problem):
    url = postgres_server.url("fsbench_nothing")
    env = dict(os.environ)
    if problem == "wrong password":
        wrong = tmp_path / "pgpass"
        wrong.write_text(f"127.0.0.1:{postgres_server.port}:*:fsbench:not-the-password\n")
        wrong.chmod(0o600)
        env["PGPASSFILE"] = str(wrong)
        expected = 'password authentication failed for user "fsbench"'
    else:
        url = url.replace(f":{postgres_server.port}/", ":1/")
        expected = "Connection refused"
    done = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider",
                           *session_args(tmp_path, "x", url)], cwd=REPO, capture_output=True, text=True,
                          timeout=300, env=env)
    assert done.returncode == pytest.ExitCode.USAGE_ERROR, done.stdout[-2000:]
    [line] = [ln for ln in done.stderr.splitlines() if ln.strip()]
    assert line.startswith(f"ERROR: --store={url}: cannot connect:") and expected in line
    assert not (tmp_path / "x").exists()


def test_a_password_in_the_url_is_refused_without_being_shown(tmp_path):
    done = execute_pytest([*session_args(tmp_path, "y", "postgresql://fsbench:hunter2@127.0.0.1/fsbench")], cwd=REPO)
    assert done.returncode == pytest.ExitCode.USAGE_ERROR
    assert "hunter2" not in done.stdout + done.stderr
    assert "--store=postgresql://fsbench@127.0.0.1/fsbench: put the password in PGPASSFILE" in done.stderr


def test_doctor_reads_a_server_s_store(postgres_server):
    """Issue 44: fsbench doctor --store=postgresql://... gave AttributeError: 'str' object has no
    attribute 'is_file'."""
    url = postgres_server.new_database()
    done = fsbench("doctor", "--kernel=host", f"--store={url}")
    assert "Traceback" not in done.stderr, done.stderr
    assert (f"store: {url}: a new store (no tables yet); the first session makes its tables there"
            in " ".join(done.stdout.split())), done.stdout
    Store(url).close()  # a session's first use makes its tables
    done = fsbench("doctor", "--kernel=host", f"--store={url}")
    assert f"store: {url}: 0 sessions; sessions write into it" in " ".join(done.stdout.split()), done.stdout

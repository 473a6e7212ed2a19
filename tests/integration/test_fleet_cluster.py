"""`fsbench fleet` on a real Slurm cluster on one machine (tests/slurm_cluster.py: a controller and
three nodes in network namespaces, PostgreSQL on the controller's address): a real fsbench session
per node into one store under three host names, each gated against its own host's baseline; a node
cut off mid-session (link down, slurmd killed) reported NODE_FAIL by name with exit status 1 while
the others complete; a node without fsbench named in its line; nothing of the cluster left behind."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from pytest_fsbench.measure.progress import unwrap
from pytest_fsbench.views.tables import unstack

from conftest import fsbench_leftovers, sweep
from pytest_fsbench.verdicts.gate import REGRESSION
from slurm_cluster import NODES, SlurmCluster, unavailable

pytestmark = pytest.mark.root


@pytest.fixture(scope="module")
def cluster():
    reason = unavailable()
    if reason:
        pytest.skip(reason)
    made = SlurmCluster()
    try:
        made.start()
        yield made
    finally:
        made.stop()
        sweep()  # the cut-off node's session was killed with its target built
    assert made.left_behind() == []
    assert fsbench_leftovers() == []


def session_args(tmp_path: Path, *extra: str, select: str = "dd", fs: str = "ext4") -> list[str]:
    """A small real session: ext4, dd write and read of 16M (select: pytest's -k), five runs each."""
    return ["-p", "no:cacheprovider", "--pyargs", "pytest_fsbench.benchmarks", "-k", select, f"--fs={fs}",
            "--dd-size=16M", "--runs=5", "--warmup=0", "--control=off", f"--image-dir={tmp_path / 'images'}",
            "--image-size=512M", *extra]


def finished(process, timeout: float = 240) -> tuple[int, str]:
    """The fleet's exit status and output, each line it wrapped to fit the terminal and each row it
    stacked read whole again (issue 43)."""
    out, _ = process.communicate(timeout=timeout)
    return process.returncode, "".join(f"{line}\n" for line in unstack(unwrap(out.splitlines())))


def line_of(out: str, node: str) -> str:
    return next(line for line in out.splitlines() if line.startswith(node + " "))


def until_blank(lines: list[str]) -> list[str]:
    """The lines before the first empty one (a table, before the hosts' change points)."""
    return lines[:lines.index("")] if "" in lines else lines


def job_of(out: str, node: str) -> str:
    return line_of(out, node).split()[2]


def opened_in_a_browser(page: Path) -> str:
    """The page as a real browser laid it out (headless Chromium's DOM); skips without one."""
    browser = next((found for name in ("chromium", "chromium-browser") if (found := shutil.which(name))),
                   None)
    if browser is None:
        pytest.skip("needs a browser: Debian package chromium")
    argv = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--dump-dom", page.as_uri()]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def sessions(cluster: SlurmCluster, database: str) -> list[tuple[int, str, str]]:
    """(id, status, host) of every session in the store, read over PostgreSQL's local socket."""
    rows = cluster.postgres.sql("SELECT id, status, manifest::json->>'hostname' FROM sessions ORDER BY id",
                                database)
    return [(int(i), status, host) for i, status, host in (row.split("|") for row in rows.split())]


def gated(cluster: SlurmCluster, database: str, session_id: int) -> list[dict]:
    rows = cluster.postgres.sql(f"SELECT manifest::json->'gate' FROM cases WHERE session_id = {session_id}",
                                database)
    return [entry for row in rows.splitlines() if row.strip() for entry in json.loads(row)]


def measured_runs(cluster: SlurmCluster, database: str, host: str, after: int) -> int:
    return int(cluster.postgres.sql(
        "SELECT COUNT(*) FROM runs r JOIN cases c ON r.case_row = c.id JOIN sessions s ON c.session_id = s.id"
        f" WHERE s.id > {after} AND s.manifest::json->>'hostname' = '{host}' AND r.warmup = 0", database))


def test_a_node_without_fsbench_fails_naming_the_node(cluster, tmp_path):
    url = cluster.postgres.new_database()
    missing = tmp_path / "no-fsbench" / "bin" / "python"
    code, out = finished(cluster.fleet(["--nodes=fleet-b", f"--store={url}", f"--python={missing}",
                                        f"--workdir={tmp_path}", "--", *session_args(tmp_path)], tmp_path),
                         120)
    assert code == 1, out
    line = line_of(out, "fleet-b")
    assert "FAILED" in line, out
    assert f"fsbench is not installed on fleet-b: {missing} there cannot import" in line, out


def test_what_slurm_refuses_is_one_line_and_leaves_no_job(cluster, tmp_path):
    url = cluster.postgres.new_database()
    unknown = ["--nodes=fleet-a,fleet-x", f"--store={url}", "--", "-k", "dd"]
    code, out = finished(cluster.fleet(unknown, tmp_path), 60)
    assert (code, out) == (2, "fsbench fleet: --nodes: Slurm knows no node fleet-x (its nodes: fleet-a, "
                              "fleet-b, fleet-c)\n")
    # fleet-a has the feature and its job is submitted; fleet-b lacks it: sbatch refuses, fleet-a's job
    # is cancelled
    lacking = ["--nodes=fleet-a,fleet-b", "--constraint=nvme", f"--store={url}", f"--workdir={tmp_path}",
               "--", *session_args(tmp_path)]
    code, out = finished(cluster.fleet(lacking, tmp_path), 60)
    assert code == 1 and out.count("\n") == 1, out
    assert out.startswith("fsbench fleet: node fleet-b: sbatch refused the job: sbatch: error: "), out
    deadline = time.monotonic() + 30
    while cluster.jobs_left() and time.monotonic() < deadline:
        time.sleep(0.5)
    assert cluster.jobs_left() == ""


def test_no_wait_then_status_reads_the_sharded_jobs_back(cluster, tmp_path):
    url = cluster.postgres.new_database()
    args = ["--nodes=fleet-a,fleet-b", f"--store={url}", f"--workdir={tmp_path}", "--no-wait", "--shard",
            "--", *session_args(tmp_path, select="dd_write", fs="ext4,xfs")]
    code, out = finished(cluster.fleet(args, tmp_path), 60)
    assert code == 0, out
    job_ids = [line_of(out, node).split()[2] for node in ("fleet-a", "fleet-b")]
    assert f"fsbench fleet status {','.join(job_ids)} --store={url} reads them back" in out
    status = ["status", ",".join(job_ids), f"--store={url}"]
    deadline = time.monotonic() + 180
    while True:
        code, out = finished(cluster.fleet(status, tmp_path), 60)
        if code == 0 or time.monotonic() > deadline:
            break
        assert "the job is RUNNING" in out or "the job is PENDING" in out or "no session" in out, out
        time.sleep(2)
    assert code == 0, out
    for node, job_id in zip(("fleet-a", "fleet-b"), job_ids):
        assert line_of(out, node).split()[:4] == [node, "job", job_id, "COMPLETED"], out
        assert "complete: 1 passed" in line_of(out, node), out
    lines = out.splitlines()
    # each host's outcome, before the work it did ("passed; work 1.00x 179f 60c")
    cells = [re.split(r"\s{2,}", line.strip()) for line in until_blank(lines[lines.index(line_of(out, "fleet-b")) + 2:])]
    table = [[cell.split(";")[0] for cell in row] for row in cells]
    assert table == [["case", "fleet-a", "fleet-b"], ["test_dd_write[ext4-single-1M]", "passed", "-"],
                     ["test_dd_write[xfs-single-1M]", "-", "passed"]], out  # each case on exactly one node
    # with the work it did there (device bytes per byte, flushes, commits)
    assert re.fullmatch(r"passed; work 1\.\d\dx \S+f \S+c", cells[1][1]), out
    assert re.fullmatch(r"passed; work 1\.\d\dx \S+f \S+c", cells[2][2]), out


def test_three_nodes_one_store_and_a_node_cut_off_mid_session(cluster, tmp_path):
    url = cluster.postgres.new_database()
    database = url.rsplit("/", 1)[1]
    nodes = ",".join(NODES)
    start = time.monotonic()
    code, out = finished(cluster.fleet([f"--nodes={nodes}", f"--store={url}", f"--workdir={tmp_path}", "--",
                                        *session_args(tmp_path, "--save=nightly")], tmp_path))
    assert code == 0, out
    first = sessions(cluster, database)
    assert sorted((status, host) for _, status, host in first) == [("complete", n) for n in sorted(NODES)], \
        out
    for node in NODES:
        assert "COMPLETED" in line_of(out, node) and "complete: 2 passed" in line_of(out, node), out
    saved = time.monotonic() - start

    # the nightly run: each node gated against its own host's sessions in "nightly"; fleet-c dies mid-session.
    # 95% allowed: the gate runs for real, but this busy machine's 2-5x swings never fail it
    page = tmp_path / "fleet.html"
    fleet = cluster.fleet([f"--nodes={nodes}", f"--store={url}", f"--workdir={tmp_path}", f"--report={page}",
                           "--",
                           *session_args(tmp_path, "--compare=nightly", "--fail-on-regression=95%",
                                         "--gate-mode=fixed")], tmp_path)
    deadline = time.monotonic() + 120
    while measured_runs(cluster, database, "fleet-c", after=first[-1][0]) == 0:
        assert fleet.poll() is None and time.monotonic() < deadline, "fleet-c's session never measured a run"
        time.sleep(0.2)
    cluster.cut_off("fleet-c")
    code, out = finished(fleet)
    assert code == 1, out
    cut = line_of(out, "fleet-c")
    assert "NODE_FAIL" in cut and "node fleet-c failed while the job ran" in cut, out
    for node in ("fleet-a", "fleet-b"):  # within bounds or inconclusive (which passes): 5 runs, busy machine
        line = line_of(out, node)
        assert "COMPLETED" in line and "complete: 2 passed; gate: " in line and REGRESSION not in line, out
    second = [s for s in sessions(cluster, database) if s[0] > first[-1][0]]
    statuses = {host: status for _, status, host in second}
    assert statuses["fleet-a"] == statuses["fleet-b"] == "complete", second
    assert statuses["fleet-c"] != "complete", second
    for session_id, _, host in second:
        if host != "fleet-c":  # gated against its own host's baseline session only
            entries = gated(cluster, database, session_id)
            assert len(entries) == 2 and not any(e["failed"] for e in entries), entries
    after = out.splitlines()[out.splitlines().index(cut) + 2:]
    table = until_blank(after)
    assert "change points on fleet-a: none in the cases this fleet ran" in out, out  # two nights: too few
    assert table[0].split() == ["case", "fleet-a", "fleet-b", "fleet-c"], out
    assert [row.split()[0] for row in table[1:]] == ["test_dd_read[ext4-single-1M]",
                                                     "test_dd_write[ext4-single-1M]"], out
    for row in table[1:]:  # fleet-a and fleet-b passed (and were gated); fleet-c was cut off
        assert row.split()[1] == "passed" and row.count("passed") >= 2, out
    dom = opened_in_a_browser(page)
    assert f"<td>fleet-c</td><td>{job_of(out, 'fleet-c')}</td><td>NODE_FAIL</td>" in dom, dom
    assert "<th>case</th><th>fleet-a</th><th>fleet-b</th><th>fleet-c</th>" in dom, dom
    print(f"three sessions saved in {saved:.0f} s; the nightly with a node cut off in "
          f"{time.monotonic() - start - saved:.0f} s")

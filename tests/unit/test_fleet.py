"""fleet.py's pure part: the request's checks, the batch script (run for real), Slurm's answers
parsed from outputs captured on a real Slurm 22.05 cluster (tests/data/slurm/: three nodes, a job
that completed, one that exited 127, one whose node was cut off, one pending behind it), each
node's line, the hosts x cases table from a real store, and the command's one-line refusals."""

from __future__ import annotations

import platform
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import DATA
from pytest_fsbench import cli, fleet
from pytest_fsbench.errors import UsageError
from pytest_fsbench.store.results import Store
from pytest_fsbench.system.host import slurm_job

SLURM = DATA / "slurm"


def jobs(name: str) -> dict[str, fleet.Job]:
    return fleet.parse_scontrol_jobs((SLURM / name).read_text())


def request(tmp_path: Path, **kw) -> fleet.Request:
    values = {"nodes": ("fleet-a",), "store": "postgresql://fsbench@db/fsbench", "pytest_args": ("-k", "dd"),
              "python": sys.executable, "workdir": tmp_path, **kw}
    return fleet.Request(**values)


# ---- the request -------------------------------------------------------------------------------


def test_nodes_are_names_each_given_once():
    assert fleet.parse_nodes("bench-1,bench-2, nvme.lab") == ("bench-1", "bench-2", "nvme.lab")
    with pytest.raises(UsageError, match=r"bench-1 given twice"):
        fleet.parse_nodes("bench-1,bench-2,bench-1")
    with pytest.raises(UsageError, match=r"'' is no node name"):
        fleet.parse_nodes("bench-1,,bench-2")
    with pytest.raises(UsageError, match=r"'node\[1-3\]' is no node name"):
        fleet.parse_nodes("node[1-3]")


def test_time_limits_and_job_ids():
    for text in ("90", "30:00", "2:00:00", "1-00", "1-12:00:00"):
        assert fleet.parse_time(text) == text
    with pytest.raises(UsageError, match="--time=2h: give a Slurm time limit"):
        fleet.parse_time("2h")
    assert fleet.parse_job_ids(["12,13", "14"]) == ("12", "13", "14")
    for words in ([], ["12,x"], [","]):
        with pytest.raises(UsageError, match="give the job ids"):
            fleet.parse_job_ids(words)


def test_an_sqlite_store_only_when_every_node_is_this_host():
    fleet.check_store(Path("results.db"), ["here", "here"], "here")
    fleet.check_store("postgresql://fsbench@db/fsbench", ["a", "b"], "here")
    with pytest.raises(UsageError, match=r"SQLite file on this machine \(here\), which a, b cannot write"):
        fleet.check_store(Path("results.db"), ["here", "a", "b"], "here")


def test_the_store_is_the_fleets_and_kernels_by_path_are_named():
    fleet.check_pytest_args(["-k", "dd", "--fs=ext4"])
    for args in (["--store=x.db"], ["--store", "x.db"]):
        with pytest.raises(UsageError, match="give the store to fsbench fleet itself"):
            fleet.check_pytest_args(args)
    args = ["--kernel=host,vm:/boot/new", "--kernel", "uml:next=/srv/linux", "-k", "dd"]
    assert fleet.kernel_paths(args) == ["/boot/new", "/srv/linux"]
    assert fleet.kernel_paths(["--kernel=host+uml"]) == []
    assert fleet.kernel_notes(["--kernel=host+vm:/k/bzImage"]) == [
        "fsbench fleet: /k/bzImage must be readable at that path on every node (fsbench copies no kernel)"]


def test_with_shard_each_node_gets_its_share(tmp_path):
    nodes = ("bench-1", "bench-2", "bench-3")
    sharded = request(tmp_path, nodes=nodes, shard=True)
    assert [sharded.session_args(n)[-1] for n in nodes] == ["--shard=0/3", "--shard=1/3", "--shard=2/3"]
    assert request(tmp_path, nodes=nodes).session_args("bench-2") == [
        "-k", "dd", "--store=postgresql://fsbench@db/fsbench"]
    with pytest.raises(UsageError, match="give fsbench fleet --shard"):
        fleet.check_pytest_args(["--shard=0/2"])


def test_each_job_is_exclusive_never_requeued_and_on_its_node(tmp_path):
    argv = fleet.sbatch_argv("fleet-b", request(tmp_path, partition="bench", constraint="nvme",
                                                time="2:00:00"))
    assert argv[:6] == ["sbatch", "--parsable", "--exclusive", "--no-requeue", "--nodelist=fleet-b",
                        "--nodes=1"]
    assert argv[-3:] == ["--partition=bench", "--constraint=nvme", "--time=2:00:00"]
    assert f"--output={tmp_path}/fsbench-fleet-%j.out" in argv
    plain = fleet.sbatch_argv("fleet-b", request(tmp_path))
    assert not any(a.startswith(("--partition", "--constraint", "--time")) for a in plain)


def run_script(tmp_path: Path, python: str, args: list[str]) -> subprocess.CompletedProcess:
    script = tmp_path / "job.sh"
    script.write_text(fleet.batch_script(python, args))
    return subprocess.run(["sh", str(script)], capture_output=True, text=True, timeout=120)


def test_the_batch_script_runs_pytest_with_every_argument_as_given(tmp_path):
    (tmp_path / "test_words.py").write_text("def test_words():\n    pass\n")
    report = tmp_path / "it's a $report.xml"
    args = ["-p", "no:cacheprovider", "-q", str(tmp_path / "test_words.py"), "-k", "words or nothing",
            f"--junitxml={report}"]
    done = run_script(tmp_path, sys.executable, args)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 passed" in done.stdout and report.exists()


def test_the_batch_script_of_a_node_without_fsbench_exits_127_naming_the_host(tmp_path):
    missing = tmp_path / "venv" / "bin" / "python"
    done = run_script(tmp_path, str(missing), ["-k", "dd"])
    assert done.returncode == fleet.NOT_INSTALLED
    assert done.stderr.strip() == (f"fsbench fleet: fsbench is not installed on {platform.node()}: {missing} "
                                   "cannot import pytest_fsbench")


# ---- Slurm's answers (captured on a real cluster) ------------------------------------------------


def test_scontrol_jobs_while_running():
    found = jobs("scontrol-show-job-running.txt")
    assert {i: (j.state, j.node, j.exit_status) for i, j in found.items()} == {
        "1": ("COMPLETED", "fleet-a", 0), "2": ("FAILED", "fleet-b", 127), "3": ("RUNNING", "fleet-c", 0),
        "4": ("PENDING", "fleet-c", 0)}
    assert [j.ended for j in found.values()] == [True, True, False, False]
    assert found["1"].output.endswith("/fsbench-fleet-1.out")


def test_scontrol_jobs_after_the_node_was_cut_off():
    found = jobs("scontrol-show-job-ended.txt")
    assert (found["3"].state, found["3"].reason, found["3"].node) == ("NODE_FAIL", "NodeDown", "fleet-c")
    # exclusive: job 4 waited behind job 3 on its node
    assert (found["4"].state, found["4"].reason) == ("PENDING", "Resources")


def test_the_other_answers():
    assert fleet.parse_sbatch((SLURM / "sbatch-parsable.txt").read_text()) == "3"
    assert fleet.parse_sbatch("7;lab\n") == "7"
    with pytest.raises(fleet.FsbenchError, match="sbatch printed no job id"):
        fleet.parse_sbatch("")
    nodes = fleet.parse_node_names((SLURM / "sinfo-nodes.txt").read_text())
    assert nodes == {"fleet-a", "fleet-b", "fleet-c"}
    assert fleet.parse_cluster((SLURM / "scontrol-show-config.txt").read_text()) == "fsbench-fleet-test"
    refused = fleet.CommandError(["sbatch"], 1, (SLURM / "sbatch-unknown-node.txt").read_text())
    assert fleet.slurm_said(refused) == ("sbatch: error: Batch job submission failed: Invalid node name "
                                         "specified")
    missing = fleet.CommandError(["sinfo"], None, "", "program not found: sinfo")
    assert "slurm-client" in fleet.slurm_said(missing)


def test_waiting_asks_until_every_job_ended():
    answers = [jobs("scontrol-show-job-running.txt"), jobs("scontrol-show-job-running.txt"),
               jobs("scontrol-show-job-ended.txt")]
    naps = []
    found = fleet.wait(lambda: answers.pop(0), ["1", "2", "3"], poll=2, sleep=naps.append)
    assert naps == [2, 2] and found["3"].state == "NODE_FAIL"
    assert fleet.wait(lambda: {}, ["9"], sleep=naps.append) == {} and naps == [2, 2]  # forgotten: ended


# ---- what the fleet says ------------------------------------------------------------------------


def outcome(host: str, status: str = "complete", **tests: str) -> fleet.SessionOutcome:
    write = "test_dd.py::test_dd_write[ext4-single-1M]"
    gates = {write: [(fleet.WITHIN, False)]} if status == "complete" else {}
    named = {f"test_dd.py::{t}[ext4-single-1M]": o for t, o in tests.items()}
    return fleet.SessionOutcome(7, host, status, named, gates)


def node_line(*args) -> tuple[str, bool]:
    result = fleet.node_result(*args)
    return result.line(), result.passed


def test_each_nodes_line_names_it_with_its_state_and_session():
    found = jobs("scontrol-show-job-ended.txt")
    line, ok = node_line("fleet-a", "1", found["1"], outcome("fleet-a", test_dd_write="passed"))
    assert ok and line.split()[:4] == ["fleet-a", "job", "1", "COMPLETED"]
    assert line.endswith("session 7 complete: 1 passed; gate: 1 within bounds")
    line, ok = node_line("fleet-b", "2", found["2"], None, "/opt/fsbench/.venv/bin/python")
    assert not ok and "FAILED     no session recorded; fsbench is not installed on fleet-b: " \
                      "/opt/fsbench/.venv/bin/python there cannot import pytest_fsbench" in line
    line, ok = node_line("fleet-c", "3", found["3"], outcome("fleet-c", "running"))
    assert not ok and ("NODE_FAIL  session 7 running; node fleet-c failed while the job ran (Slurm: NodeDown)"
                       in line)
    assert line.endswith("/fsbench-fleet-3.out on fleet-c")
    line, ok = node_line("fleet-c", "4", found["4"], None)
    assert not ok and "the job is PENDING on fleet-c: fsbench fleet status 4 asks again" in line
    line, ok = node_line("fleet-a", "1", None, None)
    assert not ok and "UNKNOWN" in line and "no longer knows this job" in line
    line, ok = node_line("fleet-a", "1", None, outcome("fleet-a", test_dd_write="passed"))
    assert ok and line.endswith("UNKNOWN    session 7 complete: 1 passed; gate: 1 within bounds")


def test_a_time_limit_or_a_cancel_is_named_with_the_node():
    timed_out = fleet.Job("5", "TIMEOUT", "bench-1", 0, 15, "TimeLimit")
    assert fleet.job_problem("bench-1", timed_out, None) == ("the job reached its time limit (--time) on "
                                                              "bench-1")
    cancelled = fleet.Job("6", "CANCELLED", "bench-2", 0, 15, "None")
    assert fleet.job_problem("bench-2", cancelled, None) == "the job on bench-2 ended CANCELLED"


def test_a_completed_job_passes_only_with_a_complete_passed_session():
    done = jobs("scontrol-show-job-ended.txt")["1"]
    assert not fleet.node_result("fleet-a", "1", done, None).passed
    assert not fleet.node_result("fleet-a", "1", done, outcome("fleet-a", test_dd_write="failed")).passed
    regressed = fleet.SessionOutcome(7, "fleet-a", "complete", {"t": "passed"},
                                     {"t": [(fleet.REGRESSION, True)]})
    assert not fleet.node_result("fleet-a", "1", done, regressed).passed
    interrupted = outcome("fleet-a", "interrupted", test_dd_write="passed")
    line, ok = node_line("fleet-a", "1", done, interrupted)
    assert not ok and "session 7 interrupted: 1 passed; the session did not complete;" in line


def test_the_fleet_table_is_hosts_by_cases():
    table = fleet.fleet_table([outcome("fleet-a", test_dd_write="passed", test_dd_read="passed"),
                               outcome("fleet-b", "running", test_dd_write="failed")])
    assert [row.split() for row in table] == [
        ["case", "fleet-a", "fleet-b"],
        ["test_dd_read[ext4-single-1M]", "passed", "-"],
        ["test_dd_write[ext4-single-1M]", "passed", "within", "bounds", "failed"]]
    assert fleet.fleet_table([]) == []


def test_the_fleets_lines_fit_the_terminal_and_read_whole_again():
    """Issue 43: node lines of 135 and 232 columns; hosts x cases wider than the terminal."""
    from pytest_fsbench.measure.progress import unwrap
    from pytest_fsbench.views.tables import unstack

    found = jobs("scontrol-show-job-ended.txt")
    hosts = [outcome(f"fleet-host-{k}", test_dd_write="passed", test_dd_read="passed") for k in range(5)]
    result = fleet.fleet_result([h.host for h in hosts[:3]], ["1", "2", "3"], found,
                                {"1": hosts[0], "3": hosts[2]}, "/opt/fsbench/.venv/bin/python")
    result = fleet.FleetResult(result.nodes, hosts, {"fleet-host-0": []})
    for width in (80, 120):
        lines = result.lines(width)
        assert all(len(line) <= width for line in lines), [line for line in lines if len(line) > width]
        whole = unstack(unwrap(lines))
        assert [line for line in whole if line.startswith("fleet-host-1 ")] == [result.nodes[1].line()]
        table = whole[whole.index("") + 1:]
        assert table[0].split() == ["case", *(h.host for h in hosts)], table


def test_the_fleets_page_holds_every_node_and_hosts_by_cases(tmp_path):
    found = jobs("scontrol-show-job-ended.txt")
    write = "test_dd.py::test_dd_write[ext4-single-1M]"
    cut = fleet.SessionOutcome(8, "fleet-c", "running", {write: "failed"})
    sessions = {"1": outcome("fleet-a", test_dd_write="passed", test_dd_read="passed"), "3": cut}
    result = fleet.fleet_result(["fleet-a", "fleet-b", "fleet-c"], ["1", "2", "3"], found, sessions)
    assert not result.passed and [n.passed for n in result.nodes] == [True, False, False]
    page = tmp_path / "fleet.html"
    fleet.write_report(result, page, "fsbench fleet: jobs 1, 2, 3")
    tables = html_tables(page.read_text())
    assert [row[:3] for row in tables[0]] == [["node", "job", "Slurm state"], ["fleet-a", "1", "COMPLETED"],
                                             ["fleet-b", "2", "FAILED"], ["fleet-c", "3", "NODE_FAIL"]]
    assert tables[0][3][4].startswith("node fleet-c failed while the job ran")
    assert tables[1] == [["case", "fleet-a", "fleet-c"],
                         ["test_dd_read[ext4-single-1M]", "passed", "-"],
                         ["test_dd_write[ext4-single-1M]", "passed within bounds", "failed"]]
    assert page.read_text().count('class="worse"') == 3  # fleet-b's and fleet-c's nodes, the failed case


def html_tables(text: str) -> list[list[list[str]]]:
    """Each table of a page as rows of cell texts (Python's own HTML parser)."""
    from html.parser import HTMLParser

    class Tables(HTMLParser):
        def __init__(self):
            super().__init__()
            self.tables, self.cell = [], None

        def handle_starttag(self, tag, attrs):
            if tag == "table":
                self.tables.append([])
            elif tag == "tr":
                self.tables[-1].append([])
            elif tag in ("td", "th"):
                self.cell = ""

        def handle_endtag(self, tag):
            if tag in ("td", "th"):
                self.tables[-1][-1].append(self.cell)
                self.cell = None

        def handle_data(self, data):
            if self.cell is not None:
                self.cell += data

    parser = Tables()
    parser.feed(text)
    return parser.tables


def test_gate_lines_give_their_verdict():
    line = "ext4-single-1M regression: dd.write -12.0% [...]; worse than the 5% allowed"
    assert fleet.line_verdict(line) == fleet.REGRESSION
    assert fleet.line_verdict("ext4-single-1M within bounds: dd.write +1.0%") == fleet.WITHIN
    assert fleet.line_verdict("ext4-single-1M inconclusive: dd.write -4.0%") == fleet.INCONCLUSIVE


def test_sessions_are_found_by_the_slurm_job_they_ran_in(tmp_path):
    store = Store(tmp_path / "s.db")
    try:
        cluster = "lab_1%"  # LIKE's wildcards in a name match only themselves
        ids = {}
        for host, job in (("fleet-a", "12"), ("fleet-b", "13"), ("other", "1")):
            job_env = {"SLURM_JOB_ID": job, "SLURM_CLUSTER_NAME": cluster}
            manifest = {"hostname": host, "slurm_job": slurm_job(job_env)}
            ids[host] = store.start_session(f"t-{host}", {}, manifest)
        store.start_session("t-x", {}, {"hostname": "x", "slurm_job": "labX1x/12"})
        store.record_test(ids["fleet-a"], "test_dd.py::test_dd_write[ext4-single-1M]", "passed")
        store.finish_session(ids["fleet-a"], "complete")
        found = fleet.find_sessions(store, cluster, ["12", "13", "14"])
        assert sorted(found) == ["12", "13"]
        assert (found["12"].id, found["12"].host) == (ids["fleet-a"], "fleet-a")
        assert found["12"].status == "complete"
        assert found["12"].tests == {"test_dd.py::test_dd_write[ext4-single-1M]": "passed"}
        assert found["13"].status == "running" and found["13"].tests == {}
    finally:
        store.close()


def test_slurm_job_is_read_from_slurms_environment():
    assert slurm_job({"SLURM_JOB_ID": "12", "SLURM_CLUSTER_NAME": "lab"}) == "lab/12"
    assert slurm_job({"PATH": "/bin"}) is None


# ---- the command's refusals, each one line before anything is submitted ---------------------------


@pytest.mark.parametrize("argv, said", [
    (["fleet"], "give --nodes=NODE,NODE,..."),
    (["fleet", "--nodes=a,a", "--", "-k", "dd"], "a given twice"),
    (["fleet", "--nodes=elsewhere", "--store=x.db", "--", "-k", "dd"], "which elsewhere cannot write"),
    (["fleet", "--nodes=a", "--store=postgresql://u@db/x", "--time=soon", "--", "-k", "dd"], "--time=soon"),
    (["fleet", "--nodes=a", "--store=postgresql://u@db/x", "--", "--store=y.db"],
     "give the store to fsbench fleet"),
    (["fleet", "status", "twelve"], "give the job ids"),
    (["fleet", "--nodes=", "--", "-k", "dd"], "--nodes='': give a value"),
    (["fleet", "status", "12", "--report=-"], "--report -: the fleet's page is a file"),
])
def test_usage_errors_are_one_line(argv, said, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert said in err and err.count("\n") == 1, err
    assert list(tmp_path.iterdir()) == []  # nothing made: no store, no job output


def test_the_fleet_view_gives_each_hosts_change_points_in_the_cases_it_ran(tmp_path):
    """A host whose dd write dropped 20 % from night 8 shows that change point; a host with too few
    sessions says it has none yet, and how to ask (fsbench changes --host)."""
    sys.path.insert(0, str(Path(__file__).parent / "verdicts"))
    from test_changes import WRITE, nightly

    from pytest_fsbench.store.results import Store

    store = Store(nightly(tmp_path / "s.db"), create=False)
    ran = [fleet.SessionOutcome(12, "nightly-1", "complete", {WRITE: "passed"}),
           fleet.SessionOutcome(13, "newcomer", "complete", {WRITE: "passed"})]
    history = fleet.host_history(store, ran)
    assert history["nightly-1"][0] == ("test_dd_write[ext4-single-1M] dd.write [bs=1M,data=random,size=256M] "
                                       "(MB/s, higher is better)")
    assert "session 8 (started" in history["nightly-1"][1] and "worse" in history["nightly-1"][1]
    assert history["newcomer"] == []
    lines = fleet.history_lines(history)
    assert "change points on nightly-1:" in lines
    assert lines[-1].startswith("change points on newcomer: none in the cases this fleet ran (5 complete sessions")
    result = fleet.FleetResult([], ran, history)
    page = tmp_path / "fleet.html"
    fleet.write_report(result, page, "fsbench fleet")
    assert "<h2>Change points per host</h2>" in page.read_text() and "session 8 (started" in page.read_text()

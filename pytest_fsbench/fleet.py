"""`fsbench fleet`: one fsbench session on each benchmark machine, dispatched by Slurm (issue 33).

Slurm is the queue: each node's session is one batch job, `sbatch --exclusive --no-requeue
--nodelist=NODE`, so no two benchmarks share a machine and a job whose node died is never run a
second time behind the team's back. Every session writes into one store (a PostgreSQL server the
nodes share) and gates against its own host's baseline, as `--compare` already scopes by host.
Each job's session is found in the store by the Slurm job it ran in (its manifest's
`slurm_job`); the fleet then says per node: the job, its Slurm state, the session and how it
ended, and a table of hosts x cases with each verdict.

The pure part (checking the request, the batch script, parsing Slurm's answers, the lines) is
tested on its own; `Slurm` executes the commands through the one `execute`.
"""

from __future__ import annotations

import platform
import re
import shlex
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from .errors import CommandError, FsbenchError, UsageError
from .metrics import short_test
from .options import write_whole
from .store.databases import is_url, redact
from .store.results import Store
from .system.commands import Executor
from .verdicts import changes
from .verdicts.gate import INCONCLUSIVE, REGRESSION, WITHIN, line_verdict
from .measure.progress import WIDTH, fit, terminal_width
from .views.tables import fitted, work_text

#: the exit status the batch script gives when the node has no fsbench (a shell's "command not found")
NOT_INSTALLED = 127
#: Slurm's states of a job that has ended
ENDED = ("COMPLETED", "FAILED", "NODE_FAIL", "TIMEOUT", "CANCELLED", "OUT_OF_MEMORY", "PREEMPTED",
         "BOOT_FAIL", "DEADLINE")
JOB_NAME = "fsbench-fleet"
POLL_SECONDS = 2.0
#: pytest's own exit statuses, as a node's line tells them
PYTEST_EXITS = {1: "tests failed", 2: "interrupted", 3: "pytest's internal error", 4: "pytest usage error",
                5: "no tests collected"}
NODE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
SLURM_TIME = re.compile(r"^(\d+-)?\d+(:\d+){0,2}$")


# ---- the request ------------------------------------------------------------------------------


def parse_nodes(text: str) -> tuple[str, ...]:
    """--nodes a,b,c: each node once, by its Slurm name."""
    nodes = tuple(n.strip() for n in text.split(","))
    for node in nodes:
        if not NODE_NAME.match(node):
            raise UsageError(f"--nodes={text}: {node!r} is no node name; list Slurm's node names with "
                             "commas, e.g. --nodes=bench-1,bench-2 (sinfo -N lists them)")
    twice = sorted({n for n in nodes if nodes.count(n) > 1})
    if twice:
        raise UsageError(f"--nodes={text}: {', '.join(twice)} given twice; a node runs one session of a "
                         "fleet")
    return nodes


def parse_time(text: str) -> str:
    """--time: a Slurm time limit (minutes, MM:SS, HH:MM:SS, D-HH, D-HH:MM:SS)."""
    if not SLURM_TIME.match(text):
        raise UsageError(f"--time={text}: give a Slurm time limit: minutes (90), HH:MM:SS (1:30:00) or "
                         "D-HH:MM:SS (1-00:00:00)")
    return text


def parse_job_ids(words: Sequence[str]) -> tuple[str, ...]:
    """fleet status 12,13 14: the job ids, in the order given."""
    ids = tuple(i for word in words for i in word.split(",") if i)
    bad = [i for i in ids if not i.isdigit()]
    if not ids or bad:
        raise UsageError(f"fleet status {' '.join(words)}: give the job ids fsbench fleet printed, e.g. "
                         "fsbench fleet status 12,13,14")
    return ids


def check_store(store: Path | str, nodes: Sequence[str], this_host: str) -> None:
    """An SQLite file is written by this machine only: every node must be this host."""
    if is_url(store):
        return
    others = [n for n in nodes if n != this_host]
    if others:
        raise UsageError(f"--store={store} is an SQLite file on this machine ({this_host}), which "
                         f"{', '.join(others)} cannot write: give the team's server, "
                         "--store=postgresql://USER@HOST/DB (docs/fleet.md)")


def check_pytest_args(pytest_args: Sequence[str]) -> None:
    """The fleet names the store every session writes (a session's own --store would split them)
    and, with --shard, each node's share."""
    for word in pytest_args:
        if word == "--store" or word.startswith("--store="):
            raise UsageError(f"{word} after --: give the store to fsbench fleet itself (fsbench fleet "
                             "--store=URL ... -- PYTEST-ARGS), which every node's session then writes")
        if word == "--shard" or word.startswith("--shard="):
            raise UsageError(f"{word} after --: give fsbench fleet --shard, which deals each node its share")


def kernel_paths(pytest_args: Sequence[str]) -> list[str]:
    """The kernel images --kernel names by path (uml:PATH, vm:NAME=PATH, host+vm:PATH)."""
    words = list(pytest_args)
    values = [w.split("=", 1)[1] for w in words if w.startswith("--kernel=")]
    values += [words[i + 1] for i, w in enumerate(words[:-1]) if w == "--kernel"]
    paths = []
    for value in values:
        for kernel in re.split(r"[,+]", value):
            rest = kernel.partition(":")[2]
            if rest:
                paths.append(rest.split("=", 1)[-1])
    return paths


def kernel_notes(pytest_args: Sequence[str]) -> list[str]:
    """A kernel under test given by its path must be at that path on every node: fsbench copies nothing."""
    return [f"fsbench fleet: {path} must be readable at that path on every node (fsbench copies no kernel)"
            for path in kernel_paths(pytest_args)]


@dataclass(frozen=True)
class Request:
    """One fleet: its nodes, where Slurm runs them, the store and each node's pytest arguments."""

    nodes: tuple[str, ...]
    store: Path | str
    pytest_args: tuple[str, ...]
    python: str  # the Python of fsbench's virtual environment on every node
    workdir: Path  # where each session runs and its job's output goes, the same path on every node
    partition: str | None = None
    constraint: str | None = None
    time: str | None = None
    report: Path | None = None  # the fleet's HTML page, written once every job ended
    shard: bool = False  # split the cases: node i of N runs --shard=i/N

    def session_args(self, node: str) -> list[str]:
        """A node's pytest arguments: the fleet's, its store, and its share of the cases (--shard)."""
        shard = [f"--shard={self.nodes.index(node)}/{len(self.nodes)}"] if self.shard else []
        return [*self.pytest_args, f"--store={self.store}", *shard]


def batch_script(python: str, pytest_args: Sequence[str]) -> str:
    """The job each node runs: fsbench's pytest session, or exit NOT_INSTALLED where this Python
    has no fsbench."""
    py = shlex.quote(python)
    return "\n".join([
        "#!/bin/sh",
        "# fsbench fleet: one fsbench session on this node",
        f"if ! {py} -c 'import pytest_fsbench' 2>/dev/null; then",
        f"    echo \"fsbench fleet: fsbench is not installed on $(hostname): {python} cannot import "
        "pytest_fsbench\" >&2",
        f"    exit {NOT_INSTALLED}",
        "fi",
        f"exec {py} -m pytest " + " ".join(shlex.quote(a) for a in pytest_args),
        "",
    ])


def output_path(workdir: Path) -> Path:
    return workdir / f"{JOB_NAME}-%j.out"


def sbatch_argv(node: str, request: Request) -> list[str]:
    argv = ["sbatch", "--parsable", "--exclusive", "--no-requeue", f"--nodelist={node}", "--nodes=1",
            f"--job-name={JOB_NAME}", f"--chdir={request.workdir}",
            f"--output={output_path(request.workdir)}"]
    for flag, value in (("--partition", request.partition), ("--constraint", request.constraint),
                        ("--time", request.time)):
        if value:
            argv.append(f"{flag}={value}")
    return argv


# ---- Slurm's answers ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Job:
    """A job as Slurm tells it."""

    id: str
    state: str  # PENDING, RUNNING, COMPLETED, FAILED, NODE_FAIL, TIMEOUT, CANCELLED, ...
    node: str = ""
    exit_status: int = 0
    signal: int = 0
    reason: str = ""
    output: str = ""  # its output file, on its node

    @property
    def ended(self) -> bool:
        return self.state in ENDED


def parse_sbatch(output: str) -> str:
    """sbatch --parsable prints JOBID or JOBID;CLUSTER."""
    first = output.strip().splitlines()[-1] if output.strip() else ""
    job_id = first.split(";", 1)[0]
    if not job_id.isdigit():
        raise FsbenchError(f"sbatch printed no job id: {output.strip()!r}")
    return job_id


FIELD = re.compile(r"(?:^|\s)([A-Za-z][\w:/]*)=")


def fields(line: str) -> dict[str, str]:
    """KEY=VALUE words of one `scontrol show -o` line (a value may hold spaces)."""
    found = list(FIELD.finditer(line))
    return {m.group(1): line[m.end():found[i + 1].start() if i + 1 < len(found) else len(line)].strip()
            for i, m in enumerate(found)}


def exit_code(text: str) -> tuple[int, int]:
    """Slurm's ExitCode STATUS:SIGNAL."""
    status, _, sig = text.partition(":")
    return (int(status) if status.isdigit() else 0, int(sig) if sig.isdigit() else 0)


def parse_scontrol_jobs(text: str) -> dict[str, Job]:
    """`scontrol show job -o`: one job a line."""
    jobs = {}
    for line in text.splitlines():
        f = fields(line)
        if "JobId" not in f:
            continue
        status, sig = exit_code(f.get("ExitCode", "0:0"))
        node = f.get("BatchHost") or f.get("NodeList") or f.get("ReqNodeList", "")
        jobs[f["JobId"]] = Job(f["JobId"], f.get("JobState", "UNKNOWN"), "" if node == "(null)" else node,
                               status, sig, f.get("Reason", ""), f.get("StdOut", ""))
    return jobs


def parse_node_names(text: str) -> set[str]:
    """`sinfo -h -N -o %N`: one node a line (a node in two partitions twice)."""
    return {line.strip() for line in text.splitlines() if line.strip()}


def parse_cluster(text: str) -> str:
    """ClusterName of `scontrol show config`."""
    for line in text.splitlines():
        key, _, value = line.partition("=")
        if key.strip() == "ClusterName":
            return value.strip()
    return ""


def slurm_said(exc: CommandError) -> str:
    """A Slurm command's failure in one line: its last word on it, or why it could not run."""
    if exc.returncode is None and exc.reason.startswith("program not found"):
        return f"{exc.reason} (Slurm's commands: Debian package slurm-client)"
    lines = [line.strip() for line in exc.output.splitlines() if line.strip()]
    return lines[-1] if lines else exc.reason or f"{exc.argv[0]}: exit status {exc.returncode}"


class Slurm:
    """Slurm's commands, executed through `execute`; what Slurm refuses becomes one line."""

    def __init__(self, execute: Executor) -> None:
        self.execute = execute

    def _run(self, argv: list[str], what: str) -> str:
        try:
            return self.execute(argv, timeout=60).stdout
        except CommandError as exc:
            raise FsbenchError(f"{what}: {slurm_said(exc)}") from None

    def nodes(self) -> set[str]:
        listed = self._run(["sinfo", "-h", "-N", "-o", "%N"], "cannot ask Slurm for its nodes")
        return parse_node_names(listed)

    def cluster(self) -> str:
        config = self._run(["scontrol", "show", "config"], "cannot ask Slurm for its cluster's name")
        return parse_cluster(config)

    def submit(self, node: str, request: Request) -> str:
        script = batch_script(request.python, request.session_args(node))
        try:
            done = self.execute(sbatch_argv(node, request), input=script, timeout=60)
        except CommandError as exc:
            raise FsbenchError(f"node {node}: sbatch refused the job: {slurm_said(exc)}") from None
        return parse_sbatch(done.stdout)

    def cancel(self, job_ids: Iterable[str]) -> None:
        ids = list(job_ids)
        if ids:
            self.execute(["scancel", *ids], check=False, timeout=60)

    def jobs(self, job_ids: Sequence[str]) -> dict[str, Job]:
        """The jobs the controller still knows (an ended job for MinJobAge, 300 s by default)."""
        listed = self._run(["scontrol", "show", "job", "-o"], "cannot ask Slurm for the jobs")
        known = parse_scontrol_jobs(listed)
        return {i: known[i] for i in job_ids if i in known}


def wait(jobs: Callable[[], dict[str, Job]], job_ids: Sequence[str], poll: float = POLL_SECONDS,
         sleep: Callable[[float], None] = time.sleep) -> dict[str, Job]:
    """Ask until every job has ended (a job Slurm no longer knows has ended too)."""
    while True:
        found = jobs()
        if all(i not in found or found[i].ended for i in job_ids):
            return found
        sleep(poll)


# ---- the sessions in the store ----------------------------------------------------------------


@dataclass(frozen=True)
class SessionOutcome:
    """How one node's session ended, from the store."""

    id: int
    host: str
    status: str  # complete, interrupted, running (its process died with it), failed, empty
    tests: dict[str, str] = field(default_factory=dict)  # test -> passed, failed, skipped
    gates: dict[str, list[tuple[str, bool]]] = field(default_factory=dict)  # test -> (verdict, failed)
    work: dict[str, str] = field(default_factory=dict)  # test -> its work per byte moved (tables.work_text)

    def count(self, outcome: str) -> int:
        return sum(1 for o in self.tests.values() if o == outcome)

    @property
    def failed_gates(self) -> int:
        return sum(1 for verdicts in self.gates.values() for _, failed in verdicts if failed)

    @property
    def passed(self) -> bool:
        return self.status == "complete" and not self.count("failed") and not self.failed_gates

    def text(self) -> str:
        counts = ", ".join(f"{self.count(o)} {o}" for o in ("passed", "failed", "skipped") if self.count(o))
        verdicts = [v for vs in self.gates.values() for v, _ in vs]
        gate = ", ".join(f"{verdicts.count(v)} {v}" for v in (WITHIN, INCONCLUSIVE, REGRESSION)
                         if v in verdicts)
        return (f"session {self.id} {self.status}" + (f": {counts}" if counts else "")
                + (f"; gate: {gate}" if gate else ""))


def session_outcome(store: Store, session_id: int) -> SessionOutcome:
    exported = store.session_export(session_id)
    session = exported["session"]
    gates: dict[str, list[tuple[str, bool]]] = {}
    for case in exported["cases"]:
        for entry in case["manifest"].get("gate", []):
            gates.setdefault(case["test"], []).append((line_verdict(entry["line"]), bool(entry["failed"])))
    by_test: dict[str, list] = {}
    for series in store.series(session_id):
        by_test.setdefault(series.key.test, []).append(series)
    work = {test: text for test, found in by_test.items() if (text := work_text(found))}
    return SessionOutcome(session_id, session["manifest"].get("hostname", ""), session["status"],
                          store.test_outcomes(session_id), gates, work)


def job_key(cluster: str, job_id: str) -> str:
    """What a session's manifest records of the Slurm job it ran in (system/host.py: slurm_job)."""
    return f"{cluster}/{job_id}"


def find_sessions(store: Store, cluster: str, job_ids: Sequence[str]) -> dict[str, SessionOutcome]:
    """Each job's session (the newest one that ran in it), if it recorded one."""
    found = {}
    for job_id in job_ids:
        rows = store.sessions_with("slurm_job", job_key(cluster, job_id))
        if rows:
            found[job_id] = session_outcome(store, rows[-1].id)
    return found


# ---- what the fleet says ----------------------------------------------------------------------


def job_problem(node: str, job: Job | None, python: str | None) -> str | None:
    """Why a job did not give a passing session, in Slurm's words and the node's name; None if it did."""
    if job is None:
        return "Slurm's controller no longer knows this job (it forgets an ended job after MinJobAge)"
    if job.state == "COMPLETED":
        return None
    if not job.ended:
        return f"the job is {job.state} on {node or 'a node'}: fsbench fleet status {job.id} asks again"
    if job.state == "NODE_FAIL":
        return f"node {node} failed while the job ran (Slurm: {job.reason or 'node down'}); it is not re-run"
    if job.state == "TIMEOUT":
        return f"the job reached its time limit (--time) on {node}"
    if job.state == "FAILED" and job.exit_status == NOT_INSTALLED:
        where = f"{python} there" if python else "the fleet's Python there"
        return (f"fsbench is not installed on {node}: {where} cannot import pytest_fsbench; install it on "
                f"{node} with the README's two commands at the same path, or name its Python with --python")
    if job.state == "FAILED" and job.exit_status in PYTEST_EXITS:
        return f"pytest on {node}: {PYTEST_EXITS[job.exit_status]} (exit status {job.exit_status})"
    if job.state == "FAILED":
        return f"the job on {node} ended with exit status {job.exit_status}" + (
            f", signal {job.signal}" if job.signal else "")
    reason = f" ({job.reason})" if job.reason not in ("", "None") else ""
    return f"the job on {node} ended {job.state}{reason}"


@dataclass(frozen=True)
class NodeResult:
    """One node's word: its job, Slurm state, session, what went wrong (None: nothing), its output."""

    node: str
    job_id: str
    state: str
    session: str
    problem: str | None
    output: str
    passed: bool

    def line(self) -> str:
        return (f"{self.node:12} job {self.job_id:>7}  {self.state:10} {self.session}"
                + (f"; {self.problem}" if self.problem else "")
                + (f"; its output: {self.output} on {self.node}" if self.output else ""))


def node_result(node: str, job_id: str, job: Job | None, session: SessionOutcome | None,
                python: str | None = None) -> NodeResult:
    state = job.state if job is not None else "UNKNOWN"
    problem = job_problem(node, job, python)
    if job is None and session is not None and session.passed:
        problem = None  # an ended job Slurm forgot: its session, complete and passed, is the word
    said = session.text() if session is not None else "no session recorded"
    passed = problem is None and session is not None and session.passed
    if problem is None and session is not None and not session.passed and session.status != "complete":
        problem = "the session did not complete"
    output = job.output if job is not None and not passed else ""
    return NodeResult(node, job_id, state, said, problem, output, passed)


def cell(outcome: str | None, verdicts: Sequence[tuple[str, bool]], work: str = "") -> str:
    """One host's word on one case: the test's outcome, the gate's verdicts, and the work it did (the
    same case on two hosts of one kind does the same work)."""
    if outcome is None:
        return "-"
    return " ".join([outcome, *(v for v, _ in verdicts)]) + (f"; work {work}" if work else "")


def fleet_rows(sessions: Sequence[SessionOutcome]) -> tuple[list[str], list[list[str]]]:
    """Hosts x cases: the header (case, each host) and a row per case, each host's outcome and gate
    verdicts ('-': not run there); no rows when no session reported a test."""
    tests = sorted({t for s in sessions for t in s.tests})
    header = ["case", *(s.host or f"session {s.id}" for s in sessions)]
    return header, [[short_test(t), *(cell(s.tests.get(t), s.gates.get(t, []), s.work.get(t, "")) for s in sessions)]
                    for t in tests]


def fleet_table(sessions: Sequence[SessionOutcome], width: int = WIDTH) -> list[str]:
    """The hosts x cases table as the terminal shows it, within width where it can be (each case
    on a line of its own, its hosts' cells under it, where the table is wider: issue 43)."""
    header, rows = fleet_rows(sessions)
    if not rows:
        return []
    lines, notes = fitted(header, rows, width, spared=())
    return lines + [part for note in notes for part in fit(note, width)]


@dataclass(frozen=True)
class FleetResult:
    """What a fleet's jobs came to: each node's result and its session, in the order of the nodes."""

    nodes: list[NodeResult]
    sessions: list[SessionOutcome]
    #: each host's change points, as fsbench changes --host prints them, of the cases the fleet ran
    history: dict[str, list[str]] = field(default_factory=dict)

    @property
    def passed(self) -> bool:
        return all(n.passed for n in self.nodes)

    def lines(self, width: int = WIDTH) -> list[str]:
        """Each node's line, then hosts x cases and the change points, within width (issue 43: node
        lines of 135 and 232 columns): a node's line wrapped, its rest indented by two."""
        table = fleet_table(self.sessions, width)
        return ([part for n in self.nodes for part in fit(n.line(), width)] + ([""] + table if table else [])
                + [part for line in history_lines(self.history) for part in fit(line, width)])


def history_lines(history: dict[str, list[str]]) -> list[str]:
    """Each host's change points, or that it has none (yet)."""
    lines = []
    for host, found in history.items():
        lines += ([f"change points on {host}:", *found] if found else
                  [f"change points on {host}: none in the cases this fleet ran ({changes.MIN_SESSIONS} complete "
                   f"sessions are the least a series needs; fsbench changes --host {host})"])
    return [""] + lines if lines else []


def host_history(store: Store, sessions: Sequence[SessionOutcome]) -> dict[str, list[str]]:
    """Each host's change points (fsbench changes per host) in the tests its session ran."""
    from .views.change_points import change_lines  # not at the top: it brings matplotlib to every command

    found: dict[str, list[str]] = {}
    for session in sessions:
        if not session.host or session.host in found:
            continue
        tests = set(session.tests)
        try:
            detected = changes.detect(store, session.host)
        except UsageError:  # no complete session of that host yet
            detected = []
        found[session.host] = [line for change in detected
                               if change.history.key.test in tests for line in change_lines(change, False)]
    return found


def fleet_result(nodes: Sequence[str], job_ids: Sequence[str], jobs: dict[str, Job],
                 sessions: dict[str, SessionOutcome], python: str | None = None,
                 history: dict[str, list[str]] | None = None) -> FleetResult:
    return FleetResult([node_result(node, job_id, jobs.get(job_id), sessions.get(job_id), python)
                        for node, job_id in zip(nodes, job_ids)],
                       [sessions[i] for i in job_ids if i in sessions], history or {})


def write_report(result: FleetResult, path: Path, title: str) -> None:
    """The fleet as one HTML page: the nodes' results, then hosts x cases."""
    from .views import fleet_page  # the report's helpers bring matplotlib: only for --report

    header, rows = fleet_rows(result.sessions)
    nodes = [[n.node, n.job_id, n.state, n.session, n.problem or "", n.output] for n in result.nodes]
    write_whole(path, fleet_page.page(title, nodes, [not n.passed for n in result.nodes], header, rows,
                                    history_lines(result.history)[1:]))


# ---- the commands -----------------------------------------------------------------------------


def submit(slurm: Slurm, request: Request) -> list[str]:
    """One job per node; nodes Slurm does not know are refused before any is submitted, and a
    refused job cancels those submitted before it."""
    known = slurm.nodes()
    unknown = [n for n in request.nodes if n not in known]
    if unknown:
        raise UsageError(f"--nodes: Slurm knows no node {', '.join(unknown)} (its nodes: "
                         f"{', '.join(sorted(known))})")
    job_ids: list[str] = []
    try:
        for node in request.nodes:
            job_ids.append(slurm.submit(node, request))
    except BaseException:
        slurm.cancel(job_ids)
        raise
    return job_ids


def checked_submit(request: Request, slurm: Slurm, out: Callable[[str], None]) -> list[str]:
    """The store and the arguments checked, the kernel paths' note given, one job per node submitted."""
    check_store(request.store, request.nodes, platform.node())
    check_pytest_args(request.pytest_args)
    for note in kernel_notes(request.pytest_args):
        said(out, note)
    return submit(slurm, request)


def said(out: Callable[[str], None], line: str) -> None:
    """A line of prose, within the terminal's width."""
    for part in fit(line, terminal_width()):
        out(part)


def run(request: Request, slurm: Slurm, out: Callable[[str], None] = print) -> int:
    """Submit, wait, tell each node's outcome; 0 only when every node's session completed and passed."""
    job_ids = checked_submit(request, slurm, out)
    said(out, f"fsbench fleet: submitted {', '.join(f'{n} job {j}' for n, j in zip(request.nodes, job_ids))} "
         f"(store {redact(request.store)})")
    again = f"fsbench fleet status {','.join(job_ids)}"
    try:
        jobs = wait(lambda: slurm.jobs(job_ids), job_ids)
    except KeyboardInterrupt:
        said(out, f"fsbench fleet: stopped waiting; the jobs run on: {again}")
        return 130
    except FsbenchError as exc:
        raise FsbenchError(f"{exc}; the jobs run on: {again}") from None
    sessions, history = read_sessions(request.store, slurm.cluster(), job_ids)
    result = fleet_result(request.nodes, job_ids, jobs, sessions, request.python, history)
    return tell(result, request.report, f"fsbench fleet: jobs {', '.join(job_ids)}", out)


def submit_only(request: Request, slurm: Slurm, out: Callable[[str], None] = print) -> int:
    """--no-wait: submit and print the job ids."""
    job_ids = checked_submit(request, slurm, out)
    for node, job_id in zip(request.nodes, job_ids):
        out(f"{node:12} job {job_id}")
    said(out, f"fsbench fleet status {','.join(job_ids)} --store={redact(request.store)} reads them back")
    return 0


def read_sessions(location: Path | str, cluster: str,
                  job_ids: Sequence[str]) -> tuple[dict[str, SessionOutcome], dict[str, list[str]]]:
    """The jobs' sessions in the store and each host's change points; none while no session has
    made it (an SQLite file not there yet; a server's database gets fsbench's tables, as the first
    session would make them)."""
    if not is_url(location) and not Path(location).exists():
        return {}, {}
    store = Store(location)
    try:
        found = find_sessions(store, cluster, job_ids)
        return found, host_history(store, list(found.values()))
    finally:
        store.close()


def tell(result: FleetResult, report: Path | None, title: str, out: Callable[[str], None]) -> int:
    """Print the result within the terminal's width (and write its page); 0 only when every node's
    session completed and passed."""
    for line in result.lines(terminal_width()):
        out(line)
    if report is not None:
        write_report(result, report, title)
        out(f"fsbench fleet: wrote {report}")
    return 0 if result.passed else 1


def status(store_location: Path | str, slurm: Slurm, job_ids: Sequence[str], report: Path | None = None,
           out: Callable[[str], None] = print) -> int:
    """fleet status JOBIDS: each job as it stands (a job still running says so); 0 only when every
    one has ended with its session complete and passed."""
    jobs = slurm.jobs(job_ids)
    sessions, history = read_sessions(store_location, slurm.cluster(), job_ids)
    nodes = [jobs[i].node if i in jobs else (sessions[i].host if i in sessions else "?") for i in job_ids]
    result = fleet_result(nodes, job_ids, jobs, sessions, history=history)
    return tell(result, report, f"fsbench fleet: jobs {', '.join(job_ids)}", out)

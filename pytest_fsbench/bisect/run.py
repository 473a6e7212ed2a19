"""`fsbench bisect`: the whole bisect, step by step, its record in the store after each.

1. The endpoints' kernels are built and booted (an endpoint that does not is a usage error).
2. The range: good and bad interleaved in one session until the gate's statistics decide; when they
   do not differ beyond the rule (or cannot be told apart within the budget) the bisect stops and
   says so, naming no commit. Else the figures that regressed decide every step, counts first.
3. Each step: the commit git bisect would test next, built, booted and measured interleaved with
   both endpoints in one session that stops once decided ("like good", "like bad"); one that does not
   build, boot or decide within the budget is skipped, as git bisect skip does.
4. The first bad commit measured against its parent with more rounds (a fixed number, one look):
   confirmed or not, with the change, its interval and p.

A step's session is a pytest session of its own (the user's arguments, the kernels, --runs = the
budget), in the store like any; the bisect's record (its steps, kernels, verdicts, times, result)
is one row of the store's bisects table, saved after every step, so --resume continues where an
interrupted bisect stopped, its kernels and verdicts kept."""

from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import hashlib
import os
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import FsbenchError, UsageError
from ..kernels.guest import GuestError, boot_facts
from ..kernels.kernel import Kernel
from ..kernels.vm import vm_boot_facts
from ..metrics import is_headline
from ..store.facts import BISECT
from ..store.results import Store
from ..studies.launch import collected_tests
from ..system.commands import Executor
from ..verdicts import gate
from ..verdicts.bisection import (
    BAD,
    CONFIRMED,
    GOOD,
    LIKE_BAD,
    LIKE_GOOD,
    NO_REGRESSION,
    NOT_YET,
    REGRESSES,
    STEP,
    Confirmation,
    RangeCheck,
    StepCheck,
    check_range,
    check_step,
    comparison,
    confirm,
    sequentially,
)
from ..verdicts.gate import parse_rule
from ..verdicts.sequential import round_looks
from ..verdicts.stats import format_comparison, min_rounds_for, plain
from ..views import bisect_page
from ..views.bisect_page import CommitBox
from ..workloads import KNOWN_METRICS
from . import search
from .build import UML, VM, Built, Layout, build_commit, prepare
from .looks import CONFIRM, LOOKS, RANGE, Request, figures
from .looks import STEP as STEP_KIND
from .tree import Commit, changed_files, check_tree, commits_between, not_a_directory, resolve

#: the bisect's own options of a step's session: given in PYTEST-ARGS they would fight it
RESERVED = ("--kernel", "--runs", "--store", "--compare", "--save", "--paired", "--fail-on-regression", "--resume",
            "--interleave", "--shard", "--report", "--max-runs", "--until-ci", "--until-ci-case", "--gate-mode",
            "--alpha", "--inconclusive")
DEFAULT_RULES = ("work:5%",)
#: a bisect's work directories (its checkout, build directory and kernels), one per tree, kind and
#: configuration, kept between bisects: a later one rebuilds only what its commits changed
WORK_ROOT = Path("/var/tmp/fsbench-bisect")
RECORD_VERSION = 1


@dataclass(frozen=True)
class Asked:
    """What the user asked: the tree and range, the kernels' kind and configuration, the cases
    (pytest's arguments) and how the steps are decided."""

    tree: Path
    good: str
    bad: str
    kind: str = UML
    config: str = ""  # --config's text ("" for none)
    pytest_args: tuple[str, ...] = ()
    rules: tuple[str, ...] = DEFAULT_RULES
    alpha: float = 0.05
    rounds: int = 3  # the first look
    max_rounds: int = 10  # the budget of the range's and each step's session
    confirm_rounds: int = 10
    jobs: int = os.cpu_count() or 1
    work: Path | None = None  # None: under WORK_ROOT

    @property
    def looks(self) -> tuple[int, ...]:
        return round_looks(self.rounds, self.max_rounds)

    def as_record(self) -> dict[str, object]:
        found = dataclasses.asdict(self)
        return {**found, "tree": str(self.tree), "work": str(self.work) if self.work else None,
                "pytest_args": list(self.pytest_args), "rules": list(self.rules)}

    @classmethod
    def from_record(cls, found: dict) -> Asked:
        return cls(**{**found, "tree": Path(found["tree"]), "work": Path(found["work"]) if found.get("work") else None,
                      "pytest_args": tuple(found["pytest_args"]), "rules": tuple(found["rules"])})


def check_asked(asked: Asked) -> None:
    """The request's own mistakes, before anything is built."""
    for arg in asked.pytest_args:
        flag = arg.split("=", 1)[0]
        if flag in RESERVED:
            raise UsageError(f"{arg} among the pytest arguments: fsbench bisect sets {flag} for each step's session "
                             "itself (--store, --alpha and --fail-on-regression are fsbench bisect's own options)")
    rules = [parse_rule(rule) for rule in asked.rules]  # a rule that is no rule: a usage error naming it
    for rule in rules:  # a metric no case measures would decide nothing, seen only after both endpoints' builds
        gate.check_measurable(rule, KNOWN_METRICS)
    gate.check_one_rule_each(rules)
    if not 0 < asked.alpha < 0.5:
        raise UsageError(f"--alpha={asked.alpha:g}: give a level above 0 and below 0.5, e.g. 0.05")
    if not 2 <= asked.rounds <= asked.max_rounds:
        raise UsageError(f"--rounds={asked.rounds} --max-rounds={asked.max_rounds}: the first look needs at least 2 "
                         "rounds, and the budget at least as many")
    least = min_rounds_for(asked.alpha)  # a session of kernels paired by round needs them to reach alpha
    for flag, rounds in (("--max-rounds", asked.max_rounds), ("--confirm-rounds", asked.confirm_rounds)):
        if rounds < least:
            raise UsageError(f"{flag}={rounds}: kernels paired by round can never differ significantly at "
                             f"--alpha={asked.alpha:g} in fewer than {least} rounds; give {flag}={least} or more")
    if asked.jobs < 1:
        raise UsageError(f"--jobs={asked.jobs}: make needs at least 1 job; give a whole number of 1 or more (the "
                         f"CPUs: {os.cpu_count()})")
    if asked.work is not None and asked.work.exists() and not asked.work.is_dir():
        raise UsageError(f"--work-dir={asked.work}: {not_a_directory(asked.work)}; name a directory (new or one a "
                         "bisect used), or leave the option out")
    if asked.kind not in (UML, VM):
        raise UsageError(f"--kernel={asked.kind}: choose uml (a User-mode Linux kernel, make ARCH=um) or vm (a bzImage "
                         "booted in a virtual machine)")


def check_cases(asked: Asked, cwd: Path) -> None:
    """The cases' pytest arguments as pytest reads them (collection only, nothing built): an option
    pytest does not know or a bad value is said now, not by the first step's session once both
    endpoints' kernels are built (issue 44's sweep: --fs=ext5 after -- was taken)."""
    try:
        collected_tests(list(asked.pytest_args), cwd)
    except UsageError as exc:
        raise UsageError(f"the cases' pytest arguments (after --): {str(exc).removeprefix('ERROR: ')}") from None


def work_dir(asked: Asked) -> Path:
    """The work directory: --work-dir, else one per tree, kind and configuration under WORK_ROOT."""
    if asked.work is not None:
        return asked.work
    key = hashlib.sha256(f"{asked.tree.resolve()}\0{asked.kind}\0{asked.config}".encode()).hexdigest()[:10]
    return WORK_ROOT / f"{asked.tree.resolve().name}-{asked.kind}-{key}"


@contextlib.contextmanager
def locked(work: Path) -> Iterator[None]:
    """One bisect at a time in a work directory (its checkout and build directory are shared)."""
    work.mkdir(parents=True, exist_ok=True)
    with open(work / "lock", "w") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise UsageError(f"another fsbench bisect is using its work directory {work}; wait for it, or give this "
                             "one another --work-dir") from None
        yield


# ---- the record ------------------------------------------------------------------------------


@dataclass
class Step:
    """One session of the bisect: the range's, a step's or the confirmation's."""

    kind: str  # RANGE, STEP or CONFIRM
    commit: str  # the commit measured (the range's: the bad endpoint; the confirmation's: the culprit)
    verdict: str = ""  # the range's: regression / no regression / not yet; a step's: like good, like bad or skip
    why: str = ""  # the deciding figure's words, or why it was skipped
    session: int | None = None
    rounds: int = 0
    build_seconds: float = 0.0
    boot_seconds: float = 0.0
    measure_seconds: float = 0.0
    figure: dict = field(default_factory=dict)  # the deciding figure: name, unit, medians by role, change
    parent: str = ""  # the confirmation's: the culprit's parent


@dataclass
class Record:
    asked: Asked
    good: str
    bad: str
    commits: list[Commit]
    deciding: list[tuple[str, str, str]] = field(default_factory=list)
    kernels: dict[str, dict] = field(default_factory=dict)  # sha -> path, build and boot seconds, error
    steps: list[Step] = field(default_factory=list)
    result: dict = field(default_factory=dict)

    def to_json(self) -> dict[str, object]:
        return {"version": RECORD_VERSION, "asked": self.asked.as_record(), "good": self.good, "bad": self.bad,
                "commits": [[c.sha, c.subject] for c in self.commits], "deciding": [list(k) for k in self.deciding],
                "kernels": self.kernels, "steps": [dataclasses.asdict(s) for s in self.steps], "result": self.result}

    @classmethod
    def from_json(cls, found: dict) -> Record:
        if found.get("version") != RECORD_VERSION:
            raise UsageError(f"the bisect's record is of version {found.get('version')}, not this fsbench's "
                             f"{RECORD_VERSION}; start it again")
        return cls(Asked.from_record(found["asked"]), found["good"], found["bad"],
                   [Commit(*c) for c in found["commits"]], [tuple(k) for k in found["deciding"]],
                   dict(found["kernels"]), [Step(**s) for s in found["steps"]], dict(found["result"]))

    def subject(self, sha: str) -> str:
        if sha == self.good:
            return "(the good endpoint)"
        return next((c.subject for c in self.commits if c.sha == sha), "")

    def position(self, sha: str) -> str:
        """Where a commit stands in the range: 5/10 (the good endpoint is 0)."""
        index = next((i for i, c in enumerate(self.commits, start=1) if c.sha == sha), 0)
        return f"{index}/{len(self.commits)}"

    def verdicts(self) -> dict[str, str]:
        """Each measured commit's verdict for the search: good, bad or skip."""
        found = {}
        for step in self.steps:
            if step.kind == STEP_KIND:
                found[step.commit] = {LIKE_GOOD: search.GOOD, LIKE_BAD: search.BAD}.get(step.verdict, search.SKIP)
        return found

    def step(self, kind: str, commit: str | None = None) -> Step | None:
        return next((s for s in self.steps if s.kind == kind and (commit is None or s.commit == commit)), None)


# ---- kernels ----------------------------------------------------------------------------------


@dataclass
class Bisector:
    """A bisect in progress: its record, its store row, and how it builds, boots and measures."""

    record: Record
    store: Store
    bisect_id: int
    layout: Layout
    store_path: str
    execute: Executor
    say: Callable[[str], None] = print
    cwd: Path = field(default_factory=Path.cwd)

    @property
    def asked(self) -> Asked:
        return self.record.asked

    def save(self, status: str = "running") -> None:
        self.store.save_bisect(self.bisect_id, status, self.record.to_json())

    def kernel(self, sha: str) -> tuple[Path | None, str | None]:
        """The commit's kernel, built (and booted once) if it has not been: its path, or why not."""
        known = self.record.kernels.get(sha)
        path = self.layout.kernel(sha, self.asked.kind)
        if known and known.get("error"):
            return None, known["error"]
        if known and path.exists():
            return path, None
        reused = path.exists() and (path.parent / "booted").exists()
        built = Built(sha, path, 0.0, None, path.parent / "build.log") if reused else self.build(sha)
        entry = {"path": str(built.kernel) if built.kernel else None, "build_seconds": round(built.seconds, 1),
                 "full": built.full, "reused": reused, "error": built.error, "boot_seconds": 0.0}
        if built.kernel is not None and not reused:
            entry["boot_seconds"], entry["error"] = self.boot(sha, built.kernel)
            if entry["error"] is None:
                (path.parent / "booted").touch()
        self.record.kernels[sha] = entry
        self.save()
        return (None, entry["error"]) if entry["error"] else (Path(entry["path"]), None)

    def build(self, sha: str) -> Built:
        arch = "um" if self.asked.kind == UML else "x86_64"
        self.say(f"  building {sha[:12]} {self.record.subject(sha)} (make ARCH={arch} -j{self.asked.jobs}; log "
                 f"{self.layout.kernel_dir(sha) / 'build.log'})")
        built = build_commit(self.asked.tree, self.layout, sha, self.asked.kind, self.asked.jobs, self.execute)
        self.say(f"  built in {built.seconds / 60:.1f} min" if built.kernel else
                 f"  does not build ({built.seconds / 60:.1f} min): {built.error}")
        return built

    def boot(self, sha: str, path: Path) -> tuple[float, str | None]:
        """Boot the kernel once (its agent starts, says what it offers): seconds, or why it does not."""
        start = time.monotonic()
        kernel = Kernel(f"{self.asked.kind}-boot", path, vm=self.asked.kind == VM)
        try:
            with tempfile.TemporaryDirectory(prefix="fsbench-bisect-boot-") as directory:
                if kernel.vm:
                    vm_boot_facts(kernel, Path(directory))
                else:
                    boot_facts(kernel, Path(directory))
        except GuestError as exc:
            return time.monotonic() - start, f"does not boot: {exc.cause or str(exc).splitlines()[0]}"
        return time.monotonic() - start, None

    # ---- sessions ---------------------------------------------------------------------------

    def session(self, step_number: int, kernels: dict[str, Path], rounds: int, request: Request | None) -> int | None:
        """One interleaved session of these kernels (label role -> path) for up to rounds rounds; its id
        in the store (None when it recorded none)."""
        kind = self.asked.kind
        spec = ",".join(f"{kind}:{role}={path}" for role, path in kernels.items())
        marker = f"{self.bisect_id}:{step_number}"
        args = [*self.asked.pytest_args, f"--kernel={spec}", f"--runs={rounds}", f"--store={self.store_path}"]
        env = {**os.environ, "PYTHONUNBUFFERED": "1", BISECT: marker, **({LOOKS: request.text()} if request else {})}
        log = self.layout.work / "sessions" / f"bisect{self.bisect_id}-{step_number}.log"
        log.parent.mkdir(parents=True, exist_ok=True)
        self.say(f"  session: {len(kernels)} kernels interleaved, up to {rounds} rounds (pytest's output: {log})")
        status = execute_session([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p",
                                  "pytest_fsbench.bisect.looks", *args], self.cwd, env, log, self.say)
        found = self.store.sessions_asked("bisect", marker)
        if not found:
            raise FsbenchError(f"the step's pytest session ended with status {status} and recorded no session; its "
                               f"output is in {log}")
        return found[-1].id

    def roles(self, roles: Sequence[str]) -> dict[str, str]:
        return {f"{self.asked.kind}-{role}": role for role in roles}

    def figures_of(self, session_id: int, roles: Sequence[str]):
        return figures(self.store.series(session_id), self.roles(roles))

    def request(self, kind: str) -> Request:
        return Request(kind, self.roles((GOOD, BAD, STEP) if kind == STEP_KIND else (GOOD, BAD)),
                       self.asked.rules, self.asked.alpha, self.asked.looks, tuple(self.record.deciding))


def execute_session(argv: list[str], cwd: Path, env: dict[str, str], log: Path, say: Callable[[str], None]) -> int:
    """pytest on a step's kernels: its output into log, its case lines ([3/12] ...) said as they come;
    a Ctrl-C reaches it too, and it is waited for (its targets torn down), never killed."""
    with open(log, "w") as handle:
        child = subprocess.Popen(argv, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        interrupted = False
        assert child.stdout is not None
        while True:
            try:
                stopped = False
                for line in child.stdout:
                    handle.write(line)
                    if line.startswith("[") and "] " in line and " skipped 0.0 s" not in line:
                        say("    " + line.rstrip())
                    elif "fsbench bisect: " in line and not stopped:
                        stopped = True
                        say("    " + line.strip().split("  ")[0])
                status = child.wait()
                break
            except KeyboardInterrupt:  # the session got it too: it tears its targets down and ends
                interrupted = True
    if interrupted:
        raise KeyboardInterrupt
    return status


# ---- the bisect -------------------------------------------------------------------------------


def new_record(asked: Asked, execute: Executor) -> Record:
    """A new bisect's record: the request checked, the range read from the tree (usage errors
    before anything is written)."""
    check_asked(asked)
    check_tree(asked.tree, execute)
    good = resolve(asked.tree, asked.good, "--good", execute)
    bad = resolve(asked.tree, asked.bad, "--bad", execute)
    commits = commits_between(asked.tree, good, bad, execute)
    work = work_dir(asked)
    try:
        work.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"--work-dir={work}: {exc.strerror}; name a directory the bisect can write (its checkout, "
                         "build directory and kernels go there)") from None
    return Record(dataclasses.replace(asked, work=work), good, bad, commits)


def start(record: Record, store: Store, store_path: str, execute: Executor, say: Callable[[str], None] = print,
          cwd: Path | None = None) -> Bisector:
    """A new bisect in the store."""
    bisect_id = store.start_bisect(socket.gethostname(), str(record.asked.tree), record.good, record.bad,
                                   record.to_json())
    return Bisector(record, store, bisect_id, Layout(record.asked.work), store_path, execute, say, cwd or Path.cwd())


def resumed(store: Store, bisect_id: int | None, store_path: str, execute: Executor,
            say: Callable[[str], None] = print, cwd: Path | None = None) -> Bisector:
    """An earlier bisect (the newest unfinished one when bisect_id is None), its record as saved."""
    rows = store.bisects()
    if bisect_id is None:
        unfinished = [row for row in rows if row.status != "finished"]
        if not unfinished:
            raise UsageError(f"--resume: no unfinished bisect in {store.path}; fsbench bisect --list lists them")
        row = unfinished[-1]
    else:
        row = store.bisect(bisect_id)
        if row is None:
            raise UsageError(f"--resume={bisect_id}: no bisect {bisect_id} in {store.path}; fsbench bisect --list lists "
                             "them")
    record = Record.from_json(row.record)
    return Bisector(record, store, row.id, Layout(record.asked.work), store_path, execute, say, cwd or Path.cwd())


def run(b: Bisector) -> dict:
    """Run the bisect to its end from wherever its record stands; its result."""
    with locked(b.layout.work):
        if not b.layout.fragment.exists():
            prepare(b.layout, b.asked.kind, b.asked.config, b.execute)
        try:
            if not b.record.result:
                endpoints(b)
                if check_the_range(b):
                    walk(b)
                    conclude(b)
        except KeyboardInterrupt:
            b.save("interrupted")
            raise
        except BaseException:
            b.save("interrupted")
            raise
        b.save("finished")
    return b.record.result


def endpoints(b: Bisector) -> None:
    for role, sha in ((GOOD, b.record.good), (BAD, b.record.bad)):
        _, why = b.kernel(sha)
        if why:
            raise FsbenchError(f"the {role} endpoint {sha[:12]} {why}; a bisect needs both endpoints' kernels (see its "
                               f"build log {b.layout.kernel_dir(sha) / 'build.log'})")


def check_the_range(b: Bisector) -> bool:
    """The range's session (unless done): whether it regressed (else the result says why not)."""
    step = b.record.step(RANGE)
    if step is None:
        b.say(f"range: {b.record.good[:12]} (good) against {b.record.bad[:12]} (bad), "
              f"{len(b.record.commits)} commits between")
        kernels = {GOOD: b.layout.kernel(b.record.good, b.asked.kind), BAD: b.layout.kernel(b.record.bad, b.asked.kind)}
        started = time.monotonic()
        session = b.session(0, kernels, b.asked.max_rounds, b.request(RANGE))
        found = b.figures_of(session, (GOOD, BAD))
        rules = [parse_rule(rule) for rule in b.asked.rules]
        checked: RangeCheck = sequentially(lambda f: check_range(f, rules, b.asked.alpha, b.asked.looks), found,
                                           b.asked.looks)
        built = [b.record.kernels.get(sha, {}) for sha in (b.record.good, b.record.bad)]
        step = Step(RANGE, b.record.bad, checked.verdict, "; ".join(checked.lines()), session, checked.rounds,
                    sum(float(k.get("build_seconds") or 0) for k in built),
                    sum(float(k.get("boot_seconds") or 0) for k in built), time.monotonic() - started,
                    figure=figure_record(checked.regressed[0] if checked.regressed else
                                         (checked.judged[0].figure if checked.judged else None)))
        b.record.steps.append(step)
        b.record.deciding = [f.key for f in checked.regressed]
        b.save()
        b.say(f"range: {checked.verdict} in {checked.rounds} rounds")
        for line in checked.lines():
            b.say(f"  {line}")
    if step.verdict == REGRESSES:
        return True
    b.record.result = {"verdict": NO_REGRESSION if step.verdict == NO_REGRESSION else "undecided",
                       "why": step.why, "rounds": step.rounds}
    return False


def walk(b: Bisector) -> None:
    """Steps until the search has nothing left to measure."""
    shas = [c.sha for c in b.record.commits]
    while (sha := search.next_commit(shas, b.record.verdicts())) is not None:
        number = len([s for s in b.record.steps if s.kind == STEP_KIND]) + 1
        b.say(f"step {number}: {b.record.position(sha)} {sha[:12]} {b.record.subject(sha)}")
        b.record.steps.append(measure_step(b, number, sha))
        b.save()
        last = b.record.steps[-1]
        b.say(f"step {number}: {last.verdict}" + (f" in {last.rounds} rounds" if last.rounds else "")
              + (f": {last.why}" if last.why else ""))


def measure_step(b: Bisector, number: int, sha: str) -> Step:
    before = dict(b.record.kernels.get(sha, {}))
    path, why = b.kernel(sha)
    entry = b.record.kernels.get(sha, {})
    build, boot = (0.0, 0.0) if before else (entry.get("build_seconds", 0.0), entry.get("boot_seconds", 0.0))
    if path is None:
        return Step(STEP_KIND, sha, "skip", why or "no kernel", build_seconds=build, boot_seconds=boot)
    kernels = {GOOD: b.layout.kernel(b.record.good, b.asked.kind), BAD: b.layout.kernel(b.record.bad, b.asked.kind),
               STEP: path}
    started = time.monotonic()
    session = b.session(number, kernels, b.asked.max_rounds, b.request(STEP_KIND))
    found = b.figures_of(session, (GOOD, BAD, STEP))
    rules = [parse_rule(rule) for rule in b.asked.rules]
    measured = time.monotonic() - started
    try:
        checked: StepCheck = sequentially(lambda f: check_step(f, b.record.deciding, rules, b.asked.alpha,
                                                               b.asked.looks), found, b.asked.looks)
    except ValueError as exc:
        return Step(STEP_KIND, sha, "skip", f"not measured: {exc}", session, 0, build, boot, measured)
    deciding = checked.deciding
    if checked.verdict == NOT_YET:
        why = ("its figures disagree (one like good, another like bad)" if checked.split else
               f"not decided in {checked.rounds} rounds (--max-rounds={b.asked.max_rounds})"
               if checked.rounds else "the step's kernel measured nothing")
        evidence = checked.evidence[0] if checked.evidence else None
        return Step(STEP_KIND, sha, "skip", why + (f": {evidence.text()}" if evidence else ""), session,
                    checked.rounds, build, boot, measured, figure_record(evidence.figure if evidence else None))
    return Step(STEP_KIND, sha, checked.verdict, deciding.text(), session, checked.rounds, build, boot, measured,
                figure_record(deciding.figure))


def conclude(b: Bisector) -> None:
    """The result: the first bad commit confirmed against its parent, or the commits it is among."""
    shas = [c.sha for c in b.record.commits]
    where = search.standing(shas, b.record.verdicts())
    if where.found is None:
        skipped = {s.commit: s.why for s in b.record.steps if s.kind == STEP_KIND and s.verdict == "skip"}
        b.record.result = {"verdict": "among", "candidates": list(where.in_question),
                           "why": "; ".join(f"{sha[:12]} skipped: {skipped[sha]}" for sha in where.in_question
                                            if sha in skipped)}
        return
    culprit = where.found
    index = shas.index(culprit)
    parent = shas[index - 1] if index > 0 else b.record.good
    confirmation = b.record.step(CONFIRM)
    if confirmation is None:
        confirmation = confirm_culprit(b, culprit, parent)
        b.record.steps.append(confirmation)
        b.save()
    b.record.result = {"verdict": "found", "culprit": culprit, "subject": b.record.subject(culprit), "parent": parent,
                       "confirmed": confirmation.verdict, "confirmation": confirmation.why,
                       "rounds": confirmation.rounds, "figure": confirmation.figure,
                       "also": headline_lines(b, confirmation.session),
                       "files": changed_files(b.asked.tree, culprit, b.execute)}


def headline_lines(b: Bisector, session: int | None) -> list[str]:
    """The culprit against its parent on the headline figures too (paired by round, at alpha), as
    information: they decide nothing unless a rule named them."""
    if session is None:
        return []
    roles = {f"{b.asked.kind}-parent": GOOD, f"{b.asked.kind}-culprit": BAD}
    found = []
    for figure in figures(b.store.series(session), roles):
        cmp = comparison(figure, GOOD, BAD, b.asked.alpha) if is_headline(figure.metric) else None
        if cmp is not None and figure.key not in {tuple(k) for k in b.record.deciding}:
            found.append(format_comparison(figure.name, cmp, figure.unit))
    return found


def confirm_culprit(b: Bisector, culprit: str, parent: str) -> Step:
    b.say(f"confirming {culprit[:12]} against its parent {parent[:12]}: {b.asked.confirm_rounds} rounds")
    path, why = b.kernel(parent)
    if path is None:
        return Step(CONFIRM, culprit, "not confirmed", f"its parent {parent[:12]} {why}", parent=parent)
    kernels = {"parent": path, "culprit": b.layout.kernel(culprit, b.asked.kind)}
    started = time.monotonic()
    session = b.session(len(b.record.steps), kernels, b.asked.confirm_rounds, None)
    roles = {f"{b.asked.kind}-parent": GOOD, f"{b.asked.kind}-culprit": BAD}
    found = figures(b.store.series(session), roles)
    rules = [parse_rule(rule) for rule in b.asked.rules]
    checked: Confirmation = confirm(found, b.record.deciding, rules, b.asked.alpha)
    b.say(f"  {checked.text()}")
    return Step(CONFIRM, culprit, checked.verdict, checked.text(), session, checked.rounds,
                measure_seconds=time.monotonic() - started, figure=figure_record(checked.figure), parent=parent)


def figure_record(figure) -> dict:
    """What the page shows of a step's figure: its name, unit and each kernel's median."""
    if figure is None:
        return {}
    medians = {}
    for role, values in figure.runs:
        if values:
            ordered = sorted(values)
            middle = len(ordered) // 2
            medians[role] = ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2
    return {"name": figure.name, "metric": figure.metric, "unit": figure.unit, "medians": medians}


# ---- what it says -----------------------------------------------------------------------------


def minutes(seconds: float) -> str:
    return f"{seconds / 60:.1f} min"


def step_lines(record: Record) -> list[str]:
    """One line per session: what was measured, its verdict and its times."""
    lines = []
    for number, step in enumerate(record.steps):
        what = {RANGE: "range", CONFIRM: "confirm"}.get(step.kind, f"step {number}")
        times = (f"build {minutes(step.build_seconds)}, boot {step.boot_seconds:.0f} s, measuring "
                 f"{minutes(step.measure_seconds)}")
        where = (f"{record.good[:12]}..{record.bad[:12]}, the endpoints" if step.kind == RANGE else
                 f"{record.position(step.commit)} {step.commit[:12]} {record.subject(step.commit)}"
                 if step.kind == STEP_KIND else f"{step.commit[:12]} against its parent {step.parent[:12]}")
        lines.append(f"{what}: {where}: {step.verdict}"
                     + (f" in {step.rounds} rounds" if step.rounds else "") + f" ({times}"
                     + (f"; session {step.session}" if step.session else "") + ")")
    return lines


def result_lines(record: Record) -> list[str]:
    result = record.result
    verdict = result.get("verdict")
    if verdict == NO_REGRESSION:
        return [f"no regression in the range: {record.good[:12]}..{record.bad[:12]} do not differ beyond the rule "
                f"({', '.join(record.asked.rules)}) in {result.get('rounds')} rounds; no commit is named",
                *[f"  {line}" for line in result.get("why", "").split("; ") if line]]
    if verdict == "undecided":
        return [f"cannot tell whether the range regressed: good and bad were not told apart within "
                f"--max-rounds={record.asked.max_rounds} rounds; no commit is named (a larger --max-rounds, or a rule on "
                "the work counts, decides sooner)", *[f"  {line}" for line in result.get("why", "").split("; ") if line]]
    if verdict == "among":
        return [f"the first bad commit is one of {', '.join(sha[:12] for sha in result['candidates'])}: "
                f"{result.get('why')}"]
    if verdict != "found":
        return []
    confirmed = result["confirmed"] == CONFIRMED
    lines = [f"first bad commit: {result['culprit']} {result['subject']}",
             f"  {'confirmed' if confirmed else 'NOT confirmed'} against its parent {result['parent'][:12]} in "
             f"{result['rounds']} rounds: {result['confirmation'].split(': ', 1)[-1]}"]
    if confirmed:
        lines.append(f"  how sure: each step decided at one-sided alpha={record.asked.alpha:g} over all its looks, "
                     "both endpoints measured beside it; the confirmation's p above, on its own rounds")
    else:
        lines.append("  a step may have erred: re-run with a larger --max-rounds (the steps' verdicts are above)")
    lines += [f"  also (no rule names it): {line}" for line in result.get("also", [])]
    lines += [f"  {line}" for line in result.get("files", [])]
    return lines


def time_line(record: Record) -> str:
    build = sum(float(k.get("build_seconds") or 0) for k in record.kernels.values())
    boot = sum(float(k.get("boot_seconds") or 0) for k in record.kernels.values())
    measuring = sum(s.measure_seconds for s in record.steps)
    kernels, sessions = len(record.kernels), len(record.steps)
    return (f"time: {minutes(build + boot + measuring)}: builds {minutes(build)} ({kernels} kernel"
            f"{'s' if kernels != 1 else ''}), boots {minutes(boot)}, measuring {minutes(measuring)} ({sessions} session"
            f"{'s' if sessions != 1 else ''})")


def plan_lines(asked: Asked, commits: int, history: Sequence[dict], work_has_build: bool) -> list[str]:
    """What a bisect of this range will take: its steps, builds and measuring, from earlier bisects'
    times in the store where there are any (history: their records), else from this project's
    measurements on a 2-core machine beside other jobs (stated as such)."""
    steps = search.steps_expected(commits)
    builds = 2 + steps + 1  # the endpoints, each step, the culprit's parent at most
    head = (f"fsbench bisect --plan: {commits} commits after the good one, so about {steps} steps (log2 of "
            f"{commits}; a skipped commit adds one), then the culprit against its parent")
    known = planned_times(history, asked.kind)
    if known is None:
        return [head, f"builds: {builds} kernels; measuring: {steps + 2} sessions (2 or 3 kernels interleaved, "
                      f"{asked.rounds} to {asked.max_rounds} rounds each, the confirmation {asked.confirm_rounds})",
                f"their minutes: no bisect of {asked.kind} kernels is in this store, and fsbench has measured none on "
                "a machine of its own; the first one's record gives later plans their times"]
    full, incremental, per_round = known
    build_seconds = (0 if work_has_build else full[0] - incremental[0]) + builds * incremental[0]
    rounds = 4  # where the regression shows in a count: decided at the fourth round (alpha 0.05, looks 3..10)
    sessions = [(2, rounds), *[(3, rounds)] * steps, (2, asked.confirm_rounds)]
    measure = sum(kernels * r * per_round[0] for kernels, r in sessions)
    worst = sum(kernels * r * per_round[0] for kernels, r in
                [(2, asked.max_rounds), *[(3, asked.max_rounds)] * steps, (2, asked.confirm_rounds)])
    source = full[1]
    return [head,
            f"builds: {builds} kernels, about {minutes(build_seconds)}: "
            + (f"the first full build {minutes(full[0])}, then " if not work_has_build else "the build directory is "
               "made, so ")
            + f"about {minutes(incremental[0])} each ({source})",
            f"measuring: {len(sessions)} sessions of {per_round[0]:.0f} s a case per kernel and round ({per_round[1]}): "
            f"about {minutes(measure)} where a count of the work shows the regression (decided in about {rounds} rounds), "
            f"up to {minutes(worst)} when only a time figure does (--max-rounds={asked.max_rounds} each)",
            f"in all about {minutes(build_seconds + measure)} to {minutes(build_seconds + worst)}"]


#: this project's measurements on a 2-core machine beside other jobs (docs/bisect.md): a minimal UML
#: kernel's full build, a step's rebuild, and a case (dd write of 128M) per kernel and round; none of
#: a virtual machine's kernels (this machine has no KVM to measure them fairly)
MEASURED = {UML: (13 * 60.0, 30.0, 7.0)}


def planned_times(history: Sequence[dict], kind: str) -> tuple[tuple[float, str], tuple[float, str],
                                                                  tuple[float, str]] | None:
    """(full build, a step's build, a case per kernel and round) in seconds, each with where it
    comes from: the median of earlier bisects' of this kind, else MEASURED; None when neither
    knows one of them."""
    full, rebuilt, per_case = [], [], []
    for found in history:
        if found.get("asked", {}).get("kind") != kind:
            continue
        for k in found.get("kernels", {}).values():
            if k.get("build_seconds") and not k.get("reused"):
                (full if k.get("full") else rebuilt).append(float(k["build_seconds"]))
        for step in found.get("steps", []):
            kernels = 3 if step["kind"] == STEP_KIND else 2
            if step.get("rounds") and step.get("measure_seconds"):
                per_case.append(step["measure_seconds"] / (kernels * step["rounds"]))
    mine = MEASURED.get(kind)

    def median(values: list[float], which: int) -> tuple[float, str] | None:
        if not values:
            return None if mine is None else (mine[which], "measured by fsbench's own bisects on a 2-core machine")
        ordered = sorted(values)
        return ordered[len(ordered) // 2], f"the median of {len(values)} in this store's bisects"

    found = (median(full, 0), median(rebuilt, 1), median(per_case, 2))
    return None if None in found else found


def figure_text(figure: dict, roles: Sequence[str] = (GOOD, STEP, BAD)) -> str:
    """A step's deciding figure in a few words: its medians under good, this and the bad kernel."""
    medians = figure.get("medians", {})
    shown = [plain(medians[role]) for role in roles if role in medians]
    return f"{figure['metric']}: {' / '.join(shown)} {figure.get('unit', '')}".rstrip() if shown else ""


def report_page(record: Record, bisect_id: int, status: str) -> str:
    """The bisect's page: the range as a line of commits, the steps, the result."""
    culprit = record.result.get("culprit") if record.result.get("verdict") == "found" else None
    numbered = [(number, step) for number, step in enumerate(record.steps)]
    step_of = {s.commit: (n, s) for n, s in numbered if s.kind == STEP_KIND}
    rng = record.step(RANGE)
    range_figure = rng.figure if rng else {}
    boxes = [CommitBox(record.good, "the good endpoint", "good", "range",
                       figure_text(range_figure, (GOOD,)))]
    for commit in record.commits:
        number, step = step_of.get(commit.sha, (0, None))
        found = ("culprit" if commit.sha == culprit else step.verdict if step
                 else "bad" if commit.sha == record.bad else "")
        label = f"step {number}" if step else "range (the bad endpoint)" if commit.sha == record.bad else ""
        figure = (figure_text(step.figure) if step and step.figure
                  else figure_text(range_figure, (BAD,)) if commit.sha == record.bad else "")
        boxes.append(CommitBox(commit.sha, commit.subject, found, label, figure))
    header = ["#", "measured", "commit", "subject", "verdict", "rounds", "deciding figure", "build min", "boot s",
              "measuring min", "session"]
    rows, classes = [], []
    for number, step in numbered:
        what = {RANGE: "range", CONFIRM: "confirm"}.get(step.kind, f"step {number}")
        against = (f"{step.parent[:12]} (parent)" if step.kind == CONFIRM else
                   f"good {record.good[:12]}" if step.kind == RANGE else record.position(step.commit))
        rows.append([what, against, step.commit[:12], record.subject(step.commit), step.verdict, str(step.rounds or ""),
                     step.why, f"{step.build_seconds / 60:.1f}", f"{step.boot_seconds:.0f}",
                     f"{step.measure_seconds / 60:.1f}", str(step.session or "")])
        classes.append("better" if step.verdict in (LIKE_GOOD, NO_REGRESSION) else
                       "worse" if step.verdict in (LIKE_BAD, REGRESSES, CONFIRMED) else "")
    asked = record.asked
    intro = [f"Bisect {bisect_id} ({status}) of {asked.tree}: {record.good[:12]} ({asked.good}, good) .. "
             f"{record.bad[:12]} ({asked.bad}, bad), {len(record.commits)} commits; {asked.kind} kernels; cases: "
             f"{' '.join(asked.pytest_args) or 'every benchmark'}; rules {', '.join(asked.rules)} at one-sided "
             f"alpha={asked.alpha:g}, looks at rounds {asked.looks[0]} to {asked.looks[-1]}, the culprit confirmed in "
             f"{asked.confirm_rounds} rounds."]
    return bisect_page.page(f"fsbench bisect {bisect_id}", intro, boxes, header, rows, classes,
                            result_lines(record) or ["not finished: fsbench bisect --resume continues it"],
                            time_line(record))

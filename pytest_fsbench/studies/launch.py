"""Running a study: its plan (cases, runs, time, room the images may take, which cases run in a
virtual machine and why), refused when the images would not fit; pytest on the study's matrix;
its report."""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import math
import os
import platform
import shlex
import shutil
import statistics
import subprocess
import sys
from collections.abc import Collection
from dataclasses import dataclass, field
from pathlib import Path

from ..case import LAYOUT_DEVICES, CaseSpec, case_kind, is_paced, storage_part
from ..errors import UsageError
from ..filesystems import driver
from ..system.host import Host
from ..kernels.kernel import Kernel, fallback
from ..matrix import parse_image_size
from ..measure.monitor import others_cpu, snapshot
from ..measure.progress import PLAN_SECONDS, WIDTH, fit, unwrap
from ..options import APPEND
from ..kernels.probe import probe
from ..settings import BY_FLAG, DEFAULT_IMAGE_DIR, DEFAULT_STORE, OPTIONS, case_specs
from ..kernels.vm import OPENZFS_USERLAND, detect_accelerator, vm_missing
from ..verdicts.sequential import looks
from . import Check, Study, apart_before, claim_rate, differing, session_conditions
from ..sizes import existing_ancestor
from ..store.databases import is_url
from ..store.facts import STUDY, case_options, study_marker
from ..store.results import Store, Timing

#: the options a study's user adds to rather than replaces
REPEATABLE = {option.flag for option in OPTIONS if option.kind == APPEND}


def option_values(args: list[str], flag: str) -> list[str]:
    """Every value of `--flag=value` and `--flag value` in args, in order."""
    found = []
    for index, arg in enumerate(args):
        if arg.startswith(flag + "="):
            found.append(arg.split("=", 1)[1])
        elif arg == flag and index + 1 < len(args):
            found.append(args[index + 1])
    return found


def without_option(args: list[str], flag: str) -> list[str]:
    """args without `--flag=value` and `--flag value`."""
    kept, skip = [], False
    for arg in args:
        if skip:
            skip = False
        elif arg == flag:
            skip = True
        elif not arg.startswith(flag + "="):
            kept.append(arg)
    return kept


def study_store(args: list[str]) -> Path | str:
    """The store a study's pytest session writes: the --store its arguments end with."""
    return BY_FLAG["--store"].value(option_value(args, "--store", DEFAULT_STORE))


def option_value(args: list[str], flag: str, default: str) -> str:
    """The value of `--flag=value` or `--flag value` in args (the last one given), else default."""
    found = option_values(args, flag)
    return found[-1] if found else default


@dataclass(frozen=True)
class Plan:
    args: list[str]
    tests: int
    runs: int  # per test, warm-up included
    minutes: float
    basis: str  # how the time is known
    devices: int  # most devices one case takes
    image_bytes: int
    image_dir: Path
    free_bytes: int
    placement: tuple[str, ...] = ()  # where the cases run, when not all on the host (placement_lines)
    left_out: tuple[str, ...] = ()  # the cases this machine cannot run, and why (--runnable-only's lines)
    case_seconds: dict[str, float] = field(default_factory=dict)  # each test's seconds by name (planned_seconds)
    claims: tuple[str, ...] = ()  # the runs chosen per claim, and why (claim_lines)

    @property
    def room_needed(self) -> int:
        """What the sparse images of one case may take at most (cases run one after another)."""
        return self.devices * self.image_bytes

    def lines(self, width: int = WIDTH) -> list[str]:
        """The plan within width: its pytest command in lines that a shell runs pasted
        (command_lines), its prose wrapped (progress.fit)."""
        prose = [f"plan: {self.tests} tests x {self.runs} runs (warm-up included"
                  f"{'; a claim' + chr(39) + 's tests until it would be decided' if self.claims else ''}), about "
                  f"{self.minutes:.0f} minute{'s' * (round(self.minutes) != 1)} "
                  f"({self.basis}); each case's images up to {self.devices} x {self.image_bytes / 2**30:.0f} GiB = "
                  f"{self.room_needed / 2**30:.0f} GiB (sparse) in {self.image_dir}, which has "
                  f"{self.free_bytes / 2**30:.0f} GiB free",
                 *(f"plan: {line}" for line in self.claims),
                 *(f"plan: {line}" for line in self.placement),
                 *(f"plan: {line.removeprefix('fsbench: ')}" for line in self.left_out)]
        return [*command_lines("plan: ", [pytest_program(Path.cwd()), *self.args], width),
                *(part for line in prose for part in fit(line, width))]


def pytest_program(cwd: Path) -> str:
    """The pytest the study runs (this interpreter's, with the plugin), as a path a shell in cwd
    runs: .venv/bin/pytest from the checkout, as every command in the README is written."""
    program = Path(sys.executable).parent / "pytest"
    if not program.is_file():
        return "pytest"
    return str(program.relative_to(cwd)) if program.is_relative_to(cwd) else str(program)


#: how far a command's continuation lines are indented (deeper than fit()'s two: unwrap leaves them be)
CONTINUED = "    "


def command_lines(head: str, argv: list[str], width: int = WIDTH) -> list[str]:
    """argv after head, each argument shell-quoted, in lines within width where its arguments
    allow: broken between arguments only, each line but the last ending in the shell's " \\" and
    the next indented by CONTINUED, so that the lines, pasted, run the command (issue 35: a
    study's plan printed it on one line of over 1000 columns)."""
    words = [shlex.quote(arg) for arg in argv]
    lines = [head + words[0]]
    for word in words[1:]:
        if len(lines[-1]) + len(word) + len(" \\") + 1 <= width:
            lines[-1] += " " + word
        else:
            lines[-1] += " \\"
            lines.append(CONTINUED + word)
    return lines


def study_args(study: Study, scale: str, extra: list[str], cwd: Path) -> list[str]:
    """The pytest arguments: the scale's, then the user's, whose option of one value replaces the
    scale's (pytest refuses one given twice); the store made absolute, so the session is found
    wherever pytest settles its rootdir ($FSBENCH_STORE when no --store is given)."""
    given = {arg.partition("=")[0] for arg in extra if arg.startswith("--")} - REPEATABLE
    scale_args = [arg for arg in study.scale(scale)["args"] if not (arg.startswith("--") and "=" in arg
                                                                    and arg.partition("=")[0] in given)]
    ours, scale_args = take_keywords(scale_args)
    yours, extra = take_keywords(extra)
    selection = joined_keywords(ours, yours)
    args = [*scale_args, *extra, *(["-k", selection] if selection else [])]
    if "--runnable-only" not in args:
        args.append("--runnable-only")
    if not any(a.startswith("--store=") for a in args):
        store = os.environ.get("FSBENCH_STORE") or DEFAULT_STORE
        args.append(f"--store={store if '://' in store else cwd / store}")
    return args


def take_keywords(args: list[str]) -> tuple[list[str], list[str]]:
    """The -k expressions in args (`-k EXPR` and `-kEXPR`), and args without them."""
    found, rest, words = [], [], iter(args)
    for word in words:
        if word == "-k":
            expression = next(words, None)
            if expression is None:  # pytest says what is missing
                rest.append(word)
            else:
                found.append(expression)
        elif word.startswith("-k") and not word.startswith("--"):
            found.append(word[2:].removeprefix("="))
        else:
            rest.append(word)
    return found, rest


def joined_keywords(*groups: list[str]) -> str | None:
    """One -k for every expression given (pytest keeps only the last -k: issue 34, a study's own
    -k was dropped for the user's, 192 tests instead of 64)."""
    expressions = [e for group in groups for e in group]
    if len(expressions) < 2:
        return expressions[0] if expressions else None
    return " and ".join(f"({e})" for e in expressions)


def selection_note(study: Study, scale: str, extra: list[str]) -> str | None:
    """The plan's line when the user's -k narrows the study's own selection."""
    ours, yours = take_keywords(study.scale(scale)["args"])[0], take_keywords(extra)[0]
    if not yours or not ours:
        return None
    return (f"plan: -k: the study's selection ({' and '.join(ours)}) and yours ({' and '.join(yours)}) both apply: "
            f"-k {joined_keywords(ours, yours)!r}")


def collected_tests(args: list[str], cwd: Path) -> tuple[list[str], tuple[str, ...]]:
    """The tests the session will run (their ids), and the lines saying which it leaves out and why."""
    done = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--collect-only", "-q", *args],
                          cwd=cwd, capture_output=True, text=True, timeout=600)
    if done.returncode not in (0, 5):
        errors = pytest_errors(done.stderr + done.stdout)
        raise UsageError("; ".join(errors) or (done.stderr + done.stdout).strip()[-500:])
    lines = done.stdout.splitlines()
    return [line for line in lines if "::" in line], tuple(line for line in unwrap(lines) if line.startswith("fsbench: left out"))


#: the session's time outside every test (its opening and closing, what no case holds), when the
#: scale's file gives no session_seconds and no earlier session says
SESSION_SECONDS = 10.0

#: the study command's time outside its session: the plan's collection, pytest's start and its
#: collection before the session opens the store, the page after it (raid-filesystems' quick scale:
#: 19 s of 1004)
OUTSIDE_SECONDS = 20.0

#: the newest sessions of a study's scale in its store whose times a plan takes (the median of each)
PLAN_SESSIONS = 3


def test_function(test_id: str) -> str:
    """pkg/test_iozone.py::test_iozone[btrfs-single-16M] -> test_iozone."""
    return test_id.rpartition("::")[2].partition("[")[0]


def kind(test_id: str, kernel: str = "host") -> str:
    """A stored or planned test's kind (case.case_kind): paced when its id says storage=."""
    return case_kind(test_function(test_id), kernel, is_paced(test_id))


def planned_kind(test_id: str, guests: Collection[str]) -> str:
    """A planned test's kind: a guest's case id starts with its kernel's label (CaseSpec.id)."""
    ident = test_id.rpartition("[")[2]
    found = [label for label in guests if ident.startswith(label + "-")]
    return kind(test_id, max(found, key=len) if found else "host")  # uml-new before uml


@dataclass(frozen=True)
class Seconds:
    """What a plan's time is made of: the seconds of a run and of a target's building and tearing
    down, by kind of case (a run: warm-up or measured, its preparation and cache policy included),
    and the rest of a session (pytest, collection, booting guests, what no case holds)."""

    run: dict[str, float]
    target: dict[str, float]
    session: float
    basis: str  # where they come from, for the plan's line

    def covers(self, kinds: list[str]) -> bool:
        return all(k in self.run for k in kinds)

    def case(self, kind: str, runs: int) -> float:
        return self.target.get(kind, 0.0) + runs * self.run[kind]


def point_seconds(table: dict) -> Seconds:
    """The seconds one measurement of a scale gives (run_seconds, target_seconds, paced_run_seconds,
    session_seconds, seconds_basis: the scale's own keys, or one of its loads' tables)."""
    targets = dict(table.get("target_seconds", {}))
    paced = {case_kind(function, paced=True): float(value) for function, value in table.get("paced_run_seconds", {}).items()}
    targets.update({k: targets[k.rpartition(" ")[0]] for k in paced if k.rpartition(" ")[0] in targets})
    return Seconds({**table["run_seconds"], **paced}, targets,
                   float(table.get("session_seconds", SESSION_SECONDS)), table.get("seconds_basis", ""))


def between(low: dict[str, float], high: dict[str, float], weight: float) -> dict[str, float]:
    """Each key's value weight of the way from low to high (a key only one has: its value)."""
    return {k: low[k] + weight * (high[k] - low[k]) if k in low and k in high else high.get(k, low.get(k, 0.0))
            for k in dict.fromkeys([*high, *low])}


def load_points(scale: dict) -> list[tuple[float, Seconds]]:
    """The scale's seconds at each load they were measured at (the share of the CPUs other
    processes used then, %: its own keys' others_cpu, and each of its loads' tables), least first;
    empty unless it was measured at two loads or more."""
    points = [(float(table["others_cpu"]), point_seconds(table)) for table in scale.get("loads", [])]
    if "others_cpu" in scale:
        points.append((float(scale["others_cpu"]), point_seconds(scale)))
    return sorted(points, key=lambda point: point[0]) if len(points) > 1 else []


def seconds_at(points: list[tuple[float, Seconds]], others: float) -> Seconds:
    """The seconds at others (% of the CPUs other processes use), on straight lines between the
    loads measured (a run took 2.08 s alone, 2.21 at 30 %, 4.72 at 70 %: not one straight line),
    the nearest measured beyond them: nothing says how seconds grow past what was measured."""
    if others <= points[0][0]:
        return points[0][1]
    for (low, below), (high, above) in zip(points, points[1:]):
        if others <= high:
            weight = (others - low) / (high - low) if high > low else 1.0
            return Seconds(between(below.run, above.run, weight), between(below.target, above.target, weight),
                           below.session + weight * (above.session - below.session), "")
    return points[-1][1]


def shipped_seconds(scale: dict, others: float | None = None) -> Seconds | None:
    """The seconds per run and per target the study's file gives for this scale (measured when it
    was written, on another machine or day), None when it gives none. A scale measured at several
    loads (others_cpu, and its loads' tables) gives them at the load other processes put on the
    machine now (others, % of its CPUs): a run beside busy neighbours took twice as long
    (btrfs-options, quick: IOzone 2.08 s alone, 4.72 s at 70 %)."""
    if not scale.get("run_seconds"):
        return None
    said = "from the seconds per run and per target measured for this scale: "
    points = load_points(scale)
    if others is None or not points:
        own = point_seconds(scale)
        return dataclasses.replace(own, basis=said + own.basis)
    beyond = ("; busier than any of them, so it may take longer" if others > points[-1][0] else "")
    measured = "; ".join(f"at {load:.0f} %, {seconds.basis}" for load, seconds in points)
    return dataclasses.replace(
        seconds_at(points, others),
        basis=f"{said}taken at the load now, other processes using {others:.0f} % of the CPUs while the plan "
              f"collected the tests, from those measured at {len(points)} loads ({measured}){beyond}")


@dataclass(frozen=True)
class Earlier:
    """An earlier session of the study's scale in its store (earlier_sessions)."""

    id: int
    started: str
    tests: list[Timing]
    wall: float  # from its start to its end
    others: float | None = None  # the median % of the CPUs other processes used in its runs (cpu.others)


def session_seconds(earlier: Earlier) -> Seconds:
    """One stored session's seconds by kind: a run's (its runs' total over their number), a
    target's (the mean over its tests), and the rest of its wall time."""
    runs: dict[str, list[float]] = {}
    targets: dict[str, list[float]] = {}
    for test in earlier.tests:
        found = runs.setdefault(kind(test.test, test.kernel), [0.0, 0])
        found[0] += test.run_seconds
        found[1] += test.runs
        if test.target_seconds is not None:
            targets.setdefault(kind(test.test, test.kernel), []).append(test.target_seconds)
    spent = sum(t.run_seconds + (t.target_seconds or 0.0) for t in earlier.tests)
    return Seconds({k: total / count for k, (total, count) in runs.items() if count},
                   {k: statistics.fmean(found) for k, found in targets.items()}, max(0.0, earlier.wall - spent),
                   f"session {earlier.id}")


def medians(tables: list[dict[str, float]]) -> dict[str, float]:
    """Of each key, the median of the tables that have it."""
    return {k: statistics.median(t[k] for t in tables if k in t) for k in dict.fromkeys(k for t in tables for k in t)}


def at_load(seconds: Seconds, then: float | None, now: float | None, scale: dict) -> Seconds:
    """A session's seconds as they would be at the load now: each kind's times the ratio of the
    scale's shipped seconds at the two loads (unchanged when either load is unknown, or the scale
    was measured at one load only)."""
    points = load_points(scale)
    if then is None or now is None or not points:
        return seconds
    was, will = seconds_at(points, then), seconds_at(points, now)
    run = {k: v * will.run[k] / was.run[k] if was.run.get(k) else v for k, v in seconds.run.items()}
    target = {k: v * will.target[k] / was.target[k] if was.target.get(k) else v for k, v in seconds.target.items()}
    return Seconds(run, target, seconds.session, seconds.basis)


def measured_seconds(sessions: list[Earlier], scale: dict | None = None, now: float | None = None) -> Seconds | None:
    """The seconds of earlier sessions (newest first): of each kind, the median over the sessions
    that ran it, each taken at the load now when the scale says how load changes them (at_load);
    None when there are none."""
    if not sessions:
        return None
    each = [at_load(session_seconds(earlier), earlier.others, now, scale or {}) for earlier in sessions]
    run, target = medians([s.run for s in each]), medians([s.target for s in each])
    rest = statistics.median(s.session for s in each)
    said = "; ".join(f"{k} {run[k]:.2f} s a run" + (f", {target[k]:.2f} s a target" if k in target else "")
                     for k in run)
    many = "s" * (len(sessions) != 1)
    loads = [e.others for e in sessions if e.others is not None]
    scaled = (f" (taken at the load now, other processes using {now:.0f} % of the CPUs, from theirs, "
              f"{', '.join(f'{v:.0f}' for v in loads)} %)" if now is not None and loads and load_points(scale or {})
              else "")
    return Seconds(run, target, rest,
                   f"from {len(sessions)} earlier session{many} of this scale in this store: session{many} "
                   f"{', '.join(str(e.id) for e in sessions)}, the newest started {sessions[0].started}; the median "
                   f"of each{scaled}: {said}; the rest of a session {rest:.0f} s")


def runs_before(sessions: list[Earlier]) -> dict[str, int]:
    """The runs (warm-up included) each test had in the earlier sessions, the median (rounded up),
    by test name: what a test that repeats until its claim is decided is expected to take again."""
    found = medians([{test_name(t.test): float(t.runs) for t in e.tests} for e in sessions])
    return {test: math.ceil(runs) for test, runs in found.items()}


def earlier_sessions(location: Path | str, study: str, scale: str, args: list[str],
                     newest: int = PLAN_SESSIONS) -> list[Earlier]:
    """The newest complete sessions of this study and scale in the store, on this machine, run with
    the same cases and options as args (their command lines' case_options), none of whose tests
    failed, newest first; none in a store that does not exist yet."""
    if not is_url(location) and not Path(location).exists():
        return []
    store = Store(location, create=False)
    try:
        wanted = case_options(args)
        found = []
        for row in reversed(store.sessions_asked("study", study_marker(study, scale))):
            if row.status != "complete" or row.host != platform.node() or row.finished is None:
                continue
            if set(store.test_outcomes(row.id).values()) & {"failed", "error"}:
                continue  # a failed test's time is no case's: it stopped where it failed
            if case_options(store.session_export(row.id)["session"]["args"].get("argv", [])) != wanted:
                continue
            others = [v for series in store.series(row.id) if series.key.metric == "cpu.others" for v in series.values]
            found.append(Earlier(row.id, row.started, store.test_times(row.id),
                                 (dt.datetime.fromisoformat(row.finished)
                                  - dt.datetime.fromisoformat(row.started)).total_seconds(),
                                 statistics.median(others) if others else None))
            if len(found) == newest:
                break
        return found
    finally:
        store.close()


def estimate(seconds: list[Seconds | None], scale: dict, tests: list[str], runs: int,
             expected: dict[str, int] | None = None, guests: Collection[str] = ()) -> tuple[float, str, Seconds | None]:
    """The plan's minutes, how they are known, and the seconds taken: from the first of seconds
    (this store's earlier sessions', the study file's) that has every planned kind of case, for the
    tests and runs planned now (runs each, warm-up included; expected: the runs, warm-up included,
    of the tests that repeat until their claim is decided); else the scale's measured total."""
    expected = expected or {}
    kinds = {test: planned_kind(test, guests) for test in tests}
    chosen = next((s for s in seconds if s is not None and s.covers(list(kinds.values()))), None)
    if chosen is None:
        return float(scale.get("minutes", 0)), scale.get("minutes_basis", "estimated"), None
    total = OUTSIDE_SECONDS + chosen.session + sum(chosen.case(kinds[t], expected.get(test_name(t), runs))
                                                   for t in tests)
    return total / 60, chosen.basis, chosen


def planned_seconds(seconds: Seconds | None, tests: list[str], runs: int, expected: dict[str, int] | None = None,
                    guests: Collection[str] = ()) -> dict[str, float]:
    """The seconds each planned test is expected to take, by its name (test_iozone[btrfs-single-16M]):
    its target's build and teardown and its runs (runs each, warm-up included; expected: those of
    the tests that repeat until their claim is decided), for the session's estimate of the time
    left, which starts from the plan's; empty when unknown."""
    if seconds is None:
        return {}
    expected = expected or {}
    kinds = {test: planned_kind(test, guests) for test in tests}
    return {test_name(t): seconds.case(kinds[t], expected.get(test_name(t), runs)) for t in tests
            if kinds[t] in seconds.run}


# --- runs chosen per claim ------------------------------------------------------------------------

def test_name(test_id: str) -> str:
    """pkg/test_iozone.py::test_iozone[btrfs-single-16M] -> test_iozone[btrfs-single-16M]."""
    return test_id.rpartition("::")[2]


def claim_tests(check: Check, tests: list[str]) -> list[str]:
    """The planned tests (their names with ids) whose results a side of the check takes: the
    test function of its metric's workload (iozone.write: test_iozone; dd.write: test_dd_write),
    its fs and layout first in the id, and each option, cache policy and data the selector names
    in the id (a case measured with the default cache policy and data may leave them out); for a
    claim on the study's storage, only the cases paced to its rate (storage=32MBps in the id), for
    any other only the cases on the images' own storage."""
    found = []
    rate = claim_rate(check)
    storage = f"-{storage_part(float(rate.removesuffix(' MB/s')))}-" if rate else ""
    for selector in (check.a, check.b):
        workload = check.metric.split(".")[0]
        functions = {f"test_{check.metric.replace('.', '_')}", f"test_{workload}"}
        for test in map(test_name, tests):
            function, _, ident = test.partition("[")
            ident = "-" + ident.rstrip("]") + "-"
            if function not in functions or not ident.startswith(f"-{selector.get('fs', '')}-"
                                                                  f"{selector.get('layout', '')}-"):
                continue
            if (storage not in ident) if storage else is_paced(f"[{ident}]"):  # its storage's cases only
                continue
            wanted = [f"-{k}={v}-" for k, v in selector.get("options", {}).items()]
            wanted += [f"-{key}={selector[key]}-" for key in ("cache", "data") if key in selector
                       and (f"-{key}=" in ident or selector[key] != {"cache": "drop", "data": "random"}[key])]
            if all(part in ident for part in wanted) and test not in found:
                found.append(test)
    return found


def level_runs(confidence: float) -> int:
    """The fewest runs whose median has a distribution-free interval at confidence (1 - 2/2^n)."""
    return next(n for n in range(1, 64) if 1 - 2 * 0.5 ** n >= confidence)


def expected_runs(precision: float, noise_pct: float, runs: int, max_runs: int) -> int:
    """The measured runs --until-ci-case=precision is expected to stop at, for runs of noise_pct
    coefficient of variation: the median's interval is about 1.2533 z sd / sqrt(n) wide each way
    (z at each look's level, 95 % over the looks), taken at the first look that reaches it."""
    points = looks(runs, max_runs)
    confidence = 1 - 0.05 / len(points)
    z = {0.95: 1.96}.get(confidence) or _z(confidence)
    needed = max((1.2533 * z * noise_pct / precision) ** 2, level_runs(confidence))
    return next((n for n in points if n >= needed), points[-1])


def _z(confidence: float) -> float:
    from scipy.special import ndtri
    return float(ndtri(1 - (1 - confidence) / 2))


@dataclass(frozen=True)
class ClaimRuns:
    precision: dict[str, float]  # test name -> the +-% its median must reach (--until-ci-case)
    lines: tuple[str, ...]  # why, a line per claim
    metrics: dict[str, tuple[str, ...]] = field(default_factory=dict)  # test name -> its claims' metrics


def claim_runs(study: Study, tests: list[str], measured: dict[str, str]) -> ClaimRuns:
    """Each claim's cases repeated until their medians are known to half the claim's room (see
    Check.precision), the tightest claim a case serves deciding its precision; the other cases
    keep the scale's runs, as do those of a claim whose conditions this session lacks (measured:
    the session's conditions; more runs would not make it comparable)."""
    precision: dict[str, float] = {}
    metrics: dict[str, tuple[str, ...]] = {}
    lines = []
    for check in study.checks():
        wanted = check.precision()
        cases = claim_tests(check, tests)
        unlike = differing(check, measured)
        if claim_rate(check) and not cases:
            unlike.append(f"the study's storage {claim_rate(check)}; no case is planned on storage paced to it "
                          "(--storage-rate)")
        if wanted is None or not cases or unlike:
            why = ("not comparable here, whatever the runs: " + "; ".join(unlike) if unlike
                   else "the study gives no size for it" if wanted is None else "none of its cases is planned")
            lines.append(f"runs for {check.id}: the scale's ({why})")
            continue
        for case in cases:
            precision[case] = min(precision.get(case, wanted), wanted)
            metrics[case] = tuple(dict.fromkeys([*metrics.get(case, ()), check.metric]))
        size = ("published " + f"{check.published_pct:+g}%" if check.published_pct is not None
                else "no published change")
        room = (f"within ±{check.tolerance_pct:g}%, {size}" if check.expect == "similar" else size)
        lines.append(f"runs for {check.id}: {room}, so its {len(cases)} tests repeat until each {check.metric} "
                     f"median is known to ±{wanted:g}%")
    return ClaimRuns(precision, tuple(lines), metrics)


def with_claim_runs(args: list[str], found: ClaimRuns, most: int) -> list[str]:
    """The session's arguments with each claim case's --until-ci-case and the scale's --max-runs
    (unless the user gave one), before the store (last)."""
    extra = [f"--until-ci-case={test}@{','.join(found.metrics[test])}={pct:g}%" if found.metrics.get(test)
             else f"--until-ci-case={test}={pct:g}%" for test, pct in found.precision.items()]
    if extra and not option_values(args, "--max-runs"):
        extra.append(f"--max-runs={most}")
    return [*args[:-1], *extra, args[-1]]


def pytest_errors(output: str) -> list[str]:
    """pytest's error lines; for its argument parser's, the line naming the problem rather than
    its usage line (issue 23: --bogus-option showed only the usage)."""
    errors = []
    for line in output.splitlines():
        if line.startswith("ERROR") and not line.startswith("ERROR: usage:"):
            errors.append(line)
        elif ": error: " in line:
            errors.append("ERROR: " + line.split(": error: ", 1)[1])
    return errors


def plan(study: Study, scale: str, args: list[str], cwd: Path) -> Plan:
    """The plan; at a scale with runs_per_claim, its args give each claim's tests the precision
    claim_runs chooses (unless the user asked for --until-ci or --until-ci-case)."""
    chosen = study.scale(scale)
    per_claim = bool(chosen.get("runs_per_claim")) and not any(
        a.startswith(("--until-ci", "--interleave", "--paired")) for a in args)
    # pytest checks every value first (issue 23: --runs=abc was a traceback); a --max-runs of the
    # user's caps the claims' runs, which the session gets below (collected alone, pytest refuses it)
    collecting = snapshot([])
    tests, left_out = collected_tests(without_option(args, "--max-runs") if per_claim else args, cwd)
    load = others_cpu([(collecting, snapshot([]))])
    layouts = option_value(args, "--layout", "single").split(",")
    image_dir = Path(option_value(args, "--image-dir", DEFAULT_IMAGE_DIR))
    existing = existing_ancestor(image_dir)
    measured, warmup = int(option_value(args, "--runs", "10")), int(option_value(args, "--warmup", "1"))
    claims: tuple[str, ...] = ()
    found = ClaimRuns({}, ())
    if per_claim:
        found = claim_runs(study, tests, session_conditions({"devices": "block" if option_values(args, "--devices")
                                                            else "images"}))
        args = with_claim_runs(args, found, int(chosen.get("max_runs", 30)))
        if option_values(args, "--max-runs") and found.precision:
            collected_tests(args, cwd)  # the user's --max-runs, checked with the claims' runs it caps
        claims = found.lines
    sessions = earlier_sessions(study_store(args), study.name, scale, args)
    most, noise = int(option_value(args, "--max-runs", "30")), chosen.get("noise_pct", {})
    expected = {test: warmup + expected_runs(pct, float(noise.get(test_function(test), 10.0)), measured, most)
                for test, pct in found.precision.items()}
    before = {test: runs for test, runs in runs_before(sessions).items() if test in expected}
    expected.update(before)
    if expected:
        how = ("as the earlier sessions ran them" if before else
               f"at the noise measured for this scale, {', '.join(f'{k} {v:g}%' for k, v in noise.items())}")
        claims += (f"{len(expected)} tests repeat until decided ({measured} to {most} runs; expected "
                   f"{sum(expected.values()) - warmup * len(expected)} measured runs in all, {how}), the "
                   f"other {len(tests) - len(expected)} run {measured} times",)
    now = load[0].value if load else None
    minutes, basis, taken = estimate([measured_seconds(sessions, chosen, now), shipped_seconds(chosen, now)], chosen, tests,
                                     measured + warmup, expected, guest_labels(args))
    return Plan(args, len(tests), measured + warmup, minutes, basis,
                max(LAYOUT_DEVICES[layout] for layout in layouts),
                parse_image_size(option_value(args, "--image-size", "4G")), image_dir,
                shutil.disk_usage(existing).free, tuple(placement(study, args)), left_out,
                case_seconds=planned_seconds(taken, tests, measured + warmup, expected, guest_labels(args)),
                claims=claims)


def guest_labels(args: list[str]) -> set[str]:
    """The labels of the guest kernels the session's --kernel names (host+vm: vm)."""
    kernels = BY_FLAG["--kernel"].value(option_value(args, "--kernel", BY_FLAG["--kernel"].default or ""))
    return {k.label for k in kernels if k.label != "host"}


def planned_cases(args: list[str], host: Host) -> tuple[list[CaseSpec], tuple[Kernel, ...]]:
    """The session's cases as pytest will place them, from the study's arguments."""
    value = {flag: BY_FLAG[flag].value(option_value(args, flag, BY_FLAG[flag].default or ""))
             for flag in ("--fs", "--layout", "--kernel")}
    fs_opts = BY_FLAG["--fs-opt"].values(option_values(args, "--fs-opt"))
    return case_specs(value["--fs"], value["--layout"], fs_opts, value["--kernel"], host)[0], value["--kernel"]


def placement(study: Study, args: list[str]) -> list[str]:
    """Where the study's cases run, when some run in a guest kernel or could (host+GUEST)."""
    host = probe()
    specs, kernels = planned_cases(args, host)
    guest = fallback(kernels)
    if guest is None or not guest.vm:
        return []
    openzfs = OPENZFS_USERLAND / "version"
    return placement_lines(study, specs, guest, host, vm_missing(guest), detect_accelerator(),
                           openzfs.read_text().strip() if openzfs.is_file() else None)


def placement_lines(study: Study, specs: list[CaseSpec], guest: Kernel, host: Host, missing: str | None,
                    accel: str, openzfs: str | None) -> list[str]:
    """The plan's lines on host+vm: each case the virtual machine runs and why (what the host
    cannot, or that it is compared with such a case), the machine (its kernel, TCG or KVM, OpenZFS),
    and the study's findings that would set its numbers against the host's (not decided)."""
    moved = [spec for spec in specs if spec.kernel == guest.label]
    if not moved:
        return ["every case runs under the host's kernel, which can run them all (none goes to the virtual machine)"]
    lines = []
    for spec in moved:
        on_host = dataclasses.replace(spec, kernel="host")
        why = driver(spec.fs, host).unavailable(on_host, host)
        lines.append(f"{spec.id} runs in the virtual machine: " + ("; ".join(why) if why else
                     f"the host could run it, but it is compared with the {spec.fs} {spec.layout} cases there"))
    how = ("emulated: QEMU's TCG, no usable KVM here; its numbers compare only with each other" if accel == "tcg"
           else "under KVM")
    zfs = (f"OpenZFS {openzfs} from ./fsbench.sh setup --kernel=vm" if openzfs else
           "no OpenZFS userland (./fsbench.sh setup --kernel=vm extracts it): its ZFS cases will skip saying so")
    lines.append(f"the virtual machine: {guest.path} in QEMU, {how}; {zfs}")
    if missing:
        lines.append(f"the virtual machine cannot boot here ({missing}): its {len(moved)} cases will skip "
                     "with that reason")
    emulated = {spec.id for spec in moved} if accel == "tcg" else set()
    apart = [check.id for check in study.checks() if apart_before(check, specs, emulated)]
    if apart:
        lines.append(f"not decided, as they would set emulated numbers against the host's: {', '.join(apart)}")
    return lines


def check_room(found: Plan) -> None:
    if found.room_needed > found.free_bytes:
        raise UsageError(f"the images of one case may take {found.room_needed / 2**30:.0f} GiB "
                         f"({found.devices} x --image-size={found.image_bytes / 2**30:.0f}G) and {found.image_dir} has "
                         f"{found.free_bytes / 2**30:.0f} GiB free; give --image-dir=DIR on a larger disk or a smaller "
                         "--image-size (and file sizes that fit it)")


def execute_pytest(args: list[str], cwd: Path, case_seconds: dict[str, float] | None = None,
                   study: str | None = None) -> int:
    """pytest on the study's matrix, its output on this terminal; the plan's seconds per case (by
    test name, a claim's cases at their expected runs) go to the session's estimate of the time
    left (PLAN_SECONDS), so that its first estimate is the plan's; the session records the study
    and scale it runs for (STUDY: facts.study_marker), whose later plans take its times."""
    env = {**os.environ, **({PLAN_SECONDS: json.dumps(case_seconds)} if case_seconds else {}),
           **({STUDY: study} if study else {})}
    child = subprocess.Popen([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args], cwd=cwd, env=env)
    interrupted = False
    while True:
        try:
            status = child.wait()
            break
        except KeyboardInterrupt:  # Ctrl-C reached the session too, which tears its targets down and ends:
            interrupted = True  # waited for, never killed (subprocess.run killed it, leaving them mounted)
    if interrupted:
        raise KeyboardInterrupt
    return status

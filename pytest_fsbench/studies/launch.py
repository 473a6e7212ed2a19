"""Running a study: its plan (cases, runs, time, room the images may take, which cases run in a
virtual machine and why), refused when the images would not fit; pytest on the study's matrix;
its report."""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

from ..case import LAYOUT_DEVICES, CaseSpec
from ..errors import UsageError
from ..filesystems import driver
from ..system.host import Host
from ..kernels.kernel import Kernel, fallback
from ..matrix import parse_image_size
from ..measure.progress import PLAN_SECONDS, unwrap
from ..options import APPEND
from ..kernels.probe import probe
from ..settings import BY_FLAG, DEFAULT_IMAGE_DIR, DEFAULT_STORE, OPTIONS, case_specs
from ..kernels.vm import OPENZFS_USERLAND, detect_accelerator, vm_missing
from ..verdicts.sequential import looks
from . import Check, Study, apart_before, claim_rate, differing, session_conditions
from ..sizes import existing_ancestor

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

    def lines(self) -> list[str]:
        return [f"plan: pytest {' '.join(self.args)}",
                f"plan: {self.tests} tests x {self.runs} runs (warm-up included"
                f"{'; a claim' + chr(39) + 's tests until it would be decided' if self.claims else ''}), about "
                f"{self.minutes:.0f} minutes "
                f"({self.basis}); each case's images up to {self.devices} x {self.image_bytes / 2**30:.0f} GiB = "
                f"{self.room_needed / 2**30:.0f} GiB (sparse) in {self.image_dir}, which has "
                f"{self.free_bytes / 2**30:.0f} GiB free",
                *(f"plan: {line}" for line in self.claims),
                *(f"plan: {line}" for line in self.placement),
                *(f"plan: {line.removeprefix('fsbench: ')}" for line in self.left_out)]


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


#: pytest's start, collection and the session's opening and closing, outside every test
SESSION_SECONDS = 10.0


def test_function(test_id: str) -> str:
    """pkg/test_iozone.py::test_iozone[btrfs-single-16M] -> test_iozone."""
    return test_id.rpartition("::")[2].partition("[")[0]


def planned_seconds(scale: dict, tests: list[str], runs: int,
                    expected: dict[str, int] | None = None) -> dict[str, float]:
    """The seconds each planned test is expected to take, by its name (test_iozone[btrfs-single-16M]):
    its target's build and teardown and its runs (runs each, warm-up included; expected: the runs,
    warm-up included, of the tests that repeat until their claim is decided), from the seconds a
    run and a target of its test function took when this scale was measured (the scale's
    run_seconds and target_seconds); a test whose function the scale did not measure is left out."""
    per_run, per_target = scale.get("run_seconds", {}), scale.get("target_seconds", {})
    expected = expected or {}
    return {test_name(test): per_target.get(test_function(test), 0.0)
            + expected.get(test_name(test), runs) * run_seconds(scale, test)
            for test in tests if test_function(test) in per_run}


def estimate(scale: dict, tests: list[str], runs: int, expected: dict[str, int] | None = None) -> tuple[float, str]:
    """The plan's minutes: the session's own seconds and each test's (planned_seconds, the seconds the
    session's estimate of the time left starts from); else, when the scale has no seconds for a
    planned test's function, the scale's measured total, for any plan."""
    seconds = planned_seconds(scale, tests, runs, expected)
    if not seconds or any(test_name(test) not in seconds for test in tests):
        return float(scale.get("minutes", 0)), scale.get("minutes_basis", "estimated")
    return ((SESSION_SECONDS + sum(seconds.values())) / 60,
            f"from the seconds per run and per target measured for this scale: {scale['seconds_basis']}")


def run_seconds(scale: dict, test: str) -> float:
    """The seconds of one run of the test at this scale: its function's, or, for a case on paced
    storage (--storage-rate, storage= in its id), whose runs wait for that storage, the scale's
    paced_run_seconds of its function where it gives them."""
    function = test_function(test)
    paced = scale.get("paced_run_seconds", {})
    if "-storage=" in test and function in paced:
        return float(paced[function])
    return float(scale["run_seconds"][function])


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
    storage = f"-storage={rate.removesuffix(' MB/s')}MBps-" if rate else ""
    for selector in (check.a, check.b):
        workload = check.metric.split(".")[0]
        functions = {f"test_{check.metric.replace('.', '_')}", f"test_{workload}"}
        for test in map(test_name, tests):
            function, _, ident = test.partition("[")
            ident = "-" + ident.rstrip("]") + "-"
            if function not in functions or not ident.startswith(f"-{selector.get('fs', '')}-"
                                                                  f"{selector.get('layout', '')}-"):
                continue
            if (storage not in ident) if storage else "-storage=" in ident:  # its storage's cases only
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
    tests, left_out = collected_tests(without_option(args, "--max-runs") if per_claim else args, cwd)
    layouts = option_value(args, "--layout", "single").split(",")
    image_dir = Path(option_value(args, "--image-dir", DEFAULT_IMAGE_DIR))
    existing = existing_ancestor(image_dir)
    measured, warmup = int(option_value(args, "--runs", "10")), int(option_value(args, "--warmup", "1"))
    claims: tuple[str, ...] = ()
    expected: dict[str, int] = {}
    if per_claim:
        found = claim_runs(study, tests, session_conditions({"devices": "block" if option_values(args, "--devices")
                                                            else "images"}))
        args = with_claim_runs(args, found, int(chosen.get("max_runs", 30)))
        if option_values(args, "--max-runs") and found.precision:
            collected_tests(args, cwd)  # the user's --max-runs, checked with the claims' runs it caps
        claims = found.lines
        most, noise = int(option_value(args, "--max-runs", "30")), chosen.get("noise_pct", {})
        expected = {test: warmup + expected_runs(pct, float(noise.get(test_function(test), 10.0)), measured, most)
                    for test, pct in found.precision.items()}
        if expected:
            claims += (f"{len(expected)} tests repeat until decided ({measured} to {most} runs; expected "
                       f"{sum(expected.values()) - warmup * len(expected)} measured runs in all at the noise "
                       f"measured for this scale, {', '.join(f'{k} {v:g}%' for k, v in noise.items())}), the "
                       f"other {len(tests) - len(expected)} run {measured} times",)
    minutes, basis = estimate(chosen, tests, measured + warmup, expected)
    seconds = planned_seconds(chosen, tests, measured + warmup, expected)  # the plan's, for the session's time left
    return Plan(args, len(tests), measured + warmup, minutes, basis,
                max(LAYOUT_DEVICES[layout] for layout in layouts),
                parse_image_size(option_value(args, "--image-size", "4G")), image_dir,
                shutil.disk_usage(existing).free, tuple(placement(study, args)), left_out,
                case_seconds=seconds, claims=claims)


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
    zfs = (f"OpenZFS {openzfs} from ./fsbench.sh setup" if openzfs else
           "no OpenZFS userland (./fsbench.sh setup extracts it): its ZFS cases will skip saying so")
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


def execute_pytest(args: list[str], cwd: Path, case_seconds: dict[str, float] | None = None) -> int:
    """pytest on the study's matrix, its output on this terminal; the plan's seconds per case (by
    test name, a claim's cases at their expected runs) go to the session's estimate of the time
    left (PLAN_SECONDS), so that its first estimate is the plan's."""
    env = {**os.environ, PLAN_SECONDS: json.dumps(case_seconds)} if case_seconds else None
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

"""Running a study: its plan (cases, runs, time, room the images may take, which cases run in a
virtual machine and why), refused when the images would not fit; pytest on the study's matrix;
its report."""

from __future__ import annotations

import dataclasses
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from ..case import LAYOUT_DEVICES, CaseSpec
from ..errors import UsageError
from ..filesystems import driver
from ..system.host import Host
from ..kernels.kernel import Kernel, fallback
from ..matrix import parse_image_size
from ..options import APPEND
from ..kernels.probe import probe
from ..settings import BY_FLAG, DEFAULT_IMAGE_DIR, DEFAULT_STORE, OPTIONS, case_specs
from ..kernels.vm import OPENZFS_USERLAND, detect_accelerator, vm_missing
from . import Study, apart_before

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

    @property
    def room_needed(self) -> int:
        """What the sparse images of one case may take at most (cases run one after another)."""
        return self.devices * self.image_bytes

    def lines(self) -> list[str]:
        return [f"plan: pytest {' '.join(self.args)}",
                f"plan: {self.tests} tests x {self.runs} runs (warm-up included), about {self.minutes:.0f} minutes "
                f"({self.basis}); each case's images up to {self.devices} x {self.image_bytes / 2**30:.0f} GiB = "
                f"{self.room_needed / 2**30:.0f} GiB (sparse) in {self.image_dir}, which has "
                f"{self.free_bytes / 2**30:.0f} GiB free",
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
    return ([line for line in lines if "::" in line],
            tuple(line for line in lines if line.startswith("fsbench: left out")))


#: pytest's start, collection and the session's opening and closing, outside every test
SESSION_SECONDS = 10.0


def test_function(test_id: str) -> str:
    """pkg/test_iozone.py::test_iozone[btrfs-single-16M] -> test_iozone."""
    return test_id.rpartition("::")[2].partition("[")[0]


def estimate(scale: dict, tests: list[str], runs: int) -> tuple[float, str]:
    """The plan's minutes: from the seconds a run and a target (build and teardown) of each test
    function took when this scale was measured (the scale's run_seconds and target_seconds), for
    the tests and runs planned now; else the scale's measured total, for any plan."""
    per_run, per_target = scale.get("run_seconds", {}), scale.get("target_seconds", {})
    functions = [test_function(test) for test in tests]
    if not per_run or any(f not in per_run for f in functions):
        return float(scale.get("minutes", 0)), scale.get("minutes_basis", "estimated")
    seconds = SESSION_SECONDS + sum(per_target.get(f, 0.0) + runs * per_run[f] for f in functions)
    return seconds / 60, f"from the seconds per run and per target measured for this scale: {scale['seconds_basis']}"


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
    tests, left_out = collected_tests(args, cwd)  # pytest checks every value first (issue 23: --runs=abc was a traceback)
    layouts = option_value(args, "--layout", "single").split(",")
    image_dir = Path(option_value(args, "--image-dir", DEFAULT_IMAGE_DIR))
    existing = next(p for p in (image_dir, *image_dir.parents) if p.exists())
    runs = int(option_value(args, "--runs", "10")) + int(option_value(args, "--warmup", "1"))
    chosen = study.scale(scale)
    minutes, basis = estimate(chosen, tests, runs)
    return Plan(args, len(tests), runs, minutes, basis,
                max(LAYOUT_DEVICES[layout] for layout in layouts),
                parse_image_size(option_value(args, "--image-size", "4G")), image_dir,
                shutil.disk_usage(existing).free, tuple(placement(study, args)), left_out)


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


def execute_pytest(args: list[str], cwd: Path) -> int:
    """pytest on the study's matrix, its output on this terminal."""
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args], cwd=cwd).returncode

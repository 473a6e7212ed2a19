"""Running a study: its plan (cases, runs, time, room the images may take), refused when the
images would not fit; pytest on the study's matrix; its report."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from ..case import LAYOUT_DEVICES
from ..errors import UsageError
from ..matrix import parse_image_size
from ..options import APPEND
from ..settings import DEFAULT_IMAGE_DIR, DEFAULT_STORE, OPTIONS
from . import Study

#: the options a study's user adds to rather than replaces
REPEATABLE = {option.flag for option in OPTIONS if option.kind == APPEND}


def option_value(args: list[str], flag: str, default: str) -> str:
    """The value of `--flag=value` in args (the last one given), else default."""
    found = [a.split("=", 1)[1] for a in args if a.startswith(flag + "=")]
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

    @property
    def room_needed(self) -> int:
        """What the sparse images of one case may take at most (cases run one after another)."""
        return self.devices * self.image_bytes

    def lines(self) -> list[str]:
        return [f"plan: pytest {' '.join(self.args)}",
                f"plan: {self.tests} tests x {self.runs} runs (warm-up included), about {self.minutes:.0f} minutes "
                f"({self.basis}); each case's images up to {self.devices} x {self.image_bytes / 2**30:.0f} GiB = "
                f"{self.room_needed / 2**30:.0f} GiB (sparse) in {self.image_dir}, which has "
                f"{self.free_bytes / 2**30:.0f} GiB free"]


def study_args(study: Study, scale: str, extra: list[str], cwd: Path) -> list[str]:
    """The pytest arguments: the scale's, then the user's, whose option of one value replaces the
    scale's (pytest refuses one given twice); the store made absolute, so the session is found
    wherever pytest settles its rootdir ($FSBENCH_STORE when no --store is given)."""
    given = {arg.partition("=")[0] for arg in extra if arg.startswith("--")} - REPEATABLE
    scale_args = [arg for arg in study.scale(scale)["args"] if not (arg.startswith("--") and "=" in arg
                                                                    and arg.partition("=")[0] in given)]
    args = [*scale_args, *extra]
    if not any(a.startswith("--store=") for a in args):
        store = os.environ.get("FSBENCH_STORE") or DEFAULT_STORE
        args.append(f"--store={store if '://' in store else cwd / store}")
    return args


def collected_tests(args: list[str], cwd: Path) -> int:
    done = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--collect-only", "-q", *args],
                          cwd=cwd, capture_output=True, text=True, timeout=600)
    if done.returncode not in (0, 5):
        errors = pytest_errors(done.stderr + done.stdout)
        raise UsageError("; ".join(errors) or (done.stderr + done.stdout).strip()[-500:])
    return sum(1 for line in done.stdout.splitlines() if "::" in line)


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
    tests = collected_tests(args, cwd)  # pytest checks every value first (issue 23: --runs=abc was a traceback)
    layouts = option_value(args, "--layout", "single").split(",")
    image_dir = Path(option_value(args, "--image-dir", DEFAULT_IMAGE_DIR))
    existing = next(p for p in (image_dir, *image_dir.parents) if p.exists())
    runs = int(option_value(args, "--runs", "10")) + int(option_value(args, "--warmup", "1"))
    chosen = study.scale(scale)
    return Plan(args, tests, runs, float(chosen.get("minutes", 0)),
                chosen.get("minutes_basis", "estimated"),
                max(LAYOUT_DEVICES[layout] for layout in layouts),
                parse_image_size(option_value(args, "--image-size", "4G")), image_dir,
                shutil.disk_usage(existing).free)


def check_room(found: Plan) -> None:
    if found.room_needed > found.free_bytes:
        raise UsageError(f"the images of one case may take {found.room_needed / 2**30:.0f} GiB "
                         f"({found.devices} x --image-size={found.image_bytes / 2**30:.0f}G) and {found.image_dir} has "
                         f"{found.free_bytes / 2**30:.0f} GiB free; give --image-dir=DIR on a larger disk or a smaller "
                         "--image-size (and file sizes that fit it)")


def run_pytest(args: list[str], cwd: Path) -> int:
    """pytest on the study's matrix, its output on this terminal."""
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args], cwd=cwd).returncode

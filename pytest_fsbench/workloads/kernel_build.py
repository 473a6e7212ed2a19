"""A Linux kernel build (S4's `make defconfig; time make`), timed by GNU time.

Unmeasured preparation: remove any previous tree, extract the source tarball into
`<workdir>/linux` and run `make -C <src> <config>`. Measured: `make -C <src> -j<jobs> [target]`
wrapped in `/usr/bin/time -f <TIME_FORMAT>`, whose single marked line on stderr carries wall,
user and system seconds and make's exit status. fsbench only hands `parse` the output text,
so the marker (`fsbench-time:`) is what tells the timing apart from the build log.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

from ..errors import ParseError, ToolMissing
from ..metrics import Direction, Metric, MetricSpec
from .params import ONE, Param, whole

#: where Debian's linux-source package puts its tarballs
SOURCE_GLOB_DIR = Path("/usr/src")
TIME_BINARY = "/usr/bin/time"
#: GNU time format: one line, a marker no kernel build prints, then key=value pairs
TIME_FORMAT = "fsbench-time: elapsed=%e user=%U sys=%S exit=%x"
SOURCE_DIR = "linux"
METRICS = (MetricSpec(r"kernel_build\.(seconds|user_seconds|sys_seconds)", "s",
                      "kernel_build.seconds|user_seconds|sys_seconds"),)

MISSING_REASON = (
    "no kernel source tarball: pass one, or install Debian's linux-source package "
    "(apt-get install linux-source bc bison flex libelf-dev libssl-dev time)"
)

_TIME_RE = re.compile(
    r"^fsbench-time: elapsed=(?P<elapsed>[\d.]+) user=(?P<user>[\d.]+) sys=(?P<sys>[\d.]+) "
    r"exit=(?P<exit>-?\d+)\s*$",
    re.M,
)
#: make's failure line, a compiler/linker error, or GNU time's notes on a failed command
_ERROR_RE = re.compile(
    r"^make(?:\[\d+\])?: \*\*\* .*$"
    r"|^.*: (?:fatal )?error: .*$"
    r"|^Command (?:exited with non-zero status|terminated by signal).*$",
    re.M,
)
#: Kconfig's non-interactive configuration targets (`make help`); an arch's NAME_defconfig and a
#: fragment NAME.config (e.g. kvm_guest.config) are accepted too
CONFIG_TARGETS = ("defconfig", "tinyconfig", "allnoconfig", "allyesconfig", "allmodconfig", "alldefconfig",
                  "randconfig", "olddefconfig", "localmodconfig", "localyesconfig")
_CONFIG_RE = re.compile(r"[a-z0-9_]+_defconfig|[a-z0-9_-]+\.config")
_TARGET_RE = re.compile(r"[A-Za-z0-9_./-]+")


def check_config(config: str) -> None:
    """ValueError unless make knows config as a non-interactive configuration target."""
    if config not in CONFIG_TARGETS and not _CONFIG_RE.fullmatch(config):
        raise ValueError(f"{config!r} is not a kernel configuration target make knows; use one of "
                         f"{', '.join(CONFIG_TARGETS)}, an ARCH_defconfig or a NAME.config fragment")


def _version_key(path: Path) -> tuple[int, ...]:
    """(6, 1) for linux-source-6.1.tar.xz; unparsable versions sort first."""
    m = re.match(r"linux-source-([\d.]+)\.tar\.xz$", path.name)
    return tuple(int(x) for x in m.group(1).split(".") if x) if m else ()


def newest_source(candidates: Iterable[Path]) -> Path | None:
    """The linux-source-*.tar.xz with the highest version among `candidates`."""
    found = [p for p in candidates if _version_key(p)]
    return max(found, key=_version_key) if found else None


def find_kernel_source(directory: Path = SOURCE_GLOB_DIR) -> Path | None:
    """The newest linux-source-*.tar.xz in `directory` (Debian's linux-source), or None."""
    return newest_source(directory.glob("linux-source-*.tar.xz"))


def default_jobs() -> int:
    """Like nproc: the CPUs this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def availability_errors(source: Path | None) -> list[str]:
    """Human reasons this machine cannot run the build (empty when it can)."""
    errors = []
    if source is None or not source.is_file():
        errors.append(MISSING_REASON if source is None else f"kernel source tarball {source} not found")
    if not os.access(TIME_BINARY, os.X_OK):
        errors.append(f"{TIME_BINARY} (GNU time) not found: install Debian's time package")
    return errors


#: what a kernel build runs besides the kernel's own scripts
TOOLS = {"make": "make", "gcc": "gcc", "flex": "flex", "bison": "bison", "bc": "bc"}


def unavailable() -> list[str]:
    """Why kernel-build cases cannot run here."""
    return availability_errors(find_kernel_source())


@dataclass(frozen=True)
class KernelBuild:
    """Build a kernel from `source` with `make <config>` then a timed `make -j<jobs> [target]`.

    `source` None means the newest /usr/src/linux-source-*.tar.xz (None if there is none;
    `prepare_argvs` then raises ToolMissing). `target` None builds make's default goal.
    """

    source: Path | None = field(default_factory=find_kernel_source)
    config: str = "defconfig"
    jobs: int = field(default_factory=default_jobs)
    target: str | None = None
    timeout: float = 3600.0

    name: ClassVar[str] = "kernel_build"

    def __post_init__(self) -> None:
        check_config(self.config)
        if isinstance(self.jobs, bool) or not isinstance(self.jobs, int) or self.jobs < 1:
            raise ValueError(f"kernel build jobs must be a whole number >= 1, not {self.jobs!r}")
        if self.target is not None and not _TARGET_RE.fullmatch(self.target):
            raise ValueError(f"kernel build target {self.target!r} is not a make target name")
        if not self.timeout > 0:
            raise ValueError(f"kernel build timeout must be > 0, not {self.timeout!r}")

    def files(self) -> dict[str, str]:
        """No files: the build needs none."""
        return {}

    def src(self, workdir: Path) -> Path:
        """Where the source tree is extracted."""
        return workdir / SOURCE_DIR

    def prepare_argvs(self, workdir: Path, scratch: Path) -> list[list[str]]:
        """Fresh tree each time (a leftover tree would make the build incremental), then config."""
        if self.source is None:
            raise ToolMissing(MISSING_REASON)
        src = str(self.src(workdir))
        return [
            ["rm", "-rf", "--one-file-system", src],
            ["mkdir", "-p", src],
            ["tar", "-xf", str(self.source), "-C", src, "--strip-components=1"],
            ["make", "-C", src, self.config],
        ]

    def argv(self, workdir: Path, scratch: Path) -> list[str]:
        """`/usr/bin/time -f <TIME_FORMAT> make -C <src> -j<jobs> [target]`."""
        cmd = [TIME_BINARY, "-f", TIME_FORMAT, "make", "-C", str(self.src(workdir)), f"-j{self.jobs}"]
        return cmd + ([self.target] if self.target else [])

    def parse(self, output: str) -> list[Metric]:
        """Wall, user and system seconds; ParseError on a failed or untimed build."""
        return parse_output(output)

    def params(self) -> dict[str, str]:
        """source tarball name, config, jobs and target."""
        return {
            "source": self.source.name if self.source else "",
            "config": self.config,
            "jobs": str(self.jobs),
            "target": self.target or "",
        }


def parse_output(output: str) -> list[Metric]:
    """Metrics from the timed build's stdout+stderr."""
    bad = _ERROR_RE.search(output)
    if bad:
        raise ParseError("kernel_build", f"build failed: {bad.group(0).strip()}", output)
    times = _TIME_RE.findall(output)
    if not times:
        problem = "no 'fsbench-time:' line from /usr/bin/time (killed or truncated?)"
        raise ParseError("kernel_build", problem, output)
    if len(times) > 1:
        raise ParseError("kernel_build", f"{len(times)} 'fsbench-time:' lines, expected one", output)
    elapsed, user, sys_, status = times[0]
    if int(status) != 0:
        raise ParseError("kernel_build", f"make exited with status {status}", output)
    return [
        Metric("kernel_build.seconds", float(elapsed), "s", Direction.LOWER),
        Metric("kernel_build.user_seconds", float(user), "s", Direction.LOWER),
        Metric("kernel_build.sys_seconds", float(sys_), "s", Direction.LOWER),
    ]


#: the most make jobs a build is given: more only queue (found by the sweep: -j100000000 ran for minutes)
MOST_JOBS = 1024


def jobs(value: str) -> None:
    whole(value)
    if int(value) > MOST_JOBS:
        raise ValueError(f"{value!r} jobs only queue behind each other (this machine has {os.cpu_count()} CPUs); give at most {MOST_JOBS} (0: one "
                         "per CPU)")


PARAMS = (
    Param("kernel-config", "tinyconfig", "kernel configs to build (defconfig, tinyconfig, ...)", check_config),
    Param("kernel-jobs", "0", "make -j for the kernel build (0: number of CPUs)", jobs, kind=ONE),
)

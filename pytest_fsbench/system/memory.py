"""--memory: a memory control group whose limit counts the page cache its processes fill, so a
workload given a file of twice the limit reads it from the storage, as the studies that limited
RAM did (one booted with 2 GB and wrote 4 GB files). cgroup v2's memory.max where the memory
controller is on the unified hierarchy, else cgroup v1's memory.limit_in_bytes. A command joins
the group by a shell that writes its own pid into cgroup.procs and then becomes the command."""

from __future__ import annotations

import contextlib
import errno
from dataclasses import dataclass
from pathlib import Path

from ..errors import UsageError
from .commands import Completed, Executor

CGROUPS = Path("/sys/fs/cgroup")
NAME_PREFIX = "fsbench-"
SMALLEST = 64 << 20  # below this a tool's own code and buffers no longer fit


@dataclass(frozen=True)
class Hierarchy:
    """Where memory control groups are made, and the file that sets a group's limit."""

    root: Path
    limit_file: str
    version: str  # "v2" or "v1"


def hierarchy(cgroups: Path = CGROUPS) -> Hierarchy | None:
    """The memory controller's hierarchy here, or None when neither version offers it."""
    controllers = cgroups / "cgroup.controllers"
    if controllers.is_file() and "memory" in controllers.read_text().split():
        return Hierarchy(cgroups, "memory.max", "v2")
    if (cgroups / "memory" / "memory.limit_in_bytes").is_file():
        return Hierarchy(cgroups / "memory", "memory.limit_in_bytes", "v1")
    return None


def join_argv(procs: Path, argv: list[str]) -> list[str]:
    """argv run as a member of the group whose cgroup.procs is procs."""
    return ["sh", "-c", 'echo $$ > "$0" && exec "$@"', str(procs), *argv]


class MemoryLimit:
    """One session's memory control group (made on first use, removed by close)."""

    def __init__(self, limit: int, token: str, cgroups: Path = CGROUPS) -> None:
        self.limit = limit
        self.token = token
        self.cgroups = cgroups
        self.group: Path | None = None
        self.version: str | None = None

    def _made(self) -> Path:
        if self.group is not None:
            return self.group
        found = hierarchy(self.cgroups)
        if found is None:
            raise UsageError(f"--memory: this kernel offers no memory control group (neither cgroup v2's memory "
                             f"controller nor v1's under {self.cgroups}); leave --memory out")
        if found.version == "v2":
            enable_memory_controller(found.root)
        group = found.root / f"{NAME_PREFIX}{self.token}-memory"
        group.mkdir(exist_ok=True)
        (group / found.limit_file).write_text(f"{self.limit}\n")
        self.group, self.version = group, found.version
        return group

    def executor(self, execute: Executor) -> Executor:
        """execute, each command run inside the group."""
        def limited(argv: list[str], **kwargs) -> Completed:
            return execute(join_argv(self._made() / "cgroup.procs", argv), **kwargs)

        return limited

    def record(self) -> dict[str, object]:
        """For the case's manifest: the limit, and how it was set."""
        return {"bytes": self.limit, "cgroup": self.version or "not made yet"}

    def close(self) -> None:
        if self.group is not None:
            remove_group(self.group)
            self.group = None


def enable_memory_controller(root: Path) -> None:
    """cgroup v2 hands a controller to the groups below root only when root's subtree_control
    names it."""
    control = root / "cgroup.subtree_control"
    if "memory" not in control.read_text().split():
        control.write_text("+memory\n")


def remove_group(group: Path) -> None:
    """Remove a group whose processes have ended; one still busy is left for fsbench cleanup."""
    with contextlib.suppress(FileNotFoundError):
        try:
            group.rmdir()
        except OSError as exc:
            if exc.errno != errno.EBUSY:
                raise


def groups(cgroups: Path = CGROUPS) -> list[Path]:
    """Every fsbench session's memory group here (fsbench cleanup keeps those of live sessions)."""
    found = hierarchy(cgroups)
    if found is None or not found.root.is_dir():
        return []
    return sorted(path for path in found.root.iterdir() if path.is_dir() and path.name.startswith(NAME_PREFIX))

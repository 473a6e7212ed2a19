"""The workload contract.

A workload is pure: `argv(workdir, scratch)` builds the command that measures, `parse(output)`
turns the tool's output into metrics (raising ParseError when the output is not what the tool
prints on success). `prepare_argvs(workdir, scratch)` lists unmeasured set-up commands (e.g.
writing the file a read test reads); `files()` names text files (workload definitions, job files)
that fsbench writes into `scratch`, a private directory off the target, before anything runs.
fsbench executes all of it; nothing here touches the system.
"""

from __future__ import annotations

from pathlib import Path
from typing import Protocol, runtime_checkable

from ..metrics import Metric


@runtime_checkable
class Workload(Protocol):
    #: short tool name, prefix of its metric names ("dd" -> "dd.write")
    name: str
    #: seconds after which the measured command is killed and the test fails
    timeout: float

    def files(self) -> dict[str, str]:
        """File name -> text, written into scratch before prepare/argv run."""
        ...

    def prepare_argvs(self, workdir: Path, scratch: Path) -> list[list[str]]:
        """Unmeasured commands run before the cache policy is applied."""
        ...

    def argv(self, workdir: Path, scratch: Path) -> list[str]:
        """The measured command; its data files live under workdir (on the target)."""
        ...

    def parse(self, output: str) -> list[Metric]:
        """Metrics from the measured command's stdout+stderr; ParseError if unrecognised."""
        ...

    def params(self) -> dict[str, str]:
        """The parameters that identify this workload's configuration (recorded with results)."""
        ...

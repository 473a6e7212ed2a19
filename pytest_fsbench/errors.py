"""One exception family for everything fsbench raises on purpose."""

from __future__ import annotations


class FsbenchError(Exception):
    """Base class of fsbench's own errors."""


class UsageError(FsbenchError):
    """A bad option value; raised before anything is created."""


class CommandError(FsbenchError):
    """An external command failed, timed out or could not be started."""

    def __init__(self, argv: list[str], returncode: int | None, output: str, reason: str = ""):
        self.argv = list(argv)
        self.returncode = returncode
        self.output = output
        self.reason = reason
        status = reason or f"exit status {returncode}"
        tail = "\n".join(output.strip().splitlines()[-8:])
        super().__init__(f"{' '.join(argv)}: {status}" + (f"\n{tail}" if tail else ""))

    def __reduce__(self):
        """Rebuilt from its parts (a guest's agent sends its errors to the host pickled)."""
        return (type(self), (self.argv, self.returncode, self.output, self.reason))


class ParseError(FsbenchError):
    """A tool's output did not contain what its parser expects."""

    def __init__(self, tool: str, problem: str, output: str):
        self.tool = tool
        self.output = output
        tail = "\n".join(output.strip().splitlines()[-8:])
        super().__init__(f"cannot parse {tool} output: {problem}" + (f"\n{tail}" if tail else ""))


class ToolMissing(FsbenchError):
    """A program or kernel feature a case needs is not on this machine."""


class UnsafeDevice(FsbenchError):
    """A block device failed a safety check; nothing was written to it."""

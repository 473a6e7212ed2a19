"""A workload's parameters as its benchmark cases take them: `--NAME` on the command line (or
`fsbench_NAME` in the ini file) and a fixture of the same name (dashes -> underscores). Each
workload module declares its own PARAMS; the cases plugin (pytest_fsbench.benchmark_params) turns them into
options, checks, parametrisation and the README's tables (pytest_fsbench.docs)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ..sizes import is_ram_rule, parse_size, resolve_size

SWEEP, LIST, ONE = "comma list, one case per value", "comma list", "one value"


@dataclass(frozen=True)
class Param:
    """A SWEEP parametrises the cases; a LIST or ONE value is handed to the case as it is.
    holds(value, ram_bytes): the bytes of the file a value makes the case write on its target, so
    a value no case's devices could hold is refused before anything is built; staged: fsbench writes
    a data set of that size into the image directory first (dd's source), once per session."""

    name: str
    default: str
    help: str
    check: Callable[[str], None]
    kind: str = SWEEP
    holds: Callable[[str, int], int] | None = None
    #: fsbench stages a file of holds' size beside the images (the session's data set, unless zeros)
    staged: bool = False

    @property
    def fixture(self) -> str:
        return self.name.replace("-", "_")

    @property
    def ini(self) -> str:
        """The pytest ini setting that gives the default when the command line does not."""
        return "fsbench_" + self.fixture


def size(value: str) -> None:
    parse_size(value)


def size_or_ram(value: str) -> None:
    if not is_ram_rule(value):
        parse_size(value)


def file_of(value: str, ram_bytes: int) -> int:
    """A file of this size (or N x RAM)."""
    return parse_size(resolve_size(value, ram_bytes))


def file_of_mib(value: str, ram_bytes: int) -> int:
    """A file of this many MiB."""
    return int(value) << 20


def positive(value: str) -> None:
    if not value.isdigit() or int(value) <= 0:
        raise ValueError(f"{value!r} is not a positive whole number")


def whole(value: str) -> None:
    if not value.isdigit():
        raise ValueError(f"{value!r} is not a whole number")


def choice(*allowed: str) -> Callable[[str], None]:
    def check(value: str) -> None:
        if value not in allowed:
            raise ValueError(f"{value!r} is not one of {', '.join(allowed)}")

    return check

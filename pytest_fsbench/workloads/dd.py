"""dd: sequential write (conv=fdatasync, so the flush is timed) and sequential read.

Throughput is computed from the byte count and seconds dd itself prints, in MB/s (10^6 bytes/s),
not taken from dd's rounded, unit-varying rate.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from ..errors import ParseError
from ..metrics import Direction, Metric, mb_per_s
from ..sizes import format_size, parse_size

_COPIED = re.compile(r"^(\d+) bytes? (?:\([^)]*\) )?copied, ([0-9.]+(?:e[+-]?\d+)?) s, ", re.MULTILINE)
_RECORDS_OUT = re.compile(r"^(\d+)\+(\d+) records out$", re.MULTILINE)
DATA_FILE = "dd.dat"


@dataclass(frozen=True)
class DdResult:
    bytes: int
    seconds: float


def parse_dd(output: str) -> DdResult:
    """The last 'N bytes ... copied, S s, R' line of GNU dd; ParseError if there is none."""
    matches = _COPIED.findall(output)
    if not matches or not _RECORDS_OUT.search(output):
        raise ParseError("dd", "no 'records out' and 'bytes copied' lines", output)
    nbytes, seconds = int(matches[-1][0]), float(matches[-1][1])
    if seconds <= 0:
        raise ParseError("dd", f"elapsed time {seconds} s is not positive", output)
    return DdResult(nbytes, seconds)


@dataclass(frozen=True)
class _Dd:
    block_size: str = "1M"
    total_size: str = "256M"
    timeout: float = 900.0
    name: str = "dd"

    def __post_init__(self) -> None:
        bs, total = parse_size(self.block_size), parse_size(self.total_size)
        if total % bs:
            raise ValueError(f"dd total size {self.total_size} is not a multiple of block size {self.block_size}")

    @property
    def count(self) -> int:
        return parse_size(self.total_size) // parse_size(self.block_size)

    def _write_argv(self, workdir: Path, flush: str) -> list[str]:
        return ["dd", "if=/dev/zero", f"of={workdir / DATA_FILE}", f"bs={parse_size(self.block_size)}",
                f"count={self.count}", f"conv={flush}"]

    def files(self) -> dict[str, str]:
        return {}

    def params(self) -> dict[str, str]:
        return {"bs": format_size(parse_size(self.block_size)),
                "size": format_size(parse_size(self.total_size)), "data": "zeros"}

    def _metric(self, op: str, output: str) -> list[Metric]:
        result = parse_dd(output)
        expected = parse_size(self.total_size)
        if result.bytes != expected:
            raise ParseError("dd", f"copied {result.bytes} bytes, expected {expected}", output)
        return [Metric(f"dd.{op}", mb_per_s(result.bytes, result.seconds), "MB/s", Direction.HIGHER,
                       self.params())]


@dataclass(frozen=True)
class DdWrite(_Dd):
    """Write total_size of zeros in block_size blocks; fdatasync before dd reports its time."""

    def prepare_argvs(self, workdir: Path, scratch: Path) -> list[list[str]]:
        return [["rm", "-f", str(workdir / DATA_FILE)]]

    def argv(self, workdir: Path, scratch: Path) -> list[str]:
        return self._write_argv(workdir, "fdatasync")

    def parse(self, output: str) -> list[Metric]:
        return self._metric("write", output)


@dataclass(frozen=True)
class DdRead(_Dd):
    """Read back a file written (unmeasured) beforehand; the cache policy runs in between."""

    def prepare_argvs(self, workdir: Path, scratch: Path) -> list[list[str]]:
        return [self._write_argv(workdir, "fsync")]

    def argv(self, workdir: Path, scratch: Path) -> list[str]:
        return ["dd", f"if={workdir / DATA_FILE}", "of=/dev/null", f"bs={parse_size(self.block_size)}"]

    def parse(self, output: str) -> list[Metric]:
        return self._metric("read", output)

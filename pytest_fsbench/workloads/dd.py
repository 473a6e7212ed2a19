"""dd: sequential write (conv=fdatasync, so the flush is timed) and sequential read.

The data written is the case's data spec: zeros straight from /dev/zero, otherwise a file of the
chosen compressibility, generated once per session into the session's scratch directory on disk
and held mapped in memory by fsbench (the cache policy does not drop mapped pages), so the
measured dd reads it from memory. The read test writes its file once per target and
re-reads it after the cache policy on every run. Throughput is computed from the
byte count and seconds dd itself prints, in MB/s (10^6 bytes/s), not taken from dd's rounded,
unit-varying rate.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from pathlib import Path

from .datagen import DataSet, parse_data
from ..errors import ParseError
from ..metrics import Direction, Metric, MetricSpec, mb_per_s
from ..sizes import MARGIN, format_size, parse_size
from .params import ONE, Param, file_of, size

_COPIED = re.compile(r"^(\d+) bytes? (?:\([^)]*\) )?copied, ([0-9.]+(?:e[+-]?\d+)?) s, ", re.MULTILINE)
_RECORDS_OUT = re.compile(r"^(\d+)\+(\d+) records out$", re.MULTILINE)
DATA_FILE = "dd.dat"  # what the write test writes
READ_FILE = "dd-read.dat"  # what the read test re-reads: its own, so a write on the same target leaves it
SOURCE_FILE = "dd-source.dat"
METRICS = (MetricSpec(r"dd\.(write|read)", "MB/s", "dd.write|read"),)


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
    data: str = "random"
    direct: bool = False
    timeout: float = 900.0
    name: str = "dd"

    def __post_init__(self) -> None:
        bs, total = parse_size(self.block_size), parse_size(self.total_size)
        if total % bs:
            raise ValueError(f"dd total size {self.total_size} is not a multiple of block size {self.block_size}")
        parse_data(self.data)

    @property
    def count(self) -> int:
        return parse_size(self.total_size) // parse_size(self.block_size)

    def space_needed(self, copy_on_write: bool) -> int:
        """Bytes the target needs: the one file dd writes (removed before each write run)."""
        return parse_size(self.total_size) + MARGIN

    def direct_io(self) -> _Dd:
        return dataclasses.replace(self, direct=True)

    def _source(self, scratch: Path) -> str:
        return "/dev/zero" if parse_data(self.data).zeros else str(scratch / SOURCE_FILE)

    def datasets(self) -> dict[str, DataSet]:
        """The source file, unless zeros (read from /dev/zero)."""
        if parse_data(self.data).zeros:
            return {}
        return {SOURCE_FILE: DataSet(parse_size(self.total_size), self.data)}

    def _write_argv(self, destination: Path, scratch: Path, flush: str, direct: bool) -> list[str]:
        argv = ["dd", f"if={self._source(scratch)}", f"of={destination}",
                f"bs={parse_size(self.block_size)}", f"count={self.count}", f"conv={flush}"]
        return argv + (["oflag=direct"] if direct else [])

    def files(self) -> dict[str, str]:
        return {}

    def params(self) -> dict[str, str]:
        params = {"bs": format_size(parse_size(self.block_size)),
                  "size": format_size(parse_size(self.total_size)), "data": self.data}
        return params | ({"direct": "1"} if self.direct else {})

    def _metric(self, op: str, output: str) -> list[Metric]:
        result = parse_dd(output)
        expected = parse_size(self.total_size)
        if result.bytes != expected:
            raise ParseError("dd", f"copied {result.bytes} bytes, expected {expected}", output)
        return [Metric(f"dd.{op}", mb_per_s(result.bytes, result.seconds), "MB/s", Direction.HIGHER,
                       self.params(), io=(op, result.bytes))]


@dataclass(frozen=True)
class DdWrite(_Dd):
    """Write total_size in block_size blocks; fdatasync before dd reports its time."""

    def prepare_argvs(self, workdir: Path, scratch: Path) -> list[list[str]]:
        return [["rm", "-f", str(workdir / DATA_FILE)]]

    def argv(self, workdir: Path, scratch: Path) -> list[str]:
        return self._write_argv(workdir / DATA_FILE, scratch, "fdatasync", self.direct)

    def parse(self, output: str) -> list[Metric]:
        return self._metric("write", output)


@dataclass(frozen=True)
class DdRead(_Dd):
    """Read back a file written (unmeasured) once per target; the cache policy runs before each read."""

    def prepare_argvs(self, workdir: Path, scratch: Path) -> list[list[str]]:
        return []

    def prepare_once_argvs(self, workdir: Path, scratch: Path) -> list[list[str]]:
        return [self._write_argv(workdir / READ_FILE, scratch, "fsync", False)]

    def argv(self, workdir: Path, scratch: Path) -> list[str]:
        argv = ["dd", f"if={workdir / READ_FILE}", "of=/dev/null", f"bs={parse_size(self.block_size)}"]
        return argv + (["iflag=direct"] if self.direct else [])

    def parse(self, output: str) -> list[Metric]:
        return self._metric("read", output)


#: programs the cases need (program -> Debian package); checked before a target is built
TOOLS = {"dd": "coreutils"}
PARAMS = (
    Param("dd-bs", "1M", "dd block sizes", size),
    Param("dd-size", "256M", "bytes dd writes and reads per case", size, kind=ONE, holds=file_of,
          staged=True),
)

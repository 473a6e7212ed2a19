"""bonnie++: block I/O, seeks and small-file create/stat/delete, CSV output.

The command follows study S2 (`bonnie++ -d /tank/ -u root -n 128 -x 1 -q -z 0 -f`) with an
explicit file size (-s) and RAM size (-r, half the file size unless given) so that sizes
smaller than twice the machine's RAM are accepted. With -q the CSV line is the only thing on
stdout.

CSV layout (format_version 1.98, written by bonnie++ 1.98 to 2.00a), 50 columns, 0-based:

    0 format_version  1 bonnie_version  2 name  3 concurrency  4 seed
    5 file_size  6 io_chunk_size  7 seeks  8 seek_proc_count
    9/10 putc, cpu  11/12 put_block, cpu  13/14 rewrite, cpu  15/16 getc, cpu
    17/18 get_block, cpu  19/20 seeks, cpu
    21 num_files  22 max_size  23 min_size  24 num_dirs  25 file_chunk_size
    26/27 seq_create  28/29 seq_stat  30/31 seq_del  32/33 ran_create  34/35 ran_stat
    36/37 ran_del (each value, cpu)
    38-43 latency of putc, put_block, rewrite, getc, get_block, seeks
    44-49 latency of seq_create, seq_stat, seq_del, ran_create, ran_stat, ran_del

Throughput columns are K/sec (KiB/s), seeks and file operations are per second, CPU is %,
latencies carry their unit ("us", "ms" or "s"). An empty column is a test that did not run.

"+++++" (and "+++" for its CPU) means the test took under 500 ms, too fast for bonnie++ to
measure: that metric is skipped, never turned into a number. If every test that ran was too
fast, parse() raises ParseError (there is nothing to report). A latency column is bonnie++'s
maximum single-operation latency; it is printed (and reported) even for "+++++" tests.
"""

from __future__ import annotations

import dataclasses

import re
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from ..errors import ParseError
from ..metrics import Direction, Metric, MetricSpec
from ..sizes import MARGIN
from .params import ONE, Param, file_of_mib, positive

CSV_VERSION = "1.98"
CSV_COLUMNS = 50
TOO_FAST = "+++++"
TOO_FAST_CPU = "+++"

#: (value column, metric suffix, kind) for the throughput/rate columns; kind "kib" is
#: K/sec converted to MB/s, "ops" is operations per second
IO_TESTS: tuple[tuple[int, str, str], ...] = (
    (9, "char_write", "kib"),
    (11, "block_write", "kib"),
    (13, "block_rewrite", "kib"),
    (15, "char_read", "kib"),
    (17, "block_read", "kib"),
    (19, "seeks", "ops"),
)
#: sequential tests -> the kind of I/O the cache check sets against the disks, in bonnie++'s order
IO_KIND = {"char_write": "write", "block_write": "write", "block_rewrite": "write", "char_read": "read",
           "block_read": "read"}
FILE_TESTS: tuple[tuple[int, str, str], ...] = (
    (26, "seq_create", "ops"),
    (28, "seq_stat", "ops"),
    (30, "seq_delete", "ops"),
    (32, "rand_create", "ops"),
    (34, "rand_stat", "ops"),
    (36, "rand_delete", "ops"),
)
#: latency column for each test, in the same order as IO_TESTS + FILE_TESTS
LATENCY_COLUMNS: tuple[int, ...] = tuple(range(38, 50))
_KIB = "|".join(t for _, t, kind in IO_TESTS if kind == "kib")
_OPS = "|".join(t for _, t, kind in IO_TESTS + FILE_TESTS if kind == "ops")
METRICS = (
    MetricSpec(rf"bonnie\.({_KIB})", "MB/s", f"bonnie.{_KIB}"),
    MetricSpec(rf"bonnie\.({_OPS})", "ops/s", f"bonnie.{_OPS}"),
    MetricSpec(rf"bonnie\.({_KIB}|{_OPS})\.cpu", "%", "bonnie.<test>.cpu"),
    MetricSpec(rf"bonnie\.({_KIB}|{_OPS})\.latency", "ms", "bonnie.<test>.latency"),
)

_DATA_LINE = re.compile(r"^\d+\.\d+[a-z]?,")
_LATENCY = re.compile(r"^(\d+(?:\.\d+)?)(us|ms|s)$")
_LATENCY_MS = {"us": 1e-3, "ms": 1.0, "s": 1e3}
_MACHINE = re.compile(r"^[A-Za-z0-9._-]+$")


@dataclass(frozen=True)
class Bonnie:
    """One bonnie++ run (-x 1, CSV on stdout via -q).

    size_mb: file size for the block I/O tests (-s, MiB); 0 skips them.
    ram_mb: RAM size bonnie++ assumes (-r, MiB); None means size_mb // 2, the largest value
        bonnie++ accepts for that size (it wants the file to be twice the RAM).
    files_k: number of files for the create/stat/delete tests in multiples of 1024 (-n);
        0 skips them.
    seed: random seed (-z), fixed for reproducibility.
    fast: skip the per-character tests (-f), as S2 did.
    machine: label in the CSV's name column (-m); letters, digits, ".", "_", "-".
    user: user to run as (-u), "root" as in S2.
    timeout: seconds before fsbench kills the run.
    """

    name: ClassVar[str] = "bonnie"

    size_mb: int = 1024
    ram_mb: int | None = None
    files_k: int = 1
    seed: int = 0
    fast: bool = True
    machine: str = "fsbench"
    user: str = "root"
    direct: bool = False
    timeout: float = 3600.0

    def __post_init__(self) -> None:
        if self.size_mb < 0:
            raise ValueError(f"bonnie size_mb must be non-negative, not {self.size_mb}")
        if self.files_k < 0:
            raise ValueError(f"bonnie files_k must be non-negative, not {self.files_k}")
        if self.size_mb == 0 and self.files_k == 0:
            raise ValueError("bonnie size_mb and files_k are both 0: nothing would be measured")
        if self.ram_mb is not None and not 0 <= self.ram_mb * 2 <= self.size_mb:
            raise ValueError(
                f"bonnie ram_mb {self.ram_mb} must be 0 to half of size_mb ({self.size_mb})"
            )
        if self.seed < 0:
            raise ValueError(f"bonnie seed must be non-negative, not {self.seed}")
        if not _MACHINE.match(self.machine):
            raise ValueError(
                f"bonnie machine label {self.machine!r} may only use letters, digits, '.', '_', '-'"
            )
        if not self.user or "," in self.user or " " in self.user:
            raise ValueError(f"bonnie user {self.user!r} is not a user name")
        if not self.timeout > 0:
            raise ValueError(f"bonnie timeout must be positive, not {self.timeout}")

    @property
    def ram(self) -> int:
        """The -r value passed."""
        return self.size_mb // 2 if self.ram_mb is None else self.ram_mb

    @property
    def memory_limit(self) -> int | None:
        """The memory (bytes, page cache included) bonnie++ is run with: the RAM it is told it has
        (-r), made true by a memory control group, so its file of twice that size is read from the
        storage, as bonnie++ means it to be, on a machine of any RAM."""
        return self.ram << 20 if self.size_mb and self.ram else None

    def space_needed(self, copy_on_write: bool) -> int:
        """Bytes the target needs: the block-I/O file (twice on a copy-on-write filesystem, whose
        rewrite test allocates new blocks before the old ones are freed) and the small files."""
        return self.size_mb * (2 if copy_on_write else 1) * (1 << 20) + self.files_k * 1024 * 4096 + MARGIN

    def params(self) -> dict[str, str]:
        """The parameters that identify this run (strings)."""
        return {
            "size_mb": str(self.size_mb),
            "ram_mb": str(self.ram),
            "files_k": str(self.files_k),
            "seed": str(self.seed),
            "fast": str(int(self.fast)),
        } | ({"direct": "1"} if self.direct else {})

    def files(self) -> dict[str, str]:
        """bonnie++ needs no input files."""
        return {}

    def prepare_argvs(self, workdir: Path, scratch: Path) -> list[list[str]]:
        """bonnie++ creates and removes its own files: no preparation."""
        return []

    def argv(self, workdir: Path, scratch: Path) -> list[str]:
        """`bonnie++ -d <workdir> -u root -s S -r R -n N -m M -x 1 -q -z SEED [-f]`."""
        out = [
            "bonnie++",
            "-d", str(workdir),
            "-u", self.user,
            "-s", str(self.size_mb),
            "-r", str(self.ram),
            "-n", str(self.files_k),
            "-m", self.machine,
            "-x", "1",
            "-q",
            "-z", str(self.seed),
        ]
        if self.direct:
            out.append("-D")
        if self.fast:
            out.append("-f")  # takes an optional *attached* argument, so stands alone
        return out

    def direct_io(self) -> Bonnie:
        """The same run with O_DIRECT for the bulk I/O (-D)."""
        return dataclasses.replace(self, direct=True)

    def parse(self, output: str) -> list[Metric]:
        """Metrics from the single CSV result line in `output`.

        bonnie.<test> for char_write, block_write, block_rewrite, char_read, block_read
        (MB/s, from K/sec), seeks, seq_create, seq_stat, seq_delete, rand_create, rand_stat,
        rand_delete (ops/s); bonnie.<test>.cpu (%) and bonnie.<test>.latency (ms, the worst
        single operation). Metric params are empty: the configuration is in params().
        Tests reported as "+++++" (too fast to measure) and tests that did not run are left
        out. ParseError for no or several result lines, a wrong format_version, a truncated
        line, a missing result for a test this configuration runs, a value that is not a
        number, or when every test that ran was too fast.
        """
        fields = find_csv_line(output)
        expected: list[tuple[int, str, str]] = []
        if self.size_mb:
            expected += [t for t in IO_TESTS if not (self.fast and t[1].startswith("char_"))]
        if self.files_k:
            expected += list(FILE_TESTS)
        for col, test, _ in expected:
            if fields[col] == "":
                raise ParseError("bonnie", f"no result for {test} (column {col})", output)
        return [self._with_io(m) for m in csv_metrics(fields, output)]

    def _with_io(self, metric: Metric) -> Metric:
        """A sequential figure's I/O: the whole file, read or written (a rewrite's writes)."""
        kind = IO_KIND.get(metric.name.removeprefix("bonnie."))
        if kind is None or not self.size_mb:
            return metric
        return dataclasses.replace(metric, io=(kind, self.size_mb << 20))


# -- parsing helpers (pure functions) --------------------------------------------------------


def find_csv_line(output: str) -> list[str]:
    """The fields of the one CSV result line; ParseError if absent, repeated or malformed."""
    lines = [ln.strip() for ln in output.splitlines() if _DATA_LINE.match(ln.strip())]
    if not lines:
        raise ParseError("bonnie", "no CSV result line", output)
    if len(lines) > 1:
        raise ParseError("bonnie", f"expected one CSV result line, found {len(lines)}", output)
    fields = lines[0].split(",")
    if fields[0] != CSV_VERSION:
        raise ParseError(
            "bonnie", f"CSV format_version {fields[0]}, expected {CSV_VERSION}", output
        )
    if len(fields) != CSV_COLUMNS:
        raise ParseError(
            "bonnie", f"CSV line has {len(fields)} columns, expected {CSV_COLUMNS}", output
        )
    return fields


def _number(text: str, what: str, output: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise ParseError("bonnie", f"{what} is {text!r}, not a number", output) from None
    if value != value or value < 0:
        raise ParseError("bonnie", f"{what} is {text!r}", output)
    return value


def latency_ms(text: str, what: str = "latency", output: str = "") -> float:
    """A bonnie++ latency such as "4065us", "12ms" or "101s" in milliseconds."""
    m = _LATENCY.match(text)
    if not m:
        raise ParseError("bonnie", f"{what} is {text!r}, not a latency like 123us", output)
    return float(m.group(1)) * _LATENCY_MS[m.group(2)]


def csv_metrics(fields: list[str], output: str = "") -> list[Metric]:
    """All measurable metrics of one 50-column CSV line (see the module docstring)."""
    metrics: list[Metric] = []
    ran = too_fast = 0
    for (col, test, kind), lat_col in zip(IO_TESTS + FILE_TESTS, LATENCY_COLUMNS):
        value, cpu, latency = fields[col], fields[col + 1], fields[lat_col]
        if value == "":
            continue
        ran += 1
        if value == TOO_FAST:
            too_fast += 1
        else:
            v = _number(value, test, output)
            if kind == "kib":
                metrics.append(Metric(f"bonnie.{test}", v * 1024 / 1e6, "MB/s", Direction.HIGHER))
            else:
                metrics.append(Metric(f"bonnie.{test}", v, "ops/s", Direction.HIGHER))
        if cpu not in ("", TOO_FAST_CPU):
            pct = _number(cpu, f"{test} cpu", output)
            metrics.append(Metric(f"bonnie.{test}.cpu", pct, "%", Direction.LOWER))
        if latency != "":
            ms = latency_ms(latency, f"{test} latency", output)
            metrics.append(Metric(f"bonnie.{test}.latency", ms, "ms", Direction.LOWER))
    if ran == 0:
        raise ParseError("bonnie", "the CSV line holds no test results", output)
    if too_fast == ran:
        raise ParseError("bonnie", "every test was too fast to measure (+++++)", output)
    return metrics


#: programs the cases need (program -> Debian package); checked before a target is built
TOOLS = {"bonnie++": "bonnie++"}
PARAMS = (
    Param("bonnie-size", "1024", "bonnie++ file size in MiB (tests under 0.5 s give no result)", positive, kind=ONE,
          holds=file_of_mib),
    Param("bonnie-files", "16", "bonnie++ files to create, in multiples of 1024", positive, kind=ONE),
)

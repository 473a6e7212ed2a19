"""IOzone: file-system throughput by test (write, read, random read, ...), record size and file size.

Three shapes of run:

* table mode: explicit record size(s) and file size(s), `-r R... -s S...`, one data file
  `<workdir>/iozone.tmp`; one table row per (file size, record size) pair with record <= file.
* auto mode: `-a -z -y MIN_REC -q MAX_REC -n MIN_FILE -g MAX_FILE`; every power-of-two pair
  (`-z` turns off IOzone's skipping of small records for large files, so the grid is exact).
* throughput mode: `-l N -u N -r R -s S -F <workdir>/iozone.0.tmp ...`, N processes each with
  its own file; the aggregate "Children see throughput" figure is reported.

Tests are named; one IOzone `-i` selects a group (`-i 0` = write and rewrite, `-i 1` = read and
reread, ...). Every group needs the file written by `-i 0`; only the tests asked for are reported.

Phased (the default, table and throughput mode): the figures come from the storage, not from what
the write left in the page cache. The write group runs first, with its flush timed (`-e`) and the
file kept (`-w`); then each other group runs as its own command on that file, and fsbench
applies the cache policy before every phase. The same holds on every filesystem (O_DIRECT, `-I`,
is what --cache=direct adds; not every filesystem honours it: btrfs writes compressed files
through the cache, zfs-fuse and OpenZFS before 2.3 ignore it). IOzone's re-tests (reread,
freread, and record_rewrite's hot spot) read or write what their own group just touched: from a
cache by design, unless the file is larger than RAM, and marked so by the cache check. Auto mode's
sweep writes a new file per size, so it runs as one command. IOzone prints kB/s meaning 1024 bytes/s; metrics are MB/s
(10^6 bytes/s). Sizes given to IOzone are always whole kB with a `k` suffix.

`cpu` adds `-+u` (and `-R` in table/auto mode, where IOzone prints CPU utilisation only in its
Excel-style report); `dedup_percent` passes `-+w`, which sets how much of the written data is
shared between the files of a throughput run (it did not change the compressibility of a single
file in IOzone 3.489).
"""

from __future__ import annotations

import dataclasses

import re
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from ..errors import ParseError
from ..metrics import Direction, Metric, MetricSpec
from ..sizes import MARGIN, format_size, parse_size
from .params import LIST, Param, choice, file_of, positive, size_or_ram

#: IOzone's tests, in the column order of its result table
TESTS: tuple[str, ...] = (
    "write", "rewrite", "read", "reread", "random_read", "random_write", "backward_read",
    "record_rewrite", "stride_read", "fwrite", "frewrite", "fread", "freread",
)
#: test -> the `-i` number that runs it
TEST_GROUP: dict[str, int] = {
    "write": 0, "rewrite": 0, "read": 1, "reread": 1, "random_read": 2, "random_write": 2,
    "backward_read": 3, "record_rewrite": 4, "stride_read": 5, "fwrite": 6, "frewrite": 6,
    "fread": 7, "freread": 7,
}
#: throughput-mode labels ("Children see throughput for 2 <label> = ...") -> test
THROUGHPUT_LABELS: dict[str, str] = {
    "initial writers": "write", "rewriters": "rewrite", "readers": "read",
    "re-readers": "reread", "random readers": "random_read", "random writers": "random_write",
    "reverse readers": "backward_read", "stride readers": "stride_read", "fwriters": "fwrite",
    "freaders": "fread",
}
#: tests IOzone does not run (or does not report) in throughput mode
NOT_IN_THROUGHPUT: frozenset[str] = frozenset(TESTS) - frozenset(THROUGHPUT_LABELS.values())
METRICS = (
    MetricSpec(rf"iozone\.({'|'.join(TESTS)})", "MB/s", "iozone.<test>"),
    MetricSpec(rf"iozone\.({'|'.join(TESTS)})\.cpu", "%", "iozone.<test>.cpu"),
)
#: Excel-report titles ("<title> CPU utilization report") -> test
EXCEL_TITLES: dict[str, str] = {
    "Writer": "write", "Re-writer": "rewrite", "Reader": "read", "Re-Reader": "reread",
    "Random read": "random_read", "Random write": "random_write",
    "Backward read": "backward_read", "Record rewrite": "record_rewrite",
    "Stride read": "stride_read", "Fwrite": "fwrite", "Re-Fwrite": "frewrite", "Fread": "fread",
    "Re-Fread": "freread",
}
DEFAULT_TESTS: tuple[str, ...] = ("write", "rewrite", "read", "random_read", "random_write")
WRITE_TESTS = frozenset({"write", "rewrite", "random_write", "record_rewrite", "fwrite", "frewrite"})
#: IOzone's own auto-mode bounds, used for those not given
AUTO_DEFAULTS: dict[str, str] = {"min_record": "4K", "max_record": "16M", "min_file": "64K",
                                 "max_file": "512M"}
#: IOzone's largest record (its maximum buffer size)
MAX_RECORD_KB = 16 * 1024
DATA_FILE = "iozone.tmp"

_TABLE_HEADER = re.compile(r"^\s+kB\s+reclen\s+write\s+rewrite\b.*$", re.MULTILINE)
_COMPLETE = re.compile(r"^iozone test complete\.\s*$", re.MULTILINE)
_FAILURE = re.compile(r"^\s*((?:Error\b|Can not open|iozone: interrupted).*?)\s*$", re.MULTILINE)
_CHILDREN = re.compile(r"^\s*Children see throughput for\s+(\d+)\s+(\S.*?)\s*=\s*([0-9.]+) kB/sec",
                       re.MULTILINE)
_CPU_LINE = re.compile(r"^\s*CPU utilization: Wall time\s+[0-9.]+\s+CPU time\s+[0-9.]+\s+"
                       r"CPU utilization\s+([0-9.]+) %", re.MULTILINE | re.IGNORECASE)
_EXCEL_CPU_TITLE = re.compile(r'^"(.+?) CPU utilization report[^"]*"\s*$')
_QUOTED_NUMBER = re.compile(r'"(\d+)"')
_EXCEL_HEADER = re.compile(r'^\s*(?:"\d+"\s*)+$')
_EXCEL_ROW = re.compile(r'^"\d+"(?:\s+\d+\.\d+)+\s*$')


def size_kb(text: str) -> int:
    """Whole kB (1024 bytes) in a size string such as "64k", "16M", "4G"; ValueError otherwise."""
    nbytes = parse_size(text)
    if nbytes % 1024:
        raise ValueError(f"iozone size {text!r} is not a whole number of kB")
    return nbytes // 1024


def power_of_two_kb(text: str) -> int:
    """size_kb(text), which must be a power of two ("64k", "1M"); ValueError otherwise."""
    kb = size_kb(text)
    if kb & (kb - 1):
        raise ValueError(f"iozone size {text!r} is not a power of two")
    return kb


def kb_label(kb: int) -> str:
    """The normalised size string of kB: 64 -> "64K", 4096 -> "4M"."""
    return format_size(kb * 1024)


def io_kind(test: str) -> str:
    """Whether the test's figure is of bytes read or written."""
    return "write" if test in WRITE_TESTS else "read"


def kb_per_s_to_mb_per_s(value: float) -> float:
    """IOzone's kB/s (1024 bytes/s) in MB/s (10^6 bytes/s)."""
    return value * 1024 / 1_000_000


def doubling(low: int, high: int) -> list[int]:
    """low, 2*low, ... up to high (inclusive)."""
    values = []
    value = low
    while value <= high:
        values.append(value)
        value *= 2
    return values


def _as_tuple(value: str | tuple[str, ...] | list[str] | None) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,)
    return tuple(value)


def _columns(groups: frozenset[int]) -> list[str]:
    """The table columns IOzone fills when the `-i` groups run, in order."""
    return [test for test in TESTS if TEST_GROUP[test] in groups]


def _check_failure(output: str) -> None:
    failure = _FAILURE.search(output)
    if failure:
        raise ParseError("iozone", f"iozone reported: {failure.group(1)}", output)


def parse_table(output: str, groups: frozenset[int]) -> dict[tuple[int, int], dict[str, float]]:
    """The result table: (file kB, record kB) -> test -> kB/s, for the columns of `groups`.

    ParseError on an error message, a missing table, a row with the wrong number of values,
    a zero value, or a table not followed by "iozone test complete.".
    """
    _check_failure(output)
    header = _TABLE_HEADER.search(output)
    if not header:
        raise ParseError("iozone", "no result table (no 'kB reclen write rewrite' header)", output)
    columns = _columns(groups)
    rows: dict[tuple[int, int], dict[str, float]] = {}
    rest = output[header.end():]
    for line in rest.splitlines()[1:]:
        if not line.strip():
            break
        fields = line.split()
        if len(fields) > 2 + len(columns) and all(f.isdigit() for f in fields):
            raise ParseError("iozone", f"table row {line.strip()!r} has more values than the tests run "
                             f"({', '.join(columns)})", output)
        if len(fields) != 2 + len(columns) or not all(f.isdigit() for f in fields):
            raise ParseError("iozone", f"incomplete table row {line.strip()!r}", output)
        file_kb, record_kb = int(fields[0]), int(fields[1])
        values = {test: float(v) for test, v in zip(columns, fields[2:])}
        zero = [test for test, v in values.items() if v <= 0]
        if zero:
            raise ParseError("iozone", f"{zero[0]} reported 0 kB/s for {file_kb} kB file, "
                             f"{record_kb} kB records", output)
        rows[(file_kb, record_kb)] = values
    if not rows:
        raise ParseError("iozone", "result table has no rows", output)
    if not _COMPLETE.search(rest):
        raise ParseError("iozone", "result table not followed by 'iozone test complete.' "
                         "(truncated output)", output)
    return rows


def parse_excel_cpu(output: str) -> dict[str, dict[tuple[int, int], float]]:
    """CPU utilisation (%) from the -R report: test -> (file kB, record kB) -> percent.

    Cells IOzone left at zero ("Zero values should be ignored") are omitted.
    """
    reports: dict[str, dict[tuple[int, int], float]] = {}
    lines = output.splitlines()
    for index, line in enumerate(lines):
        title = _EXCEL_CPU_TITLE.match(line.strip())
        if not title or title.group(1) not in EXCEL_TITLES or index + 1 >= len(lines):
            continue
        if not _EXCEL_HEADER.match(lines[index + 1]):
            raise ParseError("iozone", f"incomplete CPU utilisation report header {lines[index + 1]!r}",
                             output)
        records = [int(r) for r in _QUOTED_NUMBER.findall(lines[index + 1])]
        cells: dict[tuple[int, int], float] = {}
        rows = 0
        for row in lines[index + 2:]:
            fields = row.split()
            if not fields or not fields[0].startswith('"'):
                break
            if len(fields) != 1 + len(records) or not _EXCEL_ROW.match(row):
                raise ParseError("iozone", f"incomplete CPU utilisation row {row.strip()!r}", output)
            file_kb = int(fields[0].strip('"'))
            rows += 1
            for record_kb, value in zip(records, fields[1:]):
                if float(value) > 0:
                    cells[(file_kb, record_kb)] = float(value)
        if not rows:
            raise ParseError("iozone", f"{title.group(1)} CPU utilisation report has no rows", output)
        reports[EXCEL_TITLES[title.group(1)]] = cells
    return reports


@dataclass(frozen=True)
class ThroughputResult:
    """One "Children see throughput" section: aggregate kB/s and, with -+u, CPU %."""

    processes: int
    test: str
    kb_per_s: float
    cpu_percent: float | None


def parse_throughput(output: str) -> list[ThroughputResult]:
    """The aggregate ("Children see") figure of every section of a throughput-mode run.

    ParseError on an error message, no section, an unknown label, or no "iozone test complete.".
    """
    _check_failure(output)
    matches = list(_CHILDREN.finditer(output))
    if not matches:
        raise ParseError("iozone", "no 'Children see throughput' lines", output)
    if not _COMPLETE.search(output[matches[-1].end():]):
        raise ParseError("iozone", "throughput results not followed by 'iozone test complete.' "
                         "(truncated output)", output)
    results = []
    for index, match in enumerate(matches):
        label = match.group(2)
        if label not in THROUGHPUT_LABELS:
            raise ParseError("iozone", f"unknown throughput test {label!r}", output)
        end = matches[index + 1].start() if index + 1 < len(matches) else len(output)
        cpu = _CPU_LINE.search(output, match.end(), end)
        results.append(ThroughputResult(int(match.group(1)), THROUGHPUT_LABELS[label],
                                        float(match.group(3)),
                                        float(cpu.group(1)) if cpu else None))
    return results


@dataclass(frozen=True)
class Iozone:
    """One IOzone run.

    tests: test names (see TESTS); the `-i` groups that contain them run, plus `-i 0`.
    record: record size or sizes ("64k", ("64k", "1M")), powers of two up to 16M; default "64K".
    file: file size or sizes ("16M", ("4G", "8G")), whole multiples of each record size that
        fits; every record size must fit in the largest file. Default "16M".
    auto: auto mode (`-a -z`) over min_record..max_record and min_file..max_file (powers of two,
        doubling); bounds not given take IOzone's defaults 4K, 16M, 64K, 512M.
    flush: include fsync/fflush in the timing (`-e`); default on.
    direct: O_DIRECT (`-I`).
    phased: one command per `-i` group, the file kept between them, so fsbench empties the
        caches before each (see the module's docstring); default on, off in auto mode.
    cpu: CPU utilisation (`-+u`), reported as iozone.<test>.cpu in %.
    processes: throughput mode with this many processes (`-l N -u N -F ...`); needs one record
        size and one file size (per process) and no record_rewrite, frewrite or freread.
    dedup_percent: percent of dedupable data in the written buffers (`-+w`), 0-100.
    timeout: seconds before fsbench kills the measured command.
    """

    name: ClassVar[str] = "iozone"

    tests: tuple[str, ...] = DEFAULT_TESTS
    record: str | tuple[str, ...] | None = None
    file: str | tuple[str, ...] | None = None
    auto: bool = False
    min_record: str | None = None
    max_record: str | None = None
    min_file: str | None = None
    max_file: str | None = None
    flush: bool = True
    direct: bool = False
    phased: bool = True
    cpu: bool = False
    processes: int | None = None
    dedup_percent: int | None = None
    timeout: float = 3600.0
    #: a later phase's: the file exists (no `-i 0`), and is kept (`-w`)
    reuses_file: bool = False
    keeps_file: bool = False
    #: a write phase nobody asked figures of (it only writes the file the others read)
    silent: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "tests", _as_tuple(self.tests))
        if self.auto:
            object.__setattr__(self, "phased", False)
        object.__setattr__(self, "record", _as_tuple(self.record))
        object.__setattr__(self, "file", _as_tuple(self.file))
        self._check_tests()
        if self.auto:
            self._check_auto()
        else:
            self._check_sizes()
        self._check_throughput()
        if self.dedup_percent is not None and not 0 <= self.dedup_percent <= 100:
            raise ValueError(f"iozone dedup_percent {self.dedup_percent} is not between 0 and 100")
        if self.timeout <= 0:
            raise ValueError(f"iozone timeout {self.timeout} is not positive")

    def _check_tests(self) -> None:
        if not self.tests:
            raise ValueError("iozone needs at least one test")
        for test in self.tests:
            if test not in TEST_GROUP:
                raise ValueError(f"unknown iozone test {test!r}; known: {', '.join(TESTS)}")
        if len(set(self.tests)) != len(self.tests):
            raise ValueError(f"iozone tests {', '.join(self.tests)} name a test twice")

    def _check_auto(self) -> None:
        if self.record or self.file:
            raise ValueError("iozone auto mode takes min_record/max_record/min_file/max_file, "
                             "not record/file")
        low_rec, high_rec, low_file, high_file = self.auto_bounds_kb()
        if high_rec > MAX_RECORD_KB:
            raise ValueError(f"iozone max_record {kb_label(high_rec)} is larger than IOzone's 16M")
        if low_rec > high_rec:
            raise ValueError(f"iozone min_record {kb_label(low_rec)} is larger than max_record "
                             f"{kb_label(high_rec)}")
        if low_file > high_file:
            raise ValueError(f"iozone min_file {kb_label(low_file)} is larger than max_file "
                             f"{kb_label(high_file)}")
        if low_rec > high_file:
            raise ValueError(f"iozone min_record {kb_label(low_rec)} is larger than max_file "
                             f"{kb_label(high_file)}")

    def _check_sizes(self) -> None:
        bounds = [b for b in ("min_record", "max_record", "min_file", "max_file") if getattr(self, b)]
        if bounds:
            raise ValueError(f"iozone {bounds[0]} needs auto=True")
        records, files = self.records_kb(), self.files_kb()
        for kb in records:
            if kb > MAX_RECORD_KB:
                raise ValueError(f"iozone record size {kb_label(kb)} is larger than IOzone's 16M")
        if len(set(records)) != len(records) or len(set(files)) != len(files):
            raise ValueError("iozone record and file sizes must not repeat")
        for record_kb in records:
            if record_kb > max(files):
                raise ValueError(f"iozone record size {kb_label(record_kb)} is larger than file size "
                                 f"{kb_label(max(files))}")
        for file_kb in files:
            for record_kb in records:
                if record_kb <= file_kb and file_kb % record_kb:
                    raise ValueError(f"iozone file size {kb_label(file_kb)} is not a multiple of "
                                     f"record size {kb_label(record_kb)}")

    def _check_throughput(self) -> None:
        if self.processes is None:
            return
        if self.processes < 1:
            raise ValueError(f"iozone processes {self.processes} is not at least 1")
        if self.auto:
            raise ValueError("iozone throughput mode (processes) cannot use auto mode")
        if len(self.records_kb()) != 1 or len(self.files_kb()) != 1:
            raise ValueError("iozone throughput mode (processes) takes one record size and one file size")
        unsupported = [t for t in self.tests if t in NOT_IN_THROUGHPUT]
        if unsupported:
            raise ValueError(f"iozone test {unsupported[0]!r} is not reported in throughput mode")

    def records_kb(self) -> list[int]:
        """Explicit record sizes in kB, in the order given (default 64)."""
        return [power_of_two_kb(r) for r in (self.record or ("64k",))]

    def files_kb(self) -> list[int]:
        """Explicit file sizes in kB, in the order given (default 16M)."""
        return [size_kb(f) for f in (self.file or ("16M",))]

    def auto_bounds_kb(self) -> tuple[int, int, int, int]:
        """Auto mode's min record, max record, min file, max file in kB."""
        values = [getattr(self, key) or default for key, default in AUTO_DEFAULTS.items()]
        low_rec, high_rec, low_file, high_file = (power_of_two_kb(v) for v in values)
        return low_rec, high_rec, low_file, high_file

    def groups(self) -> frozenset[int]:
        """The `-i` groups to run: those of the tests, and 0, which writes the file (unless a
        phase before this one wrote it)."""
        written = set() if self.reuses_file else {0}
        return frozenset(written | {TEST_GROUP[t] for t in self.tests})

    def phases(self) -> list[Iozone]:
        """The commands of one run, in order (this run itself when not phased): for each file and
        record size, the write group first, then each other group on the kept file."""
        if not self.phased:
            return [self]
        by_group: dict[int, list[str]] = {}
        for test in TESTS:
            if test in self.tests:
                by_group.setdefault(TEST_GROUP[test], []).append(test)
        asked_none = 0 not in by_group
        writes = tuple(by_group.pop(0, ["write"]))
        phases = []
        for file_kb, record_kb in self.expected_pairs():
            sizes = {"file": (kb_label(file_kb),), "record": (kb_label(record_kb),), "phased": False,
                     "keeps_file": True}
            phases.append(dataclasses.replace(self, tests=writes, silent=asked_none, **sizes))
            phases += [dataclasses.replace(self, tests=tuple(tests), reuses_file=True, **sizes)
                       for _, tests in sorted(by_group.items())]
        return phases

    def expected_pairs(self) -> list[tuple[int, int]]:
        """(file kB, record kB) rows IOzone prints in table or auto mode."""
        if self.auto:
            low_rec, high_rec, low_file, high_file = self.auto_bounds_kb()
            files, records = doubling(low_file, high_file), doubling(low_rec, high_rec)
        else:
            files, records = self.files_kb(), self.records_kb()
        return [(f, r) for f in files for r in records if r <= f]

    def data_files(self, workdir: Path) -> list[Path]:
        """The data file(s) IOzone creates (and removes) under workdir."""
        if self.processes is None:
            return [workdir / DATA_FILE]
        return [workdir / f"iozone.{i}.tmp" for i in range(self.processes)]

    def files(self) -> dict[str, str]:
        """IOzone needs no input files."""
        return {}

    def prepare_argvs(self, workdir: Path, scratch: Path) -> list[list[str]]:
        """The file(s) a phased run kept are removed; `-i 0` writes them anew."""
        return [["rm", "-f", *map(str, self.data_files(workdir))]] if self.phased else []

    def argv(self, workdir: Path, scratch: Path) -> list[str]:
        """The iozone command; data files are under workdir."""
        argv = ["iozone"]
        for group in sorted(self.groups()):
            argv += ["-i", str(group)]
        if self.auto:
            low_rec, high_rec, low_file, high_file = self.auto_bounds_kb()
            argv += ["-a", "-z", "-y", f"{low_rec}k", "-q", f"{high_rec}k",
                     "-n", f"{low_file}k", "-g", f"{high_file}k"]
        else:
            for record_kb in self.records_kb():
                argv += ["-r", f"{record_kb}k"]
            for file_kb in self.files_kb():
                argv += ["-s", f"{file_kb}k"]
        if self.flush:
            argv.append("-e")
        if self.keeps_file:
            argv.append("-w")
        if self.direct:
            argv.append("-I")
        if self.cpu:
            argv += ["-+u"] if self.processes is not None else ["-+u", "-R"]
        if self.dedup_percent is not None:
            argv += ["-+w", str(self.dedup_percent)]
        if self.processes is None:
            return argv + ["-f", str(workdir / DATA_FILE)]
        argv += ["-l", str(self.processes), "-u", str(self.processes), "-F"]
        return argv + [str(path) for path in self.data_files(workdir)]

    def space_needed(self, copy_on_write: bool) -> int:
        """Bytes the target needs: the largest file per process (auto mode: the largest file of
        the sweep), twice for rewriting tests on a copy-on-write filesystem."""
        largest_kb = self.auto_bounds_kb()[3] if self.auto else max(self.files_kb())
        rewrites = copy_on_write and any(TEST_GROUP[t] in (0, 2, 4, 6) for t in self.tests)
        return largest_kb * 1024 * (self.processes or 1) * (2 if rewrites else 1) + MARGIN

    def direct_io(self) -> Iozone:
        """The same run with O_DIRECT (-I)."""
        return dataclasses.replace(self, direct=True)

    def params(self) -> dict[str, str]:
        """The configuration: mode, tests, sizes, flags (and processes, dedup_percent if set)."""
        if self.auto:
            low_rec, high_rec, low_file, high_file = self.auto_bounds_kb()
            record = f"{kb_label(low_rec)}-{kb_label(high_rec)}"
            file = f"{kb_label(low_file)}-{kb_label(high_file)}"
        else:
            record = ",".join(kb_label(kb) for kb in self.records_kb())
            file = ",".join(kb_label(kb) for kb in self.files_kb())
        mode = "auto" if self.auto else "table" if self.processes is None else "throughput"
        params = {"mode": mode, "tests": ",".join(self.tests), "record": record, "file": file,
                  "flush": str(int(self.flush)), "direct": str(int(self.direct)),
                  "phased": str(int(self.phased)), "cpu": str(int(self.cpu))}
        if self.processes is not None:
            params["processes"] = str(self.processes)
        if self.dedup_percent is not None:
            params["dedup_percent"] = str(self.dedup_percent)
        return params

    def parse(self, output: str) -> list[Metric]:
        """iozone.<test> in MB/s (and iozone.<test>.cpu in % with cpu) per row or process count;
        nothing from a silent phase (its output is still checked). fsbench parses a phased
        run's output phase by phase, each with its phase."""
        metrics = self._parse_table(output) if self.processes is None else self._parse_throughput(output)
        return [] if self.silent else metrics

    def _parse_table(self, output: str) -> list[Metric]:
        rows = parse_table(output, self.groups())
        expected = self.expected_pairs()
        missing = [pair for pair in expected if pair not in rows]
        if missing or len(rows) != len(expected):
            problem = (f"no row for {kb_label(missing[0][0])} file, {kb_label(missing[0][1])} records"
                       if missing else f"{len(rows)} rows, expected {len(expected)}")
            raise ParseError("iozone", problem, output)
        cpu = parse_excel_cpu(output) if self.cpu else {}
        metrics = []
        for file_kb, record_kb in expected:
            params = {"record": kb_label(record_kb), "file": kb_label(file_kb)}
            row = rows[(file_kb, record_kb)]
            for test in self.tests:
                metrics.append(Metric(f"iozone.{test}", kb_per_s_to_mb_per_s(row[test]), "MB/s",
                                      Direction.HIGHER, dict(params), io=(io_kind(test), file_kb * 1024)))
                if self.cpu:
                    metrics += self._table_cpu(cpu, test, (file_kb, record_kb), params, output)
        return metrics

    def _table_cpu(self, cpu: dict[str, dict[tuple[int, int], float]], test: str,
                   pair: tuple[int, int], params: dict[str, str], output: str) -> list[Metric]:
        if test not in cpu:
            raise ParseError("iozone", f"no CPU utilisation report for {test}", output)
        if pair not in cpu[test]:
            return []
        return [Metric(f"iozone.{test}.cpu", cpu[test][pair], "%", Direction.LOWER, dict(params))]

    def _parse_throughput(self, output: str) -> list[Metric]:
        results = {(r.processes, r.test): r for r in parse_throughput(output)}
        (record_kb,), (file_kb,) = self.records_kb(), self.files_kb()
        params = {"processes": str(self.processes), "record": kb_label(record_kb), "file": kb_label(file_kb)}
        metrics = []
        for test in self.tests:
            result = results.get((self.processes, test))
            if result is None:
                raise ParseError("iozone", f"no throughput result for {test} with {self.processes} "
                                 "processes", output)
            if result.kb_per_s <= 0:
                raise ParseError("iozone", f"{test} reported 0 kB/s", output)
            metrics.append(Metric(f"iozone.{test}", kb_per_s_to_mb_per_s(result.kb_per_s), "MB/s",
                                  Direction.HIGHER, dict(params),
                                  io=(io_kind(test), file_kb * 1024 * (self.processes or 1))))
            if self.cpu:
                if result.cpu_percent is None:
                    raise ParseError("iozone", f"no CPU utilization line for {test}", output)
                metrics.append(Metric(f"iozone.{test}.cpu", result.cpu_percent, "%", Direction.LOWER,
                                      dict(params)))
        return metrics


def _record(value: str) -> None:
    """--iozone-record: checked with the option, not when IOzone is started (issue 34: 3K)."""
    power_of_two_kb(value)


#: programs the cases need (program -> Debian package); checked before a target is built
TOOLS = {"iozone": "iozone3"}
PARAMS = (
    Param("iozone-record", "64K,1M", "IOzone record sizes (powers of two)", _record),
    Param("iozone-file", "256M", "IOzone file sizes (or 2xRAM, the studies' rule against caching)", size_or_ram,
          holds=file_of),
    Param("iozone-tests", "write,rewrite,read,random_read,random_write,stride_read",
          f"IOzone tests, comma list of {', '.join(TESTS)} (reread, freread and record_rewrite "
          "measure a cache by design)", choice(*TESTS), kind=LIST),
    Param("iozone-processes", "2", "IOzone throughput-mode process counts", positive),
)

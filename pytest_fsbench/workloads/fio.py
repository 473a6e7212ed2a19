"""fio: flexible I/O tester, one job (optionally numjobs clones) with JSON output.

The job is given entirely on the command line (no job file): `fio --output-format=json
--name=fsbench --directory=<workdir> --rw=... --group_reporting ...`. Data files are
`<workdir>/fsbench.<job>.0`, one per cloned job, each `size` bytes.

Reproducibility: `randrepeat=1` and a fixed `randseed` are always passed, and so is
`fallocate` (default "none": Btrfs does not compress preallocated extents, so a compression
measurement is only meaningful without preallocation). Write patterns end with `end_fsync=1`
so the data is on the target when fio stops its clock.

Patterns that read get an unmeasured prepare command that writes the same files with the same
buffer contents (compressibility included), so fsbench can drop caches before the
measured read.
"""

from __future__ import annotations

import dataclasses

import json
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from ..errors import ParseError
from ..metrics import MB, Direction, Metric, MetricSpec
from ..sizes import MARGIN, parse_size
from .params import ONE, Param, choice, file_of, size

PATTERNS: tuple[str, ...] = ("read", "write", "randread", "randwrite", "readwrite", "randrw")
MIXED: frozenset[str] = frozenset({"readwrite", "randrw"})
READING: frozenset[str] = frozenset({"read", "randread", "readwrite", "randrw"})
WRITING: frozenset[str] = frozenset({"write", "randwrite", "readwrite", "randrw"})
SYNC_ENGINES: frozenset[str] = frozenset({"psync", "sync", "pvsync", "pvsync2", "vsync", "mmap"})
ASYNC_ENGINES: frozenset[str] = frozenset({"libaio", "io_uring", "posixaio"})
FALLOCATE_MODES: tuple[str, ...] = ("none", "native", "posix", "keep")
#: the job name; also the data files' name prefix, shared by prepare and measured runs
JOB_NAME = "fsbench"
#: clat percentiles reported, as (fio's percentile, metric name suffix)
PERCENTILES: tuple[tuple[float, str], ...] = ((50.0, "p50"), (99.0, "p99"), (99.9, "p99.9"))
METRICS = (
    MetricSpec(r"fio\.(read|write|trim)\.bw", "MB/s", "fio.read|write|trim.bw"),
    MetricSpec(r"fio\.(read|write|trim)\.iops", "ops/s", "fio.read|write|trim.iops"),
    MetricSpec(r"fio\.(read|write|trim)\.clat_p(50|99|99\.9)", "ms", "fio.<dir>.clat_p50|p99|p99.9"),
    MetricSpec(r"fio\.cpu\.(usr|sys)", "%", "fio.cpu.usr|sys"),
)

_SIZE = re.compile(r"^[1-9][0-9]*[kmgt]?$", re.IGNORECASE)


def _check_size(what: str, value: str) -> None:
    if not _SIZE.match(value):
        raise ValueError(f"fio {what} {value!r} is not a size like 4k, 128k, 1m or 64M")


@dataclass(frozen=True)
class Fio:
    """One fio job description.

    rw: read, write, randread, randwrite, readwrite or randrw.
    bs: block size (fio size string, 1024-based: "4k", "1m").
    size: file size per job ("256M").
    numjobs: cloned jobs, each with its own file; results are aggregated (group_reporting).
    iodepth: queue depth; > 1 needs an asynchronous ioengine (libaio, io_uring, posixaio).
    ioengine: "psync" (default) or e.g. "libaio" where available.
    direct: O_DIRECT.
    runtime: seconds; when set the job is time_based (loops over the file until then).
    rwmixread: percentage of reads for readwrite/randrw (default 50); only for those.
    randseed: seed of fio's random generators (offsets and buffer contents), always passed.
    buffer_compress_percentage: 0-100, how compressible written buffers are; sets
        refill_buffers and buffer_compress_chunk. None leaves fio's default buffers.
    buffer_compress_chunk: the compress chunk ("4k").
    fallocate: none (default), native, posix or keep.
    end_fsync: fsync at the end of the job; None means yes for patterns that write.
    timeout: seconds before fsbench kills the measured command.
    """

    name: ClassVar[str] = "fio"

    rw: str = "write"
    bs: str = "128k"
    size: str = "256M"
    numjobs: int = 1
    iodepth: int = 1
    ioengine: str = "psync"
    direct: bool = False
    runtime: int | None = None
    rwmixread: int | None = None
    randseed: int = 42
    buffer_compress_percentage: int | None = None
    buffer_compress_chunk: str = "4k"
    fallocate: str = "none"
    end_fsync: bool | None = None
    timeout: float = 1800.0

    def __post_init__(self) -> None:
        if self.rw not in PATTERNS:
            raise ValueError(f"fio rw {self.rw!r} is not one of {', '.join(PATTERNS)}")
        _check_size("bs", self.bs)
        _check_size("size", self.size)
        _check_size("buffer_compress_chunk", self.buffer_compress_chunk)
        if self.numjobs < 1:
            raise ValueError(f"fio numjobs must be at least 1, not {self.numjobs}")
        if self.iodepth < 1:
            raise ValueError(f"fio iodepth must be at least 1, not {self.iodepth}")
        if self.ioengine not in SYNC_ENGINES | ASYNC_ENGINES:
            known = ", ".join(sorted(SYNC_ENGINES | ASYNC_ENGINES))
            raise ValueError(f"fio ioengine {self.ioengine!r} is not one of {known}")
        if self.iodepth > 1 and self.ioengine not in ASYNC_ENGINES:
            raise ValueError(
                f"fio iodepth {self.iodepth} needs an asynchronous ioengine, not {self.ioengine}"
            )
        if self.runtime is not None and self.runtime < 1:
            raise ValueError(f"fio runtime must be at least 1 second, not {self.runtime}")
        if self.rwmixread is not None:
            if self.rw not in MIXED:
                raise ValueError(f"fio rwmixread applies to readwrite/randrw, not rw={self.rw}")
            if not 0 <= self.rwmixread <= 100:
                raise ValueError(f"fio rwmixread must be 0-100, not {self.rwmixread}")
        if self.randseed < 0:
            raise ValueError(f"fio randseed must be non-negative, not {self.randseed}")
        pct = self.buffer_compress_percentage
        if pct is not None and not 0 <= pct <= 100:
            raise ValueError(f"fio buffer_compress_percentage must be 0-100, not {pct}")
        if self.fallocate not in FALLOCATE_MODES:
            raise ValueError(
                f"fio fallocate {self.fallocate!r} is not one of {', '.join(FALLOCATE_MODES)}"
            )
        if not self.timeout > 0:
            raise ValueError(f"fio timeout must be positive, not {self.timeout}")

    # -- configuration -------------------------------------------------------------------

    @property
    def directions(self) -> tuple[str, ...]:
        """fio's result sections this pattern fills: ("read",), ("write",) or both."""
        return tuple(d for d, s in (("read", READING), ("write", WRITING)) if self.rw in s)

    @property
    def fsync_at_end(self) -> bool:
        """Whether end_fsync=1 is passed."""
        return self.rw in WRITING if self.end_fsync is None else self.end_fsync

    def space_needed(self, copy_on_write: bool) -> int:
        """Bytes the target needs: one file per job, twice when jobs overwrite on a copy-on-write
        filesystem (fio lays the file out before writing it again)."""
        rewrites = copy_on_write and self.rw in WRITING
        return parse_size(self.size) * self.numjobs * (2 if rewrites else 1) + MARGIN

    def direct_io(self) -> Fio:
        """The same run with O_DIRECT (direct=1)."""
        return dataclasses.replace(self, direct=True)

    def params(self) -> dict[str, str]:
        """The parameters that identify this job (strings)."""
        out = {
            "rw": self.rw,
            "bs": self.bs,
            "size": self.size,
            "numjobs": str(self.numjobs),
            "iodepth": str(self.iodepth),
            "ioengine": self.ioengine,
            "direct": str(int(self.direct)),
            "randseed": str(self.randseed),
            "fallocate": self.fallocate,
            "end_fsync": str(int(self.fsync_at_end)),
        }
        if self.runtime is not None:
            out["runtime"] = str(self.runtime)
        if self.rw in MIXED:
            out["rwmixread"] = str(self._rwmixread())
        if self.buffer_compress_percentage is not None:
            out["buffer_compress_percentage"] = str(self.buffer_compress_percentage)
            out["buffer_compress_chunk"] = self.buffer_compress_chunk
        return out

    def _rwmixread(self) -> int:
        return 50 if self.rwmixread is None else self.rwmixread

    # -- commands ------------------------------------------------------------------------

    def _data_options(self, workdir: Path) -> list[str]:
        """Options shared by prepare and measured runs: same files, same buffer contents."""
        opts = [
            "fio",
            "--output-format=json",
            "--eta=never",
            f"--name={JOB_NAME}",
            f"--directory={workdir}",
            f"--bs={self.bs}",
            f"--size={self.size}",
            f"--numjobs={self.numjobs}",
            "--randrepeat=1",
            f"--randseed={self.randseed}",
            f"--fallocate={self.fallocate}",
        ]
        if self.buffer_compress_percentage is not None:
            opts += [
                "--refill_buffers",
                f"--buffer_compress_percentage={self.buffer_compress_percentage}",
                f"--buffer_compress_chunk={self.buffer_compress_chunk}",
            ]
        return opts

    def files(self) -> dict[str, str]:
        """No job file: everything is on the command line."""
        return {}

    def prepare_argvs(self, workdir: Path, scratch: Path) -> list[list[str]]:
        """Nothing before every run: fio writes what it writes itself."""
        return []

    def prepare_once_argvs(self, workdir: Path, scratch: Path) -> list[list[str]]:
        """For patterns that read: write the data files once on the target (buffered, fsynced);
        later runs re-read them after the cache policy."""
        if self.rw not in READING:
            return []
        return [
            self._data_options(workdir)
            + ["--rw=write", "--ioengine=psync", "--iodepth=1", "--direct=0", "--end_fsync=1",
               "--group_reporting"]
        ]

    def argv(self, workdir: Path, scratch: Path) -> list[str]:
        """The measured fio command."""
        out = self._data_options(workdir) + [
            f"--rw={self.rw}",
            f"--ioengine={self.ioengine}",
            f"--iodepth={self.iodepth}",
            f"--direct={int(self.direct)}",
        ]
        if self.rw in MIXED:
            out.append(f"--rwmixread={self._rwmixread()}")
        if self.fsync_at_end:
            out.append("--end_fsync=1")
        if self.runtime is not None:
            out += [f"--runtime={self.runtime}", "--time_based"]
        out.append("--group_reporting")
        return out

    # -- parsing -------------------------------------------------------------------------

    def parse(self, output: str) -> list[Metric]:
        """Metrics from fio's JSON (non-JSON lines before it, such as warnings, are skipped).

        Per direction d in `directions`: fio.<d>.bw (MB/s), fio.<d>.iops (ops/s),
        fio.<d>.clat_p50 / clat_p99 / clat_p99.9 (ms); per run: fio.cpu.usr, fio.cpu.sys (%).
        With several job entries (no group reporting) bandwidth and IOPS are summed, CPU
        averaged and each percentile is the worst job's (an upper bound, not a merge).
        ParseError for no JSON, no jobs, a job with nonzero error, a different rw than
        configured, or a direction that moved no data.
        """
        doc = extract_json(output)
        jobs = doc.get("jobs")
        if not isinstance(jobs, list) or not jobs:
            raise ParseError("fio", "no jobs in the JSON output", output)
        for job in jobs:
            _check_job(job, self.rw, output)
        metrics: list[Metric] = []
        for d in self.directions:
            metrics += _direction_metrics(d, [job[d] for job in jobs], output)
        metrics += _cpu_metrics(jobs, output)
        return metrics


# -- parsing helpers (pure functions) --------------------------------------------------------


def extract_json(output: str) -> dict[str, Any]:
    """The first JSON object that starts at the beginning of a line of `output`."""
    decoder = json.JSONDecoder()
    for m in re.finditer(r"^\{", output, re.MULTILINE):
        try:
            doc, _ = decoder.raw_decode(output, m.start())
        except json.JSONDecodeError:
            continue
        if isinstance(doc, dict):
            return doc
    raise ParseError("fio", "no JSON object in the output", output)


def _check_job(job: Any, rw: str, output: str) -> None:
    if not isinstance(job, dict):
        raise ParseError("fio", "a job entry is not an object", output)
    name = job.get("jobname", "?")
    err = job.get("error")
    if err != 0:
        raise ParseError("fio", f"job {name} reports error {err}", output)
    got = job.get("job options", {}).get("rw")
    if got is not None and got != rw:
        raise ParseError("fio", f"job {name} ran rw={got}, expected rw={rw}", output)


def _number(section: dict[str, Any], key: str, what: str, output: str) -> float:
    value = section.get(key)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or math.isnan(value):
        raise ParseError("fio", f"{what}: {key} missing or not a number", output)
    return float(value)


def _percentile(clat: dict[str, Any], pct: float, what: str, output: str) -> float:
    table = clat.get("percentile")
    if not isinstance(table, dict):
        raise ParseError("fio", f"{what}: no clat percentiles", output)
    for key, value in table.items():
        try:
            if abs(float(key) - pct) < 1e-6:
                return _number(table, key, what, output)
        except ValueError:
            continue
    raise ParseError("fio", f"{what}: no {pct}th clat percentile", output)


#: fio's sections -> the cache check's kinds of I/O
IO_KIND = {"read": "read", "write": "write", "trim": "write"}


def _direction_metrics(d: str, sections: list[Any], output: str) -> list[Metric]:
    """fio.<d>.bw/iops/clat_* from the jobs' <d> sections."""
    if not all(isinstance(s, dict) for s in sections):
        raise ParseError("fio", f"no {d} section", output)
    what = f"{d} section"
    io_bytes = sum(_number(s, "io_bytes", what, output) for s in sections)
    if io_bytes <= 0:
        raise ParseError("fio", f"the {d} section moved no data (io_bytes 0)", output)
    bw = 0.0
    for s in sections:
        bw += (
            _number(s, "bw_bytes", what, output)
            if "bw_bytes" in s
            else _number(s, "bw", what, output) * 1024
        )
    iops = sum(_number(s, "iops", what, output) for s in sections)
    metrics = [
        Metric(f"fio.{d}.bw", bw / MB, "MB/s", Direction.HIGHER, io=(IO_KIND[d], int(io_bytes))),
        Metric(f"fio.{d}.iops", iops, "ops/s", Direction.HIGHER),
    ]
    for pct, suffix in PERCENTILES:
        worst = max(
            _percentile(s.get("clat_ns") or {}, pct, what, output)
            for s in sections
            if _number(s, "io_bytes", what, output) > 0
        )
        metrics.append(Metric(f"fio.{d}.clat_{suffix}", worst / 1e6, "ms", Direction.LOWER))
    return metrics


def _cpu_metrics(jobs: list[dict[str, Any]], output: str) -> list[Metric]:
    """fio.cpu.usr and fio.cpu.sys, averaged over job entries."""
    out = []
    for key, metric in (("usr_cpu", "fio.cpu.usr"), ("sys_cpu", "fio.cpu.sys")):
        values = [_number(job, key, "job", output) for job in jobs]
        out.append(Metric(metric, sum(values) / len(values), "%", Direction.LOWER))
    return out


#: programs the cases need (program -> Debian package); checked before a target is built
TOOLS = {"fio": "fio"}
PARAMS = (
    Param("fio-rw", "write,read,randwrite,randread", f"fio patterns, of {', '.join(PATTERNS)}", choice(*PATTERNS)),
    Param("fio-bs", "1M,4K", "fio block sizes", size),
    Param("fio-size", "256M", "fio file size per job", size, kind=ONE, holds=file_of),
)

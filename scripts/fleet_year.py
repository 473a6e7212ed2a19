"""A year of a nightly fleet in a result store, generated, and fsbench's reading commands timed on
it: 20 hosts, one session a night each for 365 nights, 40 cases (10 targets x dd write, dd read,
fio randwrite, a kernel build) of 10 measured runs: 2.9 million runs with the metrics a real
session stores per run (the headline figures, CPU, the disks' bytes and the work counted: 22-26 a
run, about 70 million rows). Not a pytest test.

    .venv/bin/python scripts/fleet_year.py --store postgresql://fsbench@db/fsbench_year fill
    .venv/bin/python scripts/fleet_year.py --store postgresql://fsbench@db/fsbench_year measure --site /tmp/site

`fill` fills an empty store (PostgreSQL through COPY; an SQLite file too, slower); `night` adds one
more night of every host; `measure` times `fsbench publish` (a first publish into an empty
directory, again with nothing new, then after one more night: the store keeps that night), the
pages' sizes, `fsbench changes`, `compare` and `sessions`, and a session's report (what publish
--reports writes), each as a user runs it (the whole command). The PostgreSQL
password comes as for fsbench (PGPASSFILE, ~/.pgpass, PGPASSWORD).

The noise is seeded, so every store of the same size holds the same numbers: each run's figure
varies about its session's (a case's coefficient of variation, 2-9 %), each session's about its
host's level (a whole session by 4 %, each case in it by 3 %), one session in 60 is disturbed
(every figure 25 % lower, others' CPU high). Planted are the changes EVENTS lists, each with what
differed where it came (a kernel, an fs option, fsbench's commit, or nothing: the machine); the
work is counted from night WORK_FROM on (an fsbench that counts it), as an upgraded fleet records it.
"""

from __future__ import annotations

import argparse
import datetime as dt
import html
import io
import json
import math
import os
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pytest_fsbench.metrics import SIDE_METRICS, WORK_PER_BYTE  # noqa: E402
from pytest_fsbench.store.results import Store, canonical, summary_text  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
FIRST_NIGHT = dt.datetime(2025, 11, 1, 1, 0, tzinfo=dt.timezone.utc)
#: the night from which sessions count the work (their fsbench does)
WORK_FROM = 200
COMMITS = {0: "3f1c2a9d8e7b6a5c4d3e2f1a0b9c8d7e6f5a4b3c", 60: "8a7b6c5d4e3f2a1b0c9d8e7f6a5b4c3d2e1f0a9b",
           WORK_FROM: "c4d3e2f1a0b9c8d7e6f5a4b3c2d1e0f9a8b7c6d5", 280: "e6f5a4b3c2d1e0f9a8b7c6d5e4f3a2b1c0d9e8f7"}


@dataclass(frozen=True)
class Target:
    case_id: str
    fs: str
    layout: str
    options: dict[str, str]
    speed: float  # relative to ext4 on one disk
    write_amp: float  # device bytes per byte written
    commits_per_gb: float


TARGETS = (
    Target("ext4-single", "ext4", "single", {}, 1.0, 1.004, 60.0),
    Target("ext4-single-mount=nodelalloc", "ext4", "single", {"mount": "nodelalloc"}, 0.82, 1.006, 95.0),
    Target("ext3-single", "ext3", "single", {}, 0.7, 1.02, 240.0),
    Target("ext2-single", "ext2", "single", {}, 0.9, 1.001, 0.0),
    Target("xfs-single", "xfs", "single", {}, 1.05, 1.003, 30.0),
    Target("btrfs-single", "btrfs", "single", {}, 0.85, 1.08, 12.0),
    Target("btrfs-single-compress=zstd", "btrfs", "single", {"compress": "zstd"}, 0.75, 1.05, 12.0),
    Target("btrfs-raid1", "btrfs", "raid1", {}, 0.55, 2.1, 12.0),
    Target("zfs-single", "zfs", "single", {}, 0.5, 1.15, 8.0),
    Target("zfs-mirror", "zfs", "mirror", {}, 0.4, 2.3, 8.0),
)


@dataclass(frozen=True)
class Workload:
    test: str  # the test function
    suffix: str  # the end of the case's id
    workload: str
    params: dict[str, str]
    figures: tuple[tuple[str, str, str, float, float], ...]  # (metric, unit, direction, level, run CV)
    writes: bool  # its work is written (else read)


WORKLOADS = (
    Workload("test_dd.py::test_dd_write", "1M", "dd", {"bs": "1M", "data": "random", "size": "256M"},
             (("dd.write", "MB/s", "higher", 520.0, 0.05),), True),
    Workload("test_dd.py::test_dd_read", "1M", "dd", {"bs": "1M", "data": "random", "size": "256M"},
             (("dd.read", "MB/s", "higher", 900.0, 0.04),), False),
    Workload("test_fio.py::test_fio", "randwrite-4k-64M", "fio",
             {"bs": "4k", "iodepth": "1", "ioengine": "psync", "numjobs": "1", "rw": "randwrite", "size": "64M"},
             (("fio.write.bw", "MB/s", "higher", 95.0, 0.08), ("fio.write.iops", "ops/s", "higher", 23000.0, 0.08),
              ("fio.write.clat_p50", "ms", "lower", 0.021, 0.06), ("fio.write.clat_p99", "ms", "lower", 0.35, 0.09)),
             True),
    Workload("test_kernel_build.py::test_kernel_build", "defconfig", "kernel_build",
             {"config": "tinyconfig", "jobs": "2", "source": "linux-source-6.1.tar.xz", "target": ""},
             (("kernel_build.seconds", "s", "lower", 310.0, 0.02), ("kernel_build.user_seconds", "s", "lower", 480.0,
                                                                    0.02),
              ("kernel_build.sys_seconds", "s", "lower", 95.0, 0.03)), True),
)


@dataclass(frozen=True)
class Case:
    target: Target
    workload: Workload

    @property
    def test(self) -> str:
        return f"benchmarks/{self.workload.test}[{self.target.case_id}-{self.workload.suffix}]"

    @property
    def spec(self) -> dict[str, object]:
        return {"fs": self.target.fs, "id": self.target.case_id, "layout": self.target.layout,
                "options": self.target.options}


CASES = tuple(Case(t, w) for w in WORKLOADS for t in TARGETS)


@dataclass(frozen=True)
class Event:
    """From night on, on hosts (None: every one), the cases that match it change: their speed by
    speed (a factor; a time divides by it), their work per byte by work; what differed: the
    kernel it brought (None: none), or nothing in the software (the machine)."""

    night: int
    what: str
    matches: Callable[[Case], bool]
    hosts: tuple[int, ...] | None = None
    speed: float = 1.0
    work: float = 1.0
    kernel: str | None = None
    until: int | None = None  # the night it was undone (a regression fixed)


def _on(fs: str, test: str = "", case_id: str | None = None) -> Callable[[Case], bool]:
    return lambda c: c.target.fs == fs and test in c.workload.test and (case_id is None or c.target.case_id == case_id)


EVENTS = (
    Event(120, "kernel 6.1.0-26: ext4's dd write 15 % slower on every host", _on("ext4", "dd_write", "ext4-single"),
          speed=0.85, kernel="6.1.0-26-amd64"),
    Event(150, "kernel 6.1.0-27 on the NVMe hosts: XFS's dd read 20 % slower, fixed by 6.1.0-28 on night 180",
          _on("xfs", "dd_read"), hosts=tuple(range(1, 9)), speed=0.8, kernel="6.1.0-27-amd64", until=180),
    Event(250, "fleet-07's disk replaced: every case 25 % faster there, nothing in the software changed",
          lambda c: True, hosts=(7,), speed=1.25),
    Event(300, "kernel 6.12.9: zstd-compressed Btrfs writes 30 % faster with fio", _on("btrfs", "fio",
                                                                                      "btrfs-single-compress=zstd"),
          speed=1.3, kernel="6.12.9-amd64"),
    Event(330, "kernel 6.12.11: ext4 commits and flushes 40 % more per GB written, at the same speed",
          _on("ext4", "", "ext4-single"), work=1.4, kernel="6.12.11-amd64"),
    Event(340, "the SATA hosts' ZFS: the kernel build 12 % slower (kernel 6.12.11 there too)",
          _on("zfs", "kernel_build"), hosts=tuple(range(9, 17)), speed=1 / 1.12, kernel="6.12.11-amd64"),
)


def host_name(number: int) -> str:
    return f"fleet-{number:02d}"


def host_speed(number: int) -> float:
    """NVMe hosts 1-8, SATA SSDs 9-16, disks 17 and up; each machine a little apart from its kind."""
    kind = 1.0 if number <= 8 else 0.6 if number <= 16 else 0.3
    return kind * (1 + 0.04 * math.sin(number * 2.3))


def kernel_on(night: int, host: int) -> str:
    """The host's kernel on a night: the newest one an event brought to it by then."""
    found = "6.1.0-25-amd64"
    for event in EVENTS:
        if event.kernel and night >= event.night and (event.hosts is None or host in event.hosts):
            found = event.kernel
        if event.kernel and event.until is not None and night >= event.until and (event.hosts is None
                                                                                   or host in event.hosts):
            found = "6.1.0-28-amd64"
    return found


def commit_on(night: int) -> str:
    return COMMITS[max(n for n in COMMITS if n <= night)]


def factors(night: int, host: int, case: Case) -> tuple[float, float]:
    """(speed, work) the planted events give a case on a host on a night."""
    speed = work = 1.0
    for event in EVENTS:
        live = night >= event.night and (event.until is None or night < event.until)
        if live and (event.hosts is None or host in event.hosts) and event.matches(case):
            speed, work = speed * event.speed, work * event.work
    return speed, work


# --- one session's rows ------------------------------------------------------------------------


@dataclass
class Ids:
    session: int = 0
    case: int = 0
    run: int = 0


@dataclass
class Rows:
    """A batch of rows for COPY (tab-separated text) or executemany."""

    sessions: list[tuple] = field(default_factory=list)
    cases: list[tuple] = field(default_factory=list)
    runs: list[tuple] = field(default_factory=list)
    metrics: list[tuple] = field(default_factory=list)
    tests: list[tuple] = field(default_factory=list)
    targets: list[tuple] = field(default_factory=list)


def session_rows(rows: Rows, ids: Ids, night: int, host: int, rng: random.Random, runs: int,
                 cases: Sequence[Case] = CASES) -> None:
    """One host's session of one night, every case measured runs times."""
    ids.session += 1
    name = host_name(host)
    started = FIRST_NIGHT + dt.timedelta(days=night, minutes=3 * host)
    kernel = kernel_on(night, host)
    manifest = {"cpu": "AMD EPYC 7313P 16-Core Processor", "cpus": 32, "devices": "real", "fsbench": "0.1.0",
                "fsbench_commit": commit_on(night), "hostname": name, "kernel": kernel,
                "process": f"{1000 + night} {started.timestamp():.2f}", "python": "3.11.2",
                "ram_bytes": 137438953472, "zfs_implementation": "openzfs 2.2.7"}
    argv = ["benchmarks", "--fs=ext4,ext3,ext2,xfs,btrfs,zfs", "--layout=single,raid1,mirror",
            "--fs-opt=ext4:mount=nodelalloc", "--fs-opt=btrfs:compress=zstd", "--runs=10", "--warmup=0",
            "--compare=nightly", "--store=postgresql://fsbench@db/fsbench"]
    ran = {"filesystems": ["btrfs", "ext2", "ext3", "ext4", "xfs", "zfs"], "kernels": ["host"],
           "layouts": ["mirror", "raid1", "single"], "options": ["btrfs:compress=zstd", "ext4:mount=nodelalloc"],
           "paired": [], "selection": {"files": ["benchmarks"]}}
    disturbed = rng.random() < 1 / 60
    machine = math.exp(rng.gauss(0, 0.04)) * (0.75 if disturbed else 1.0)
    clock = started
    for case in cases:
        clock = case_rows(rows, ids, night, host, case, rng, runs, machine, disturbed, clock, kernel)
    rows.sessions.append((ids.session, f"{name}-{night:03d}", iso(started), iso(clock), "complete",
                          canonical({"argv": argv, "ran": ran}), canonical(manifest)))


def iso(moment: dt.datetime) -> str:
    return moment.isoformat(timespec="seconds")


def case_rows(rows: Rows, ids: Ids, night: int, host: int, case: Case, rng: random.Random, runs: int,
              machine: float, disturbed: bool, clock: dt.datetime, kernel: str) -> dt.datetime:
    ids.case += 1
    target, workload = case.target, case.workload
    speed, work = factors(night, host, case)
    session_case = math.exp(rng.gauss(0, 0.03))
    device = f"/dev/nvme{host % 4}n1"
    counted = night >= WORK_FROM
    mount = {"ext4": "rw,relatime", "ext3": "rw,relatime", "ext2": "rw,relatime", "xfs": "rw,relatime,attr2,inode64",
             "btrfs": "rw,relatime,ssd,space_cache=v2", "zfs": "rw,xattr,noacl"}[target.fs]
    if target.options.get("mount"):
        mount += "," + target.options["mount"]
    if target.options.get("compress"):
        mount += ",compress=" + target.options["compress"]
    manifest = {"applied": {"mount": f"{device}p1 {target.fs}   {mount}"}, "case": case.spec,
                "commands": [f"mkfs.{target.fs} -q {device}p1", f"mount -t {target.fs} {device}p1 /mnt/fsbench"],
                "devices": [{"path": f"{device}p1", "size_bytes": 400 << 30}]}
    if counted:
        manifest["work_counted"] = {"devices": f"the host's block devices {device.split('/')[-1]}p1 "
                                               "(/sys/block/DEV/stat)"}
    case_row = [ids.case, ids.session, case.test, target.case_id, canonical(case.spec), workload.workload,
                canonical(workload.params), "drop", "random", "done", "runs", canonical(manifest), None]
    rows.cases.append(case_row)
    rows.tests.append((ids.session, case.test, "passed"))
    rows.targets.append((ids.session, case.test, target.case_id, round(rng.uniform(2, 9), 3),
                         round(rng.uniform(0.5, 2), 3)))
    level = host_speed(host) * target.speed * machine * session_case * speed
    compared: dict[tuple, list[float]] = {}  # what the case's summary keeps, as a session's store does
    for idx in range(runs):
        ids.run += 1
        noise = [math.exp(rng.gauss(0, cv)) for *_, cv in workload.figures]
        values = []
        for (metric, unit, direction, base, _), n in zip(workload.figures, noise):
            values.append((metric, unit, direction, base * level * n if direction == "higher" else base / (level * n)))
        seconds = values[0][3] if workload.workload == "kernel_build" else 256 / max(values[0][3], 1.0)
        started, clock = clock, clock + dt.timedelta(seconds=seconds + 4)
        rows.runs.append((ids.run, ids.case, idx, 0, iso(started), iso(clock), round(seconds, 4),
                          "drop: sync+drop_caches", round(rng.uniform(0.1, 0.4), 4), round(rng.uniform(0.1, 0.3), 4),
                          round(seconds + rng.uniform(0.5, 1.5), 4), round(rng.uniform(0.001, 0.01), 4) if counted
                          else None))
        params = canonical(workload.params) if workload.workload == "dd" else "{}"
        found = [(ids.run, metric, params, value, unit, direction) for metric, unit, direction, value in values]
        found += side_metrics(ids.run, rng, workload, disturbed)
        if counted:
            found += work_metrics(ids.run, rng, target, workload, work)
        rows.metrics += found
        for _, metric, metric_params, value, unit, direction in found:
            if not metric.startswith(SIDE_METRICS) or metric in WORK_PER_BYTE:
                compared.setdefault((metric, metric_params, unit, direction), []).append(value)
    case_row[-1] = summary_text(manifest, [[*key, values] for key, values in compared.items()])
    rows.cases[-1] = tuple(case_row)
    return clock


def side_metrics(run: int, rng: random.Random, workload: Workload, disturbed: bool) -> list[tuple]:
    others = rng.uniform(40, 80) if disturbed else rng.uniform(1, 6)
    moved = 256.0 if workload.workload == "dd" else 64.0 if workload.workload == "fio" else 900.0
    found = [("cpu.user", rng.uniform(5, 20)), ("cpu.system", rng.uniform(10, 35)), ("cpu.iowait", rng.uniform(2, 20)),
             ("cpu.tool", rng.uniform(8, 15)), ("cpu.others", others),
             ("disk.read", 0.008 if workload.writes else moved), ("disk.write", moved if workload.writes else 0.02),
             ("disk.read_ops", 2.0), ("disk.write_ops", moved * 4), ("disk.others", rng.uniform(0, 3))]
    units = {"cpu": ("%", "lower"), "disk.read": ("MB", "lower"), "disk.write": ("MB", "lower"),
             "disk.read_ops": ("ops", "lower"), "disk.write_ops": ("ops", "lower"), "disk.others": ("MB/s", "lower")}
    out = [(run, name, "{}", value, *units.get(name, units["cpu"])) for name, value in found]
    if workload.workload == "dd":
        out.append((run, "disk.share", canonical({**workload.params, "metric": workload.figures[0][0]}), 100.0, "%",
                    "higher"))
    return out


def work_metrics(run: int, rng: random.Random, target: Target, workload: Workload, work: float) -> list[tuple]:
    """The work counted after a run: raw counts and per byte moved, with the few percent counts of
    events move by when the journal commits and writeback runs."""
    moved = 256.0 if workload.workload == "dd" else 64.0 if workload.workload == "fio" else 900.0
    if not workload.writes:
        amp = 1.0 + rng.uniform(0, 0.002)
        requests = round(moved * amp / 0.5)
        return [(run, "work.read", "{}", moved * amp, "MB", "lower"),
                (run, "work.read_requests", "{}", float(requests), "req", "lower"),
                (run, "work.read_amp", "{}", amp, "x", "lower"),
                (run, "work.requests_per_mb", "{}", requests / moved, "req/MB", "lower")]
    amp = target.write_amp * math.exp(rng.gauss(0, 0.003))
    written = moved * amp
    small = workload.workload != "dd"
    requests = round(written / (0.004 if small else 0.7) * math.exp(rng.gauss(0, 0.02)))
    flushes = max(0, round(moved / 1000 * (180 if target.fs != "ext2" else 2) * work * math.exp(rng.gauss(0, 0.04))))
    commits = max(0, round(moved / 1000 * target.commits_per_gb * work * math.exp(rng.gauss(0, 0.04))))
    gb = moved / 1000 * 1.073741824  # per GiB-free GB of what the workload moved
    return [(run, "work.written", "{}", written, "MB", "lower"), (run, "work.read", "{}", 0.008, "MB", "lower"),
            (run, "work.write_requests", "{}", float(requests), "req", "lower"),
            (run, "work.read_requests", "{}", 2.0, "req", "lower"), (run, "work.flushes", "{}", float(flushes), "req",
                                                                     "lower"),
            (run, "work.discards", "{}", 0.0, "req", "lower"), (run, "work.commits", "{}", float(commits), "commits",
                                                                "lower"),
            (run, "work.write_amp", "{}", amp, "x", "lower"),
            (run, "work.flushes_per_gb", "{}", flushes / gb, "/GB", "lower"),
            (run, "work.commits_per_gb", "{}", commits / gb, "/GB", "lower"),
            (run, "work.requests_per_mb", "{}", requests / moved, "req/MB", "lower")]


# --- writing them --------------------------------------------------------------------------------

COLUMNS = {
    "sessions": "id, token, started, finished, status, args, manifest",
    "cases": "id, session_id, test, case_id, spec, workload, workload_params, cache, data, status, stopped_by, manifest,"
             " summary",
    "runs": "id, case_row, idx, warmup, started, finished, seconds, cache_applied, prepare_seconds, cache_seconds,"
            " wall_seconds, count_seconds",
    "metrics": "run_id, name, params, value, unit, direction",
    "tests": "session_id, test, outcome",
    "targets": "session_id, test, case_id, build_seconds, teardown_seconds",
}
#: the tables in the order their rows refer to each other
TABLES = ("sessions", "cases", "runs", "metrics", "tests", "targets")


def copy_text(rows: Sequence[tuple]) -> bytes:
    out = io.StringIO()
    for row in rows:
        out.write("\t".join("\\N" if v is None else _copy_value(v) for v in row))
        out.write("\n")
    return out.getvalue().encode()


def _copy_value(value: object) -> str:
    if isinstance(value, float):
        return repr(value)
    return str(value).replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n")


def write_rows(store: Store, rows: Rows) -> None:
    """The batch into the store, in one transaction: COPY on PostgreSQL, executemany on SQLite."""
    with store.db.transaction():
        for table in TABLES:
            found = getattr(rows, table)
            if not found:
                continue
            if store.db.dialect == "postgresql":
                with store.db.connection.cursor() as cursor:
                    with cursor.copy(f"COPY {table} ({COLUMNS[table]}) FROM STDIN") as copy:
                        copy.write(copy_text(found))
            else:
                marks = ", ".join("?" * len(found[0]))
                store.db.executemany(f"INSERT INTO {table} ({COLUMNS[table]}) VALUES ({marks})", found)


def next_ids(store: Store) -> Ids:
    one = lambda table: int(store.db.execute(f"SELECT COALESCE(MAX(id), 0) FROM {table}").fetchone()[0])  # noqa: E731
    return Ids(one("sessions"), one("cases"), one("runs"))


def set_sequences(store: Store) -> None:
    """PostgreSQL's identity columns continue after the ids the script gave."""
    if store.db.dialect != "postgresql":
        return
    for table in ("sessions", "cases", "runs"):
        store.db.execute(f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), (SELECT MAX(id) FROM {table}))")


def nights_done(store: Store) -> int:
    """How many nights the store holds (its newest session's night, plus one)."""
    row = store.db.execute("SELECT MAX(started) FROM sessions").fetchone()
    if not row or not row[0]:
        return 0
    return (dt.datetime.fromisoformat(row[0]).date() - FIRST_NIGHT.date()).days + 1


def fill(store: Store, nights: range, hosts: int, runs: int, cases: Sequence[Case] = CASES,
         say: Callable[[str], None] = print) -> None:
    """Every host's session of each night, a night per transaction; seeded by the night."""
    ids = next_ids(store)
    start = time.monotonic()
    for night in nights:
        rng = random.Random(night * 7919 + 1)
        rows = Rows()
        for host in range(1, hosts + 1):
            session_rows(rows, ids, night, host, rng, runs, cases)
        write_rows(store, rows)
        if night % 30 == 29:
            say(f"  night {night + 1}: {ids.run:,} runs, {time.monotonic() - start:.0f} s")
    set_sequences(store)
    if store.db.dialect == "postgresql":
        store.db.execute("ANALYZE")


# --- measuring ---------------------------------------------------------------------------------

#: how many times a command that only reads is timed
REPEAT = 3


def fsbench(*args: str) -> tuple[float, float, str]:
    """An fsbench command as a user runs it: its seconds (Python's start included), the CPU seconds
    it and its processes took, and what it printed."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "pytest_fsbench.cli", *args], cwd=REPO, capture_output=True,
                          text=True, check=False)
    seconds = time.monotonic() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    if done.returncode not in (0, 1):
        sys.exit(f"fleet_year: fsbench {' '.join(args[:2])} failed ({done.returncode}): {done.stderr[-800:]}")
    return seconds, cpu, done.stdout + done.stderr


def page_sizes(site: Path) -> str:
    """How many pages a published site holds, their size, and the largest."""
    pages = list(site.rglob("*.html"))
    largest = max(pages, key=lambda p: p.stat().st_size)
    total = sum(p.stat().st_size for p in site.rglob("*") if p.is_file())
    return (f"{len(pages)} pages, {total / 1e6:.0f} MB in all (with data/); the largest {largest.relative_to(site)} "
            f"{largest.stat().st_size / 1e6:.2f} MB")


def last_line(out: str) -> str:
    return out.strip().splitlines()[-1]


def measure(store: Store, location: str, site: Path, runs: int) -> None:
    """Each command timed as a user runs it (wall and CPU seconds, the machine's load before it),
    with what it said; a command that reads only, REPEAT times (the median, and the range of the
    wall times: other jobs come and go)."""
    def timed(what: str, *args: str, note: Callable[[str], str] = last_line, times: int = REPEAT) -> None:
        load = os.getloadavg()[0]
        found = [fsbench(*args) for _ in range(times)]
        seconds, cpu = statistics.median(f[0] for f in found), statistics.median(f[1] for f in found)
        spread = f" ({min(f[0] for f in found):.1f}-{max(f[0] for f in found):.1f})" if times > 1 else ""
        print(f"  {what:46} {seconds:6.1f} s{spread} ({cpu:5.1f} s CPU, load {load:.1f})  {note(found[-1][2])[:150]}",
              flush=True)

    every = store.sessions()
    hosts = sorted({row.host for row in every})
    newest = [row.id for row in every if row.host == hosts[0]]
    timed("fsbench publish DIR (first, an empty DIR)", "publish", str(site), f"--store={location}", times=1)
    print(f"  {page_sizes(site)}")
    timed("fsbench publish DIR (again, nothing new)", "publish", str(site), f"--store={location}", times=1)
    start = time.monotonic()
    done = nights_done(store)
    fill(store, range(done, done + 1), len(hosts), runs, say=lambda _: None)
    print(f"  (night {done + 1} added, {len(hosts)} sessions, in {time.monotonic() - start:.0f} s)")
    timed("fsbench publish DIR (one new night)", "publish", str(site), f"--store={location}", times=1)
    print(f"  {page_sizes(site)}")
    timed(f"fsbench changes --host={hosts[0]}", "changes", f"--host={hosts[0]}", f"--store={location}")
    timed("fsbench changes --all-hosts --json", "changes", "--all-hosts", "--json", f"--store={location}", times=1,
          note=lambda out: same_change_points(site, store.path, out))
    timed(f"fsbench compare {newest[-2]} {newest[-1]}", "compare", str(newest[-2]), str(newest[-1]),
          f"--store={location}")
    timed("fsbench sessions", "sessions", f"--store={location}", note=lambda out: f"{len(out.splitlines())} lines")
    timed(f"fsbench sessions --host={hosts[0]}", "sessions", f"--host={hosts[0]}", f"--store={location}",
          note=lambda out: f"{len(out.splitlines())} lines")
    week = (FIRST_NIGHT + dt.timedelta(days=done - 6)).date()
    timed("fsbench sessions --since=(a week ago)", "sessions", f"--since={week}", f"--store={location}",
          note=lambda out: f"{len(out.splitlines())} lines")
    timed("fsbench --help (Python's start and imports)", "--help", note=lambda out: f"{len(out.splitlines())} lines")
    print(f"  {in_a_browser(site, store, hosts[0])}")
    print("\n".join(f"  {line}" for line in planted_found(site, store.path)))
    with tempfile.TemporaryDirectory(prefix="fsbench-year-report-") as tmp:
        page = Path(tmp) / "report.html"  # what publish --reports writes of a session, a year behind it
        timed(f"fsbench report {newest[-1]} (a session of {hosts[0]})", "report", str(newest[-1]), f"-o={page}",
              f"--store={location}", note=lambda out: f"{page.stat().st_size / 1e6:.1f} MB", times=1)


def same_change_points(site: Path, store_name: str, printed: str) -> str:
    """Whether the site holds every change point `fsbench changes --all-hosts --json` printed, and
    no other: each one's host, case, figure, session and p."""
    from pytest_fsbench.views import publish

    document, _ = json.JSONDecoder().raw_decode(printed)
    said = {(c["host"], c["test"], c["metric"], c["session"], round(c["p"], 12)) for c in document["changes"]}
    record = publish.load_record(site, store_name)
    shown = {(t.host, t.key.test, t.key.metric, t.sessions[i], round(p, 12)) for t in publish.build_tracks(record)
             for i, _, _, p in record.state["analysed"][publish.track_id(t)][1]}
    verdict = "the same" if shown == said else f"DIFFERENT: {len(shown - said)} on the site alone, {len(said - shown)} not"
    return f"{len(said)} change points; the site's {len(shown)}: {verdict}"


def planted_found(site: Path, store_name: str) -> list[str]:
    """For each planted change (EVENTS), in how many of the series it moved the site marks a change
    point at its night (or the night before or after), and where it was undone."""
    from pytest_fsbench.views import publish

    record = publish.load_record(site, store_name)
    by_test = {case.test: case for case in CASES}
    nights = {int(s): (dt.date.fromisoformat(v[2][:10]) - FIRST_NIGHT.date()).days for s, v in record.sessions.items()}
    tracks = publish.build_tracks(record)
    lines = []
    for event in EVENTS:
        found = total = 0
        for track in tracks:
            case = by_test.get(track.key.test)
            host = int(track.host.rsplit("-", 1)[-1])
            moved = ({"work.commits_per_gb", "work.flushes_per_gb"} if event.work != 1
                     else {metric for metric, *_ in case.workload.figures} if case else set())
            if case is None or not event.matches(case) or track.key.metric not in moved or (
                    event.hosts is not None and host not in event.hosts):
                continue
            total += 1
            at = {nights[track.sessions[i]] for i, *_ in record.state["analysed"][publish.track_id(track)][1]}
            came = any(n in at for n in (event.night - 1, event.night, event.night + 1))
            undone = event.until is None or any(n in at for n in (event.until - 1, event.until, event.until + 1))
            found += came and undone
        lines.append(f"night {event.night}: {event.what}: marked in {found} of {total} series")
    return lines


#: at the end of a page's <body>: its change points' lines as laid out, and its charts
PROBE = """<script>
const out = document.createElement('pre'); out.id = 'fsbench-probe';
out.textContent = JSON.stringify({charts: document.querySelectorAll('svg.chart').length,
  changes: [...document.querySelectorAll('svg.chart line.change')].filter(l => l.getBoundingClientRect().height > 0)
            .map(l => l.dataset.session)});
document.body.appendChild(out);
</script>"""


def in_a_browser(site: Path, store: Store, host: str) -> str:
    """What headless Chromium lays out of the host's page of ext4's dd write: its charts and the
    change points marked on them, against those fsbench changes finds in the same series."""
    from pytest_fsbench.verdicts import changes
    from pytest_fsbench.views import history, site as pages

    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if browser is None:
        return "no Chromium here: the pages were not opened in a browser"
    case = history.Case("benchmarks/test_dd.py::test_dd_write[ext4-single-1M]", "dd",
                        canonical({"bs": "1M", "data": "random", "size": "256M"}))
    page = site / pages.host_path(case, host)
    probe = page.with_name("probe.html")
    probe.write_text(page.read_text().replace("</body>", PROBE + "</body>"))
    start = time.monotonic()
    dom = subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--dump-dom", probe.as_uri()],
                         capture_output=True, text=True, timeout=300, check=False).stdout
    probe.unlink()
    found = json.loads(html.unescape(dom.split('<pre id="fsbench-probe">', 1)[1].split("</pre>", 1)[0]))
    expected = [str(c.session.session_id) for c in changes.detect(store, host) if c.history.key.test == case.test]
    same = sorted(found["changes"]) == sorted(expected)
    return (f"Chromium laid out {page.relative_to(site)} in {time.monotonic() - start:.1f} s: {found['charts']} charts, "
            f"{len(found['changes'])} change points marked; fsbench changes finds {len(expected)} in the case's "
            f"series on {host}: {'the same sessions' if same else 'DIFFERENT sessions'}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--store", required=True, help="an empty PostgreSQL database's URL, or an SQLite file")
    parser.add_argument("--hosts", type=int, default=20)
    parser.add_argument("--nights", type=int, default=365)
    parser.add_argument("--runs", type=int, default=10, help="measured runs per case (40 cases a session)")
    parser.add_argument("action", choices=("fill", "night", "measure"))
    parser.add_argument("--site", type=Path, help="measure: the directory to publish into (default: a temporary one)")
    args = parser.parse_args()
    store = Store(args.store)
    try:
        if args.action == "fill":
            if store.sessions():
                sys.exit(f"fleet_year: {store.path} is not empty; give an empty database")
            start = time.monotonic()
            fill(store, range(args.nights), args.hosts, args.runs)
            runs = store.db.execute("SELECT COUNT(*) FROM runs").fetchone()[0]
            print(f"{store.path}: {runs:,} runs of {args.hosts} hosts in {args.nights} nights, made in "
                  f"{time.monotonic() - start:.0f} s")
        elif args.action == "night":
            done = nights_done(store)
            fill(store, range(done, done + 1), args.hosts, args.runs)
            print(f"{store.path}: night {done + 1} added")
        else:
            with tempfile.TemporaryDirectory(prefix="fsbench-year-site-") as tmp:
                site = args.site or Path(tmp) / "site"
                measure(store, args.store, site, args.runs)
    finally:
        store.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())

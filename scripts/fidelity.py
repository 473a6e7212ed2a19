"""Fidelity: does fsbench report what a person gets by typing the same commands? Not a pytest test.

    .venv/bin/python scripts/fidelity.py                  # ext4, every installed tool, 10 rounds (~10 min)
    .venv/bin/python scripts/fidelity.py --runs 5 --workloads dd,fio --fs xfs

For each workload (dd write, dd read, IOzone, fio, dbench, bonnie++) a fresh target is built the
way fsbench's cases build one (its session and driver: a sparse image on a loop device with direct
I/O), and on that one mount the workload is measured in rounds, once by fsbench
(`target.measure(workload, run, "drop")`, the path its cases take) and once by hand, alternating
which goes first. One round is made and discarded first, as fsbench's --warmup 1 does.

By hand is `subprocess.run` of the workload's own command lines, as a person would type them: its
input data generated once (fsbench's generator) into /dev/shm (fsbench holds its data sets mapped,
so emptying the page cache leaves them resident; tmpfs keeps them in memory the same way), its
preparation (every run's, and once per target e.g. the file dd reads), `sync` and
`echo 3 > /proc/sys/vm/drop_caches` (after `sync` and the driver's own eviction where fsbench does
one on every run: ZFS export/import), then the measured command; for a workload with `phases` (the
multi-phase IOzone) each phase's command, the caches emptied before each. Its figures come from the
tools' own output: the workload's parser, except IOzone, whose table row is read by a few lines of
our own (so a fault in fsbench's parser shows as a ratio, not hidden on both sides).

stdout: one JSON line per headline metric, {"workload", "metric", "fs", "runs", "fsbench_median",
"by_hand_median", "ratio" (fsbench / by hand), "unit"}; stderr: every round's figures and a
summary. A workload whose tool is missing is skipped with its reason. Needs root; targets, loop
devices and images are removed on the way out, also on an error, Ctrl-C or SIGTERM.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any, NoReturn

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pytest_fsbench.case import CaseSpec  # noqa: E402
from pytest_fsbench.filesystems import FILESYSTEMS, driver  # noqa: E402
from pytest_fsbench.kernels.probe import probe  # noqa: E402
from pytest_fsbench.metrics import Direction, Metric  # noqa: E402
from pytest_fsbench.session import FsbenchSession  # noqa: E402
from pytest_fsbench.settings import Settings  # noqa: E402
from pytest_fsbench.verdicts.stats import PAIRED, compare  # noqa: E402
from pytest_fsbench.system.commands import execute  # noqa: E402
from pytest_fsbench.targets.target import Target  # noqa: E402
from pytest_fsbench.workloads import SBIN, bonnie, dbench, dd, fio, iozone  # noqa: E402
from pytest_fsbench.workloads.base import Workload  # noqa: E402
from pytest_fsbench.measure.run import dataset_files  # noqa: E402
from pytest_fsbench.sizes import existing_ancestor

#: fsbench's default cache policy; by hand: sync + drop_caches (after the driver's eviction, if any)
CACHE = "drop"
DROP_CACHES = Path("/proc/sys/vm/drop_caches")
#: where the by-hand side keeps its data sets: tmpfs, in memory whatever the cache policy drops
MEMORY_ROOT = Path(f"/dev/shm/fsbench-fidelity-{os.getpid()}")
#: fsbench's --image-size is 4G; bonnie++'s 4 GiB file needs more (the images are sparse)
IMAGE_SIZE = 8 << 30
IOZONE_RECORD_KB = 1024
IOZONE_FILE_KB = 512 * 1024


@dataclass(frozen=True)
class Headline:
    """The metric compared: its name and the params a metric must carry to be it (IOzone's record
    size, when a run reports several)."""

    metric: str
    params: tuple[tuple[str, str], ...] = ()

    def pick(self, metrics: Sequence[Metric]) -> Metric | None:
        """The metric of `metrics` this headline names; None when the run did not report it
        (bonnie++'s "+++++": too fast to measure); LookupError when several match."""
        wanted = dict(self.params)
        found = [m for m in metrics
                 if m.name == self.metric and all(m.params.get(k) == v for k, v in wanted.items())]
        if len(found) > 1:
            raise LookupError(f"{len(found)} metrics {self.metric} {wanted}: the headline is ambiguous")
        return found[0] if found else None


@dataclass(frozen=True)
class Case:
    """One workload measured both ways on one freshly built target."""

    workload: str  # its name in --workloads and the JSON lines
    module: ModuleType  # declares TOOLS (and maybe unavailable())
    make: Callable[[], Workload]
    headlines: tuple[Headline, ...]
    #: the by-hand figures from the measured (argv, output) pairs; None: each phase's own parse
    own_parse: Callable[[list[tuple[list[str], str]]], list[Metric]] | None = None


def iozone_groups(argv: Sequence[str]) -> frozenset[int]:
    """The `-i N` test groups an iozone command line runs."""
    return frozenset(int(argv[i + 1]) for i, arg in enumerate(argv[:-1]) if arg == "-i")


def iozone_row(output: str, groups: frozenset[int], file_kb: int, record_kb: int) -> dict[str, float] | None:
    """The result table's row for (file kB, record kB): test -> kB/s for the tests of `groups`
    (IOzone prints only the columns of the groups it ran, in its table's order); None if absent."""
    columns = [test for test in iozone.TESTS if iozone.TEST_GROUP[test] in groups]
    for line in output.splitlines():
        fields = line.split()
        if len(fields) == 2 + len(columns) and all(f.isdigit() for f in fields) \
                and (int(fields[0]), int(fields[1])) == (file_kb, record_kb):
            return dict(zip(columns, (float(f) for f in fields[2:])))
    return None


def iozone_by_hand(measured: list[tuple[list[str], str]],
                   file_kb: int = IOZONE_FILE_KB, record_kb: int = IOZONE_RECORD_KB) -> list[Metric]:
    """iozone.<test> in MB/s (10^6 bytes/s; IOzone's kB is 1024 bytes) of the row, each test from
    the command that ran it: the one command, or each phase of a multi-phase IOzone."""
    values: dict[str, float] = {}
    for argv, output in measured:
        values |= iozone_row(output, iozone_groups(argv), file_kb, record_kb) or {}
    record = {"record": iozone.kb_label(record_kb)}
    return [Metric(f"iozone.{test}", kb_s * 1024 / 1e6, "MB/s", Direction.HIGHER, dict(record))
            for test, kb_s in values.items()]


def phases_of(workload: Any) -> list[Any]:
    """The measured commands' workloads as fsbench measures them: each of `phases()` (a
    multi-phase IOzone: the write group, then each other group on the kept file), or the workload
    itself when it has no phases."""
    return list(getattr(workload, "phases", lambda: [workload])())


def cases() -> tuple[Case, ...]:
    """What is compared: fsbench's cases' parameters (benchmarks/test_*.py), twice their default
    sizes (dd's 256M takes 0.2 s on this VM) and dbench for 6 s, not 20, so that ten rounds of all
    take about 10 minutes."""
    record = (("record", iozone.kb_label(IOZONE_RECORD_KB)),)
    return (
        Case("dd", dd, lambda: dd.DdWrite(block_size="1M", total_size="512M", data="random"),
             (Headline("dd.write"),)),
        Case("dd", dd, lambda: dd.DdRead(block_size="1M", total_size="512M", data="random"),
             (Headline("dd.read"),)),
        Case("iozone", iozone, lambda: iozone.Iozone(tests=("write", "rewrite", "read", "reread"),
                                                     record=f"{IOZONE_RECORD_KB}k", file=f"{IOZONE_FILE_KB}k",
                                                     flush=True, cpu=True),
             (Headline("iozone.read", record),), own_parse=iozone_by_hand),
        Case("fio", fio, lambda: fio.Fio(rw="read", bs="1M", size="512M", buffer_compress_percentage=0),
             (Headline("fio.read.bw"),)),
        Case("dbench", dbench, lambda: dbench.Dbench(clients=1, seconds=6), (Headline("dbench.throughput"),)),
        # bonnie++ prints "+++++" for a test under 0.5 s; its block read of a file that fits in RAM
        # (24 GB here; -r only says what to assume) comes from the page cache at ~6 GB/s, so the
        # file must be 4 GiB to be timed at all (O_DIRECT, -D, is worse: 8 KiB direct writes)
        Case("bonnie", bonnie, lambda: bonnie.Bonnie(size_mb=4096, files_k=1),
             (Headline("bonnie.block_write"), Headline("bonnie.block_read"))),
    )


WORKLOADS: tuple[str, ...] = tuple(dict.fromkeys(case.workload for case in cases()))


def missing(module: ModuleType) -> list[str]:
    """Why the module's workload cannot run here (its tools not installed, its own reasons)."""
    reasons = [f"{program} is not installed (Debian package {package})"
               for program, package in getattr(module, "TOOLS", {}).items()
               if not (shutil.which(program) or shutil.which(program, path=SBIN))]
    return reasons + list(getattr(module, "unavailable", lambda: [])())


# ---- by hand ----------------------------------------------------------------------------------


def typed(argv: Sequence[str]) -> str:
    """A command as typed at a shell prompt: run it, return stdout + stderr; fail with its tail."""
    done = subprocess.run([str(a) for a in argv], capture_output=True, text=True, errors="replace")
    if done.returncode != 0:
        tail = (done.stdout + done.stderr).strip()[-1500:]
        raise RuntimeError(f"by hand: {' '.join(map(str, argv))} exited {done.returncode}:\n{tail}")
    return done.stdout + done.stderr


def empty_caches(target: Target) -> None:
    """As fsbench's drop policy: where the driver evicts on every run (ZFS export/import), `sync` and
    that eviction first; then `sync` and `echo 3 > /proc/sys/vm/drop_caches`."""
    if target.driver.evict_on_every_run:
        typed(["sync"])
        for argv in target.driver.evict_plan(target.spec, target.context):
            typed(argv)
    typed(["sync"])
    DROP_CACHES.write_text("3\n")


def staging_argvs(workload: Any, phase: Any, argv: Sequence[str], scratch: Path) -> list[list[str]]:
    """What puts the measured command's input back in memory after the caches are emptied: the
    phase's own staging commands where it has them. The data sets need none: by hand they live in
    /dev/shm (ByHand.dataset), whose pages emptying the page cache leaves alone, as fsbench's held
    (mapped) ones. Reading them back from disk after the drop instead (`dd if=DATA of=/dev/null`,
    as this script did) made the dd write that followed 1.5-2x slower than the same command on a
    source held in memory before the drop (measured: an ext4 loop target, 512M, 6 rounds)."""
    staged = getattr(phase, "staged_argvs", None)
    return [] if staged is None else staged(scratch)


@dataclass
class ByHand:
    """A person at a prompt on one target: a scratch directory off the target (beside the images,
    as fsbench's), data sets generated once, and whether the once-per-target preparation is done."""

    target: Target
    scratch_root: Path
    prepared: bool = False
    memory_root: Path = field(default_factory=lambda: MEMORY_ROOT)
    #: where the by-hand commands read their input: "shm", a copy in /dev/shm (a person's way), or
    #: "fsbench", the very file fsbench's side reads (held in memory by this process), to tell the
    #: input's place from the rest of what differs between the two sides
    data_from: str = "shm"

    def dataset(self, dataset: Any) -> Path:
        """The data set's file in /dev/shm (as a person keeps an input in memory: `cp SOURCE
        /dev/shm/`, which emptying the page cache leaves there), made with fsbench's generator the
        first time it is needed."""
        path = self.memory_root / "datasets" / dataset.filename
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            typed([sys.executable, "-m", "pytest_fsbench.workloads.datagen", "--size", str(dataset.size), "--data",
                   dataset.data, "--seed", str(dataset.seed), str(path)])
        return path

    def prepare(self, workload: Any, workdir: Path, scratch: Path) -> None:
        for filename, text in workload.files().items():
            (scratch / filename).write_text(text)
        shared = dataset_files(workload, self.target.scratch) if self.data_from == "fsbench" else {}
        for name, dataset in getattr(workload, "datasets", dict)().items():
            (scratch / name).symlink_to(shared[name] if name in shared else self.dataset(dataset))
        for argv in workload.prepare_argvs(workdir, scratch):
            typed(argv)
        once = getattr(workload, "prepare_once_argvs", lambda *_: [])(workdir, scratch)
        if once and not self.prepared:
            for argv in once:
                typed(argv)
            self.prepared = True

    def measure(self, case: Case, workload: Any) -> list[Metric]:
        """Preparation, then for each phase: caches emptied, input staged, the measured command."""
        workdir = self.target.workdir()
        self.scratch_root.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(prefix="run-", dir=self.scratch_root) as name:
            scratch = Path(name)
            self.prepare(workload, workdir, scratch)
            measured = []
            for phase in phases_of(workload):
                argv = [str(a) for a in phase.argv(workdir, scratch)]
                empty_caches(self.target)
                for staging in staging_argvs(workload, phase, argv, scratch):
                    typed(staging)
                measured.append((phase, argv, typed(argv)))
        if case.own_parse is not None:
            return case.own_parse([(argv, output) for _, argv, output in measured])
        return [m for phase, _, output in measured for m in phase.parse(output)]


# ---- rounds -----------------------------------------------------------------------------------


@dataclass
class Samples:
    """Each headline's values of the rounds in which both sides reported it."""

    fsbench: dict[str, list[float]] = field(default_factory=dict)
    by_hand: dict[str, list[float]] = field(default_factory=dict)
    units: dict[str, str] = field(default_factory=dict)
    unmeasured: dict[str, int] = field(default_factory=dict)  # rounds a side did not report it

    def add(self, metric: str, fsbench: Metric | None, by_hand: Metric | None) -> None:
        if fsbench is None or by_hand is None:
            self.unmeasured[metric] = self.unmeasured.get(metric, 0) + 1
            return
        self.fsbench.setdefault(metric, []).append(fsbench.value)
        self.by_hand.setdefault(metric, []).append(by_hand.value)
        self.units[metric] = fsbench.unit


def round_order(index: int) -> tuple[str, str]:
    """Who goes first in round `index` (warm-ups negative): fsbench in even rounds, by hand in odd."""
    return ("fsbench", "by_hand") if index % 2 == 0 else ("by_hand", "fsbench")


def shown(metric: Metric | None) -> str:
    return "not reported" if metric is None else f"{metric.value:.1f} {metric.unit}"


def measure_case(case: Case, target: Target, runs: int, warmup: int, scratch_root: Path,
                 data_from: str = "shm") -> Samples:
    workload = case.make()
    hand = ByHand(target, scratch_root, data_from=data_from)
    sides = {"fsbench": lambda: target.measure(workload, execute, CACHE).metrics,
             "by_hand": lambda: hand.measure(case, workload)}
    samples = Samples()
    for index in range(-warmup, runs):
        figures = {}
        for side in round_order(index):
            metrics = sides[side]()
            figures[side] = [headline.pick(metrics) for headline in case.headlines]
        label = f"warm-up {index + warmup + 1}/{warmup}" if index < 0 else f"round {index + 1}/{runs}"
        for headline, mine, theirs in zip(case.headlines, figures["fsbench"], figures["by_hand"]):
            say(f"  {headline.metric} {label} ({round_order(index)[0]} first): fsbench {shown(mine)}, "
                f"by hand {shown(theirs)}")
            if index >= 0:
                samples.add(headline.metric, mine, theirs)
    return samples


def result_line(workload: str, metric: str, fs: str, samples: Samples) -> dict[str, object] | None:
    """The JSON line of one headline metric: both medians and their ratio (fsbench / by hand);
    None when no round measured it on both sides."""
    if metric not in samples.fsbench:
        return None
    fsbench_median = statistics.median(samples.fsbench[metric])
    by_hand_median = statistics.median(samples.by_hand[metric])
    return {"workload": workload, "metric": metric, "fs": fs, "runs": len(samples.fsbench[metric]),
            "fsbench_median": round(fsbench_median, 3), "by_hand_median": round(by_hand_median, 3),
            "ratio": round(fsbench_median / by_hand_median, 4), "unit": samples.units[metric]}


# ---- command line -----------------------------------------------------------------------------


class Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        """One line naming the bad value, exit status 2 (without argparse's usage text)."""
        self.exit(2, f"{self.prog}: {message}\n")


def parse_fs(text: str) -> str:
    if text not in FILESYSTEMS:
        known = ", ".join(FILESYSTEMS)
        raise argparse.ArgumentTypeError(f"{text!r} is not a filesystem fsbench builds ({known})")
    return text


def parse_count(low: int) -> Callable[[str], int]:
    def parse(text: str) -> int:
        if not text.isdigit() or int(text) < low:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number of {low} or more")
        return int(text)
    return parse


def parse_workloads(text: str) -> tuple[str, ...]:
    names = tuple(dict.fromkeys(name.strip() for name in text.split(",")))
    unknown = [name for name in names if name not in WORKLOADS]
    if unknown:
        raise argparse.ArgumentTypeError(f"{unknown[0]!r} is not one of {', '.join(WORKLOADS)}")
    return names


def parse_image_dir(text: str) -> Path:
    where = Path(text).absolute()
    if where.exists() and not where.is_dir():
        raise argparse.ArgumentTypeError(f"{text!r} is not a directory")
    existing = existing_ancestor(where)
    if not existing.is_dir() or not os.access(existing, os.W_OK | os.X_OK):
        raise argparse.ArgumentTypeError(f"{text!r}: {existing} is not a writable directory")
    return where


def arguments(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = Parser(prog="fidelity.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--fs", type=parse_fs, default="ext4", help="filesystem (default ext4)")
    parser.add_argument("--runs", type=parse_count(1), default=10,
                        help="measured rounds per workload (default 10)")
    parser.add_argument("--warmup", type=parse_count(0), default=1,
                        help="rounds first made and discarded on each target, as fsbench's --warmup "
                        "(default 1)")
    parser.add_argument("--workloads", type=parse_workloads, default=WORKLOADS,
                        help=f"comma list of {','.join(WORKLOADS)} (default: all whose tools are installed)")
    parser.add_argument("--image-dir", type=parse_image_dir,
                        default=Path(f"/var/tmp/fsbench-fidelity-{os.getpid()}"),
                        help="directory for the loop images and scratch (default "
                        "/var/tmp/fsbench-fidelity-<pid>)")
    parser.add_argument("--by-hand-data", choices=("shm", "fsbench"), default="shm",
                        help="where the by-hand commands read their input: a copy in /dev/shm (default), or "
                        "the file fsbench's side reads, held in memory")
    return parser.parse_args(argv)


def say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


@contextlib.contextmanager
def session_for(fs: str, image_dir: Path) -> Iterator[FsbenchSession]:
    """An fsbench session that builds targets as its cases do; on the way out (also on an error,
    Ctrl-C or SIGTERM) closed, the by-hand scratch removed, and image_dir if this made it."""
    made = not image_dir.exists()
    image_dir.mkdir(parents=True, exist_ok=True)
    try:
        session = FsbenchSession(Settings((fs,), ("single",), (), image_dir=image_dir, image_size=IMAGE_SIZE),
                                 probe(), execute)
        try:
            yield session
        finally:
            session.close()
    finally:
        shutil.rmtree(image_dir / "by-hand", ignore_errors=True)
        shutil.rmtree(MEMORY_ROOT, ignore_errors=True)
        if made:
            shutil.rmtree(image_dir, ignore_errors=True)


def main(argv: Sequence[str] | None = None) -> int:
    args = arguments(argv)
    spec, host = CaseSpec(args.fs, "single"), probe()
    reasons = driver(args.fs, host).unavailable(spec, host)
    if reasons:
        print(f"fidelity.py: --fs={args.fs} cannot be built here: {'; '.join(reasons)}", file=sys.stderr)
        return 2
    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))
    start, lines, notes = time.monotonic(), [], []
    skipped: dict[str, str] = {}
    with session_for(args.fs, args.image_dir) as session:
        for case in (case for case in cases() if case.workload in args.workloads):
            skipped[case.workload] = skipped.get(case.workload) or "; ".join(missing(case.module))
            if skipped[case.workload]:
                continue
            metrics = ", ".join(h.metric for h in case.headlines)
            say(f"{case.workload} ({metrics}) on a fresh {spec.id} target")
            began = time.monotonic()
            with session.target(spec) as target:
                samples = measure_case(case, target, args.runs, args.warmup, args.image_dir / "by-hand",
                                       args.by_hand_data)
            say(f"  ({time.monotonic() - began:.0f} s with the target's build and teardown)")
            for headline in case.headlines:
                line = result_line(case.workload, headline.metric, args.fs, samples)
                if line is not None:
                    lines.append((line, paired_shift(samples, headline.metric)))
                    print(json.dumps(line), flush=True)
                left_out = samples.unmeasured.get(headline.metric)
                if left_out:
                    notes.append(f"{headline.metric}: not reported by one side in {left_out} of {args.runs} "
                                 "rounds (left out)")
    summarize(lines, notes + [f"{w}: skipped, {reason}" for w, reason in skipped.items() if reason],
              time.monotonic() - start)
    return 0


def paired_shift(samples: Samples, metric: str) -> str:
    """fsbench against by hand, paired by round (fsbench's signed-rank comparison): the estimated
    shift and its 95 % interval, which holds 0 when the rounds show no difference beyond noise."""
    if len(samples.fsbench[metric]) < 2:
        return "too few rounds for an interval"
    found = compare(samples.by_hand[metric], samples.fsbench[metric], Direction.HIGHER, 0.025, method=PAIRED)
    if not found.has_interval:
        return f"paired shift {found.shift_pct:+.1f} % (too few rounds for a 95 % interval)"
    low, high = found.pct_ci
    return f"paired shift {found.shift_pct:+.1f} %, 95 % CI {low:+.1f} .. {high:+.1f} %"


def summarize(lines: list[tuple[dict[str, Any], str]], notes: list[str], seconds: float) -> None:
    say("\nfsbench against the same commands by hand (medians; ratio = fsbench / by hand):")
    for line, shift in lines:
        flag = "" if 0.95 <= line["ratio"] <= 1.05 else "  <- outside 0.95-1.05"
        say(f"  {line['metric']:<18} {line['fs']:<5} fsbench {line['fsbench_median']:>7.1f}  by hand "
            f"{line['by_hand_median']:>7.1f} {line['unit']:<5} ratio {line['ratio']:.3f} "
            f"({line['runs']} runs; {shift}){flag}")
    for note in notes:
        say(f"  {note}")
    say(f"took {seconds / 60:.1f} min")


if __name__ == "__main__":
    sys.exit(main())

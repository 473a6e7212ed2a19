"""A session's settings: the plugin's options table, each value parsed and checked, and the checks
that need several options at once. Every bad value is a UsageError before anything is built."""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import sys
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from .verdicts import gate
from . import matrix
from .case import CaseSpec
from .store.databases import is_url, redact
from .workloads.datagen import parse_data
from .filesystems import FILESYSTEMS, GUEST_FILESYSTEMS
from .system.host import Host
from .kernels.probe import probe
from .kernels.kernel import GUEST_MEMORY, HOST, Kernel, check_kernel_mix, compared, fallback, parse_kernels
from .errors import UsageError
from .options import APPEND, FLAG, OPTIONAL, VALUE, Option, alpha, check_replaceable, directory_for_files
from .options import file_to_write, given_twice
from .options import name, path, special_kind
from .options import percent_below_100, positive, positive_seconds, whole
from .pts import options as pts_options
from .pts.profiles import profiles as pts_profiles
from .verdicts.repeat import RepeatPolicy
from .verdicts.stats import min_rounds_for
from .measure.run import CACHE_POLICIES
from .sizes import format_size, human_size, parse_size
from .system.memory import SMALLEST
from .system import throttle
from .verdicts.thresholds import Threshold, check_measurable, parse_threshold
from .workloads import KNOWN_METRICS
from .sizes import existing_ancestor

DEFAULT_STORE = "fsbench-results/fsbench.db"
DEFAULT_IMAGE_DIR = "/var/tmp/fsbench"
GATE_MODES = ("sequential", "fixed")
CONTROL_MB = 64  # the control's direct-I/O write, per measured run
DRIFT_SOURCES = ("machine", "baseline")
CONTROL_MODES = ("auto", "on", "adjust", "off")
#: options that only change how a comparison is judged: refused in a session that compares nothing
GATE_OPTIONS = ("--alpha", "--gate-mode", "--drift", "--inconclusive")


def _caches(text: str) -> tuple[str, ...]:
    return matrix.parse_list(text, CACHE_POLICIES, "cache policy", "--cache")


def _gate_mode(text: str) -> str:
    if text not in GATE_MODES:
        raise UsageError(f"--gate-mode={text!r}: choose sequential or fixed")
    return text


def _control(text: str) -> str:
    if text not in CONTROL_MODES:
        raise UsageError(f"--control={text!r}: choose auto (on when the session saves or compares a baseline), on, "
                         "adjust or off")
    return text


#: the rounds of a --paired (or kernel A/B) comparison without --runs: at 10 rounds one caught a
#: -10 % change 64.8 % of the time, at 20 rounds 92.3 % (issue 41: simulated over the plugin's own
#: decision path, CV 10 %)
PAIRED_ROUNDS = 20


def _drift(text: str) -> str:
    if text not in DRIFT_SOURCES:
        raise UsageError(f"--drift={text!r}: choose machine (this machine's drift between sessions, pooled from the "
                         "store's history) or baseline (only the baseline's own sessions)")
    return text


def store_location(text: str, option: str = "--store") -> Path | str:
    """An SQLite file's path, or a PostgreSQL server's URL (its password belongs elsewhere);
    option: the option that gives it, which the messages name (--store, or push's --to)."""
    scheme = re.match(r"^([A-Za-z][A-Za-z0-9+.-]*)://", text)
    if scheme and not is_url(text):
        raise UsageError(f"{option}={redact(text)}: {scheme.group(1)}:// is no store fsbench knows; give an SQLite "
                         "file's path or a postgresql://USER@HOST/DB URL")
    if not scheme and os.path.exists(text) and not os.path.isfile(text) and not os.path.isdir(text):
        # issue 34: SQLite opened /dev/null and left /dev/null-journal beside it
        raise UsageError(f"{option}={text}: is {special_kind(text) or 'a character device'}, no regular file; "
                         "name the store's file")
    if is_url(text):
        if redact(text) != text:
            raise UsageError(f"{option}={redact(text)}: put the password in PGPASSFILE (or ~/.pgpass), PGPASSWORD or "
                             "a service file, not in the URL, where logs, ps and shell history would keep it")
        return text
    try:
        return path(text)
    except ValueError as exc:
        raise UsageError(f"{option}={text!r}: {exc}") from None


def _shard(text: str) -> tuple[int, int]:
    """K/N: share K (from 0) of N."""
    found = re.fullmatch(r"(\d+)/(\d+)", text.strip())
    if found is None or not int(found.group(1)) < int(found.group(2)):
        raise ValueError("give K/N, share K of N counted from 0 (K below N), e.g. 0/3")
    return int(found.group(1)), int(found.group(2))


def _paired(text: str) -> tuple[str, str, str]:
    return matrix.parse_fs_opt(text, "--paired")


def _baseline_name(text: str) -> str:
    """The one name --save adds the session to (a comma list would be one odd name)."""
    if "," in text:
        raise ValueError("a session is saved as one baseline; give one name, without commas")
    if text == "last" or text.startswith("last@"):
        raise ValueError("'last' names the newest complete session in --compare; choose another name")
    if text.strip().isdigit():  # issue 34: baseline 1 made session 1 unreachable by its id
        raise ValueError("a number names a session by its id in --compare and the fsbench commands; choose a name "
                         "with a letter in it")
    return name(text)


_CASE_TEST = re.compile(r"[A-Za-z_]\w*\[.+\]")
_METRICS = re.compile(r"\w+\.\w+(?:,\w+\.\w+)*")


def _case_precision(text: str) -> tuple[str, tuple[str, ...], float]:
    """--until-ci-case=TEST[ID][@METRIC,...]=PERCENT: a test's id (pytest's, its brackets
    included), the metrics whose medians must reach the precision (none: every headline metric)
    and the precision."""
    target, eq, percent = text.rpartition("=")
    test, at, metrics = target.rpartition("@") if "]@" in target else (target, "", "")
    if not eq or not _CASE_TEST.fullmatch(test) or (at and not _METRICS.fullmatch(metrics)):
        raise ValueError("give a test id with its brackets, optionally @ and its metrics, and a percentage, e.g. "
                         "test_dd_write[ext4-single-1M]=5% or test_iozone[ext4-single-16M]@iozone.write=5%")
    return test, tuple(metrics.split(",")) if metrics else (), percent_below_100(percent)


def _memory(text: str) -> int:
    """--memory's limit: a size of at least SMALLEST."""
    size = parse_size(text)
    if size < SMALLEST:
        raise ValueError(f"below {SMALLEST >> 20}M a tool's own code and buffers no longer fit; give e.g. 2G")
    ram = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    if size >= ram:  # found by the sweep: a limit at or above the machine's memory limits nothing
        raise ValueError(f"this machine has {human_size(ram)} of memory, so the limit would limit nothing; give "
                         "less, or leave --memory out")
    return size


def _storage_rates(text: str) -> tuple[float, ...]:
    """--storage-rate's rates (MB/s; none: 0, the images' own storage), each once; a rate needs
    the FUSE bindings (mfusepy), checked here so a session without them stops before it builds."""
    given = text.split(",")
    rates = [throttle.parse_rate(rate) for rate in given]
    check_one_spelling("--storage-rate", given, [throttle.rate_text(rate) or throttle.NONE for rate in rates])
    matrix.check_no_repeats([rate.strip() for rate in given], f"--storage-rate={text}")
    if any(rates) and importlib.util.find_spec("mfusepy") is None:
        raise ValueError("emulating a rate needs the Python package mfusepy (FUSE bindings): ./fsbench.sh bench or "
                         f"setup installs it, or {Path(sys.executable).parent / 'pip'} install mfusepy; or leave "
                         "--storage-rate out")
    return tuple(rates)


def _datas(text: str) -> tuple[str, ...]:
    given = text.split(",")
    datas = [str(parse_data(d)) for d in given]
    check_one_spelling("--data", given, datas)
    matrix.check_no_repeats(datas, f"--data={text}")
    return tuple(datas)


def check_one_spelling(flag: str, texts: list[str], values: list) -> None:
    """Two spellings of one value (zfs:recordsize=128K and 131072; --data 50% and 050%, 0% and
    random) would be two cases of one configuration (issue 34): a usage error naming both."""
    first: dict = {}
    for text, value in zip(texts, values):
        other = first.setdefault(value, text)
        if other.strip() != text.strip():
            spelled = "{}:{}={}".format(*value) if isinstance(value, tuple) else value
            raise UsageError(f"{flag}: {other.strip()!r} and {text.strip()!r} are one value ({spelled}); give it once")


OPTIONS: tuple[Option, ...] = (
    Option("--fs", matrix.parse_filesystems, "ext4", f"filesystems, comma list of {','.join(FILESYSTEMS)}"),
    Option("--layout", matrix.parse_layouts, "single", "layouts, comma list of single,raid0,raid1,raid10,raid5"),
    Option("--kernel", parse_kernels, "host", "kernels the cases run under, comma list of host (this machine's), "
           f"uml (Debian's User-mode Linux guest kernel: md RAID, {', '.join(GUEST_FILESYSTEMS)}), uml:PATH or "
           "uml:NAME=PATH (a UML kernel built with make ARCH=um), vm (Debian's kernel in a QEMU virtual machine: md "
           "RAID, OpenZFS), vm:PATH or vm:NAME=PATH (a bzImage or kernel tree you built); two or more make a kernel "
           "A/B: every case under each, in interleaved rounds, compared paired by round with the first. host+uml "
           "(or host+uml:PATH), alone, is no A/B: each case runs once, under the host's kernel where it can run "
           "there, else in the guest (ids uml-...); host+vm likewise, with OpenZFS in the guest for ZFS options "
           "zfs-fuse lacks, and the cases of that filesystem and layout with them (ids vm-...)"),
    Option("--fs-opt", matrix.parse_fs_opt, None, "filesystem option, e.g. btrfs:compress=zstd, zfs:recordsize=64K, "
           "ext4:mount=noatime, xfs:mkfs='-m crc=1'; repeat a key for one case per value (ini: one per line)",
           kind=APPEND, metavar="FS:KEY=VALUE"),
    Option("--devices", matrix.parse_device_list, None, "real block devices to use instead of loop "
           "images; they are overwritten, after safety checks", path=True,
           shown_default="none, sparse images on loop devices"),
    Option("--wipe-devices", bool, None, "let fsbench overwrite --devices that hold a partition table or "
           "filesystem signature (never the root disk, never a mounted or held device)", kind=FLAG, ini=False),
    Option("--image-dir", directory_for_files, DEFAULT_IMAGE_DIR, "directory for the loop devices' sparse image "
           "files (and the session's data sets)", path=True),
    Option("--image-size", matrix.parse_image_size, "4G", "size of each loop image (sparse: only what is "
           "written takes room), e.g. 8G"),
    Option("--memory", _memory, None, "limit the memory of every measured run, page cache included, to SIZE (a "
           "memory control group), so a file larger than SIZE is read from the storage, as a study that limited "
           "RAM read it; 2xRAM file sizes follow it; recorded in each case's manifest. Under a guest kernel (uml, "
           f"vm) the group is the guest kernel's own, and SIZE must be below the guest's {GUEST_MEMORY}",
           metavar="SIZE", shown_default="none"),
    Option("--storage-rate", _storage_rates, None, "emulate storage slower than this machine's, as a study's "
           "disk was: each case's loop images live in a FUSE passthrough that paces their reads and writes, "
           "together, to RATE MB/s (10^6 B/s), e.g. 32 (a 2009 disk); a comma list with none (none,32) makes each "
           "case once per rate. The rate is in the case's id (storage=32MBps) and recorded with each run. Loop "
           "images under the host's kernel only", metavar="RATE", shown_default="none, the images' own storage"),
    Option("--cache", _caches, "drop", "cache policies before each measured run, comma list of drop (sync + "
           "drop_caches; ZFS also export/import), remount, direct (O_DIRECT), warm"),
    Option("--data", _datas, "random", "data written, comma list of zeros, random (incompressible) or N% "
           "compressible"),
    Option("--store", store_location, os.environ.get("FSBENCH_STORE") or DEFAULT_STORE, "result store (every run of "
           "every session): an SQLite file, or postgresql://USER@HOST/DB, one server many machines share (password "
           "from PGPASSFILE, ~/.pgpass or PGPASSWORD)", path=True,
           shown_default=f"$FSBENCH_STORE, else {DEFAULT_STORE}"),
    Option("--runs", positive, "10", "measured runs per case (the first look of the sequential gate and of "
           f"--until-ci; rounds with --interleave, and with --paired or a kernel A/B, where the default is "
           f"{PAIRED_ROUNDS} rounds)"),
    Option("--warmup", whole, "1", "runs first made and discarded on each target"),
    Option("--until-ci", percent_below_100, None, "dynamic mode: repeat until both ends of each "
           "headline median's 95% CI are within +-this % of it, looking at --runs, 10, 15, 20, ... runs "
           "(budget: --max-runs, --max-time)", shown_default="off"),
    Option("--until-ci-case", _case_precision, None, "--until-ci for one test only, TEST[ID]=PERCENT (e.g. "
           "test_dd_write[ext4-single-1M]=5%), or on some of its metrics, TEST[ID]@METRIC,...=PERCENT (e.g. "
           "test_iozone[ext4-single-16M]@iozone.write=5%); the other tests keep --runs (a study sets one per claim's case from "
           "the claim's published effect)", kind=APPEND, ini=False, metavar="TEST=PERCENT"),
    Option("--max-runs", positive, "30", "dynamic modes (sequential gate, --until-ci, --until-ci-case): most "
           "measured runs per case; also the runs --save alone measures (the gate's budget)"),
    Option("--max-time", positive_seconds, None, "dynamic mode: seconds per case after which no new "
           "run starts", shown_default="none"),
    Option("--interleave", bool, None, "measure in rounds: every case once per round, --runs rounds (A B A B "
           "...), each on a freshly built target, so slow drift hits all configurations alike", kind=FLAG,
           ini=False),
    Option("--runnable-only", bool, None, "leave out the host's cases this machine cannot run (a filesystem or "
           "layout its kernel lacks, a missing tool) and say which and why, instead of skipping each one; a "
           "study's plan counts only what runs", kind=FLAG, ini=False),
    Option("--save", _baseline_name, None, "save this session as baseline NAME; without --compare or --runs "
           "it measures --max-runs runs a case, the gate's budget: a baseline's runs fix how small a change every "
           "later comparison with it can catch", ini=False, metavar="NAME"),
    Option("--compare", name, None, "compare with baseline NAME, a session id, or 'last' (the newest "
           "complete session)", ini=False, metavar="NAME"),
    Option("--across-hosts", bool, None, "let --compare use a baseline recorded on other machines (by default "
           "refused: a different disk, CPU or kernel is a different experiment)", kind=FLAG, ini=False),
    Option("--fail-on-regression", gate.parse_rule, None, "fail a case that is significantly worse than the "
           "baseline (one-sided at --alpha) with an estimated change worse than PERCENT (the estimate, not a test "
           "against the margin): 5% (every headline metric) or dd.write:3%; needs --compare or --paired",
           kind=APPEND, ini=False, metavar="RULE"),
    Option("--alpha", alpha, "0.05", "one-sided significance level of the regression gate (its false-alarm "
           "rate when nothing changed)"),
    Option("--gate-mode", _gate_mode, "sequential", "with --fail-on-regression: sequential (look at --runs, 10, "
           "15, 20, ... runs up to --max-runs and stop once every gated metric is decided; alpha is spent "
           "across the looks) or fixed (exactly --runs runs)"),
    Option("--control", _control, "off", "before every measured run, measure a fixed reference: a direct-I/O dd "
           f"write of {CONTROL_MB} MiB to a loop device of its own beside the images (the machine's own speed at "
           "that moment), kept with the run as a diagnostic of the machine; a gate against a baseline with "
           "control runs then compares each figure's ratio to its run's control. Off by default: under load "
           "the control fell 49-65 % where the figure fell 21-34 %, and dividing by it hid a real -47 % and "
           "failed an unchanged re-run. auto: on in sessions that --save or --compare; on; adjust: measure it and "
           "adjust each run's figure by its estimated relation to the control (CUPED: log figure less theta "
           "x the control's log deviation, theta the within-session slope, 0 to 1), never wider than off "
           "within a session; off",
           kind=OPTIONAL, const="on"),
    Option("--drift", _drift, "machine", "what a baseline session's result may drift by in another session: "
           "machine (pooled from every repeated series of this machine's complete sessions in the store, but those "
           "other processes disturbed beyond the baseline's load, once they give 4 degrees of freedom; then even "
           "one baseline session is compared on it) or baseline (only the "
           "spread of the baseline's own sessions; one session is compared run by run, drift not in the test)"),
    Option("--inconclusive", gate.parse_on_inconclusive, "pass", "what an inconclusive gate does to its case: "
           "pass (the case passes, counted in the session's one warning, with a junit property and a summary "
           "line saying what would decide it; pytest exits 0) or fail (sign-off jobs: the runs could not show the change is within the "
           "allowed %; pytest exits 1)"),
    Option("--paired", _paired, None, "measure every case of FS also with this option (in place of "
           "the one it replaces), interleaved round by round on fresh targets, and compare the two paired by "
           "round; --fail-on-regression then gates the variant against the case", kind=APPEND, ini=False,
           metavar="FS:KEY=VALUE"),
    Option("--resume", name, None, "continue an interrupted session (default: the last one): finished tests "
           "are skipped, a case's completed runs are kept", kind=OPTIONAL, const="last", ini=False,
           metavar="SESSION"),
    Option("--shard", _shard, None, "run only share K of N of the session's cases (K/N, counted from 0): "
           "the cases dealt out in turn, each in exactly one share, so identical machines split one matrix "
           "(fsbench fleet --shard gives each node its share)", ini=False, metavar="K/N"),
    Option("--report", file_to_write, None, "write the session's HTML report (box plots, size curves, the "
           "change table) to this file at the end", ini=False, metavar="FILE", path=True),
    Option("--force", bool, None, "let --report replace an existing file that is no report fsbench wrote (never "
           "the session's store or another SQLite database)", kind=FLAG, ini=False),
    Option("--threshold", parse_threshold, None, "minimum or maximum per metric, e.g. dd.write>=100MB/s, "
           "btrfs:dd.write>=150MB/s (ini: one per line)", kind=APPEND, metavar="RULE"),
    # the PTS face (benchmarks/test_pts.py): values parsed and checked in pts/options.py
    Option("--pts-profile", pts_options.profile, None, "the fsbench PTS profile test_pts runs, of "
           f"{', '.join(pts_profiles())}", ini=False, metavar="PROFILE", shown_default=pts_options.DEFAULT_PROFILE),
    Option("--pts-options", pts_options.run_options, None, "its run options as IDENTIFIER=VALUE;... with the menu "
           "values of its test-definition.xml, e.g. 'test=read;cache=drop'; the others keep the profile's quick "
           "values (each option's DefaultEntry: minutes, small files)", ini=False, metavar="OPTIONS"),
    Option("--pts-result", pts_options.result_name, None, "the PTS result file the session's PTS cases are written "
           "into", ini=False, metavar="NAME", shown_default="fsbench-<date>-<time> of the session"),
    Option("--pts-binary", pts_options.binary, None, "the phoronix-test-suite launcher", ini=False, metavar="PATH", path=True,
           shown_default="$FSBENCH_PTS, else PATH's"),
    Option("--pts-system-tools", bool, None, "let the PTS profiles use the system's tool instead of building the "
           "pinned release; they then install offline (also: FSBENCH_PTS_SYSTEM_TOOLS=1)", kind=FLAG, ini=False),
)
BY_FLAG = {option.flag: option for option in OPTIONS}


@dataclass(frozen=True)
class Conditions:
    """How a case is measured: the cache policy and the data it writes."""

    cache: str = "drop"
    data: str = "random"
    show_cache: bool = False
    show_data: bool = False

    @property
    def id(self) -> str:
        parts = ([f"cache={self.cache}"] if self.show_cache else []) + ([f"data={self.data}"] if self.show_data else [])
        return "-".join(parts) or "default"


@dataclass(frozen=True)
class Settings:
    filesystems: tuple[str, ...]
    layouts: tuple[str, ...]
    specs: tuple[CaseSpec, ...]
    kernels: tuple[Kernel, ...] = (Kernel(HOST),)
    devices: tuple[str, ...] = ()
    device_infos: tuple = ()  # safety.DeviceInfo of each --devices entry, once checked
    wipe: bool = False
    image_dir: Path = Path(DEFAULT_IMAGE_DIR)
    image_size: int = 4 << 30
    thresholds: tuple[Threshold, ...] = ()
    caches: tuple[str, ...] = ("drop",)
    datas: tuple[str, ...] = ("random",)
    memory: int | None = None  # --memory: the measured runs' memory limit, page cache included
    storage_rates: tuple[float, ...] = (0.0,)  # --storage-rate: MB/s the cases' images are paced to (0: not)
    store_path: Path | str = Path(DEFAULT_STORE)  # a file, or a postgresql:// URL
    repeat: RepeatPolicy = field(default_factory=RepeatPolicy)
    interleave: bool = False
    save: str | None = None
    save_budget: bool = False  # --save alone measured --max-runs runs a case: the gate's budget
    compare: str | None = None
    across_hosts: bool = False
    resume: str | None = None
    runnable_only: bool = False
    regression_rules: tuple[gate.RegressionRule, ...] = ()
    alpha: float = 0.05
    gate_mode: str = "sequential"
    drift: str = "machine"
    control: bool = False
    control_adjust: bool = False  # --control=adjust: regress on the control (CUPED), not divide by it
    on_inconclusive: str = "pass"
    pairs: tuple[tuple[CaseSpec, CaseSpec], ...] = ()  # (reference, variant) with --paired
    args: tuple[str, ...] = ()
    report: Path | None = None
    shard: tuple[int, int] | None = None  # (K, N): this session runs share K of N of the cases
    force: bool = False
    pts: pts_options.PtsSettings | None = None  # the PTS face's profile and run options (--pts-*)
    case_precision: tuple[tuple[str, tuple[str, ...], float], ...] = ()  # --until-ci-case: test, metrics, %

    def repeat_for(self, test: str) -> RepeatPolicy:
        """The repeat policy of one test: --until-ci-case's precision (on its metrics) for it, else
        the session's."""
        name = test.rpartition("::")[2]
        found = next((given for given in self.case_precision if given[0] == name), None)
        return self.repeat if found is None else replace(self.repeat, until_ci=found[2], until_ci_metrics=found[1])

    @property
    def dynamic(self) -> bool:
        """Some test repeats until a condition (--until-ci, --until-ci-case or the sequential gate)."""
        return self.repeat.dynamic or bool(self.case_precision)

    def room(self, spec: CaseSpec) -> tuple[int, str] | None:
        """The most the case's target could ever hold, its devices whole, and what they are
        (None: devices not yet checked)."""
        count = spec.devices_needed
        if self.devices:
            infos = self.device_infos[:count]
            if not infos:
                return None
            shown = ", ".join(f"{info.path} of {human_size(info.size_bytes)}" for info in infos)
            return sum(info.size_bytes for info in infos), f"--devices {shown}"
        return count * self.image_size, f"{count} x --image-size={format_size(self.image_size)}"

    def conditions(self) -> list[Conditions]:
        show_cache = self.caches != ("drop",)
        show_data = self.datas != ("random",)
        return [Conditions(cache, data, show_cache, show_data) for cache in self.caches for data in self.datas]


def case_specs(filesystems: tuple[str, ...], layouts: tuple[str, ...], fs_opts: tuple, kernels: tuple[Kernel, ...],
               host: Host | None = None, paired: tuple = ()) -> tuple[list[CaseSpec], list[tuple[CaseSpec, CaseSpec]]]:
    """The session's cases (the matrix under each compared kernel) and its --paired pairs; with
    host+GUEST each placed by what host (default: this machine, probed) can run, a pair's two
    cases under one kernel."""
    specs = matrix.build_matrix(filesystems, layouts, list(fs_opts), compared(kernels))
    pairs = matrix.build_pairs(specs, list(paired))
    guest = fallback(kernels)
    if guest is None:
        return specs, pairs
    every = list(dict.fromkeys([*specs, *(spec for pair in pairs for spec in pair)]))
    placed = dict(zip(every, matrix.place_cases(every, guest, host or probe())))
    return [placed[spec] for spec in specs], [(placed[a], placed[b]) for a, b in pairs]


def check_storage_rate(rates: tuple[float, ...], devices: tuple[str, ...] | None, kernels: tuple[Kernel, ...],
                       kernel_text: str) -> None:
    """--storage-rate paces loop images the host's kernel reads and writes: not real devices, not a
    guest's (kernel_text: --kernel as given)."""
    given = ",".join(f"{rate:g}" if rate else throttle.NONE for rate in rates)
    if devices:
        raise UsageError(f"--storage-rate={given} with --devices: the rate is emulated on loop images; real devices "
                         "have their own speed, so leave one of the two out")
    if any(kernel.guest for kernel in kernels):
        raise UsageError(f"--storage-rate={given} with --kernel={kernel_text}: the rate is "
                         "emulated on the host's loop images, a guest kernel has its own; leave --storage-rate out "
                         "or run on the host")


def check_guest_memory(memory: int | None, text: str | None, specs: list[CaseSpec]) -> None:
    """--memory at or above a guest kernel's own memory, with cases in a guest: a limit there
    would limit nothing (the group is the guest kernel's)."""
    guests = list(dict.fromkeys(spec.kernel for spec in specs if spec.in_guest))
    if memory is not None and guests and memory >= parse_size(GUEST_MEMORY):
        raise UsageError(f"--memory={text} with cases under {', '.join(guests)}: a guest kernel has {GUEST_MEMORY} of "
                         f"memory, so the limit would limit nothing there; give less than {GUEST_MEMORY}, or leave "
                         "--memory out")


def settings_from(get: Callable[[Option], Any], base: Path, args: tuple[str, ...] = (),
                  host: Host | None = None) -> Settings:
    """Settings from each option's raw value (get(option): text, a flag's bool, or a list of
    texts for a repeatable option); relative store paths are taken from base. --kernel=host+uml
    places each case by what host (default: this machine, probed) can run."""
    twice = given_twice(args, [o.flag for o in OPTIONS if o.kind in (VALUE, OPTIONAL)])
    if twice:
        raise UsageError(twice)
    value = {o.flag: (o.values(get(o)) if o.kind == APPEND else get(o) if o.kind == FLAG
                      else None if get(o) is None else o.value(get(o)))
             for o in OPTIONS}
    for flag in ("--fs-opt", "--paired"):
        check_one_spelling(flag, list(get(BY_FLAG[flag])), list(value[flag]))
    rules = [(t.scope, t.metric, t.op, t.value, t.unit) for t in value["--threshold"]]
    twice = next((value["--threshold"][i].text for i, rule in enumerate(rules) if rule in rules[:i]), None)
    if twice:  # found by issue 44's sweep: the same rule twice was checked twice, without a word
        raise UsageError(f"--threshold {twice!r} is given twice; give each rule once")
    filesystems, layouts = value["--fs"], value["--layout"]
    kernels = value["--kernel"]
    labels = compared(kernels)  # host+uml: one kernel per case, no A/B
    if len(labels) > 1 and any(kernel.vm for kernel in kernels):
        from .kernels.vm import detect_accelerator  # only a vm kernel A/B asks what QEMU can use here

        check_kernel_mix(kernels, detect_accelerator())
    if len(labels) > 1 and value["--paired"]:
        raise UsageError(f"--paired with --kernel={','.join(labels)}: a session compares either kernels or "
                         "options; run the two comparisons in separate sessions")
    specs, pairs = case_specs(filesystems, layouts, value["--fs-opt"], kernels, host, value["--paired"])
    check_guest_memory(value["--memory"], get(BY_FLAG["--memory"]), specs)
    rates = value["--storage-rate"] or (0.0,)
    if any(rates):
        check_storage_rate(rates, value["--devices"], kernels, get(BY_FLAG["--kernel"]))
        specs = [replace(spec, storage_rate=rate) for spec in specs for rate in rates]
        pairs = [(replace(a, storage_rate=rate), replace(b, storage_rate=rate)) for a, b in pairs for rate in rates]
    if len(labels) > 1:
        pairs = matrix.kernel_pairs(specs, labels)
    if pairs:  # each reference case, then its variant, then the cases --paired does not touch
        paired = list(dict.fromkeys(spec for a, b in pairs for spec in (a, b)))
        specs = paired + [s for s in specs if not _paired(s, pairs) and s not in paired]
    rules, compare = value["--fail-on-regression"], value["--compare"]
    interleave = value["--interleave"] or bool(pairs)
    sequential = value["--gate-mode"] == "sequential" and bool(rules and compare) and not interleave
    # a baseline is measured to the gate's budget: its runs fix the power of every later comparison
    default_runs = not _given(args, "--runs") and value["--runs"] == BY_FLAG["--runs"].value(BY_FLAG["--runs"].default)
    budget = (bool(value["--save"]) and not compare and not interleave and value["--until-ci"] is None
              and not value["--until-ci-case"] and default_runs)
    runs = value["--max-runs"] if budget else PAIRED_ROUNDS if pairs and default_runs else value["--runs"]
    settings = Settings(
        filesystems=filesystems,
        layouts=layouts,
        specs=tuple(specs),
        kernels=kernels,
        devices=value["--devices"] or (),
        wipe=value["--wipe-devices"],
        # absolute: a relative one was taken where each use stood (issue 44: dd's data set, a link relative
        # to its own directory, pointed nowhere when run from another directory)
        image_dir=value["--image-dir"].absolute(),
        image_size=value["--image-size"],
        thresholds=value["--threshold"],
        caches=value["--cache"],
        datas=value["--data"],
        memory=value["--memory"],
        storage_rates=rates,
        store_path=value["--store"] if is_url(value["--store"]) else base / value["--store"],
        repeat=RepeatPolicy(runs=runs, warmup=value["--warmup"],
                            until_ci=value["--until-ci"],
                            max_runs=value["--max-runs"], max_seconds=value["--max-time"], sequential=sequential),
        interleave=interleave,
        save=value["--save"],
        save_budget=budget,
        compare=value["--compare"],
        across_hosts=value["--across-hosts"],
        resume=value["--resume"],
        runnable_only=value["--runnable-only"],
        regression_rules=rules,
        alpha=value["--alpha"],
        gate_mode=value["--gate-mode"],
        drift=value["--drift"],
        control=(value["--control"] in ("on", "adjust")
                 or (value["--control"] == "auto" and bool(value["--save"] or compare))),
        control_adjust=value["--control"] == "adjust",
        on_inconclusive=value["--inconclusive"],
        pairs=tuple(pairs),
        args=args,
        report=value["--report"],
        shard=value["--shard"],
        force=value["--force"],
        case_precision=value["--until-ci-case"],
        pts=pts_options.pts_settings(value["--pts-profile"], value["--pts-options"] or (), value["--pts-result"],
                                     value["--pts-binary"], value["--pts-system-tools"]),
    )
    check(settings)
    return settings if settings.shard is None else replace(settings, specs=share(settings))


def share(settings: Settings) -> tuple[CaseSpec, ...]:
    """--shard=K/N: every N-th case from the K-th; a comparison within the session (--paired, a kernel
    A/B) runs on one machine, so it is not split."""
    k, n = settings.shard
    if settings.pairs:
        raise UsageError(f"--shard={k}/{n} with a paired comparison (--paired or a kernel A/B): its two "
                         "sides are compared within one session, on one machine; run it unsplit")
    if n > len(settings.specs):
        raise UsageError(f"--shard={k}/{n}: this session has {len(settings.specs)} case(s), fewer than {n} "
                         "shares; give at most as many shares as cases")
    return settings.specs[k::n]


def check(settings: Settings) -> None:
    """The checks that need several options together."""
    check_needs(settings)
    if settings.interleave and settings.case_precision:
        raise UsageError("--interleave makes one measured run per round; it cannot be combined with --until-ci-case")
    tests = [given[0] for given in settings.case_precision]
    if len(set(tests)) < len(tests):
        twice = next(test for test in tests if tests.count(test) > 1)
        raise UsageError(f"--until-ci-case: {twice} is given twice; give each test one precision")
    for test in tests:  # its own policy's checks (--runs below --max-runs), before anything is built
        settings.repeat_for(test)
    if settings.interleave and settings.repeat.until_ci is not None:
        raise UsageError("--interleave makes one measured run per round; it cannot be combined with --until-ci")
    if settings.regression_rules and not (settings.compare or settings.pairs):
        raise UsageError("--fail-on-regression needs something to compare with: add --compare NAME (or "
                         "--compare last), or --paired FS:KEY=VALUE")
    if settings.pairs and settings.repeat.runs < min_rounds_for(settings.alpha):
        raise UsageError(f"--paired with --runs={settings.repeat.runs} rounds can never show a significant "
                         f"difference at --alpha={settings.alpha:g}; use --runs={min_rounds_for(settings.alpha)} "
                         "or more")
    if settings.report is not None:
        try:
            check_replaceable(settings.report, "report", [settings.store_path], settings.force)
        except ValueError as exc:
            raise UsageError(f"--report={settings.report}: {exc}") from None
    for threshold in settings.thresholds:
        check_measurable(threshold, KNOWN_METRICS)
        check_threshold_scope(threshold, settings.specs)
    for rule in settings.regression_rules:
        gate.check_measurable(rule, KNOWN_METRICS)
    for test, metrics, pct in settings.case_precision:
        unknown = [m for m in metrics if not any(spec.matches(m) for spec in KNOWN_METRICS)]
        if unknown:
            raise UsageError(f"--until-ci-case={test}@{','.join(metrics)}={pct:g}%: no workload measures a metric "
                             f"{unknown[0]!r} (the test would stop at its first look); metrics are "
                             f"{', '.join(spec.shown for spec in KNOWN_METRICS)}")
    gate.check_one_rule_each(settings.regression_rules)
    if not settings.devices:
        check_image_room(settings.image_dir, settings.image_size)


def check_needs(settings: Settings) -> None:
    """An option that only changes what another one does is refused alone, never ignored."""
    if settings.wipe and not settings.devices:
        raise UsageError("--wipe-devices lets fsbench overwrite --devices, and none are given; add "
                         "--devices=DEV[,DEV...] or leave --wipe-devices out")
    if settings.force and settings.report is None:
        raise UsageError("--force lets --report replace a file fsbench did not write, and --report is not given; "
                         "add --report=FILE or leave --force out")
    if settings.devices and _given(settings.args, "--image-size"):
        raise UsageError("--image-size sizes the loop images fsbench makes, and --devices replaces them with real "
                         "devices of their own size; leave one of them out")
    short = [spec for spec in settings.specs if spec.devices_needed > len(settings.devices)]
    if settings.devices and short:  # issue 34: the case skipped, and pytest exited 0
        layouts = ", ".join(dict.fromkeys(f"{spec.layout} needs {spec.devices_needed}" for spec in short))
        raise UsageError(f"--devices={','.join(settings.devices)} names {len(settings.devices)} device"
                         f"{'s' * (len(settings.devices) != 1)}, and {layouts} ({', '.join(s.id for s in short)}); "
                         "name more devices or leave those layouts out of --layout")
    if settings.across_hosts and not settings.compare:
        raise UsageError("--across-hosts lets --compare use another machine's baseline, and --compare is not given; "
                         "add --compare=NAME or leave --across-hosts out")
    gating = bool(settings.compare or settings.pairs or settings.regression_rules)
    for flag in GATE_OPTIONS:  # issue 34: given with nothing to gate, they were silently ignored
        if _given(settings.args, flag) and not gating:
            raise UsageError(f"{flag} changes how the gate judges a comparison, and this session compares nothing "
                             "(no --compare, --paired or --fail-on-regression); add one or leave "
                             f"{flag} out")
    for flag in ("--max-runs", "--max-time"):
        if _given(settings.args, flag) and not settings.dynamic and not (flag == "--max-runs"
                                                                          and settings.save_budget):
            raise UsageError(f"{flag} is the budget of a dynamic mode (--until-ci, --until-ci-case, or "
                             "--fail-on-regression with --compare and --gate-mode=sequential), and this session has "
                             "none; add one or leave "
                             f"{flag} out")


def _given(args: tuple[str, ...], flag: str) -> bool:
    """flag is on the command line (not only in the ini file, whose defaults serve many sessions)."""
    return any(arg == flag or arg.startswith(flag + "=") for arg in args)


def _paired(spec: CaseSpec, pairs: list[tuple[CaseSpec, CaseSpec]]) -> bool:
    return any(spec.fs == a.fs and spec.layout == a.layout and spec.options == a.options for a, _ in pairs)


def check_threshold_scope(threshold: Threshold, specs: tuple[CaseSpec, ...]) -> None:
    """A threshold scoped to a filesystem or case this session does not have could never apply."""
    if threshold.scope is None or any(threshold.applies_to_case(spec) for spec in specs):
        return
    cases = ", ".join(spec.id for spec in specs)
    raise UsageError(f"--threshold {threshold.text!r}: no case of this session is {threshold.scope!r} "
                     f"(cases: {cases}); fix the scope or add it to --fs/--layout")


def check_image_room(image_dir: Path, image_size: int) -> None:
    """A sparse image bigger than the free space of its directory fails as soon as it is written."""
    existing = existing_ancestor(image_dir)
    free = shutil.disk_usage(existing).free
    if image_size > free:
        raise UsageError(f"--image-size={format_size(image_size)}: larger than the {human_size(free)} free in "
                         f"{existing} (--image-dir={image_dir}); give a smaller size or another --image-dir")

"""Filebench personalities (fileserver, webserver, oltp, varmail, videoserver, webproxy).

fsbench carries no personality definitions: they are Filebench's code (CDDL). At run time the
stock personality file is read from the filebench installation and only its `set` lines and its
`run` line are rewritten (`customise`). The stock file is `<workloads dir>/<personality>.f`,
the workloads dir being, first found: the `workloads_dir` argument, $FSBENCH_FILEBENCH_WORKLOADS,
or `<prefix>/share/filebench/workloads` next to the binary `<prefix>/bin/filebench` (where
filebench's `make install` puts them). A digest of the stock text is recorded with the results
(`params()["stock_sha256"]`), since filebench's personalities may change between its versions.

Where the data live: `files()` has no workdir, so the text says `set $dir=fsbench-filebench` (a
*relative* path) and `argv` starts filebench with `env -C <workdir>`, so the filesets land in
`<workdir>/fsbench-filebench/` (filebench creates `$dir` and its parents itself). This keeps
paths out of filebench's lexer, which accepts only `[/A-Za-z-][/A-Za-z0-9._:;-]*` unquoted and,
worse, *skips* an illegal character and runs on: `set $dir=./x` ran a whole benchmark in `/x`.
Filebench's exit status is 0 after such a syntax error and after "Run stopped early", so `parse`
is what decides whether a run succeeded.

The fileset is made before the measured run, not inside it (issue 36): Filebench's `run` creates
its filesets and then runs, so a cache policy applied before the command found nothing to empty,
and webserver's 16 MB fileset was re-read from the page cache it had just been written to. Each
run's unmeasured preparation runs the stock text with its `run` line replaced by `create files`
(the filesets as the stock file makes them: removed and made afresh, or reused where the stock
file says `reuse`); then fsbench applies its cache policy; then the measured text, whose every
`define fileset` says `reuse`, finds the files there and runs. Filebench draws file sizes, the
directory tree and which files to pre-allocate from generators it never seeds, so both commands
lay out the same files and the measured one only checks them (`parse` insists it reused every
fileset).

Bytes moved: Filebench prints each flowop's MiB/s over the run's seconds (IO Summary ops / ops/s),
so a flowop moved MiB/s x seconds; the flowop's type in the workload text (`FLOWOP_IO`) says
whether those bytes were read or written. The IO Summary's figures declare them as their `io`, so
the cache check sets them against what reached the disks.

Scales (the variables fsbench sets; every other variable keeps the stock file's value):
- "stock": nothing changed; run 60 (filebench's own suggestion).
- "paper": S1's values (fileserver nfiles 10000, meanfilesize 128k, nthreads 50, iosize 1m,
  meanappendsize 16k; oltp iosize 2k, nshadows 200, ndbwriters 10, filesize 10m, nfiles 10;
  webserver nfiles 1000, meanfilesize 16k, nthreads 100), run 60. S1 ran the stock personalities
  of filebench 1.4.9.1, so for varmail, videoserver and webproxy (which S1 did not run) "paper"
  is the stock values with run 60.
- "quick": fewer files/threads and smaller videos, so the filesets stay well under 1 GB (a 1-2 GB
  loop-device target) and a run takes about 15 s.

`meanfilesize`: filebench 1.4 drew the file sizes of fileserver, webserver and varmail from a
gamma distribution with mean `$meanfilesize`; 1.5's stock files instead set `$filesize` to a
`cvar(...,parameters=mean:<bytes>;...)`. fsbench keeps the 1.4 name (the one the studies quote):
overriding `meanfilesize` in a file that sets no `$meanfilesize` rewrites the `mean:` of its
`$filesize` cvar. (webproxy's 1.5 file sets `$meanfilesize` itself, used as a fixed size.)

Filebench's "mb/s" is MiB/s (its MB is 1024*1024 bytes, filebench.h); metrics are converted to
MB/s (10^6 bytes/s). Filebench needs ASLR off: with it on, its worker processes crash and the
master waits for ever. The measured command runs under `setarch -R`, which turns address space
randomisation off for filebench and its workers only, so nothing system-wide has to be switched
and restored (and a killed run cannot leave ASLR off).
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

from ..errors import ParseError, ToolMissing
from ..metrics import Direction, Metric, MetricSpec
from .params import ONE, Param, choice, positive

#: environment variable naming the filebench binary
BINARY_ENV = "FSBENCH_FILEBENCH"
#: environment variable naming the directory of the stock personalities (<name>.f)
WORKLOADS_ENV = "FSBENCH_FILEBENCH_WORKLOADS"

METRICS = (
    MetricSpec(r"filebench\.(ops_per_s|flowop_ops_per_s)", "ops/s", "filebench.ops_per_s|flowop_ops_per_s"),
    MetricSpec(r"filebench\.(mb_per_s|flowop_mb_per_s)", "MB/s", "filebench.mb_per_s|flowop_mb_per_s"),
    MetricSpec(r"filebench\.(ms_per_op|flowop_ms_per_op)", "ms", "filebench.ms_per_op|flowop_ms_per_op"),
)

#: why a filebench case is skipped when the binary is absent
MISSING_REASON = (
    "filebench not found on PATH or in $FSBENCH_FILEBENCH; build it from its upstream release: "
    "github.com/filebench/filebench (libtoolize; aclocal; autoheader; automake --add-missing; "
    "autoconf; ./configure; make; make install), then put it on PATH or set FSBENCH_FILEBENCH"
)

#: directory (relative to workdir) that holds the filesets
DATA_DIR = "fsbench-filebench"

PERSONALITIES = ("fileserver", "webserver", "oltp", "varmail", "videoserver", "webproxy")
SCALES = ("quick", "paper", "stock")
RUNTIME = {"quick": 15, "paper": 60, "stock": 60}

#: the variables each scale sets (names as the studies and filebench 1.4 spell them)
SCALE_VARIABLES: dict[str, dict[str, dict[str, str]]] = {
    "quick": {
        "fileserver": {"nfiles": "10000", "meanfilesize": "16k", "nthreads": "16"},
        "webserver": {"nthreads": "16", "meanappendsize": "1k"},  # bounds the ever-growing log
        "oltp": {"nshadows": "20", "ndbwriters": "2"},
        "varmail": {},  # stock: 1000 files of 16k, 16 threads
        "videoserver": {"filesize": "32m", "nthreads": "8", "numactivevids": "8", "numpassivevids": "8"},
        "webproxy": {"nfiles": "1000", "nthreads": "16"},
    },
    "paper": {  # the RAID filesystems study (S1): its Filebench parameters
        "fileserver": {"nfiles": "10000", "meanfilesize": "128k", "nthreads": "50", "iosize": "1m",
                       "meanappendsize": "16k"},
        "webserver": {"nfiles": "1000", "meanfilesize": "16k", "nthreads": "100"},
        "oltp": {"iosize": "2k", "nshadows": "200", "ndbwriters": "10", "filesize": "10m", "nfiles": "10"},
        "varmail": {},
        "videoserver": {},
        "webproxy": {},
    },
    "stock": {p: {} for p in PERSONALITIES},
}

MIB = 1024 * 1024
#: Filebench's flowop types that move data, by what they do (FLOW_ATTR_READ / FLOW_ATTR_WRITE in
#: its flowop_library.c and fb_localfs.c); its other flowops move no bytes
FLOWOP_IO = {"read": "read", "readwholefile": "read", "write": "write", "writewholefile": "write",
             "appendfile": "write", "appendfilerand": "write", "aiowrite": "write"}
#: what replaces the `run` line of the text the preparation runs
CREATE = "create files\n"
_SIZE_SUFFIX = {"": 1, "k": 1024, "m": MIB, "g": 1024 * MIB}
_SIZE_RE = re.compile(r"([0-9]+)([kmg]?)")
_BOOLEANS = ("true", "false")
#: what filebench's lexer takes unquoted (it skips any other character and runs on)
_PATH_RE = re.compile(r"[/A-Za-z-][/A-Za-z0-9._:;-]*")
_SET_RE = re.compile(r"^[ \t]*set[ \t]+\$(?P<name>\w+)[ \t]*=[ \t]*(?P<value>[^\n]*?)[ \t]*$", re.M)
_RUN_RE = re.compile(r"^[ \t]*(?:run|psrun)(?:[ \t][^\n]*)?(?:\n|\Z)", re.M)
_MEAN_RE = re.compile(r"(?<=mean:)[0-9]+")
_FILESET_RE = re.compile(r"^([ \t]*define[ \t]+fileset[ \t][^\n]*?)[ \t]*$", re.M)
_REUSE_RE = re.compile(r"[ \t]*,[ \t]*reuse(?:[ \t]*=[ \t]*[^,\s]*)?(?=[ \t]*(?:,|$))")
_FLOWOP_DEF_RE = re.compile(r"^[ \t]*flowop[ \t]+(?P<type>\w+)[ \t]+name=(?P<name>[^,\s]+)", re.M)


def size_bytes(value: str) -> int:
    """Filebench size syntax ("16k", "1m", "10g", "512") in bytes (k = 1024)."""
    m = _SIZE_RE.fullmatch(value)
    if m is None:
        raise ValueError(f"not a filebench size: {value!r}")
    return int(m.group(1)) * _SIZE_SUFFIX[m.group(2)]


def unavailable() -> list[str]:
    """Why Filebench cases cannot run here (it is in no package registry)."""
    return [] if find_filebench() else [MISSING_REASON]


def find_filebench() -> str | None:
    """The filebench binary: $FSBENCH_FILEBENCH if it is an executable file, else PATH's."""
    env = os.environ.get(BINARY_ENV, "")
    if env:
        return env if os.path.isfile(env) and os.access(env, os.X_OK) else None
    return shutil.which("filebench")


def default_binary() -> str:
    """The binary a `Filebench` runs when none is given ($FSBENCH_FILEBENCH, else "filebench")."""
    return os.environ.get(BINARY_ENV) or "filebench"


# ---------------------------------------------------------------- the stock personality


def customise(stock_text: str, directory: str, overrides: Mapping[str, str], runtime: int) -> str:
    """The stock personality text with its `$dir`, the overridden variables and its run changed.

    Rewrites the `set $dir=` line(s) to `directory`, each overridden `set $<name>=` line to its
    new value (a `set $runtime=` line, if any, to `runtime`), removes every `run`/`psrun` line and
    appends `run <runtime>`. Everything else is the stock text, unchanged. ValueError (one line)
    when the text does not set `$dir` or a variable being overridden, when a value is not of the
    stock value's kind (true/false, else a number with optional k/m/g), or when `directory` is
    something filebench's lexer would mangle. `meanfilesize`: see the module docstring.
    """
    if isinstance(runtime, bool) or not isinstance(runtime, int) or runtime < 1:
        raise ValueError(f"runtime must be a whole number of seconds >= 1, not {runtime!r}")
    if not _PATH_RE.fullmatch(directory):
        raise ValueError(f"filebench's lexer cannot parse the directory {directory!r}")
    stock = {m.group("name"): m.group("value") for m in _SET_RE.finditer(stock_text)}
    if "dir" not in stock:
        raise ValueError("the personality does not set $dir")
    new = {"dir": directory}
    if "runtime" in stock:
        new["runtime"] = str(runtime)
    mean = None
    for key, value in overrides.items():
        if key in ("dir", "runtime"):
            raise ValueError(f"${key} is set by fsbench, not an override")
        if key in stock:
            _check_value(key, value, stock[key])
            new[key] = value
        elif key == "meanfilesize" and _MEAN_RE.search(stock.get("filesize", "")):
            _check_value(key, value, "0")
            mean = str(size_bytes(value))
        else:
            names = ", ".join(f"${k}" for k in stock)
            raise ValueError(f"does not set ${key} (it sets {names})")
    if mean is not None and "filesize" not in new:
        new["filesize"] = _MEAN_RE.sub(mean, stock["filesize"], count=1)

    def rewrite(m: re.Match[str]) -> str:
        name = m.group("name")
        return f"set ${name}={new[name]}" if name in new else m.group(0)

    text = _RUN_RE.sub("", _SET_RE.sub(rewrite, stock_text))
    if text and not text.endswith("\n"):
        text += "\n"
    return text + f"run {runtime}\n"


def _check_value(key: str, value: str, stock_value: str) -> None:
    if stock_value in _BOOLEANS:
        if value not in _BOOLEANS:
            raise ValueError(f"{key}={value!r}: expected true or false")
    elif not _SIZE_RE.fullmatch(value):
        raise ValueError(f"{key}={value!r}: expected a number with optional k/m/g")


def reusing(text: str) -> str:
    """The text with `reuse` on every `define fileset` line (a stock `reuse=...` replaced), so its
    `run` uses the files the preparation made."""
    return _FILESET_RE.sub(lambda m: _REUSE_RE.sub("", m.group(1)) + ",reuse", text)


def creating(text: str) -> str:
    """The customised text (ending in its `run` line) with `create files` in place of `run`."""
    body, _, last = text.rstrip("\n").rpartition("\n")
    if not last.startswith("run "):
        raise ValueError("the customised text does not end with its run line")
    return (body + "\n" if body else "") + CREATE


def flowop_kinds(text: str) -> dict[str, str]:
    """Each data-moving flowop's name in a workload text, with "read" or "write" (FLOWOP_IO)."""
    return {m.group("name"): FLOWOP_IO[m.group("type")] for m in _FLOWOP_DEF_RE.finditer(text)
            if m.group("type") in FLOWOP_IO}


def stock_dir(binary: str | None = None, directory: str | None = None) -> Path:
    """Where the stock personalities are: `directory`, $FSBENCH_FILEBENCH_WORKLOADS, or
    `<prefix>/share/filebench/workloads` for the binary `<prefix>/bin/filebench`.

    ToolMissing when the binary must be found and is not.
    """
    if directory:
        return Path(directory)
    if os.environ.get(WORKLOADS_ENV):
        return Path(os.environ[WORKLOADS_ENV])
    binary = binary or default_binary()
    found = binary if os.sep in binary else shutil.which(binary)
    if not found or not os.path.isfile(found):
        raise ToolMissing(MISSING_REASON)
    return Path(os.path.realpath(found)).parent.parent / "share" / "filebench" / "workloads"


def read_stock(personality: str, binary: str | None = None, directory: str | None = None) -> str:
    """The text of the installed stock personality `<workloads dir>/<personality>.f`."""
    path = stock_dir(binary, directory) / f"{personality}.f"
    try:
        return path.read_text()
    except OSError as e:
        raise ToolMissing(
            f"cannot read filebench's stock personality {path} ({e.strerror}); point workloads_dir= or "
            f"${WORKLOADS_ENV} at the directory holding {personality}.f (filebench installs them in "
            "<prefix>/share/filebench/workloads)"
        ) from None


def _normalise(overrides: object) -> tuple[tuple[str, str], ...]:
    pairs = overrides.items() if isinstance(overrides, Mapping) else overrides
    return tuple(sorted((str(k), str(v).lower()) for k, v in pairs))  # type: ignore[union-attr]


@dataclass(frozen=True)
class Filebench:
    """A stock filebench personality at a scale, with variable overrides.

    `overrides` may be given as a mapping; it is stored as sorted (name, value) pairs so the
    workload stays hashable. `runtime` None means the scale's (quick 15 s, paper/stock 60 s);
    `timeout` None means runtime + 900 s (pre-allocating a paper-scale fileset takes a while).

    `stock_text` is the stock personality file's text; `Filebench.from_installation(...)` reads
    it (and so validates the overrides against it at once). Left None, `files()` reads it from
    the installation (`workloads_dir`, else $FSBENCH_FILEBENCH_WORKLOADS, else next to `binary`).
    """

    personality: str
    scale: str = "quick"
    overrides: Mapping[str, str | int] | tuple[tuple[str, str], ...] = ()
    runtime: int | None = None
    timeout: float | None = None  # type: ignore[assignment]
    binary: str = field(default_factory=default_binary)
    workloads_dir: str | None = None
    stock_text: str | None = field(default=None, repr=False)
    #: the stock text read by `stock()` when `stock_text` was not given
    _read: str | None = field(default=None, init=False, repr=False, compare=False)

    name: ClassVar[str] = "filebench"
    @classmethod
    def from_installation(
        cls,
        personality: str,
        scale: str = "quick",
        overrides: Mapping[str, str | int] | tuple[tuple[str, str], ...] = (),
        runtime: int | None = None,
        timeout: float | None = None,
        binary: str | None = None,
        workloads_dir: str | None = None,
    ) -> Filebench:
        """The workload with the installed stock personality's text (ToolMissing if absent)."""
        binary = binary or default_binary()
        if personality not in PERSONALITIES:
            cls(personality)  # raises the usual ValueError
        text = read_stock(personality, binary, workloads_dir)
        return cls(personality, scale, overrides, runtime, timeout, binary, workloads_dir, text)

    def __post_init__(self) -> None:
        if self.personality not in PERSONALITIES:
            choices = ", ".join(PERSONALITIES)
            raise ValueError(f"unknown filebench personality {self.personality!r}; choose from {choices}")
        if self.scale not in SCALES:
            raise ValueError(f"unknown filebench scale {self.scale!r}; choose from {', '.join(SCALES)}")
        pairs = _normalise(self.overrides)
        for key, value in pairs:  # the kind of each value is checked against the stock file
            if key in ("dir", "runtime"):
                raise ValueError(f"filebench {self.personality}: ${key} is set by fsbench, not an override")
            if not (_SIZE_RE.fullmatch(value) or value in _BOOLEANS):
                raise ValueError(f"filebench {self.personality} {key}={value!r}: expected a number "
                                 "with optional k/m/g, or true/false")
        object.__setattr__(self, "overrides", pairs)
        runtime = RUNTIME[self.scale] if self.runtime is None else self.runtime
        if isinstance(runtime, bool) or not isinstance(runtime, int) or runtime < 1:
            raise ValueError(f"filebench runtime must be a whole number of seconds >= 1, not {runtime!r}")
        object.__setattr__(self, "runtime", runtime)
        if self.timeout is None:
            object.__setattr__(self, "timeout", float(runtime + 900))
        elif self.timeout <= runtime:
            raise ValueError(f"filebench timeout {self.timeout} must exceed the runtime {runtime}")
        if self.stock_text is not None:
            self.workload_text()  # validate the overrides against the stock file now

    def variables(self) -> dict[str, str]:
        """The variables fsbench sets: the scale's, then the overrides (stock values for the rest)."""
        values = dict(SCALE_VARIABLES[self.scale][self.personality])
        values.update(dict(self.overrides))  # type: ignore[arg-type]
        return values

    def stock(self) -> str:
        """The stock personality text: `stock_text`, else read from the installation once."""
        if self.stock_text is not None:
            return self.stock_text
        if self._read is None:
            object.__setattr__(self, "_read", read_stock(self.personality, self.binary, self.workloads_dir))
        return self._read  # type: ignore[return-value]

    def workload_text(self, directory: str = DATA_DIR) -> str:
        """The stock personality, customised: filesets under `directory`, variables, run."""
        try:
            return customise(self.stock(), directory, self.variables(), int(self.runtime or 0))
        except ValueError as e:
            raise ValueError(f"filebench {self.personality}: {e}") from None

    def files(self) -> dict[str, str]:
        """`<personality>.f`, the measured text (its filesets reused), and `<personality>-create.f`,
        the preparation's (filesets created, no run); `$dir` relative to the workdir (see the
        module docstring)."""
        text = self.workload_text()
        return {f"{self.personality}.f": reusing(text), f"{self.personality}-create.f": creating(text)}

    def prepare_argvs(self, workdir: Path, scratch: Path) -> list[list[str]]:
        """Filebench on `<personality>-create.f`: the filesets made afresh before every run
        (unmeasured; the cache policy comes after it)."""
        return [self._command(workdir, scratch, f"{self.personality}-create.f")]

    def argv(self, workdir: Path, scratch: Path) -> list[str]:
        """`setarch -R env -C <workdir> filebench -f <scratch>/<personality>.f`, paths absolute.

        Absolute because `env -C` changes directory before filebench opens its `-f` file;
        `setarch -R` disables ASLR for filebench and its workers.
        """
        return self._command(workdir, scratch, f"{self.personality}.f")

    def _command(self, workdir: Path, scratch: Path, filename: str) -> list[str]:
        binary = os.path.abspath(self.binary) if os.sep in self.binary else self.binary
        script = Path(os.path.abspath(scratch)) / filename
        return ["setarch", "-R", "env", "-C", os.path.abspath(workdir), binary, "-f", str(script)]

    def parse(self, output: str) -> list[Metric]:
        """IO Summary and per-flowop metrics, the summary's with the bytes moved as their io;
        ParseError on errors, aborts, truncation, or a fileset made inside the measured run."""
        check_reused(output)
        return parse_output(output, flowop_kinds(self.stock()))

    def params(self) -> dict[str, str]:
        """personality, scale, runtime, the variables fsbench set and, once the stock text is
        known, the first 16 hex digits of its SHA-256 (`stock_sha256`)."""
        out = {"personality": self.personality, "scale": self.scale, "runtime": str(self.runtime)}
        out.update(self.variables())
        text = self.stock_text if self.stock_text is not None else self._read
        if text is not None:
            out["stock_sha256"] = hashlib.sha256(text.encode()).hexdigest()[:16]
        return out


# ---------------------------------------------------------------- parsing

_SUMMARY_RE = re.compile(
    r"IO Summary:\s+(?P<ops>\d+) ops\s+(?P<ops_s>[\d.]+) ops/s\s+(?P<rd>[\d.]+)/(?P<wr>[\d.]+) rd/wr\s+"
    r"(?P<mib_s>[\d.]+)mb/s\s+(?P<ms_op>[\d.]+)ms/op"
)
_FLOWOP_RE = re.compile(
    r"^(?P<name>\S+)\s+(?P<ops>\d+)ops\s+(?P<ops_s>[\d.]+)ops/s\s+(?P<mib_s>[\d.]+)mb/s\s+"
    r"(?P<ms_op>[\d.]+)ms/op\s+\[", re.M
)
#: lines filebench prints when a run went wrong (its errors carry no level tag)
_ERROR_RE = re.compile(
    r"around line \d+|NO VALID RESULTS|Run stopped early|Unexpected Process termination"
    r"|[Ff]ailed|[Ee]rror|Cannot|could not|Illegal|Segmentation fault|Aborted"
)


def mib_to_mb(mib_per_s: float) -> float:
    """Filebench's mb/s (MiB/s) in MB/s (10^6 bytes/s)."""
    return mib_per_s * MIB / 1_000_000


_POPULATED_RE = re.compile(r"^[\d.]+: (?P<name>\S+) populated: ", re.M)
_REUSING_RE = re.compile(r"^[\d.]+: Reusing existing (?P<name>\S+) tree$", re.M)


def check_reused(output: str) -> None:
    """ParseError unless the run reused every fileset it populated (the preparation made them)."""
    made = [m.group("name") for m in _POPULATED_RE.finditer(output)]
    reused = {m.group("name") for m in _REUSING_RE.finditer(output)}
    created = [name for name in made if name not in reused]
    if created:
        raise ParseError("filebench", f"fileset {created[0]} was created inside the measured run, not "
                         "reused from the preparation (was its preparation skipped?)", output)


def parse_output(output: str, kinds: Mapping[str, str] | None = None) -> list[Metric]:
    """Metrics from a filebench run's stdout+stderr. With `kinds` (flowop name -> "read" or
    "write", `flowop_kinds` of the workload text) the IO Summary's figures carry the bytes moved."""
    if "Filebench Version" not in output:
        raise ParseError("filebench", "no 'Filebench Version' banner: not filebench output", output)
    bad = _ERROR_RE.search(output)
    if bad:
        line = output[output.rfind("\n", 0, bad.start()) + 1 :].split("\n", 1)[0].strip()
        raise ParseError("filebench", f"run failed: {line}", output)
    m = _SUMMARY_RE.search(output)
    if m is None:
        what = "an incomplete IO Summary line" if "IO Summary" in output else "no IO Summary line"
        raise ParseError("filebench", f"{what} (truncated or aborted run)", output)
    if int(m.group("ops")) == 0:
        raise ParseError("filebench", "IO Summary reports 0 operations", output)
    flowops = _flowop_lines(output[: m.start()])
    seconds = int(m.group("ops")) / float(m.group("ops_s"))
    io = None if kinds is None else moved(flowops, kinds, seconds, output)
    return _summary_metrics(m, io) + _flowop_metrics(flowops)


def moved(flowops: list[re.Match[str]], kinds: Mapping[str, str], seconds: float,
          output: str) -> tuple[tuple[str, int], ...]:
    """The bytes read and written: each flowop's MiB/s x the run's seconds, by its kind.

    ParseError for a flowop that moved bytes but is no read or write flowop of the workload text.
    """
    total = {"read": 0.0, "write": 0.0}
    for m in flowops:
        mib_s = float(m.group("mib_s"))
        if mib_s == 0:
            continue
        kind = kinds.get(m.group("name"))
        if kind is None:
            raise ParseError("filebench", f"flowop {m.group('name')} moved {mib_s} MiB/s but the workload "
                             "text has no read or write flowop of that name", output)
        total[kind] += mib_s * MIB * seconds
    return tuple((kind, round(nbytes)) for kind, nbytes in total.items())


def _summary_metrics(m: re.Match[str], io: tuple[tuple[str, int], ...] | None) -> list[Metric]:
    """The IO Summary's figures: MB/s with the bytes moved (io), ops/s and ms/op of the same bytes."""
    same = None if io is None else "filebench.mb_per_s"
    return [
        Metric("filebench.mb_per_s", mib_to_mb(float(m.group("mib_s"))), "MB/s", Direction.HIGHER, io=io),
        Metric("filebench.ops_per_s", float(m.group("ops_s")), "ops/s", Direction.HIGHER, same_io_as=same),
        Metric("filebench.ms_per_op", float(m.group("ms_op")), "ms", Direction.LOWER, same_io_as=same),
    ]


def _flowop_lines(text: str) -> list[re.Match[str]]:
    """The lines of the Per-Operation Breakdown."""
    start = text.rfind("Per-Operation Breakdown")
    if start < 0:
        raise ParseError("filebench", "no Per-Operation Breakdown before the IO Summary", text)
    return list(_FLOWOP_RE.finditer(text, start))


def _flowop_metrics(flowops: list[re.Match[str]]) -> list[Metric]:
    """ops/s, MB/s and (when it ran at all) ms/op of each flowop in the Per-Operation Breakdown."""
    metrics = []
    for m in flowops:
        name = m.group("name")
        ops, mb = float(m.group("ops_s")), mib_to_mb(float(m.group("mib_s")))
        metrics.append(Metric("filebench.flowop_ops_per_s", ops, "ops/s", Direction.HIGHER, {"flowop": name}))
        metrics.append(Metric("filebench.flowop_mb_per_s", mb, "MB/s", Direction.HIGHER, {"flowop": name}))
        if int(m.group("ops")) > 0:  # a flowop that never ran prints 0.000ms/op: no latency known
            ms = float(m.group("ms_op"))
            metrics.append(Metric("filebench.flowop_ms_per_op", ms, "ms", Direction.LOWER, {"flowop": name}))
    return metrics


PARAMS = (
    Param("filebench-personality", "fileserver,webserver,oltp,varmail",
          f"Filebench personalities, of {', '.join(PERSONALITIES)}", choice(*PERSONALITIES)),
    Param("filebench-scale", "quick", "Filebench sizes: quick, paper (the study's) or stock",
          choice("quick", "paper", "stock"), kind=ONE),
    Param("filebench-runtime", "15", "Filebench run time in seconds", positive, kind=ONE),
)

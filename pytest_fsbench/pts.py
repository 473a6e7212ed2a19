"""The Phoronix Test Suite: finding it, giving it fsbench's profiles, and a profile as a workload.

PTS runs a test profile in the profile's install directory and never makes a filesystem, so a
case installs the profile under the target's work directory (PTS_TEST_INSTALL_ROOT_PATH) and
each measured run is one `internal-run` there (batch mode preset by PTS itself: no upload, no
prompts when the result name, identifier and description come from the environment), the options
chosen by their menu position in PRESET_OPTIONS, one PTS run per fsbench run. fsbench's repeat,
cache policy, monitoring and store apply as to any workload; the session's cases are then
written into one PTS result file (ptsfile.py; result name = the session's, identifier = the
case id), so `phoronix-test-suite show-result | merge-results | result-file-to-csv |
upload-result` work on it.

Where PTS keeps things: as root /var/lib/phoronix-test-suite (else ~/.phoronix-test-suite), or
$PTS_USER_PATH_OVERRIDE; local profiles in test-profiles/local/, suites in test-suites/local/,
result files in test-results/<name>/composite.xml.
"""

from __future__ import annotations

import filecmp
import json
import os
import re
import shutil
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path

from lxml import etree

from .errors import FsbenchError, ParseError, UsageError
from .metrics import Metric
from .ptsfile import names_filesystem, read_results, software_filesystem, to_metrics
from .system import Runner
from .target import NotOnTarget, Target

#: environment variable naming the phoronix-test-suite launcher
BINARY_ENV = "FSBENCH_PTS"
#: what the profiles' install.sh reads to use the system's tool instead of building the pinned one
SYSTEM_TOOLS_ENV = "FSBENCH_PTS_SYSTEM_TOOLS"

MISSING_REASON = (
    "phoronix-test-suite not found on PATH, in $FSBENCH_PTS or --pts-binary; it is in no package "
    "registry: get its source release from github.com/phoronix-test-suite/phoronix-test-suite, "
    "install php-cli and php-xml, and run its ./phoronix-test-suite (or install-sh)"
)

REPO_ROOT = Path(__file__).resolve().parent.parent


def _data_dir(installed: str, checkout: str) -> Path:
    """A directory of fsbench's PTS definitions: inside the installed package (a wheel ships
    test-profiles/ as pytest_fsbench/pts_profiles), else in the checkout it runs from."""
    packaged = Path(__file__).resolve().parent / installed
    return packaged if packaged.is_dir() else REPO_ROOT / checkout


PROFILES_DIR = _data_dir("pts_profiles", "test-profiles")
SUITES_DIR = _data_dir("pts_suites", "suites")

#: option values a profile runs with unless --pts-options says otherwise: minutes, small files
QUICK_OPTIONS: dict[str, dict[str, str]] = {
    "fsbench-dd": {"test": "write", "block-size": "1048576", "file-size": "256", "data": "random", "cache": "direct"},
    "fsbench-iozone": {"record-size": "1m", "file-size": "512", "test": "-i0 #WRITE", "cache": "-I"},
    "fsbench-filebench": {"personality": "varmail", "run-time": "15", "file-set": "quick"},
    "fsbench-bonnie": {"file-size": "1024", "files": "16"},
    "fsbench-kernel-build": {"config": "tinyconfig", "jobs": "cores"},
}

#: what PTS keeps of a result name as given (its clean_save_name keeps letters, digits and
#: dashes, and collapses a run of dashes into one)
_NAME = re.compile(r"(?=.{2,126}$)[a-z0-9]+(-[a-z0-9]+)*")


class PtsError(UsageError):
    """A PTS option, option value or result name fsbench cannot use."""


def find_pts(explicit: str | None = None) -> str | None:
    """The launcher: explicit path, else $FSBENCH_PTS, else PATH's phoronix-test-suite."""
    for candidate in (explicit, os.environ.get(BINARY_ENV)):
        if candidate:
            return candidate if os.path.isfile(candidate) and os.access(candidate, os.X_OK) else None
    return shutil.which("phoronix-test-suite")


def install_dir(launcher: str) -> Path | None:
    """The PTS tree a launcher runs (the directory holding pts-core/): the launcher's own
    directory, or one a wrapper script names (PTS's install-sh writes such a wrapper)."""
    candidates = [Path(launcher).resolve().parent]
    try:
        text = Path(launcher).read_text(errors="replace")[:8192]
    except OSError:
        text = ""
    for found in re.findall(r"/[\w./+-]+", text):
        path = Path(found)
        candidates += [path, path.parent]
    return next((c for c in candidates if (c / "pts-core").is_dir()), None)


def user_path(env: dict[str, str] | None = None, uid: int | None = None) -> Path:
    """PTS's user directory (profiles, suites, results, installed tests)."""
    env = dict(os.environ) if env is None else env
    override = env.get("PTS_USER_PATH_OVERRIDE")
    if override and os.path.isdir(override):
        return Path(override)
    if (os.getuid() if uid is None else uid) == 0:
        return Path("/var/lib/phoronix-test-suite")
    return Path(env.get("HOME", "~")).expanduser() / ".phoronix-test-suite"


def result_file(name: str, user: Path) -> Path:
    return user / "test-results" / name / "composite.xml"


def check_result_name(name: str) -> str:
    """PTS result names are lower case letters, digits and single dashes (PTS rewrites anything
    else, and would then save the result under a name fsbench does not look for)."""
    if not _NAME.fullmatch(name):
        raise PtsError(f"PTS result name {name!r}: use 2-126 lower-case letters and digits, words joined by "
                       "single dashes")
    return name


def available_profiles(profiles_dir: Path = PROFILES_DIR) -> dict[str, Path]:
    """fsbench's profiles by base name ("fsbench-dd" -> test-profiles/fsbench-dd-1.0.0)."""
    found = {}
    for d in sorted(profiles_dir.glob("fsbench-*-*.*.*")):
        base = re.sub(r"-\d+\.\d+\.\d+$", "", d.name)
        found[base] = d
    return found


def install_definitions(user: Path, profiles_dir: Path = PROFILES_DIR, suites_dir: Path = SUITES_DIR,
                        system_tools: bool = False) -> list[str]:
    """Copy fsbench's profiles and suites into PTS's local repositories, replacing fsbench's own
    copies that differ; returns what changed (nothing when all are current).

    With system_tools the profiles are copied without their downloads.xml: PTS refuses a package
    with a URL whenever network use is off, even an optional one, but installs a profile that
    downloads nothing, and install.sh then uses the system's tool (FSBENCH_PTS_SYSTEM_TOOLS=1).
    The profiles in test-profiles/ keep their pinned downloads for connected users."""
    changed = []
    with tempfile.TemporaryDirectory() as staging:
        for src_root, dst_root in ((profiles_dir, user / "test-profiles" / "local"),
                                   (suites_dir, user / "test-suites" / "local")):
            for src in sorted(src_root.glob("fsbench-*")):
                wanted = Path(staging) / src_root.name / src.name
                shutil.copytree(src, wanted)
                if system_tools:
                    (wanted / "downloads.xml").unlink(missing_ok=True)
                dst = dst_root / src.name
                if dst.is_dir() and _same_tree(wanted, dst):
                    continue
                if dst.exists():
                    shutil.rmtree(dst)
                dst_root.mkdir(parents=True, exist_ok=True)
                shutil.copytree(wanted, dst)
                changed.append(str(dst))
    return changed


def _same_tree(a: Path, b: Path) -> bool:
    cmp = filecmp.dircmp(a, b)
    if cmp.left_only or cmp.right_only or cmp.funny_files:
        return False
    _, mismatch, errors = filecmp.cmpfiles(a, b, cmp.common_files, shallow=False)
    return not mismatch and not errors and all(_same_tree(a / d, b / d) for d in cmp.common_dirs)


#: printed between PTS's own output and the result file the measured command shows
RESULT_MARK = "==== fsbench: the PTS result file of this run ===="

# Runs PTS, then prints the run's result file and removes it from PTS's results: each fsbench run
# is one PTS invocation with a result name of its own (the session's file is written from the
# store), so what the parser reads is this run's result and nothing else.
_COLLECT = """composite=$1; shift
"$@"; status=$?
if [ ! -f "$composite" ]; then echo "fsbench: PTS saved no result file $composite" >&2; exit 1; fi
printf '%s\\n' "$FSBENCH_MARK"; cat "$composite"; rm -rf "${composite%/composite.xml}"
exit $status"""


@dataclass(frozen=True)
class PtsWorkload:
    """A fsbench PTS profile as a workload: each measured run is one PTS `internal-run` of the
    profile (FORCE_TIMES_TO_RUN=1), installed beforehand under the target's work directory, so
    fsbench's repeat policy, cache policy, monitoring and store apply to it as to any tool."""

    pts: str
    profile: str  # base name, e.g. "fsbench-dd"
    version: str  # e.g. "1.0.0"
    options: tuple[tuple[str, str], ...]  # option identifier -> menu value
    choices: tuple[tuple[str, int], ...]  # option identifier -> position of that value in its menu
    identifier: str  # the system identifier PTS files the result under: the case id
    description: str
    user: Path  # PTS's user directory, where it saves result files
    fs: str = ""  # the target's filesystem, which PTS must report
    stat_type: str = ""  # `stat -f -c %T` of the install directory
    system_tools: bool = False
    timeout: float = 4 * 3600

    @property
    def name(self) -> str:
        return f"pts.{self.profile}"

    @property
    def test(self) -> str:
        return f"local/{self.profile}-{self.version}"

    def params(self) -> dict[str, str]:
        return {"profile": self.test, **dict(self.options)}

    @staticmethod
    def install_root(workdir: Path) -> Path:
        return workdir / "pts"

    def install_dir(self, workdir: Path) -> Path:
        """Where PTS installs (and runs) the profile under the install root."""
        return self.install_root(workdir) / "local" / f"{self.profile}-{self.version}"

    def env(self, workdir: Path, result_name: str) -> dict[str, str]:
        env = {
            "PTS_TEST_INSTALL_ROOT_PATH": f"{self.install_root(workdir)}/",
            "TEST_RESULTS_NAME": result_name,
            "TEST_RESULTS_IDENTIFIER": self.identifier,
            "TEST_RESULTS_DESCRIPTION": self.description,
            "FORCE_TIMES_TO_RUN": "1",
            # by menu position: PTS then describes the result with the entries' names, as a suite
            # does (PRESET_OPTIONS_VALUES would show raw values)
            "PRESET_OPTIONS": ";".join(f"{self.profile}.{k}={i}" for k, i in self.choices),
            # no PTS modules: one of them starts a result-viewer web server per invocation, which
            # outlives a PTS that is killed; fsbench needs none of them
            "PTS_IGNORE_MODULES": "1",
        }
        if self.system_tools:
            env[SYSTEM_TOOLS_ENV] = "1"
        return env

    def _argv(self, command: str, workdir: Path, result_name: str) -> list[str]:
        env = self.env(workdir, result_name)
        return ["env", *(f"{k}={v}" for k, v in sorted(env.items())), self.pts, command, self.test]

    def install_argv(self, workdir: Path) -> list[str]:
        return self._argv("batch-install", workdir, "fsbench-install")

    def installed(self, target: Target, run: Runner) -> PtsWorkload:
        """Install the profile under the target's work directory (once per case) and prove PTS
        will run it there; the workload with the directory's filesystem type, which PTS's result
        must then report. PtsInstallFailed carries PTS's reason."""
        workdir = target.workdir()
        install_dir = self.install_dir(workdir)
        # PTS silently installs under its default directory when the install root does not exist
        self.install_root(workdir).mkdir(parents=True, exist_ok=True)
        target.check_holds(self.install_root(workdir), run)
        done = run(self.install_argv(workdir), timeout=self.timeout)
        failure = install_failure(install_dir, done.output)
        if failure:
            raise PtsInstallFailed(f"{self.identifier}: {failure}")
        target.check_holds(install_dir, run)
        stat_type = run(["stat", "-f", "-L", "-c", "%T", str(install_dir)], timeout=60).stdout.strip()
        return replace(self, fs=target.spec.fs, stat_type=stat_type)

    def files(self) -> dict[str, str]:
        return {}

    def prepare_argvs(self, workdir: Path, scratch: Path) -> list[list[str]]:
        return []

    def argv(self, workdir: Path, scratch: Path) -> list[str]:
        """One PTS run, its result saved under a name of this run's own (from the run's private
        scratch directory), shown on stdout after RESULT_MARK and removed from PTS's results."""
        # the scratch directory's random name may hold '_' in a row, which PTS would collapse
        result_name = check_result_name("fsbench-" + re.sub(r"[^a-z0-9]+", "-", scratch.name.lower()).strip("-"))
        composite = self.user / "test-results" / result_name / "composite.xml"
        return ["env", f"FSBENCH_MARK={RESULT_MARK}", "sh", "-c", _COLLECT, "fsbench-pts", str(composite),
                *self._argv("internal-run", workdir, result_name)]

    def _results(self, output: str) -> list:
        _, mark, xml = output.partition(RESULT_MARK + "\n")
        if not mark:
            raise ParseError(self.name, f"PTS printed no result file for {self.test}", output)
        try:
            root = etree.fromstring(xml.strip().encode())
        except etree.XMLSyntaxError as exc:
            raise ParseError(self.name, f"PTS's result file for {self.test} is not XML: {exc}", output) from None
        results = [r for r in read_results(root, self.identifier) if r.identifier == self.test and r.samples]
        if not results:
            raise ParseError(self.name, f"PTS ran {self.test} but saved no result for {self.identifier}", output)
        reported = software_filesystem(root, self.identifier)
        if not names_filesystem(reported, self.fs, self.stat_type):
            raise NotOnTarget(f"PTS reported File-System {reported!r} for {self.identifier}, but the target is "
                              f"{self.fs} ({self.stat_type})")
        return results

    def parse(self, output: str) -> list[Metric]:
        return to_metrics(self.profile, self._results(output), 0)

    def manifest_entries(self, output: str) -> dict[str, object]:
        """What the case's manifest keeps of the run: each result as PTS described it (value:
        PTS's, the mean of its samples), so exports line up with PTS's own result files."""
        return {"pts_results": [r.as_record() for r in self._results(output)]}


def parse_options(text: str) -> tuple[tuple[str, str], ...]:
    """"test=write;block-size=1048576" -> (("test", "write"), ("block-size", "1048576"))."""
    pairs = []
    for item in filter(None, (part.strip() for part in text.split(";"))):
        key, sep, value = item.partition("=")
        if not sep or not key or not value:
            raise PtsError(f"PTS option {item!r}: write IDENTIFIER=VALUE, e.g. test=write")
        pairs.append((key.strip(), value.strip()))
    return tuple(pairs)


def profile_options(definition: Path) -> dict[str, list[str]]:
    """A profile's run options: identifier -> the menu's values."""
    doc = etree.parse(str(definition))
    return {o.findtext("Identifier"): [e.findtext("Value") for e in o.iter("Entry")]
            for o in doc.iter("Option")}


def option_choices(definition: Path, options: tuple[tuple[str, str], ...]) -> tuple[tuple[str, int], ...]:
    """Each option's value as its position in the option's menu. Every option named must exist
    and every value be one of its menu's: PTS would otherwise quietly fall back to a default."""
    menus = profile_options(definition)
    choices = []
    for key, value in options:
        if key not in menus:
            raise PtsError(f"{definition.parent.name} has no option {key!r}; it has {', '.join(menus)}")
        if value not in menus[key]:
            raise PtsError(f"{definition.parent.name} option {key}={value!r}: choose one of {', '.join(menus[key])}")
        choices.append((key, menus[key].index(value)))
    return tuple(choices)


class PtsInstallFailed(FsbenchError):
    """PTS did not install a profile (it still exits 0); the message carries PTS's reason."""


def install_failure(install_dir: Path, output: str) -> str | None:
    """Why PTS did not install the profile in install_dir, from its pts-install.json (status and
    errors), the installer's log and PTS's output; None when it is installed."""
    record = install_dir / "pts-install.json"
    try:
        installation = json.loads(record.read_text())["test_installation"]
    except (OSError, ValueError, KeyError):
        tail = "\n".join(output.strip().splitlines()[-15:])
        return f"PTS wrote no installation record {record}; its output ends:\n{tail}"
    if installation.get("status", "INSTALLED") == "INSTALLED":
        return None
    reasons = "; ".join((installation.get("errors") or {}).get("install") or ["no reason given"])
    log = install_dir / "install-failed.log"
    tail = "\n".join(log.read_text(errors="replace").strip().splitlines()[-15:]) if log.exists() else ""
    return f"PTS did not install {install_dir.name} ({installation.get('status')}): {reasons}" + (
        f"\ninstall-failed.log ends:\n{tail}" if tail else "")

"""The Phoronix Test Suite: finding it, giving it fsbench's profiles, running one on a target,
reading its result file.

PTS runs a test profile in the profile's install directory and never makes a filesystem, so a
case installs the profile under the target's mountpoint (PTS_TEST_INSTALL_ROOT_PATH) and runs it
there with `internal-run` (batch mode preset by PTS itself: no upload, no prompts when the
result name, identifier and description come from the environment), the options chosen by
their menu position in PRESET_OPTIONS and the run count from FORCE_TIMES_TO_RUN. Every case of a session goes
into one result file (result name = the session's, identifier = the case id), so
`phoronix-test-suite show-result | merge-results | result-file-to-csv | upload-result` work on it.

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
from dataclasses import dataclass
from pathlib import Path

from lxml import etree

from .errors import FsbenchError, UsageError
from .metrics import Direction, Metric, in_mb_per_s

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

_NAME = re.compile(r"[a-z0-9][a-z0-9-]{1,125}")


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
    """PTS result names are lower case letters, digits and dashes (PTS rewrites anything else)."""
    if not _NAME.fullmatch(name):
        raise PtsError(f"PTS result name {name!r}: use 2-126 lower-case letters, digits and dashes")
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


@dataclass(frozen=True)
class PtsRun:
    """One profile run through PTS on one target."""

    pts: str
    profile: str  # base name, e.g. "fsbench-dd"
    version: str  # e.g. "1.0.0"
    options: tuple[tuple[str, str], ...]  # option identifier -> menu value
    choices: tuple[tuple[str, int], ...]  # option identifier -> position of that value in its menu
    result_name: str
    identifier: str
    description: str
    install_root: Path
    times: int
    system_tools: bool = False

    @property
    def test(self) -> str:
        return f"local/{self.profile}-{self.version}"

    def env(self) -> dict[str, str]:
        env = {
            "PTS_TEST_INSTALL_ROOT_PATH": f"{self.install_root}/",
            "TEST_RESULTS_NAME": self.result_name,
            "TEST_RESULTS_IDENTIFIER": self.identifier,
            "TEST_RESULTS_DESCRIPTION": self.description,
            "FORCE_TIMES_TO_RUN": str(self.times),
            # by menu position: PTS then describes the result with the entries' names, as a suite
            # does (PRESET_OPTIONS_VALUES would show raw values)
            "PRESET_OPTIONS": ";".join(f"{self.profile}.{k}={i}" for k, i in self.choices),
        }
        if self.system_tools:
            env[SYSTEM_TOOLS_ENV] = "1"
        return env

    def _argv(self, command: str) -> list[str]:
        return ["env", *(f"{k}={v}" for k, v in sorted(self.env().items())), self.pts, command, self.test]

    def install_argv(self) -> list[str]:
        return self._argv("batch-install")

    @property
    def install_dir(self) -> Path:
        """Where PTS installs (and runs) the profile under the install root."""
        return self.install_root / "local" / f"{self.profile}-{self.version}"

    def run_argv(self) -> list[str]:
        return self._argv("internal-run")


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


_FILE_SYSTEM = re.compile(r"File-System: ([^,(]+?)\s*(?:[,(]|$)")


def software_filesystem(composite: Path, system: str) -> str | None:
    """The File-System PTS wrote in the Software line of one system of a result file."""
    for entry in etree.parse(str(composite)).iter("System"):
        if entry.findtext("Identifier") == system:
            match = _FILE_SYSTEM.search(entry.findtext("Software") or "")
            return match.group(1).strip() if match else None
    return None


def names_filesystem(pts_name: str | None, fs: str, stat_type: str) -> bool:
    """Whether PTS's File-System (from `stat -f -c %T` of its install root) names the target's
    filesystem: fsbench's name for it, or the statfs type itself. stat reports every ext* as
    "ext2/ext3", which PTS turns into a guess from the machine's mounts, so for those any ext*
    name is PTS's way of saying it (findmnt, checked beside this, tells them apart)."""
    if pts_name is None:
        return False
    allowed = {fs, stat_type} | ({"ext2", "ext3", "ext4"} if stat_type == "ext2/ext3" else set())
    return pts_name in allowed


@dataclass(frozen=True)
class PtsResult:
    """One Result of a PTS result file, with one system's entry."""

    identifier: str  # the test, e.g. local/fsbench-dd-1.0.0
    title: str
    app_version: str
    description: str
    scale: str
    proportion: str  # HIB or LIB
    value: float
    samples: tuple[float, ...]
    run_seconds: tuple[float, ...]
    arguments: str = ""

    def as_record(self) -> dict[str, object]:
        """What an export needs to describe the result as PTS did (value: PTS's, the mean)."""
        return {"identifier": self.identifier, "title": self.title, "app_version": self.app_version,
                "arguments": self.arguments, "description": self.description, "scale": self.scale,
                "proportion": self.proportion, "value": self.value}


def read_results(composite: Path, system: str) -> list[PtsResult]:
    """The results a PTS result file holds for one system identifier."""
    doc = etree.parse(str(composite))
    results = []
    for result in doc.iter("Result"):
        for entry in result.iter("Entry"):
            if entry.findtext("Identifier") != system:
                continue
            raw = entry.findtext("RawString") or ""
            value = float(entry.findtext("Value") or "nan")
            # PTS leaves RawString empty when the test ran once: the Value is the one sample
            samples = tuple(float(v) for v in raw.split(":") if v.strip()) or ((value,) if value == value else ())
            extra = json.loads(entry.findtext("JSON") or "{}")
            run_seconds = tuple(float(v) for v in str(extra.get("test-run-times", "")).split(":") if v)
            results.append(PtsResult(
                identifier=result.findtext("Identifier") or "",
                title=result.findtext("Title") or "",
                app_version=result.findtext("AppVersion") or "",
                description=result.findtext("Description") or "",
                scale=result.findtext("Scale") or "",
                proportion=result.findtext("Proportion") or "HIB",
                value=value,
                samples=samples,
                run_seconds=run_seconds,
                arguments=result.findtext("Arguments") or "",
            ))
    return results


def to_metrics(profile: str, results: list[PtsResult], index: int) -> list[Metric]:
    """The index-th sample of each result as fsbench metrics: name pts.<profile without
    "fsbench-">, the PTS description as the `result` parameter, PTS's proportion, and PTS's
    scale, throughput converted to MB/s (IOzone's profile reports MiB/s)."""
    short = profile.removeprefix("fsbench-")
    return [Metric(f"pts.{short}", *in_mb_per_s(r.samples[index], r.scale),
                   Direction.LOWER if r.proportion == "LIB" else Direction.HIGHER, {"result": r.description})
            for r in results if index < len(r.samples)]

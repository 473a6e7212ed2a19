"""A fsbench PTS profile as a workload, and its installation on a case's target.

PTS runs a test profile in the profile's install directory and never makes a filesystem, so a
case installs the profile under the target's work directory (PTS_TEST_INSTALL_ROOT_PATH), once
per case and never in a guest (PTS runs under the host's kernel), and each measured run is one
`internal-run` there (batch mode preset by PTS itself: no upload, no prompts when the result
name, identifier and description come from the environment), the options chosen by their menu
position in PRESET_OPTIONS, one PTS run per fsbench run. fsbench's repeat, cache policy,
monitoring and store apply as to any workload; the session's cases are then written into one
PTS result file (export.py; result name = the session's, identifier = the case id), so
`phoronix-test-suite show-result | merge-results | result-file-to-csv | upload-result` work on it.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, replace
from pathlib import Path

from lxml import etree

from ..errors import FsbenchError, ParseError
from ..metrics import Metric
from ..measure.run import Unsupported
from ..system.commands import Executor
from ..targets.target import NotOnTarget, Target
from .launcher import SYSTEM_TOOLS_ENV, check_result_name
from .results import names_filesystem, read_results, software_filesystem, to_metrics


#: why a profile's case in a guest kernel skips (PTS installs and runs it under the host's kernel)
ONLY_ON_HOST = "is installed and run on the host's kernel only, not in a guest"
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

    def installed(self, target: Target, execute: Executor) -> PtsWorkload:
        """Install the profile under the target's work directory (once per case) and prove PTS
        will run it there; the workload with the directory's filesystem type, which PTS's result
        must then report. PtsInstallFailed carries PTS's reason; Unsupported (the case skips) in a
        guest, whose kernel PTS does not run under."""
        if target.spec.in_guest:
            raise Unsupported(f"{self.name} {ONLY_ON_HOST}")
        workdir = target.workdir()
        install_dir = self.install_dir(workdir)
        # PTS silently installs under its default directory when the install root does not exist
        self.install_root(workdir).mkdir(parents=True, exist_ok=True)
        target.check_holds(self.install_root(workdir), execute)
        done = execute(self.install_argv(workdir), timeout=self.timeout)
        failure = install_failure(install_dir, done.output)
        if failure:
            raise PtsInstallFailed(f"{self.identifier}: {failure}")
        target.check_holds(install_dir, execute)
        stat_type = execute(["stat", "-f", "-L", "-c", "%T", str(install_dir)], timeout=60).stdout.strip()
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

"""The bodies of the `fsbench` commands about PTS (cli.py wires their arguments): `export --format
pts` (a session as a PTS result file, printed, written or saved into PTS's results), `upload`
(PTS's own upload-result of a saved result file) and `profiles` (what fsbench carries).
Each raises UsageError for what the user must change, and returns the exit status.
"""

from __future__ import annotations

import sys
from pathlib import Path

from ..errors import CommandError, UsageError
from ..options import write_whole
from ..store.results import Store
from ..system.commands import execute
from .export import composite_xml, session_label
from .launcher import check_result_name, find_pts, missing_reason, result_file, user_path
from .profiles import base_profiles, profiles, suites
from ..measure.progress import say


def check_export_options(pts_format: bool, save: str | None, suffix: str | None, force: bool,
                         to_file: bool = False) -> None:
    """export's PTS options, before anything is read: each only with what it modifies, and
    --pts-save only where PTS is."""
    if save and not pts_format:
        raise UsageError("--pts-save goes with --format pts")
    if suffix is not None and not pts_format:
        raise UsageError("--suffix goes with --format pts")
    if force and not (save or to_file):
        raise UsageError("--force replaces an existing PTS result file of --pts-save NAME or an -o FILE, and "
                         "neither is given; add one or leave --force out")
    if save and find_pts(None) is None:
        raise UsageError(f"--pts-save {save}: {missing_reason()}")


def export(store: Store, session_id: int, output: Path | None, save: str | None = None, force: bool = False,
           suffix: str | None = None) -> int:
    """The session as a PTS result file: saved into PTS's results as save, else written to output
    (None: standard output). suffix: appended to every system identifier ("" : the session's
    own name), so sessions with the same cases stay apart in PTS's merge-results."""
    if suffix == "":
        suffix = session_label(store, session_id)
    if save:
        name = check_result_name(save)
        target = result_file(name, user_path())
        if target.exists() and not force:
            raise UsageError(f"PTS already has a result file {name} ({target}); choose another name or pass --force")
        xml = composite_xml(store, session_id, title=name, suffix=suffix)
        target.parent.mkdir(parents=True, exist_ok=True)
        write_whole(target, xml)
        say(f"fsbench export: wrote {target}; phoronix-test-suite show-result {name}")
        return 0
    xml = composite_xml(store, session_id, suffix=suffix)
    if output is None:
        sys.stdout.write(xml.decode())
    else:
        write_whole(output, xml)
        say(f"fsbench export: wrote {output}")
    return 0


def upload(result: str, binary: str | None) -> int:
    """PTS's upload-result of the saved result file named result; 1 when PTS reports no upload."""
    launcher = find_pts(binary)
    if launcher is None:
        raise UsageError(missing_reason(binary))
    name = check_result_name(result)
    if not result_file(name, user_path()).exists():
        raise UsageError(f"PTS has no result file {name} in {user_path() / 'test-results'}; "
                         "make one with pytest's PTS cases or fsbench export SESSION --format pts --pts-save NAME")
    try:
        done = execute([launcher, "upload-result", name], timeout=600, check=False)
    except CommandError as exc:
        raise UsageError(f"phoronix-test-suite upload-result {name} failed: {exc}") from None
    print(done.output.strip())
    if done.returncode != 0 or "openbenchmarking.org/result/" not in done.output.lower():
        say(f"fsbench upload: PTS did not report an upload of {name} (offline, or "
            "NoInternetCommunication/AllowResultUploadsToOpenBenchmarking off in its user config?)", file=sys.stderr)
        return 1
    return 0


def list_profiles() -> int:
    """The PTS test profiles (each with its quick options), base profiles and suites fsbench carries."""
    for name, profile in profiles().items():
        say(f"profile {name} ({profile.path.name}): {profile.path}")
        say("  quick options: " + ";".join(f"{key}={value}" for key, value in profile.quick_options()))
    for name, profile in base_profiles().items():
        say(f"base profile {name} ({profile.path.name}, extended by every profile): {profile.path}")
    for path in suites():
        say(f"suite {path.name}: {path}")
    return 0

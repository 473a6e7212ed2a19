"""Finding the Phoronix Test Suite, and where it keeps things.

The launcher: --pts-binary, else $FSBENCH_PTS, else PATH's phoronix-test-suite (PTS is in no
package registry: its source release runs in place). Its user directory: as root
/var/lib/phoronix-test-suite (else ~/.phoronix-test-suite), or $PTS_USER_PATH_OVERRIDE; local
profiles in test-profiles/local/, suites in test-suites/local/, result files in
test-results/<name>/composite.xml, under names PTS keeps as given (check_result_name).
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

from .profiles import PtsError

#: environment variable naming the phoronix-test-suite launcher
BINARY_ENV = "FSBENCH_PTS"
#: what the profiles' install.sh reads to use the system's tool instead of building the pinned one
SYSTEM_TOOLS_ENV = "FSBENCH_PTS_SYSTEM_TOOLS"

MISSING_REASON = (
    "phoronix-test-suite not found on PATH, in $FSBENCH_PTS or --pts-binary; it is in no package "
    "registry: get its source release from github.com/phoronix-test-suite/phoronix-test-suite, "
    "install php-cli and php-xml, and run its ./phoronix-test-suite (or install-sh)"
)

#: what PTS keeps of a result name as given (its clean_save_name keeps letters, digits and
#: dashes, and collapses a run of dashes into one)
_NAME = re.compile(r"(?=.{2,126}$)[a-z0-9]+(-[a-z0-9]+)*")


def missing_reason(explicit: str | None = None) -> str:
    """Why no launcher was found, naming the one given when it is no executable file (issue 44:
    upload --pts-binary=/nonexistent never named the path)."""
    for given, name in ((explicit, "--pts-binary"), (os.environ.get(BINARY_ENV), f"${BINARY_ENV}")):
        if given:
            return (f"{name}={given}: no executable file there; name the phoronix-test-suite launcher (its source "
                    f"release's ./phoronix-test-suite){', or leave it out to use PATH' if name.startswith('$') else ''}")
    return MISSING_REASON


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

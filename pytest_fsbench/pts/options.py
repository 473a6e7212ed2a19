"""The values of the --pts-* options: their parsers (the rows themselves are in settings.OPTIONS,
the one table of options) and PtsSettings, the profile and run options a session's PTS cases
use, checked against the profile's own menus, so a bad value is a usage error before anything is
built, never a run with PTS's default in its place.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from ..errors import UsageError
from .launcher import SYSTEM_TOOLS_ENV, check_result_name
from .profiles import Profile, PtsError, parse_options, profiles

#: the profile test_pts runs unless --pts-profile names another
DEFAULT_PROFILE = "fsbench-dd"


@dataclass(frozen=True)
class PtsSettings:
    profile: str
    version: str
    options: tuple[tuple[str, str], ...]  # option identifier -> menu value, every option of the profile
    choices: tuple[tuple[str, int], ...]  # option identifier -> position of that value in its menu
    result: str | None  # --pts-result: the session's PTS result file name
    binary: str | None  # --pts-binary
    system_tools: bool


def profile(text: str) -> Profile:
    """--pts-profile: one of fsbench's runnable profiles, by base name."""
    available = profiles()
    if text not in available:
        raise ValueError(f"choose one of {', '.join(available)}")
    return available[text]


def run_options(text: str) -> tuple[tuple[str, str], ...]:
    """--pts-options: IDENTIFIER=VALUE;... (checked against the profile in pts_settings)."""
    try:
        return parse_options(text)
    except PtsError as exc:
        raise ValueError(str(exc)) from None


def binary(text: str) -> str:
    """--pts-binary: an executable file (issue 34: /nonexistent skipped every PTS case, exit 0,
    without naming the path)."""
    if not os.path.isfile(text) or not os.access(text, os.X_OK):
        raise ValueError(f"{text} is no executable file; name the phoronix-test-suite launcher (its source "
                         "release's ./phoronix-test-suite), or leave the option out to use $FSBENCH_PTS or PATH's")
    return text


def result_name(text: str) -> str:
    """--pts-result: a name PTS keeps as given."""
    try:
        return check_result_name(text)
    except PtsError as exc:
        raise ValueError(str(exc)) from None


def pts_settings(chosen: Profile | None, given: tuple[tuple[str, str], ...], result: str | None,
                 binary: str | None, system_tools: bool) -> PtsSettings:
    """The profile (None: the default one) with its quick options, those given put in their place;
    system tools also when $FSBENCH_PTS_SYSTEM_TOOLS=1."""
    chosen = chosen or profiles()[DEFAULT_PROFILE]
    options = chosen.with_options(given)
    try:
        choices = chosen.choices(options)
    except PtsError as exc:
        raise UsageError(f"--pts-options: {exc}") from None
    system_tools = system_tools or os.environ.get(SYSTEM_TOOLS_ENV) == "1"
    return PtsSettings(chosen.name, chosen.version, options, choices, result, binary, system_tools)

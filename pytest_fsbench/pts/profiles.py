"""fsbench's PTS test profiles and suites, and what fsbench knows of them, read from the profiles
themselves: a profile's name and version from its directory, its run options from its
test-definition.xml, and the options it runs with unless told otherwise ("quick": minutes, small
files) from each option's DefaultEntry, PTS's own default. A new profile is a new directory in
test-profiles/; nothing here lists them.

DefaultEntry is PTS's 1-based position of the default entry in the option's menu (PTS also runs
it for `phoronix-test-suite default-run` and offers it first); PTS reads a missing one, or 0, as
the first entry. fsbench's profiles give every option one (tests/unit/test_pts.py checks), so a
run is never the largest by accident.

A profile whose SoftwareType is BaseTestProfile (fsbench-base: the preamble the run scripts
share) is not run itself: the others name it in Extends, and PTS installs it before them.
"""

from __future__ import annotations

import filecmp
import re
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from lxml import etree

from ..errors import UsageError

PACKAGE = Path(__file__).resolve().parents[1]  # pytest_fsbench/
#: PTS's SoftwareType of a profile others extend and nobody runs
BASE = "BaseTestProfile"


def _data_dir(installed: str, checkout: str) -> Path:
    """A directory of fsbench's PTS definitions: inside the installed package (a wheel ships
    test-profiles/ as pytest_fsbench/pts_profiles), else in the checkout it runs from."""
    packaged = PACKAGE / installed
    return packaged if packaged.is_dir() else PACKAGE.parent / checkout


PROFILES_DIR = _data_dir("pts_profiles", "test-profiles")
SUITES_DIR = _data_dir("pts_suites", "suites")


class PtsError(UsageError):
    """A PTS option, option value or result name fsbench cannot use."""


@dataclass(frozen=True)
class RunOption:
    """One of a profile's run options: its identifier, its menu's values and PTS's default."""

    identifier: str
    values: tuple[str, ...]
    default: str


@dataclass(frozen=True)
class Profile:
    """One fsbench PTS test profile, as its directory and test-definition.xml declare it."""

    name: str  # base name, e.g. "fsbench-dd"
    version: str  # e.g. "1.0.0"
    path: Path
    software_type: str
    options: tuple[RunOption, ...]

    @property
    def test(self) -> str:
        """The identifier PTS knows it by: local/fsbench-dd-1.0.0."""
        return f"local/{self.name}-{self.version}"

    @property
    def definition(self) -> Path:
        return self.path / "test-definition.xml"

    @property
    def is_base(self) -> bool:
        return self.software_type == BASE

    def quick_options(self) -> tuple[tuple[str, str], ...]:
        """Each option's default value, in the profile's order: what a run uses unless told otherwise."""
        return tuple((option.identifier, option.default) for option in self.options)

    def choices(self, options: tuple[tuple[str, str], ...]) -> tuple[tuple[str, int], ...]:
        """Each option's value as its position in the option's menu. Every option named must
        exist and every value be one of its menu's: PTS would otherwise quietly fall back to a
        default."""
        menus = {option.identifier: option.values for option in self.options}
        found = []
        for key, value in options:
            if key not in menus:
                raise PtsError(f"{self.path.name} has no option {key!r}; it has {', '.join(menus)}")
            if value not in menus[key]:
                raise PtsError(f"{self.path.name} option {key}={value!r}: choose one of {', '.join(menus[key])}")
            found.append((key, menus[key].index(value)))
        return tuple(found)

    def with_options(self, given: tuple[tuple[str, str], ...]) -> tuple[tuple[str, str], ...]:
        """The quick options with those given put in their place (given ones not in the profile
        stay, for choices() to refuse)."""
        return tuple({**dict(self.quick_options()), **dict(given)}.items())


def default_entry(text: str | None, values: list[str]) -> str:
    """The value PTS takes by default: DefaultEntry counts from 1, and a missing one or 0 is the
    first entry (pts_test_option::set_option_default)."""
    text = (text or "").strip()
    if text and not text.isdigit():
        raise PtsError(f"DefaultEntry {text!r}: give the position of the default entry, counting from 1")
    position = max(int(text or "1"), 1)
    if position > len(values):
        raise PtsError(f"DefaultEntry {position}: the menu has {len(values)} entries")
    return values[position - 1]


def read_profile(directory: Path) -> Profile:
    """A profile directory (NAME-X.Y.Z) as fsbench reads it."""
    doc = etree.parse(str(directory / "test-definition.xml"))
    options = []
    for option in doc.iter("Option"):
        identifier = option.findtext("Identifier") or ""
        values = [entry.findtext("Value") or "" for entry in option.iter("Entry")]
        try:
            default = default_entry(option.findtext("DefaultEntry"), values)
        except PtsError as exc:
            raise PtsError(f"{directory.name} option {identifier}: {exc}") from None
        options.append(RunOption(identifier, tuple(values), default))
    name, version = re.fullmatch(r"(.+)-(\d+\.\d+\.\d+)", directory.name).groups()
    return Profile(name, version, directory, doc.findtext("TestProfile/SoftwareType") or "", tuple(options))


def _read_all(profiles_dir: Path) -> tuple[Profile, ...]:
    return tuple(read_profile(d) for d in sorted(profiles_dir.glob("fsbench-*-*.*.*")))


def profiles(profiles_dir: Path = PROFILES_DIR) -> dict[str, Profile]:
    """fsbench's runnable profiles by base name ("fsbench-dd" -> its Profile)."""
    return {p.name: p for p in _read_all(profiles_dir) if not p.is_base}


def base_profiles(profiles_dir: Path = PROFILES_DIR) -> dict[str, Profile]:
    """The profiles the others extend (fsbench-base)."""
    return {p.name: p for p in _read_all(profiles_dir) if p.is_base}


def suites(suites_dir: Path = SUITES_DIR) -> list[Path]:
    """fsbench's suites' directories."""
    return sorted(suites_dir.glob("fsbench-*"))


def parse_options(text: str) -> tuple[tuple[str, str], ...]:
    """"test=write;block-size=1048576" -> (("test", "write"), ("block-size", "1048576"))."""
    pairs = []
    for item in filter(None, (part.strip() for part in text.split(";"))):
        key, sep, value = item.partition("=")
        if not sep or not key or not value:
            raise PtsError(f"PTS option {item!r}: write IDENTIFIER=VALUE, e.g. test=write")
        pairs.append((key.strip(), value.strip()))
    if not pairs:  # issue 34: ';;' was silently the profile's defaults
        raise PtsError("no IDENTIFIER=VALUE in it; give e.g. test=write, or leave the option out for the defaults")
    keys = [key for key, _ in pairs]
    twice = next((key for key in keys if keys.count(key) > 1), None)
    if twice:  # issue 34: test=write;test=read ran the last
        raise PtsError(f"{twice!r} is given twice ({', then '.join(v for k, v in pairs if k == twice)}); "
                       "a run takes one value of each option, so give it once")
    return tuple(pairs)


def install_definitions(user: Path, profiles_dir: Path = PROFILES_DIR, suites_dir: Path = SUITES_DIR,
                        system_tools: bool = False) -> list[str]:
    """Copy fsbench's profiles (the base profile too) and suites into PTS's local repositories,
    replacing fsbench's own copies that differ; returns what changed (nothing when all are current).

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

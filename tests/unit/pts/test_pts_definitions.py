"""fsbench's PTS profiles and suites: PTS's own schemas, suites that name real menu entries, and
the base profile whose preamble every run script sources."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest
from lxml import etree

from pytest_fsbench.pts import profiles
from pts_template import schema

PROFILE_FILES = {"test-definition.xml": "test-profile.xsd", "results-definition.xml": "results-parser.xsd",
                 "downloads.xml": "test-profile-downloads.xsd"}
PROFILES = [p.path for p in profiles.profiles().values()]
BASE = profiles.PROFILES_DIR / "fsbench-base-1.0.0"
SUITES = sorted(profiles.SUITES_DIR.glob("*/suite-definition.xml"))


def test_every_required_profile_is_there():
    assert set(profiles.profiles()) >= {"fsbench-iozone", "fsbench-filebench", "fsbench-dd",
                                        "fsbench-kernel-build", "fsbench-bonnie"}
    assert sorted(profiles.PROFILES_DIR.iterdir()) == sorted([*PROFILES, BASE]), "nothing else in test-profiles/"


@pytest.mark.parametrize("profile", PROFILES, ids=lambda p: p.name)
def test_profile_validates_against_pts_schemas(profile):
    for filename, xsd in PROFILE_FILES.items():
        checker = schema(xsd)
        assert checker.validate(etree.parse(str(profile / filename))), f"{profile.name}/{filename}: {checker.error_log}"
    assert (profile / "install.sh").stat().st_mode & 0o111


@pytest.mark.parametrize("profile", PROFILES, ids=lambda p: p.name)
def test_install_script_is_valid_sh_and_builds_what_downloads_lists(profile):
    install = (profile / "install.sh").read_text()
    subprocess.run(["sh", "-n", str(profile / "install.sh")], check=True)
    for package in etree.parse(str(profile / "downloads.xml")).iter("Package"):
        assert re.fullmatch(r"[0-9a-f]{64}", package.findtext("SHA256")), "every download has a SHA256"
        assert package.findtext("URL").startswith(("https://", "http://"))
        stem = re.sub(r"\.(tar\.xz|tar\.gz|tgz|tar)$", "", package.findtext("FileName"))
        assert f"pinned={stem}" in install, f"install.sh builds {stem}"
    assert "FSBENCH_PTS_SYSTEM_TOOLS" in install and "INSTALL_FOOTNOTE" in install


@pytest.mark.parametrize("profile", PROFILES, ids=lambda p: p.name)
def test_run_script_is_valid_sh(profile, tmp_path):
    """The run script is a here-document in install.sh: extract it and check its syntax."""
    text = (profile / "install.sh").read_text()
    script = text.split("<<'SCRIPT'\n", 1)[1].split("\nSCRIPT\n", 1)[0]
    (tmp_path / "run").write_text(script + "\n")
    subprocess.run(["sh", "-n", str(tmp_path / "run")], check=True)


def test_the_base_profile_validates_and_every_profile_extends_it():
    checker = schema("test-profile.xsd")
    assert checker.validate(etree.parse(str(BASE / "test-definition.xml"))), checker.error_log
    assert profiles.read_profile(BASE).is_base and (BASE / "install.sh").stat().st_mode & 0o111
    subprocess.run(["sh", "-n", str(BASE / "install.sh")], check=True)
    for profile in PROFILES:
        assert etree.parse(str(profile / "test-definition.xml")).findtext("TestProfile/Extends") == \
            f"local/{BASE.name}", f"{profile.name} extends {BASE.name}"


@pytest.mark.parametrize("profile", PROFILES, ids=lambda p: p.name)
def test_run_script_sources_the_shared_preamble_and_does_not_repeat_it(profile):
    script = (profile / "install.sh").read_text().split("<<'SCRIPT'\n", 1)[1]
    assert '. "${TEST_EXTENDS:?' in script and "/fsbench-run.sh\"" in script
    for repeated in ("trap ", "exec >>", "test-exit-status", 'for arg in "$@"; do\n    case'):
        assert repeated not in script, f"{profile.name}'s run script repeats the preamble ({repeated!r})"


def preamble(tmp_path: Path, body: str, *args: str) -> subprocess.CompletedProcess:
    """body run after the base profile's preamble, as a profile's run script runs it."""
    base, home = tmp_path / "base", tmp_path / "home"
    base.mkdir(exist_ok=True)
    home.mkdir(exist_ok=True)
    subprocess.run(["sh", str(BASE / "install.sh")], cwd=base, env={**os.environ, "HOME": str(base)}, check=True)
    (home / "fsbench-t.conf").write_text("SYSTEM_TOOL=1\n")
    (home / "fsbench-t").write_text(f'fsbench_name=fsbench-t\n. "$TEST_EXTENDS/fsbench-run.sh"\n{body}\n')
    env = {"PATH": os.environ["PATH"], "HOME": str(home), "TEST_EXTENDS": str(base), "FSBENCH_PTS_TARGET": str(home)}
    return subprocess.run(["sh", str(home / "fsbench-t"), *args], cwd=home, env=env, capture_output=True, text=True)


def test_the_preamble_reads_the_arguments_and_refuses_others(tmp_path):
    body = 'size_mib=1; file_set=stock\nfsbench_arguments "size-mib file-set" "$@"\necho "$size_mib/$file_set"'
    done = preamble(tmp_path, body, "--size-mib=2 x", "--file-set=q;uick")
    assert done.returncode == 0 and done.stdout == "2 x/q;uick\n", done.stderr
    done = preamble(tmp_path, body, "--size-mib=2", "--speed=1")
    assert done.returncode == 2
    assert done.stderr == "fsbench-t: unknown argument --speed=1; expected --size-mib= --file-set=\n"


def test_the_preamble_removes_the_work_directory_and_records_the_status(tmp_path):
    body = ('fsbench_workdir\ntouch "$work/data" /dev/shm/fsbench-t.$$\nfsbench_remove=/dev/shm/fsbench-t.$$\n'
            'echo "$work"\nfsbench_tool_version 1.2\nexit 3')
    done = preamble(tmp_path, body)
    work = Path(done.stdout.strip())
    assert done.returncode == 3 and work.parent == tmp_path / "home" and work.name.startswith("fsbench-t.")
    assert not work.exists() and not list(Path("/dev/shm").glob("fsbench-t.*"))
    assert (tmp_path / "home" / "test-exit-status").read_text() == "3\n"
    assert (tmp_path / "home" / "pts-test-version").read_text() == "1.2\n"


@pytest.mark.parametrize("suite", SUITES, ids=lambda p: p.parent.name)
def test_suite_validates_and_names_real_menu_entries(suite):
    checker = schema("test-suite.xsd")
    assert checker.validate(etree.parse(str(suite))), checker.error_log
    profiles = {f"local/{p.name}": p for p in PROFILES}
    for execute in etree.parse(str(suite)).iter("Execute"):
        test = execute.findtext("Test")
        assert test in profiles, f"{suite.parent.name} runs {test}, which fsbench does not have"
        definition = etree.parse(str(profiles[test] / "test-definition.xml"))
        expected_args, expected_desc = [], []
        chosen = dict(part.split(": ", 1) for part in execute.findtext("Description").split(" - "))
        for option in definition.iter("Option"):
            name = chosen[option.findtext("DisplayName")]
            entries = {e.findtext("Name"): e.findtext("Value") for e in option.iter("Entry")}
            assert name in entries, f"{suite.parent.name}: {option.findtext('DisplayName')} has no entry {name!r}"
            expected_args.append((option.findtext("ArgumentPrefix") or "") + entries[name]
                                 + (option.findtext("ArgumentPostfix") or ""))
            expected_desc.append(f"{option.findtext('DisplayName')}: {name}")
        assert execute.findtext("Arguments") == " ".join(expected_args)
        assert execute.findtext("Description") == " - ".join(expected_desc)


def test_a_suite_per_study_and_a_quick_one():
    names = {s.parent.name for s in SUITES}
    assert names == {"fsbench-quick-1.0.0", "fsbench-raid-filebench-iozone-1.0.0", "fsbench-zfs-features-bonnie-1.0.0",
                     "fsbench-iozone-record-sizes-1.0.0", "fsbench-compression-1.0.0", "fsbench-btrfs-options-1.0.0"}

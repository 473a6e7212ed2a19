"""fsbench's PTS profiles and suites: PTS's own schemas, and suites that name real menu entries."""

from __future__ import annotations

import re
import subprocess

import pytest
from lxml import etree

from pytest_fsbench.pts import profiles
from pts_template import schema

PROFILE_FILES = {"test-definition.xml": "test-profile.xsd", "results-definition.xml": "results-parser.xsd",
                 "downloads.xml": "test-profile-downloads.xsd"}
PROFILES = [p.path for p in profiles.profiles().values()]
SUITES = sorted(profiles.SUITES_DIR.glob("*/suite-definition.xml"))


def test_every_required_profile_is_there():
    assert set(profiles.profiles()) >= {"fsbench-iozone", "fsbench-filebench", "fsbench-dd",
                                        "fsbench-kernel-build", "fsbench-bonnie"}


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

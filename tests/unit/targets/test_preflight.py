"""Which cases fsbench asks the tools about before measuring, and how a rejection reads: the
tools' own words from their real outputs (tests/data/preflight/), without usage texts or notes."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_fsbench.targets import preflight
from pytest_fsbench.case import CaseSpec
from pytest_fsbench.errors import CommandError

DATA = Path(__file__).resolve().parents[2] / "data" / "preflight"


@pytest.mark.parametrize("name, message", [
    ("mkfs.ext4-Z", "mkfs.ext4: invalid option -- 'Z'"),
    ("mkfs.xfs-Q", "mkfs.xfs: invalid option -- 'Q'; unknown option -Q"),
    ("mkfs.btrfs-bogus", "mkfs.btrfs: unrecognized option '--bogus'"),
    ("mount-bogusopt", "wrong fs type, bad option, bad superblock on /dev/loop0, missing codepage or helper program, "
                       "or other error."),
    ("zpool-xattr-sa", "cannot create 'fsbench-27172-e94c-1': 'xattr' must be one of 'on | off'"),
    ("zpool-checksum-sha512", "'checksum' must be one of 'on | off | fletcher2 | fletcher4 | sha256'"),
])
def test_the_tools_own_words_without_usage_or_notes(name, message):
    text = preflight.tool_message((DATA / f"{name}.txt").read_text())
    assert message in text and "sage" not in text and "Defaulting" not in text and "\n" not in text


def test_a_message_without_a_complaint_is_kept_whole():
    assert preflight.tool_message("something odd happened\n") == "something odd happened"
    assert preflight.tool_message("") == "no message"


def test_one_try_per_filesystem_and_options_given_on_the_fewest_devices():
    plain = CaseSpec("ext4", "single")
    noatime = (("mount", "noatime"),)
    specs = [plain, CaseSpec("btrfs", "raid1", noatime), CaseSpec("btrfs", "single", noatime),
             CaseSpec("btrfs", "raid10", noatime), CaseSpec("ext4", "single", noatime),
             CaseSpec("ext4", "single", noatime, kernel="uml")]
    assert preflight.to_try(specs) == [CaseSpec("btrfs", "single", noatime), CaseSpec("ext4", "single", noatime)]


def test_a_rejection_names_the_value_the_tool_and_its_words():
    spec = CaseSpec("zfs", "single", (("xattr", "sa"),))
    failure = CommandError(["zpool", "create", "-O", "xattr=sa"], 1, (DATA / "zpool-xattr-sa.txt").read_text())
    assert preflight.rejected(spec, "--fs-opt", failure) == (
        "--fs-opt zfs:xattr=sa: zpool rejects it (exit status 1): cannot create 'fsbench-27172-e94c-1': 'xattr' must "
        "be one of 'on | off'; fix or drop the value (tried on a scratch image before anything was measured; nothing "
        "is left of it)")


def test_a_target_that_could_not_be_built_is_one_line():
    from pytest_fsbench.kernels.guest import GuestError

    failure = CommandError(["mkfs.ext4", "-F", "-Z", "/dev/loop0"], 1, (DATA / "mkfs.ext4-Z.txt").read_text())
    assert preflight.build_failure("uml-ext4-single", failure) == (
        "uml-ext4-single: the target could not be built: mkfs.ext4 failed (exit status 1): mkfs.ext4: invalid "
        "option -- 'Z'")
    assert preflight.build_failure("uml-ext4-single", GuestError("guest kernel uml (boot): it closed the channel\nmore")) \
        == "uml-ext4-single: the target could not be built: guest kernel uml (boot): it closed the channel"

"""A bisect kernel's configuration alone: the fragment's order (fsbench's options over virtme-ng's,
the user's over both), what a built configuration must have, and what a failed build says."""

from __future__ import annotations

import os
import re

import pytest

from pytest_fsbench.bisect.build import (
    UML,
    VM,
    failure_lines,
    fragment_text,
    missing,
    options,
    read_config,
    required_text,
)
from pytest_fsbench.errors import CommandError, UsageError
from pytest_fsbench.system.commands import execute_logged

#: a few of the lines virtme-ng's configkernel --dry-run prints (virtme-ng 1.x), as it prints them
VIRTME = "CONFIG_VIRTIO_BLK=y\n# CONFIG_EXT4_FS is not set\nCONFIG_DAX_DRIVER=y\nCONFIG_DRM_VIRTIO_GPU_KMS=y\n"


def test_fsbench_options_come_after_virtme_ngs_so_ext4_stays_on_and_the_users_come_last():
    text = fragment_text(VM, "CONFIG_EXT4_FS=m\n", VIRTME)
    lines = text.splitlines()
    assert lines.index("# CONFIG_EXT4_FS is not set") < lines.index("CONFIG_EXT4_FS=y") < lines.index("CONFIG_EXT4_FS=m")
    assert options(fragment_text(VM, "", VIRTME))["CONFIG_EXT4_FS"] == "y"  # kconfig: the later line wins


def test_a_built_configuration_must_have_fsbenchs_options_not_virtme_ngs_nor_what_the_user_changed():
    required = options(required_text(VM, "CONFIG_MD=n\n"))
    assert required["CONFIG_EXT4_FS"] == "y" and required["CONFIG_BLK_DEV_LOOP"] == "y"
    assert "CONFIG_DAX_DRIVER" not in required and "CONFIG_MD" not in required
    assert options(required_text(UML))["CONFIG_HOSTFS"] == "y"
    # issue 44's sweep: '# CONFIG_MD is not set' (a .config's =n) was still required, so no kernel passed
    assert "CONFIG_MD" not in options(required_text(VM, "# CONFIG_MD is not set\n"))


def test_what_kconfig_dropped_is_named():
    built = "CONFIG_EXT4_FS=y\n# CONFIG_BLK_DEV_LOOP is not set\n"
    assert missing(built, {"CONFIG_EXT4_FS": "y", "CONFIG_BLK_DEV_LOOP": "y", "CONFIG_MD": "n"}) == \
        ["CONFIG_BLK_DEV_LOOP=y"]


def test_a_failed_build_says_its_error_lines_not_makes_command_line(tmp_path):
    """A real make and gcc failing on a file, as a kernel's build fails on a commit that breaks it."""
    (tmp_path / "file.c").write_text("int f(void) { return inode; }\n")
    (tmp_path / "Makefile").write_text("file.o: file.c\n\tgcc -c file.c -o file.o\n")
    with pytest.raises(CommandError) as failed:
        execute_logged(["make", "-C", str(tmp_path), "file.o"], tmp_path / "build.log")
    said = failure_lines(failed.value.output)
    assert said[0].startswith("file.c:1:") and "error: 'inode' undeclared" in said[0]
    assert said[-1].startswith("make: *** [Makefile:2: file.o] Error 1")
    assert not any("Entering directory" in line or line.startswith("$ ") for line in said)
    assert failure_lines("$ make\nmake: Entering directory 'x'\nKilled\n") == ["Killed"]


@pytest.mark.parametrize("make, said", [
    (lambda p: p.write_bytes(b"\xff\xfe" + os.urandom(64)), "not text (byte 0 is no UTF-8)"),
    (lambda p: os.mkfifo(p), "is a FIFO (a named pipe), not a file"),
    (lambda p: p.symlink_to("/dev/zero"), "is a character device, not a file"),
    (lambda p: p.mkdir(), "is a directory, not a file"),
    (lambda p: p.write_text("hello\nworld\n"), "no CONFIG_...= line in it"),
    (lambda p: p.write_text(""), "no CONFIG_...= line in it"),
    (lambda p: None, "No such file or directory")])
def test_a_config_that_is_no_kernel_configuration_is_one_line_naming_it(tmp_path, make, said):
    """Issue 44's sweep: a binary --config was a UnicodeDecodeError, a FIFO hung, /dev/zero filled the
    memory, a text without one option was taken as a configuration."""
    given = tmp_path / "my.config"
    make(given)
    with pytest.raises(UsageError, match=re.escape(f"--config={given}: {said}; name a kernel configuration")):
        read_config(str(given))


def test_a_fragment_or_a_whole_config_is_read_as_it_is(tmp_path):
    given = tmp_path / "my.config"
    given.write_text("# CONFIG_BTRFS_FS is not set\n")
    assert read_config(str(given)) == "# CONFIG_BTRFS_FS is not set\n"
    given.write_text("CONFIG_EXT4_FS=y\n")
    assert read_config(str(given)) == "CONFIG_EXT4_FS=y\n"

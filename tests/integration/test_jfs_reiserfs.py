"""JFS and ReiserFS as fsbench builds them: in a guest kernel (this host's has neither), on one
device and on md RAID, measured with dd; on a kernel without them they are skipped with the
kernel's reason."""

from __future__ import annotations

import pytest

from conftest import one_target
from pytest_fsbench.case import CaseSpec
from pytest_fsbench.kernels.probe import probe
from pytest_fsbench.system.commands import execute
from pytest_fsbench.workloads.dd import DdWrite

pytestmark = pytest.mark.root
VERSION = {"jfs": "mkfs.jfs version", "reiserfs": "mkfs.reiserfs 3"}  # what each mkfs -V prints


@pytest.mark.parametrize("layout", ["single", "raid1"])
@pytest.mark.parametrize("fs", list(VERSION))
def test_in_a_guest_kernel(tmp_path, uml_boots, no_leftovers, fs, layout):
    with one_target(tmp_path, CaseSpec(fs, layout, kernel="uml"), kernels="uml") as target:
        assert target.execute(["findmnt", "-n", "-o", "FSTYPE", str(target.mountpoint)]).stdout.strip() == fs
        assert VERSION[fs] in target.manifest["applied"]["version"]
        written = target.measure(DdWrite(total_size="16M"), execute, "drop").metrics
        assert next(m.value for m in written if m.name == "dd.write") > 0


@pytest.mark.parametrize("fs", list(VERSION))
def test_on_a_kernel_without_it_is_skipped_with_the_reason(tmp_path, fs):
    if fs in probe().filesystems:
        pytest.skip(f"this host's kernel has {fs}")
    with pytest.raises(pytest.skip.Exception, match=rf"this kernel has no {fs} filesystem \(/proc/filesystems\)"):
        with one_target(tmp_path, CaseSpec(fs, "single")):
            pass

"""ReiserFS (3.6) as fsbench builds it: in a guest kernel (this host's has no reiserfs), on one
device and on md RAID, measured with dd; on the host it is skipped with the kernel's reason."""

from __future__ import annotations

import pytest

from conftest import one_target
from pytest_fsbench.case import CaseSpec
from pytest_fsbench.host import probe
from pytest_fsbench.system import run
from pytest_fsbench.workloads.dd import DdWrite

pytestmark = pytest.mark.root


@pytest.mark.parametrize("layout", ["single", "raid1"])
def test_reiserfs_in_a_guest_kernel(tmp_path, no_leftovers, layout):
    with one_target(tmp_path, CaseSpec("reiserfs", layout, kernel="uml"), kernels="uml") as target:
        assert target.run(["findmnt", "-n", "-o", "FSTYPE", str(target.mountpoint)]).stdout.strip() == "reiserfs"
        assert "mkfs.reiserfs 3" in target.manifest["applied"]["version"]
        written = target.measure(DdWrite(total_size="16M"), run, "drop").metrics
        assert next(m.value for m in written if m.name == "dd.write") > 0


def test_reiserfs_on_a_kernel_without_it_is_skipped_with_the_reason(tmp_path):
    if "reiserfs" in probe().filesystems:
        pytest.skip("this host's kernel has reiserfs")
    with pytest.raises(pytest.skip.Exception, match=r"this kernel has no reiserfs filesystem \(/proc/filesystems\)"):
        with one_target(tmp_path, CaseSpec("reiserfs", "single")):
            pass

"""ext3 as fsbench builds it: a journal but no extents, mounted by the kernel's ext3 name."""

from __future__ import annotations

import pytest

from conftest import one_target
from pytest_fsbench.case import CaseSpec
from pytest_fsbench.measure.run import measure_run
from pytest_fsbench.system.commands import execute
from pytest_fsbench.workloads.dd import DdWrite

pytestmark = pytest.mark.root


def features(target) -> str:
    """The "Filesystem features:" line of dumpe2fs for the target's device."""
    header = execute(["dumpe2fs", "-h", target.devices[0].path]).stdout
    return next(line for line in header.splitlines() if line.startswith("Filesystem features:"))


def test_ext3_single_has_a_journal_and_no_extents(tmp_path, no_leftovers):
    with one_target(tmp_path, CaseSpec("ext3", "single", (("mount", "data=journal"),))) as target:
        fstype, options = execute(["findmnt", "-n", "-o", "FSTYPE,OPTIONS", str(target.mountpoint)]).stdout.split()
        assert fstype == "ext3" and "data=journal" in options
        line = features(target)
        assert "has_journal" in line and "extent" not in line
        written = measure_run(DdWrite(total_size="16M"), target, execute).metrics
        assert next(m.value for m in written if m.name == "dd.write") > 0

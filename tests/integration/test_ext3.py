"""ext3 as fsbench builds it: a journal but no extents, mounted by the kernel's ext3 name."""

from __future__ import annotations

import pytest

from pytest_fsbench.case import CaseSpec
from pytest_fsbench.filesystems import driver
from pytest_fsbench.host import probe
from pytest_fsbench.runner import execute
from pytest_fsbench.session import FsbenchSession
from pytest_fsbench.settings import Settings
from pytest_fsbench.system import run
from pytest_fsbench.workloads.dd import DdWrite

pytestmark = pytest.mark.root


def test_ext3_single_has_a_journal_and_no_extents(tmp_path, no_leftovers):
    spec = CaseSpec("ext3", "single", (("mount", "data=journal"),))
    settings = Settings(("ext3",), ("single",), (spec,), image_dir=tmp_path / "images", image_size=512 << 20)
    session = FsbenchSession(settings, probe(), run, run_root=tmp_path / "run")
    reasons = driver("ext3", session.host).unavailable(spec, session.host)
    if reasons:
        pytest.skip("; ".join(reasons))
    try:
        with session.target(spec) as target:
            source = run(["findmnt", "-n", "-o", "FSTYPE,OPTIONS", str(target.mountpoint)]).stdout.split()
            assert source[0] == "ext3" and "data=journal" in source[1]
            features = run(["dumpe2fs", "-h", target.devices[0].path]).stdout
            line = next(l for l in features.splitlines() if l.startswith("Filesystem features:"))
            assert "has_journal" in line and "extent" not in line
            written = execute(DdWrite(total_size="16M"), target, run).metrics
            assert next(m.value for m in written if m.name == "dd.write") > 0
    finally:
        session.close()

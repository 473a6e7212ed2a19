"""`./fsbench.sh bench` collects every fs x layout of its matrix once: under the host's kernel
where it can run there, else in the User-mode Linux guest (md RAID on a host without md), where
the guest kernel can build it. Collected only: the bench itself takes minutes."""

from __future__ import annotations

import itertools
import re
import subprocess
import tempfile
from pathlib import Path

import pytest

from conftest import execute_pytest
from pytest_fsbench.case import CaseSpec
from pytest_fsbench.filesystems import driver
from pytest_fsbench.filesystems.md import MD_LEVELS
from pytest_fsbench.kernels.guest import boot_facts
from pytest_fsbench.kernels.probe import probe
from pytest_fsbench.kernels.kernel import DEBIAN_UML, Kernel

pytestmark = [pytest.mark.root,
              pytest.mark.skipif(not DEBIAN_UML.exists(), reason=f"{DEBIAN_UML} is not installed "
                                 "(Debian package user-mode-linux)")]
REPO = Path(__file__).resolve().parents[2]


def bench_args() -> list[str]:
    """The pytest options fsbench.sh's bench passes (its BENCH_ARGS array, read by bash)."""
    line = next(line for line in (REPO / "fsbench.sh").read_text().splitlines() if line.startswith("BENCH_ARGS=("))
    listed = subprocess.run(["bash", "-c", f'{line}\nprintf "%s\\n" "${{BENCH_ARGS[@]}}"'], capture_output=True,
                            text=True, check=True)
    return listed.stdout.splitlines()


def option(args: list[str], flag: str) -> list[str]:
    return next(arg.split("=", 1)[1] for arg in args if arg.startswith(f"{flag}=")).split(",")


def collected_cases(tmp_path: Path, args: list[str]) -> dict[tuple[str, str], str]:
    """{(fs, layout): the kernel its cases run under} of the bench's dd cases, as pytest collects them."""
    proc = execute_pytest([*args, "--collect-only", "-q", f"--store={tmp_path / 'fsbench.db'}",
                       f"--image-dir={tmp_path / 'images'}", "benchmarks/test_dd.py"], cwd=REPO)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    ids = re.findall(r"::test_dd_\w+\[(\S+)-1M\]", proc.stdout)
    assert ids, proc.stdout[-3000:]
    cases: dict[tuple[str, str], str] = {}
    for case in ids:
        kernel, fs, layout = re.fullmatch(r"(?:(uml)-)?(\w+)-(\w+)", case).groups()
        assert cases.setdefault((fs, layout), kernel or "host") == (kernel or "host"), f"{case}: under two kernels"
    return cases


def test_the_bench_runs_md_layouts_in_the_guest_where_the_host_has_no_md(tmp_path):
    args = bench_args()
    assert "--kernel=host+uml" in args
    cases = collected_cases(tmp_path, args)
    matrix = set(itertools.product(option(args, "--fs"), option(args, "--layout")))
    assert set(cases) == matrix, "every fs x layout of the bench, each once"
    md = {(fs, layout) for fs, layout in matrix if fs in ("ext4", "xfs") and layout in MD_LEVELS}
    assert md, "the bench's matrix has md layouts"
    expected = "host" if probe().has_md else "uml"
    assert {case: cases[case] for case in md} == {case: expected for case in md}
    assert all(kernel == "host" for case, kernel in cases.items() if case not in md)


def test_the_guest_kernel_builds_the_cases_the_bench_places_in_it(tmp_path, uml_boots):
    """What the guest's agent reports decides a guest case's skip: no md reason for these."""
    cases = collected_cases(tmp_path, bench_args())
    in_guest = [CaseSpec(fs, layout, kernel="uml") for (fs, layout), kernel in cases.items() if kernel == "uml"]
    if not in_guest:
        pytest.skip("this kernel has md: the bench places no case in the guest")
    with tempfile.TemporaryDirectory(prefix="fsbench-test-") as directory:
        guest = boot_facts(Kernel("uml", DEBIAN_UML), Path(directory)).host
    assert {spec.id: driver(spec.fs, guest).unavailable(spec, guest) for spec in in_guest} == {
        spec.id: [] for spec in in_guest}

"""fsbench export's JSON is in pytest-benchmark's shape, as the docs say: pytest-benchmark's own
`compare` (installed by this test in a directory of its own, never in fsbench's environment, where
its pytest plugin would join every session and leave a .benchmarks directory wherever pytest runs)
loads two real sessions' exports and tables every
entry of both, where before it failed on them ("float division by zero", then KeyError
'outliers'). Its table reads every figure as seconds, lower is better, as it always does; the
unit and direction are in each entry's extra_info."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import execute_pytest

REPO = Path(__file__).resolve().parents[2]
PYTEST_BENCHMARK = "pytest-benchmark>=5.3,<6"


@pytest.fixture(scope="module")
def compare_command(tmp_path_factory) -> list[str]:
    """pytest-benchmark's own command, from a directory of its own (pip --target)."""
    target = tmp_path_factory.mktemp("pytest-benchmark")
    installed = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--disable-pip-version-check",
                                "--no-deps", f"--target={target}", PYTEST_BENCHMARK, "py-cpuinfo"],
                               capture_output=True, text=True, timeout=300)
    assert installed.returncode == 0, f"pip could not install {PYTEST_BENCHMARK}: {installed.stderr[-1500:]}"
    run = f"import sys; sys.path.insert(0, {str(target)!r}); from pytest_benchmark.cli import main; main()"
    return [sys.executable, "-c", run]


@pytest.mark.root
def test_pytest_benchmarks_compare_loads_two_exported_sessions(tmp_path, no_leftovers, compare_command):
    store = tmp_path / "fsbench.db"
    for _ in range(2):
        done = execute_pytest(["benchmarks/test_dd.py", "-k", "write", "--fs=ext4", "--runs=3", "--warmup=0",
                               "--dd-size=16M", f"--store={store}", f"--image-dir={tmp_path / 'images'}"],
                              cwd=REPO, timeout=600)
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    fsbench = shutil.which("fsbench", path=str(Path(sys.executable).parent))
    names = []
    for session in (1, 2):
        out = tmp_path / f"{session:04d}_session.json"
        exported = subprocess.run([fsbench, "export", str(session), "-o", str(out), f"--store={store}"],
                                  capture_output=True, text=True, timeout=120)
        assert exported.returncode == 0, exported.stderr
        names += [entry["name"] for entry in json.loads(out.read_text())["benchmarks"]]
    files = [str(tmp_path / "0001_session.json"), str(tmp_path / "0002_session.json")]
    compared = subprocess.run([*compare_command, "compare", *files], capture_output=True, text=True, timeout=120)
    assert compared.returncode == 0, compared.stdout[-2000:] + compared.stderr[-2000:]
    assert "Failed to load" not in compared.stdout + compared.stderr, compared.stderr[-2000:]
    assert "benchmark 'dd': " in compared.stdout
    # every entry of both sessions is a row (the two sessions' rows tagged by their file)
    assert len(names) > 10 and "test_dd_write[ext4-single-1M] dd.write" in " ".join(names)
    rows = [line for line in compared.stdout.splitlines() if line.startswith("test_dd_write[")]
    assert len(rows) == len(names), (len(rows), len(names), compared.stdout[-3000:])

"""fsbench as a user who never saw this repository gets it: a wheel built from it, installed into a
fresh virtual environment, run from an empty directory. It must carry its benchmark cases, their
options and the PTS profiles and suites."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.root
REPO = Path(__file__).resolve().parents[2]


def test_an_installed_wheel_runs_its_cases_from_an_empty_directory(tmp_path, no_leftovers):
    wheels, venv, empty = tmp_path / "wheels", tmp_path / "venv", tmp_path / "empty"
    empty.mkdir()
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", str(REPO), "-w", str(wheels)],
                   check=True, capture_output=True, cwd=tmp_path, timeout=600)
    [wheel] = wheels.glob("pytest_fsbench-*.whl")
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    installed = subprocess.run([str(venv / "bin" / "pip"), "install", "-q", str(wheel)], capture_output=True,
                               text=True, timeout=900)
    assert installed.returncode == 0, installed.stderr[-2000:]
    # issue 32: no change-point library that pins numpy or pulls cloud clients into a user's environment
    # (issue 43: fsbench changes segments with numpy alone)
    listed = subprocess.run([str(venv / "bin" / "pip"), "list", "--format=freeze"], capture_output=True,
                            text=True, timeout=120)
    names = {line.split("==")[0].lower().replace("_", "-") for line in listed.stdout.splitlines()}
    assert "numpy" in names and "ruptures" not in names, listed.stdout
    assert not {n for n in names if n.startswith(("apache-otava", "google-", "slack", "grpc"))}, listed.stdout

    profiles = subprocess.run([str(venv / "bin" / "fsbench"), "profiles"], capture_output=True, text=True,
                              cwd=empty, timeout=60)
    assert profiles.returncode == 0, profiles.stderr
    carried = re.split(r"^profile ", profiles.stdout, flags=re.MULTILINE)[1:]  # each profile, its path under it
    assert len(carried) == 5 and all(str(venv) in line for line in carried), profiles.stdout
    assert re.search(r"^suite fsbench-quick-1.0.0:\s+" + re.escape(str(venv)), profiles.stdout, re.MULTILINE), profiles.stdout
    listed = subprocess.run([str(venv / "bin" / "fsbench"), "study"], capture_output=True, text=True, cwd=empty,
                            timeout=60)
    assert [line.split()[0] for line in listed.stdout.splitlines() if not line.startswith(" ")] == [
        "raid-filesystems", "zfs-features", "iozone-linux-fs", "compression", "btrfs-options"], listed.stderr

    done = subprocess.run(
        [str(venv / "bin" / "pytest"), "-p", "no:cacheprovider", "--pyargs", "pytest_fsbench.benchmarks",
         "--fs=btrfs,ext3", "-k", "dd", "--runs=2", "--dd-size=16M", f"--image-dir={tmp_path / 'images'}",
         "--image-size=512M", f"--store={tmp_path / 'store' / 'fsbench.db'}"],
        capture_output=True, text=True, cwd=empty, timeout=900)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert "4 passed" in done.stdout
    for case in ("test_dd_write[btrfs-single-1M]", "test_dd_write[ext3-single-1M]",
                 "test_dd_read[btrfs-single-1M]", "test_dd_read[ext3-single-1M]"):
        assert case in done.stdout
    assert list(empty.iterdir()) == []  # nothing written where it ran: the store went where it was told

"""Real PTS (skipped where it is absent): fsbench's profiles installed and batch-run on loop-device
targets through pytest, one result file holding every case, and an exported session that PTS
reads. PTS's user directory is a temporary one (PTS_USER_PATH_OVERRIDE), so the user's own
profiles and results are untouched; its download cache is PTS's usual one."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_fsbench import pts
from conftest import run_pytest

pytestmark = pytest.mark.root
REPO = Path(__file__).resolve().parents[2]
DOWNLOAD_CACHE = Path("/var/cache/phoronix-test-suite/download-cache")
LAUNCHER = pts.find_pts()


def needs(filename: str) -> None:
    """PTS installs a profile only with its pinned download: from the network or its cache."""
    if not (DOWNLOAD_CACHE / filename).exists():
        pytest.skip(f"{filename} is not in PTS's download cache {DOWNLOAD_CACHE} and this machine may be "
                    "offline; fetch it with phoronix-test-suite make-download-cache on a connected machine")


@pytest.fixture
def pts_home(tmp_path, monkeypatch) -> Path:
    if LAUNCHER is None:
        pytest.skip(pts.MISSING_REASON)
    home = tmp_path / "pts-user"
    home.mkdir()
    monkeypatch.setenv("PTS_USER_PATH_OVERRIDE", f"{home}/")
    return home


def to_csv(name: str, out: Path) -> str:
    done = subprocess.run([LAUNCHER, "result-file-to-csv", name], env={**os.environ, "OUTPUT_FILE": str(out)},
                          capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL)
    assert out.exists(), done.stdout + done.stderr
    return out.read_text()


@pytest.mark.parametrize("profile,options,download", [
    ("fsbench-dd", "test=write;file-size=256;cache=direct", "coreutils-9.1.tar.xz"),
    ("fsbench-iozone", "record-size=1m;file-size=512;test=-i0 #WRITE;cache=-I", "iozone3_465.tar"),
])
def test_pytest_runs_a_profile_through_pts_into_one_result_file(pts_home, tmp_path, no_leftovers, profile, options, download):
    needs(download)
    name = f"fsbench-test-{profile.removeprefix('fsbench-')}"
    done = run_pytest(["--fs=ext4,btrfs", "--layout=single", "-k", "test_pts", "--runs", "2",
                       f"--pts-profile={profile}", f"--pts-options={options}", f"--pts-result={name}",
                       f"--store={tmp_path / 'fsbench.db'}", "--image-size=2G"], cwd=REPO, timeout=1800)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    composite = pts.result_file(name, pts_home)
    assert {e.identifier for e in pts.read_results(composite, "ext4-single")} == {f"local/{profile}-1.0.0"}
    assert len(pts.read_results(composite, "btrfs-single")[0].samples) == 2
    csv = to_csv(name, tmp_path / "out.csv")
    assert '"ext4-single","btrfs-single"' in csv

    exported = f"{name}-export"
    subprocess.run([sys.executable, "-m", "pytest_fsbench.cli", "export", "last", "--format", "pts",
                    "--pts-save", exported, "--store", str(tmp_path / "fsbench.db")], check=True, timeout=60)
    csv = to_csv(exported, tmp_path / "export.csv")
    assert '"ext4-single","btrfs-single"' in csv and "fsbench pts." in csv


def test_upload_without_the_result_file_says_what_to_do(pts_home):
    done = subprocess.run([sys.executable, "-m", "pytest_fsbench.cli", "upload", "no-such-result"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "has no result file no-such-result" in done.stderr

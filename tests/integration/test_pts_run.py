"""Real PTS (skipped where it is absent): fsbench's five profiles installed offline with the
system's tools and batch-run on loop-device targets through pytest, each proven to have run on
its target; a failed install failing the case with PTS's reason; exported sessions that PTS
merges without mixing them up. PTS's user directory is a temporary one (PTS_USER_PATH_OVERRIDE),
so the user's own profiles and results are untouched."""

from __future__ import annotations

import csv
import io
import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import execute_pytest
from pytest_fsbench.pts import launcher, results
from pytest_fsbench.metrics import Direction, Metric
from pytest_fsbench.store.results import Store

REPO = Path(__file__).resolve().parents[2]
LAUNCHER = launcher.find_pts()


@pytest.fixture
def pts_home(tmp_path, monkeypatch) -> Path:
    if LAUNCHER is None:
        pytest.skip(launcher.MISSING_REASON)
    home = tmp_path / "pts-user"
    home.mkdir()
    monkeypatch.setenv("PTS_USER_PATH_OVERRIDE", f"{home}/")
    return home


def pts_command(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([LAUNCHER, *args], env={**os.environ, **(env or {})}, capture_output=True, text=True,
                          timeout=300, stdin=subprocess.DEVNULL)


def to_csv(name: str, out: Path) -> list[list[str]]:
    done = pts_command("result-file-to-csv", name, env={"OUTPUT_FILE": str(out)})
    assert out.exists(), done.stdout + done.stderr
    return list(csv.reader(io.StringIO(out.read_text())))


def case_manifests(db: Path) -> dict[str, dict]:
    con = sqlite3.connect(db)
    rows = con.execute("SELECT case_id, manifest FROM cases").fetchall()
    con.close()
    return {case_id: json.loads(manifest) for case_id, manifest in rows}


PROFILES = [
    pytest.param("fsbench-dd", None, "ext4,btrfs", id="dd"),  # the profile's own quick values (DefaultEntry)
    pytest.param("fsbench-iozone", "record-size=1m;file-size=512;test=-i0 #WRITE;cache=-I", "ext4", id="iozone"),
    pytest.param("fsbench-filebench", "personality=varmail;run-time=15;file-set=quick", "ext4", id="filebench"),
    pytest.param("fsbench-bonnie", "file-size=1024;files=16", "ext4", id="bonnie", marks=pytest.mark.slow),
    pytest.param("fsbench-kernel-build", "config=tinyconfig;jobs=cores", "ext4", id="kernel-build",
                 marks=pytest.mark.slow),
]


@pytest.mark.root
@pytest.mark.parametrize("profile, options, filesystems", PROFILES)
def test_each_profile_installs_offline_and_runs_on_its_target(pts_home, tmp_path, no_leftovers, profile, options,
                                                              filesystems):
    name = f"fsbench-test-{profile.removeprefix('fsbench-')}"
    db = tmp_path / "fsbench.db"
    given = [f"--pts-options={options}"] if options else []
    done = execute_pytest([f"--fs={filesystems}", "--layout=single", "-k", "test_pts", "--runs=1", "--warmup=0",
                       f"--pts-profile={profile}", *given, f"--pts-result={name}",
                       "--pts-system-tools", f"--store={db}", f"--image-dir={tmp_path / 'images'}"],
                      cwd=REPO, timeout=1800)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    composite = launcher.result_file(name, pts_home)
    manifests = case_manifests(db)
    for fs in filesystems.split(","):
        system = f"{fs}-single"
        found = results.read_results(composite, system)
        assert found and all(r.identifier == f"local/{profile}-1.0.0" and len(r.samples) == 1 for r in found)
        assert results.software_filesystem(composite, system) == fs
        measured = manifests[system]["measured_on"]
        assert measured["fstype"] == fs and measured["source"].startswith("/dev/loop")
        assert measured["path"] == f"{measured['mountpoint']}/fsbench"
        # one run: PTS's value (its mean) is the sample, written back in the profile's unit to 6 digits
        assert [r["value"] for r in manifests[system]["pts_results"]] == pytest.approx([r.value for r in found],
                                                                                    rel=1e-5)
    assert not list(pts_home.glob("installed-tests/**/pts-install.json")), "PTS installed in its own directory"
    assert [d.name for d in (pts_home / "test-results").iterdir()] == [name], "each run's own result is removed"


@pytest.mark.root
def test_an_install_that_fails_fails_the_case_with_pts_reason(pts_home, tmp_path, no_leftovers):
    found = shutil.which("filebench")
    if found is None:
        pytest.skip("needs filebench on PATH, to hide it")
    hidden = str(Path(found).parent)
    if shutil.which("php") and str(Path(shutil.which("php")).parent) == hidden:
        pytest.skip(f"filebench shares {hidden} with php, so it cannot be hidden from PTS alone")
    path = os.pathsep.join(d for d in os.environ["PATH"].split(os.pathsep) if d.rstrip("/") != hidden)
    done = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--fs=ext4", "-k", "test_pts",
                           "--runs=1", "--pts-profile=fsbench-filebench", "--pts-system-tools",
                           f"--pts-binary={LAUNCHER}", f"--store={tmp_path / 'fsbench.db'}",
                           f"--image-dir={tmp_path / 'images'}"],
                          cwd=REPO, capture_output=True, text=True, timeout=600, env={**os.environ, "PATH": path})
    assert done.returncode == 1, done.stdout[-3000:]
    assert ("ext4-single: PTS did not install fsbench-filebench-1.0.0 (INSTALL_FAILED): The installer exited "
            "with a non-zero exit status.") in done.stdout
    assert "FSBENCH_PTS_SYSTEM_TOOLS=1, but there is no filebench on PATH" in done.stdout


def two_sessions(db: Path) -> list[int]:
    """Two sessions of the same two cases with different, known samples."""
    store = Store(db)
    ids = []
    for token, base in (("first-1111", 400.0), ("second-2222", 200.0)):
        session = store.start_session(token, {"argv": []}, {})
        for fs, offset in (("ext4", 0.0), ("btrfs", 50.0)):
            row = store.case_row(session, f"benchmarks/test_dd.py::test_dd_write[{fs}-single-1M]", f"{fs}-single",
                                 {"fs": fs, "layout": "single", "options": {}}, "dd", {"bs": "1M"}, "drop", "random", {})
            for step in (0.0, 10.0, 20.0):
                store.add_run(row, False, "t", 1.0, "drop",
                              [Metric("dd.write", base + offset + step, "MB/s", Direction.HIGHER, {"bs": "1M"})])
            store.finish_case(row, "done", "runs")
        store.finish_session(session, "complete")
        ids.append(session)
    store.close()
    return ids


def test_merged_exports_keep_both_sessions_apart(pts_home, tmp_path):
    db = tmp_path / "fsbench.db"
    first, second = two_sessions(db)
    for session, name in ((first, "fsbench-test-first"), (second, "fsbench-test-second")):
        subprocess.run([sys.executable, "-m", "pytest_fsbench.cli", "export", str(session), "--format", "pts",
                        "--suffix", "--pts-save", name, f"--store={db}"], check=True, timeout=60)
    merged = pts_command("merge-results", "fsbench-test-first", "fsbench-test-second")
    assert merged.returncode == 0, merged.stdout + merged.stderr
    [name] = [p.name for p in (pts_home / "test-results").iterdir() if p.name.startswith("merge-")]
    rows = to_csv(name, tmp_path / "merged.csv")
    header = next(r for r in rows if len(r) > 2 and r[2] == "ext4-single (session 1)")
    assert header[2:] == ["ext4-single (session 1)", "btrfs-single (session 1)", "ext4-single (session 2)",
                          "btrfs-single (session 2)"]
    [values] = [r for r in rows if r and r[0].startswith("fsbench dd.write")]
    assert [float(v) for v in values[2:]] == [410.0, 460.0, 210.0, 260.0]  # each session's medians


def test_upload_without_the_result_file_says_what_to_do(pts_home):
    done = subprocess.run([sys.executable, "-m", "pytest_fsbench.cli", "upload", "no-such-result"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "has no result file no-such-result" in done.stderr

"""fsbench study as a user meets it: the list, the plan, and a paper scale refused when its
images would not fit (nothing is built: the plan only collects the cases)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from pytest_fsbench.filesystems import FILESYSTEMS

REPO = Path(__file__).resolve().parents[2]


def fsbench(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pytest_fsbench.cli", *args], capture_output=True, text=True,
                          cwd=cwd, timeout=300)


def test_the_list_names_five_studies(tmp_path):
    done = fsbench("study", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert [line.split()[0] for line in done.stdout.splitlines()] == [
        "raid-filesystems", "zfs-features", "iozone-linux-fs", "compression", "btrfs-options"]


def test_the_plan_counts_cases_runs_time_and_room(tmp_path):
    done = fsbench("study", "btrfs-options", "--plan", f"--image-dir={tmp_path / 'images'}", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("plan: pytest --pyargs pytest_fsbench.benchmarks.test_iozone")
    assert "tests x 5 runs (warm-up included), about 6 minutes (measured on a 2-core VM" in lines[1]
    assert "4 x 4 GiB = 16 GiB (sparse)" in lines[1]
    assert list(tmp_path.rglob("study-*.html")) == [] and not (tmp_path / "images").exists()


@pytest.mark.root
def test_a_paper_scale_whose_images_do_not_fit_is_refused_before_anything_runs(tmp_path):
    """The compression study's paper scale takes RAID5 cases of 3 x 40 GiB images; an image
    directory with 50 GiB free (a tmpfs of that size: room is only promised) holds one image
    but not a case."""
    images, work = tmp_path / "images", tmp_path / "work"
    images.mkdir()
    work.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=50G", "fsbench-study-test", str(images)], check=True)
    try:
        done = fsbench("study", "compression", "--scale", "paper", f"--image-dir={images}", cwd=work)
    finally:
        subprocess.run(["umount", str(images)], check=True)
    assert done.returncode == 2, done.stderr
    assert done.stdout.startswith("plan: pytest") and "3 x 40 GiB = 120 GiB (sparse)" in done.stdout
    [error] = done.stderr.strip().splitlines()
    assert error.startswith("fsbench study: the images of one case may take 120 GiB (3 x --image-size=40G) and "
                            f"{images} has 50 GiB free")
    assert list(work.iterdir()) == [] and list(images.iterdir()) == []


def test_a_bad_pytest_option_is_one_line_naming_it(tmp_path):
    done = fsbench("study", "btrfs-options", "--plan", "--fs=ntfs", cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr.strip() == ("fsbench study: ERROR: --fs: unknown filesystem 'ntfs'; choose from "
                                   + ", ".join(FILESYSTEMS))

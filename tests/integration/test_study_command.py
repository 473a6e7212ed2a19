"""fsbench study as a user meets it: the list, the plan, and a paper scale refused when its
images would not fit (nothing is built: the plan only collects the cases); the compression
study's ZFS cases in a virtual machine, small."""

from __future__ import annotations

import json
import re
import shlex
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from lxml import html as lxml_html

from conftest import PLAN_COMMAND, plan_command
from pytest_fsbench import studies
from pytest_fsbench.filesystems import FILESYSTEMS
from pytest_fsbench.studies import launch

REPO = Path(__file__).resolve().parents[2]


def fsbench(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pytest_fsbench.cli", *args], capture_output=True, text=True,
                          cwd=cwd, timeout=300)


def test_the_list_names_five_studies(tmp_path):
    done = fsbench("study", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    # a summary wider than the line continues indented under itself
    assert [line.split()[0] for line in done.stdout.splitlines() if not line.startswith(" ")] == [
        "raid-filesystems", "zfs-features", "iozone-linux-fs", "compression", "btrfs-options"]


def test_the_plan_counts_cases_runs_time_and_room(tmp_path):
    done = fsbench("study", "btrfs-options", "--plan", f"--image-dir={tmp_path / 'images'}", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    command, lines = plan_command(done.stdout)  # the pytest command in lines that fit, continued (issue 35)
    # the pytest the study runs, beside fsbench's interpreter: pasted, the lines run the same session
    assert Path(command[0]) == Path(sys.executable).parent / "pytest" and Path(command[0]).is_file()
    assert command[1:3] == ["--pyargs", "pytest_fsbench.benchmarks.test_iozone"]
    wide = [line for line in done.stdout.splitlines() if line.startswith(("plan: ", "    ")) and len(line) > 120]
    assert all(len(shlex.split(line.removesuffix(" \\"))) == 1 for line in wide), wide  # an argument wider, alone
    assert lines[0].startswith("plan: 33 tests x 6 runs (warm-up included; a claim's tests until it would be "
                               "decided), about ")
    assert "minutes (from the seconds per run and per target measured for this scale" in lines[0]
    assert "4 x 4 GiB = 16 GiB (sparse)" in lines[0]
    # runs chosen per claim: each claim's precision, from its published change, on the pytest line too
    assert ("plan: runs for compress-raises-write-single: published +125.9%, so its 2 tests repeat until each "
            "iozone.write median is known to ±50%") in lines
    assert "plan: runs for two-disks-raise-write: the scale's (not comparable here, whatever the runs: " \
           "the study's disks separate; here loop images on one disk)" in lines
    assert "--until-ci-case=test_iozone[ext4-single-cache=drop-16M-512M]@iozone.write=2.2%" in command
    assert "--max-runs=20" in command
    # the compression claims' cases again, on storage paced to the study's disk, chosen for those claims
    assert ("--until-ci-case=test_iozone[btrfs-single-compress=no-mount=datacow,datasum-storage=32MBps-cache=drop-"
            "16M-128M]@iozone.write=50%") in command
    if not Path("/proc/mdstat").exists():  # the study's ext3/ext4 RAID cases need md: left out, saying why
        assert lines[-1].startswith("plan: left out 6 tests this machine cannot run (ext3-raid0, ext3-raid1, ")
        assert "needs an md RAID array" in lines[-1]
    assert list(tmp_path.rglob("study-*.html")) == [] and not (tmp_path / "images").exists()


def test_the_sessions_time_left_starts_from_the_plans_minutes(tmp_path):
    """The plan gives the session each test's seconds by the name the session knows it by, a
    claim's tests at the runs they are expected to need (issue 36: the scale's --runs for all),
    and its minutes are their sum, the session's own seconds and the command's outside it."""
    study = studies.study("btrfs-options")
    args = launch.study_args(study, "quick", [f"--image-dir={tmp_path / 'images'}"], tmp_path)
    found = launch.plan(study, "quick", args, tmp_path)
    # the rest of the session: the scale's, at the load now, between those of the loads it was measured at
    rest = found.minutes * 60 - launch.OUTSIDE_SECONDS - sum(found.case_seconds.values())
    sessions = [seconds.session for _, seconds in launch.load_points(study.scale("quick"))]
    assert min(sessions) - 1e-6 <= rest <= max(sessions) + 1e-6, (rest, sessions)
    tests, _ = launch.collected_tests(found.args, tmp_path)
    assert set(found.case_seconds) == {launch.test_name(test) for test in tests} and len(tests) == found.tests
    claim = found.case_seconds["test_iozone[ext4-single-cache=drop-16M-512M]"]  # btrfs-writes-like-ext4's, +-2.2%
    plain = found.case_seconds["test_iozone[ext3-single-cache=drop-16M-512M]"]  # no claim's: the scale's runs
    assert claim > 2 * plain, found.case_seconds


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
    _, prose = plan_command(done.stdout)
    assert PLAN_COMMAND.match(done.stdout) and "3 x 40 GiB = 120 GiB (sparse)" in " ".join(prose)
    [error] = done.stderr.strip().splitlines()
    assert error.startswith("fsbench study: the images of one case may take 120 GiB (3 x --image-size=40G) and "
                            f"{images} has 50 GiB free")
    assert list(work.iterdir()) == [] and list(images.iterdir()) == []


def test_a_bad_pytest_option_is_one_line_naming_it(tmp_path):
    done = fsbench("study", "btrfs-options", "--plan", "--fs=ntfs", cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr.strip() == ("fsbench study: ERROR: --fs: unknown filesystem 'ntfs'; choose from "
                                   + ", ".join(FILESYSTEMS))


def vm_cases_skipped(stdout: str) -> str | None:
    """The reason pytest gave (-rs) for skipping a vm case of the study (the guest did not boot)."""
    reasons = [line.split(": ", 1)[-1] for line in stdout.splitlines()
               if line.startswith("SKIPPED") and "vm-zfs" in line]
    return reasons[0] if reasons else None


@pytest.mark.root
def test_the_compression_study_measures_lz4_against_off_both_in_the_virtual_machine(tmp_path):
    """The quick scale narrowed to its ZFS dd cases, small: lz4 and off run on OpenZFS in the
    virtual machine (zfs-fuse has no lz4), the plan and the page say so, and the findings compare
    the two there. Its own guest: the study is a command of its own (skipped, with the reason,
    where none can boot)."""
    from pytest_fsbench.kernels.kernel import parse_kernels
    from pytest_fsbench.kernels.vm import vm_missing

    reason = vm_missing(parse_kernels("vm")[0])
    if reason:
        pytest.skip(reason)
    page = tmp_path / "page.html"
    done = subprocess.run(
        [sys.executable, "-m", "pytest_fsbench.cli", "study", "compression", "-o", str(page), "-rs",
         "-k", "zfs and test_dd_write", "--dd-size=16M", "--runs=3", "--warmup=0", "--image-size=1G",
         f"--image-dir={tmp_path / 'images'}", f"--store={tmp_path / 'fsbench.db'}"],
        capture_output=True, text=True, cwd=tmp_path, timeout=1800)
    (tmp_path / "stdout").write_text(done.stdout + done.stderr)
    skipped = vm_cases_skipped(done.stdout)
    if skipped:
        pytest.skip(skipped)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    _, prose = plan_command(done.stdout)  # the plan's lines after its command, each whole again
    plan = [line for line in prose if line.startswith("plan: ")]
    assert plan[1].startswith("plan: vm-zfs-single-compression=lz4 runs in the virtual machine: zfs-fuse (pool "
                              "version 23) has no compression=lz4"), plan
    assert plan[2].startswith("plan: vm-zfs-single-compression=off runs in the virtual machine: the host could")
    assert "4 passed" in done.stdout  # lz4 and off, random and zeros
    text = lxml_html.fromstring(page.read_text()).text_content()
    assert "Where the cases ran" in text and "OpenZFS 2." in text and "virtual machine vm: kernel " in text
    findings = {row[0]: row for row in table_rows(page.read_text()) if len(row) == 5}
    on_zeros = findings["On zeros (the study's dd input) ZFS compression raises write throughput"]
    # decided or not (then it says how many runs would decide it), both sides in the guest
    assert re.search(r"; in vm(, emulated \(TCG\))?(;|$)", on_zeros[4]), on_zeros
    assert "not compared" not in on_zeros[4]
    db = sqlite3.connect(tmp_path / "fsbench.db")
    kernels = [json.loads(m)["kernel"] for (m,) in db.execute("SELECT manifest FROM cases")]
    db.close()
    assert len(kernels) == 4 and all(k["runs_under"] == "vm" and k["openzfs"].startswith("2.") for k in kernels)
    assert not list((tmp_path / "images").glob("*.img")), "the guest's disk images outlived the study"


def table_rows(page_html: str) -> list[list[str]]:
    return [[td.text_content() for td in tr.iter("td")] for tr in lxml_html.fromstring(page_html).iter("tr")]

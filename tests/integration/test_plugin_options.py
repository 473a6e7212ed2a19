"""The plugin's options as a user meets them: bad values are one-line usage errors before
anything is built, and the matrix turns into test ids. Needs no root: nothing is built."""

import pytest

from pytest_fsbench.filesystems import FILESYSTEMS
from pytest_fsbench.store.results import Store
from pytest_fsbench.measure.progress import unwrap

pytest_plugins = ["pytester"]

CASE = """
def test_case(fsbench_spec):
    pass
"""


@pytest.mark.parametrize("args, message", [
    (["--fs=ntfs"], f"ERROR: --fs: unknown filesystem 'ntfs'; choose from {', '.join(FILESYSTEMS)}"),
    (["--layout=raid6"], "ERROR: --layout: unknown layout 'raid6'"),
    (["--fs=btrfs", "--fs-opt=btrfs:compress=lz4"], "compress must be zlib[:1-9], lzo, zstd[:1-15] or no"),
    (["--fs-opt=ext4:recordsize=64K"], "ext4 has no option 'recordsize'"),
    (["--fs-opt=ext4"], "expected FS:KEY=VALUE"),
    (["--threshold=dd.write>100"], "threshold 'dd.write>100': expected"),
    (["--cache=cold"], "--cache: unknown cache policy 'cold'; choose from drop, remount, direct, warm"),
    (["--data=most"], "data 'most': use zeros, random, or a compressible percentage like 50%"),
    (["--image-size=1M"], "images must be at least 512M"),
    (["--devices=/dev/null"], "/dev/null"),
])
def test_bad_value_is_a_usage_error(pytester, args, message):
    pytester.makepyfile(CASE)
    result = pytester.runpytest_subprocess(*args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    errors = [line for line in result.stderr.lines if line.startswith("ERROR:")]
    assert len(errors) == 1 and message in errors[0], result.stderr.str()


def test_matrix_becomes_test_ids(pytester):
    pytester.makepyfile(CASE)
    result = pytester.runpytest_subprocess(
        "--collect-only", "-q", "--fs=zfs,btrfs", "--layout=single,raid10",
        "--fs-opt=zfs:compression=off", "--fs-opt=zfs:compression=gzip")
    ids = [line.split("::")[1] for line in result.outlines if "::" in line]
    assert ids == [
        "test_case[zfs-single-compression=off]", "test_case[zfs-raid10-compression=off]",
        "test_case[zfs-single-compression=gzip]", "test_case[zfs-raid10-compression=gzip]",
        "test_case[btrfs-single]", "test_case[btrfs-raid10]",
    ]


def test_ini_options(pytester):
    pytester.makepyfile(CASE)
    pytester.makeini("""
        [pytest]
        fsbench_fs = xfs,btrfs
        fsbench_layout = raid1
        fsbench_fs_opt =
            btrfs:compress=zstd
            btrfs:compress=lzo
    """)
    result = pytester.runpytest_subprocess("--collect-only", "-q")
    ids = [line.split("::")[1] for line in result.outlines if "::" in line]
    assert ids == ["test_case[xfs-raid1]", "test_case[btrfs-raid1-compress=zstd]", "test_case[btrfs-raid1-compress=lzo]"]


def test_a_workload_parameter_from_the_ini_file_and_the_command_line(pytester):
    pytester.makepyfile("def test_case(fsbench_spec, dd_bs, dd_size):\n    pass\n")
    pytester.makeini("[pytest]\nfsbench_dd_bs = 4K,64K\nfsbench_dd_size = 1M\n")
    result = pytester.runpytest_subprocess("--collect-only", "-q")
    assert [line.split("::")[1] for line in result.outlines if "::" in line] == [
        "test_case[ext4-single-4K]", "test_case[ext4-single-64K]"]
    result = pytester.runpytest_subprocess("--collect-only", "-q", "--dd-bs=1M")
    assert [line.split("::")[1] for line in result.outlines if "::" in line] == ["test_case[ext4-single-1M]"]
    result = pytester.runpytest_subprocess("--collect-only", "-q", "--dd-bs=3K")
    assert result.ret == pytest.ExitCode.USAGE_ERROR and "--dd-size=1M is not a multiple of --dd-bs=3K" in result.stderr.str()


def test_command_line_overrides_ini(pytester):
    pytester.makepyfile(CASE)
    pytester.makeini("[pytest]\nfsbench_fs = xfs\n")
    result = pytester.runpytest_subprocess("--collect-only", "-q", "--fs=btrfs")
    assert any(line.endswith("test_case[btrfs-single]") for line in result.outlines)
    assert not any("xfs" in line for line in result.outlines)


ROUND_CASE = """
def test_case(fsbench_spec, fsbench_round):
    pass
"""


def test_interleaved_rounds_alternate_their_order(pytester):
    pytester.makepyfile(ROUND_CASE)
    result = pytester.runpytest_subprocess("--collect-only", "-q", "--fs=ext4,btrfs", "--interleave", "--runs=3")
    ids = [line.split("::")[1] for line in result.outlines if "::" in line]
    assert ids == [
        "test_case[ext4-single-round1]", "test_case[btrfs-single-round1]",
        "test_case[btrfs-single-round2]", "test_case[ext4-single-round2]",
        "test_case[ext4-single-round3]", "test_case[btrfs-single-round3]",
    ]


def test_paired_variants_are_interleaved_next_to_their_case(pytester):
    pytester.makepyfile(ROUND_CASE)
    result = pytester.runpytest_subprocess("--collect-only", "-q", "--fs=btrfs,ext4", "--runs=5",
                                           "--fs-opt=btrfs:compress=no", "--paired=btrfs:compress-force=zstd")
    ids = [line.split("::")[1] for line in result.outlines if "::" in line]
    assert ids[:3] == ["test_case[btrfs-single-compress=no-round1]",
                       "test_case[btrfs-single-compress-force=zstd-round1]", "test_case[ext4-single-round1]"]
    assert ids[3:6] == ["test_case[ext4-single-round2]", "test_case[btrfs-single-compress-force=zstd-round2]",
                        "test_case[btrfs-single-compress=no-round2]"]
    assert len(ids) == 15


def test_a_case_whose_tool_is_missing_skips_before_anything_is_built(pytester, monkeypatch):
    pytester.makepyfile("def test_case(fsbench_spec, dbench_clients):\n    raise AssertionError('ran')\n")
    monkeypatch.setenv("PATH", str(pytester.path))  # no dbench (and nothing else) on PATH
    result = pytester.runpytest_subprocess("-rs", "--fs=ext4", "--dbench-clients=2")
    result.assert_outcomes(skipped=1)
    assert any("dbench is not installed (Debian package dbench)" in line for line in result.outlines)


def test_a_report_of_a_session_without_cases_is_not_written(pytester):
    pytester.makepyfile("def test_plain():\n    pass\n")
    result = pytester.runpytest_subprocess("--report=r.html", f"--store={pytester.path / 's.db'}")
    assert result.ret == 0
    assert "fsbench: no report written to r.html: no case ran" in result.outlines
    assert not (pytester.path / "r.html").exists() and not (pytester.path / "s.db").exists()


OWN_DATA = """
import pytest

@pytest.mark.fsbench_own_data("IOzone")
def test_own(fsbench_spec, fsbench_conditions):
    pass

def test_honours_data(fsbench_spec, fsbench_conditions):
    pass
"""


def test_a_tool_with_its_own_data_runs_once_per_cache_policy(pytester):
    """--data applies to the tools that honour it; IOzone's own pattern is never given a --data
    variant it would only skip (the btrfs-options study skipped 17 such cases)."""
    pytester.makepyfile(OWN_DATA)
    result = pytester.runpytest_subprocess("--collect-only", "-q", "--fs=btrfs", "--data=random,zeros",
                                           "--cache=drop,direct")
    ids = [line.split("::")[1] for line in result.outlines if "::" in line]
    assert ids == [
        "test_own[btrfs-single-cache=drop]", "test_own[btrfs-single-cache=direct]",
        "test_honours_data[btrfs-single-cache=drop-data=random]", "test_honours_data[btrfs-single-cache=drop-data=zeros]",
        "test_honours_data[btrfs-single-cache=direct-data=random]",
        "test_honours_data[btrfs-single-cache=direct-data=zeros]",
    ]


@pytest.mark.skipif(__import__("pathlib").Path("/proc/mdstat").exists(), reason="this kernel has md: every case runs")
def test_runnable_only_leaves_out_what_this_machine_cannot_run_and_says_why(pytester):
    pytester.makepyfile(CASE)
    args = ["--collect-only", "-q", "--fs=btrfs,ext4", "--layout=single,raid1"]
    everything = pytester.runpytest_subprocess(*args)
    assert [line for line in everything.outlines if "::" in line][-1].endswith("test_case[ext4-raid1]")
    result = pytester.runpytest_subprocess(*args, "--runnable-only")
    ids = [line.split("::")[1] for line in result.outlines if "::" in line]
    assert ids == ["test_case[btrfs-single]", "test_case[btrfs-raid1]", "test_case[ext4-single]"]
    [line] = [line for line in unwrap(result.outlines) if line.startswith("fsbench: left out")]
    assert line.startswith("fsbench: left out 1 test this machine cannot run (ext4-raid1): each needs an md RAID "
                           "array"), line
    assert "--kernel=host+uml" in line


def test_collecting_only_records_no_session_and_judges_nothing(pytester):
    """--collect-only with --save or a threshold lists the cases and exits 0: nothing was measured,
    so no session is kept and no rule is said to have checked nothing (issue 35)."""
    pytester.makepyfile(CASE)
    store = pytester.path / "fsbench.db"
    result = pytester.runpytest_subprocess("--collect-only", "-q", "--fs=btrfs", f"--store={store}", "--save=base",
                                           "--threshold=dd.write>=100MB/s")
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    assert "1 test collected" in result.stdout.str() and "fsbench:" not in result.stdout.str()
    opened = Store(store, create=False)
    try:
        assert opened.sessions() == []
    finally:
        opened.close()

"""scripts/fidelity.py's pure helpers: the headline pick, IOzone's row read by hand (checked
against fsbench's own parser on a real output), phases, rounds, medians and option checks."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import load_script
from pytest_fsbench.metrics import Direction, Metric
from pytest_fsbench.workloads.iozone import parse_table

fidelity = load_script("fidelity")

DATA = Path(__file__).resolve().parent.parent / "data" / "iozone"
# a later phase of a multi-phase IOzone: -i 1 alone on the kept file, so only read and reread
READ_PHASE = """\
	Command line used: iozone -i 1 -r 64k -s 8192k -e -w -f /var/tmp/iozone-capture/iozone.tmp
	Output is in kBytes/sec
                                                              random    random     bkwd    record    stride
              kB  reclen    write  rewrite    read    reread    read     write     read   rewrite      read
            8192      64                    1244250  7893699

iozone test complete.
"""


def metric(name: str, value: float, **params: str) -> Metric:
    return Metric(name, value, "MB/s", Direction.HIGHER, params)


def test_iozone_groups_reads_every_dash_i():
    assert fidelity.iozone_groups(["iozone", "-i", "0", "-i", "1", "-r", "1024k", "-e"]) == {0, 1}
    assert fidelity.iozone_groups(["iozone", "-i", "2", "-w"]) == {2}


def test_iozone_row_agrees_with_fsbenchs_parser():
    output = (DATA / "flush_r64k_s8m.txt").read_text()
    mine = fidelity.iozone_row(output, frozenset({0, 1}), 8192, 64)
    assert mine == parse_table(output, frozenset({0, 1}))[(8192, 64)]
    assert fidelity.iozone_row(output, frozenset({0, 1}), 8192, 128) is None


def test_iozone_by_hand_takes_each_test_from_the_phase_that_ran_it():
    write = (DATA / "flush_r64k_s8m.txt").read_text()
    measured = [(["iozone", "-i", "0", "-i", "1"], write), (["iozone", "-i", "1"], READ_PHASE)]
    metrics = fidelity.iozone_by_hand(measured, file_kb=8192, record_kb=64)
    read = fidelity.Headline("iozone.read", (("record", "64K"),)).pick(metrics)
    assert read is not None and read.value == pytest.approx(1244250 * 1024 / 1e6)


def test_headline_pick_filters_by_params_and_reports_absence():
    metrics = [metric("iozone.read", 1.0, record="64K"), metric("iozone.read", 2.0, record="1M")]
    assert fidelity.Headline("iozone.read", (("record", "1M"),)).pick(metrics).value == 2.0
    assert fidelity.Headline("bonnie.block_read").pick(metrics) is None
    with pytest.raises(LookupError, match="ambiguous"):
        fidelity.Headline("iozone.read").pick(metrics)


def test_phases_of_a_workload_with_and_without_phases():
    class Plain:
        pass

    class Phased:
        def phases(self):
            return ["write", "read"]

    plain = Plain()
    assert fidelity.phases_of(plain) == [plain]
    assert fidelity.phases_of(Phased()) == ["write", "read"]


def test_rounds_alternate_who_goes_first():
    assert [fidelity.round_order(i)[0] for i in range(-1, 3)] == ["by_hand", "fsbench", "by_hand", "fsbench"]


def test_result_line_medians_and_ratio_of_rounds_both_sides_measured():
    samples = fidelity.Samples()
    for mine, theirs in ((100.0, 50.0), (110.0, 55.0), (90.0, 45.0)):
        samples.add("dd.write", metric("dd.write", mine), metric("dd.write", theirs))
    samples.add("dd.write", None, metric("dd.write", 1.0))
    line = fidelity.result_line("dd", "dd.write", "ext4", samples)
    assert line == {"workload": "dd", "metric": "dd.write", "fs": "ext4", "runs": 3, "fsbench_median": 100.0,
                    "by_hand_median": 50.0, "ratio": 2.0, "unit": "MB/s"}
    assert samples.unmeasured == {"dd.write": 1}
    assert fidelity.result_line("dd", "dd.read", "ext4", samples) is None


def test_by_hand_preparation_runs_once_per_target(tmp_path):
    log = tmp_path / "log"

    class Once:
        def files(self):
            return {"job": "text"}

        def prepare_argvs(self, workdir, scratch):
            return [["sh", "-c", f"echo every >> {log}"]]

        def prepare_once_argvs(self, workdir, scratch):
            return [["sh", "-c", f"echo once >> {log}"]]

    hand = fidelity.ByHand(target=None, scratch_root=tmp_path)  # type: ignore[arg-type]
    for _ in range(3):
        hand.prepare(Once(), tmp_path, tmp_path)
    assert log.read_text().split() == ["every", "once", "every", "every"]
    assert (tmp_path / "job").read_text() == "text"


@pytest.mark.parametrize("args, named", [
    (["--fs", "ntfs"], "'ntfs'"), (["--runs", "0"], "'0'"), (["--warmup", "-1"], "'-1'"),
    (["--workloads", "dd,filebench"], "'filebench'"), (["--image-dir", "/etc/hostname"], "'/etc/hostname'"),
])
def test_bad_values_are_one_line_naming_them_with_status_2(args, named, capsys):
    with pytest.raises(SystemExit) as stopped:
        fidelity.arguments(args)
    err = capsys.readouterr().err
    assert stopped.value.code == 2
    assert named in err and len(err.strip().splitlines()) == 1


def test_defaults():
    args = fidelity.arguments([])
    assert (args.fs, args.runs, args.warmup, args.workloads) == ("ext4", 10, 1, fidelity.WORKLOADS)
    assert fidelity.WORKLOADS == ("dd", "iozone", "fio", "dbench", "bonnie")


def test_paired_shift_holds_zero_for_noise_and_not_for_a_real_difference():
    noise, same = fidelity.Samples(), fidelity.Samples()
    first, second = [100, 104, 97, 101, 99, 103, 98, 102], [101, 103, 98, 100, 100, 102, 97, 103]
    for a, b in zip(first, second):
        noise.add("m", metric("m", a), metric("m", b))
        same.add("m", metric("m", a * 1.2), metric("m", a))
    assert "95 % CI -" in fidelity.paired_shift(noise, "m") and ".. +" in fidelity.paired_shift(noise, "m")
    assert fidelity.paired_shift(same, "m").startswith("paired shift +20.0 %, 95 % CI +20.0")


def test_staging_is_the_phases_own_and_data_sets_stay_in_memory_without_a_read_back(tmp_path):
    class Held:
        def datasets(self):
            return {"dd-source.dat": object()}

    class Staged(Held):
        def staged_argvs(self, scratch):
            return [["cat", str(scratch / "x")]]

    scratch = Path("/s")
    write = ["dd", "if=/s/dd-source.dat", "of=/t/dd.dat"]
    # a read back after the drop made the dd write that followed 1.5-2x slower than fsbench's
    assert fidelity.staging_argvs(Held(), Held(), write, scratch) == []
    assert fidelity.staging_argvs(Staged(), Staged(), write, scratch) == [["cat", "/s/x"]]
    assert fidelity.ByHand(None, tmp_path).memory_root == fidelity.MEMORY_ROOT
    assert str(fidelity.MEMORY_ROOT).startswith("/dev/shm/fsbench-fidelity-")


def test_a_missing_tool_is_a_reason_to_skip():
    class Module:
        TOOLS = {"no-such-tool-fsbench": "no-such-package"}

        @staticmethod
        def unavailable():
            return ["no source tarball"]

    assert fidelity.missing(Module) == [
        "no-such-tool-fsbench is not installed (Debian package no-such-package)", "no source tarball"]
    assert fidelity.missing(fidelity.dd) == []


def test_by_hand_reads_a_tmpfs_copy_or_the_very_file_fsbench_reads(tmp_path):
    """--by-hand-data=fsbench links the by-hand input to the data set fsbench's side reads (its dd
    write came out 13-18 % faster than from a /dev/shm copy, which this separates)."""
    from types import SimpleNamespace
    from pytest_fsbench.workloads import dd

    workload = dd.DdWrite(total_size="1M")
    target = SimpleNamespace(scratch=tmp_path / "session")
    shm = fidelity.ByHand(target, tmp_path, memory_root=tmp_path / "shm")  # type: ignore[arg-type]
    same = fidelity.ByHand(target, tmp_path, data_from="fsbench")  # type: ignore[arg-type]
    for hand, name in ((shm, "a"), (same, "b")):
        (tmp_path / name).mkdir()
        hand.prepare(SimpleNamespace(files=dict, datasets=workload.datasets, prepare_argvs=lambda *_: []),
                     tmp_path, tmp_path / name)
    [link_a] = (tmp_path / "a").iterdir()
    [link_b] = (tmp_path / "b").iterdir()
    assert link_a.resolve().is_relative_to(tmp_path / "shm")
    assert link_b.resolve().is_relative_to(target.scratch) and link_b.resolve().stat().st_size == 1 << 20
    assert fidelity.arguments(["--by-hand-data", "fsbench"]).by_hand_data == "fsbench"
    assert fidelity.arguments([]).by_hand_data == "shm"

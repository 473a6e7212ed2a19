"""IOzone workload: argv building, validation, and parsing of real IOzone 3.489 outputs."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from pytest_fsbench.errors import ParseError
from pytest_fsbench.metrics import Direction, Metric
from pytest_fsbench.workloads.base import Workload
from pytest_fsbench.workloads.iozone import (
    TESTS,
    Iozone,
    doubling,
    kb_label,
    kb_per_s_to_mb_per_s,
    parse_excel_cpu,
    parse_table,
    parse_throughput,
    power_of_two_kb,
    size_kb,
)

DATA = Path(__file__).resolve().parents[2] / "data" / "iozone"
WORK = Path("/mnt/target/work")
SCRATCH = Path("/tmp/scratch")
SIX = ("write", "rewrite", "read", "reread", "random_read", "random_write")
THROUGHPUT_TESTS = ("write", "rewrite", "read", "reread", "random_read", "random_write",
                    "backward_read", "stride_read", "fwrite", "fread")


def load(name: str) -> str:
    return (DATA / name).read_text()


def mbs(kb_per_s: float) -> float:
    return kb_per_s * 1024 / 1e6


def by_key(metrics: list[Metric]) -> dict[tuple[str, str, str], Metric]:
    return {(m.name, m.params.get("record", ""), m.params.get("file", "")): m for m in metrics}


def args(workload: Iozone) -> list[str]:
    return workload.argv(WORK, SCRATCH)


# --- helpers ---------------------------------------------------------------------------------


@pytest.mark.parametrize("text,kb", [("64k", 64), ("64K", 64), ("16M", 16384), ("4G", 4194304),
                                     ("1k", 1), ("65536", 64), ("1m", 1024)])
def test_size_kb(text: str, kb: int) -> None:
    assert size_kb(text) == kb


@pytest.mark.parametrize("text", ["", "big", "-4k", "0", "1500", "64 q"])
def test_size_kb_rejects(text: str) -> None:
    with pytest.raises(ValueError):
        size_kb(text)


def test_power_of_two_kb() -> None:
    assert power_of_two_kb("256k") == 256
    with pytest.raises(ValueError, match="not a power of two"):
        power_of_two_kb("96k")


def test_kb_label() -> None:
    assert [kb_label(kb) for kb in (1, 64, 1024, 4096, 1536, 4194304)] == \
        ["1K", "64K", "1M", "4M", "1536K", "4G"]


def test_kb_per_s_to_mb_per_s() -> None:
    assert kb_per_s_to_mb_per_s(1_000_000) == pytest.approx(1024.0)


def test_doubling() -> None:
    assert doubling(64, 256) == [64, 128, 256]
    assert doubling(64, 64) == [64]
    assert doubling(128, 64) == []


# --- contract and argv -----------------------------------------------------------------------


def test_is_a_workload() -> None:
    workload = Iozone()
    assert isinstance(workload, Workload)
    assert workload.name == "iozone"
    assert workload.timeout > 0
    assert workload.files() == {}
    assert workload.prepare_argvs(WORK, SCRATCH) == [["rm", "-f", str(WORK / "iozone.tmp")]]
    with pytest.raises(dataclasses.FrozenInstanceError):
        workload.flush = True  # type: ignore[misc]


def test_argv_default() -> None:
    assert args(Iozone()) == ["iozone", "-i", "0", "-i", "1", "-i", "2", "-r", "64k", "-s", "16384k",
                              "-e", "-f", str(WORK / "iozone.tmp")]


def test_argv_single_sizes() -> None:
    argv = args(Iozone(tests=("write",), record="1M", file="8M"))
    assert argv == ["iozone", "-i", "0", "-r", "1024k", "-s", "8192k", "-e", "-f", str(WORK / "iozone.tmp")]


def test_argv_all_thirteen_tests() -> None:
    argv = args(Iozone(tests=TESTS, record="1m", file="8m"))
    assert argv[:17] == ["iozone"] + [x for i in range(8) for x in ("-i", str(i))]


def test_argv_always_writes_first() -> None:
    argv = args(Iozone(tests=("stride_read",), record="64k", file="1M"))
    assert argv[:5] == ["iozone", "-i", "0", "-i", "5"]


def test_argv_pair_selects_one_group() -> None:
    argv = args(Iozone(tests=("fwrite", "frewrite", "freread"), record="64k", file="1M"))
    assert argv[:7] == ["iozone", "-i", "0", "-i", "6", "-i", "7"]


def test_argv_size_lists() -> None:
    argv = args(Iozone(tests=("read",), record=("64k", "1M"), file=("512k", "2M")))
    assert argv == ["iozone", "-i", "0", "-i", "1", "-r", "64k", "-r", "1024k", "-s", "512k",
                    "-s", "2048k", "-e", "-f", str(WORK / "iozone.tmp")]


def test_argv_auto() -> None:
    argv = args(Iozone(tests=SIX, auto=True, min_record="64k", max_record="256k", min_file="1M",
                       max_file="4M"))
    assert argv == ["iozone", "-i", "0", "-i", "1", "-i", "2", "-a", "-z", "-y", "64k", "-q", "256k",
                    "-n", "1024k", "-g", "4096k", "-e", "-f", str(WORK / "iozone.tmp")]


def test_argv_auto_defaults_are_iozones() -> None:
    argv = args(Iozone(tests=("write",), auto=True))
    assert argv[3:13] == ["-a", "-z", "-y", "4k", "-q", "16384k", "-n", "64k", "-g", "524288k"]


def test_argv_auto_study_s1() -> None:
    workload = Iozone(tests=("write", "rewrite", "read", "random_read", "random_write", "stride_read"),
                      auto=True, min_record="64k", max_record="16M", min_file="4G", max_file="4G")
    assert args(workload)[1:9] == ["-i", "0", "-i", "1", "-i", "2", "-i", "5"]
    assert "-n" in args(workload) and args(workload)[args(workload).index("-n") + 1] == "4194304k"
    assert len(workload.expected_pairs()) == 9


def test_argv_flush_direct() -> None:
    argv = args(Iozone(flush=True, direct=True))
    assert argv[-4:-2] == ["-e", "-I"]


def test_argv_cpu_table_adds_excel_report() -> None:
    argv = args(Iozone(cpu=True))
    assert argv[-4:-2] == ["-+u", "-R"]


def test_argv_dedup() -> None:
    assert args(Iozone(dedup_percent=50))[-4:-2] == ["-+w", "50"]
    assert args(Iozone(dedup_percent=0))[-4:-2] == ["-+w", "0"]
    assert "-+w" not in args(Iozone())


def test_argv_throughput() -> None:
    argv = args(Iozone(tests=("write", "read"), record="64k", file="8M", processes=2))
    assert argv == ["iozone", "-i", "0", "-i", "1", "-r", "64k", "-s", "8192k", "-e", "-l", "2", "-u", "2",
                    "-F", str(WORK / "iozone.0.tmp"), str(WORK / "iozone.1.tmp")]


def test_phases_write_first_then_each_group_on_the_kept_file() -> None:
    workload = Iozone(tests=("stride_read", "read", "reread", "write", "random_read"), record="64k", file="8M")
    phases = workload.phases()
    assert [p.tests for p in phases] == [("write",), ("read", "reread"), ("random_read",), ("stride_read",)]
    assert [sorted(p.groups()) for p in phases] == [[0], [1], [2], [5]]
    for phase in phases:
        assert args(phase)[-4:-2] == ["-e", "-w"]
        assert phase.prepare_argvs(WORK, SCRATCH) == []
    assert workload.prepare_argvs(WORK, SCRATCH) == [["rm", "-f", str(WORK / "iozone.tmp")]]


def test_a_write_phase_nobody_asked_for_reports_nothing() -> None:
    first, later = Iozone(tests=("read",), record="64k", file="8M").phases()
    assert first.silent and first.tests == ("write",) and not later.silent
    assert first.parse(load("phase_write_r64k_s8m.txt")) == []


def test_each_phase_parses_its_own_output() -> None:
    write, reads, randoms = Iozone(tests=("write", "read", "reread", "random_read", "random_write"),
                                   record="64k", file="8M").phases()
    assert [m.name for m in write.parse(load("phase_write_r64k_s8m.txt"))] == ["iozone.write"]
    assert [(m.name, m.io) for m in reads.parse(load("phase_read_r64k_s8m.txt"))] == [
        ("iozone.read", ("read", 8 << 20)), ("iozone.reread", ("read", 8 << 20))]
    assert [(m.name, m.io[0]) for m in randoms.parse(load("phase_random_r64k_s8m.txt"))] == [
        ("iozone.random_read", "read"), ("iozone.random_write", "write")]
    _, throughput = Iozone(tests=("write", "read"), record="64k", file="8M", processes=2).phases()
    assert [m.name for m in throughput.parse(load("phase_throughput_read_l2_r64k_s8m.txt"))] == ["iozone.read"]


def test_phases_per_file_and_record_size() -> None:
    phases = Iozone(tests=("write", "rewrite", "read"), record=("64k", "1M"), file="8M").phases()
    assert [(p.tests, p.record, p.reuses_file, p.silent) for p in phases] == [
        (("write", "rewrite"), ("64K",), False, False), (("read",), ("64K",), True, False),
        (("write", "rewrite"), ("1M",), False, False), (("read",), ("1M",), True, False)]


def test_one_command_when_not_phased_and_in_auto_mode() -> None:
    workload = Iozone(phased=False)
    assert workload.phases() == [workload] and "-w" not in args(workload)
    assert Iozone(tests=("write",), auto=True).phases()[0].auto


def test_figures_declare_their_io() -> None:
    metrics = {m.name: m.io for m in Iozone(tests=("write", "read"), record="64k", file="8M", processes=2)
               .parse(load("throughput_l2_u2_r64k_s8m.txt"))}
    assert metrics["iozone.write"] == ("write", 2 * 8 * 1024 * 1024)
    assert metrics["iozone.read"] == ("read", 2 * 8 * 1024 * 1024)


def test_argv_throughput_cpu_without_excel_report() -> None:
    argv = args(Iozone(tests=("write",), record="64k", file="8M", processes=3, cpu=True, flush=True,
                       direct=True, dedup_percent=25))
    assert argv == ["iozone", "-i", "0", "-r", "64k", "-s", "8192k", "-e", "-I", "-+u", "-+w", "25",
                    "-l", "3", "-u", "3", "-F"] + [str(WORK / f"iozone.{i}.tmp") for i in range(3)]


def test_data_files_under_workdir() -> None:
    assert Iozone().data_files(WORK) == [WORK / "iozone.tmp"]
    assert Iozone(record="64k", file="1M", processes=2).data_files(WORK) == \
        [WORK / "iozone.0.tmp", WORK / "iozone.1.tmp"]


def test_params_table() -> None:
    assert Iozone(tests=("write", "read"), record=("64k", "1m"), file="8m").params() == {
        "mode": "table", "tests": "write,read", "record": "64K,1M", "file": "8M",
        "flush": "1", "direct": "0", "phased": "1", "cpu": "0"}


def test_params_auto() -> None:
    params = Iozone(tests=("write",), auto=True, min_record="64k", max_record="16m", min_file="4g",
                    max_file="4g", flush=True).params()
    assert params == {"mode": "auto", "tests": "write", "record": "64K-16M", "file": "4G-4G",
                      "flush": "1", "direct": "0", "phased": "0", "cpu": "0"}


def test_params_throughput() -> None:
    params = Iozone(tests=("write",), record="64k", file="8m", processes=2, cpu=True, direct=True,
                    dedup_percent=50).params()
    assert params == {"mode": "throughput", "tests": "write", "record": "64K", "file": "8M",
                      "flush": "1", "direct": "1", "phased": "1", "cpu": "1", "processes": "2",
                      "dedup_percent": "50"}


def test_tests_accept_a_list_and_a_string() -> None:
    assert Iozone(tests=["write", "read"]).tests == ("write", "read")  # type: ignore[arg-type]
    assert Iozone(tests="read").tests == ("read",)  # type: ignore[arg-type]


def test_expected_pairs_skip_records_larger_than_the_file() -> None:
    workload = Iozone(record=("64k", "1m"), file=("512k", "2m"))
    assert workload.expected_pairs() == [(512, 64), (2048, 64), (2048, 1024)]


# --- validation ------------------------------------------------------------------------------


@pytest.mark.parametrize("kwargs,message", [
    ({"tests": ("write", "sequential")}, "unknown iozone test 'sequential'"),
    ({"tests": ("pwrite",)}, "unknown iozone test 'pwrite'"),
    ({"tests": ()}, "at least one test"),
    ({"tests": ("read", "read")}, "name a test twice"),
    ({"record": "1M", "file": "512k"}, "record size 1M is larger than file size 512K"),
    ({"record": ("64k", "4M"), "file": ("1M", "2M")}, "record size 4M is larger than file size 2M"),
    ({"record": "32M", "file": "64M"}, "larger than IOzone's 16M"),
    ({"record": "96k"}, "not a power of two"),
    ({"record": "big"}, "is not a size"),
    ({"file": "lots"}, "is not a size"),
    ({"record": "1500"}, "not a whole number of kB"),
    ({"record": "1M", "file": "3000k"}, "file size 3000K is not a multiple of record size 1M"),
    ({"record": ("64k", "64K")}, "must not repeat"),
    ({"file": ("1M", "1024k")}, "must not repeat"),
    ({"auto": True, "record": "64k"}, "auto mode takes min_record"),
    ({"auto": True, "file": "4M"}, "auto mode takes min_record"),
    ({"min_record": "64k"}, "min_record needs auto=True"),
    ({"max_file": "4G"}, "max_file needs auto=True"),
    ({"auto": True, "min_record": "256k", "max_record": "64k"}, "min_record 256K is larger than max_record"),
    ({"auto": True, "min_file": "8M", "max_file": "1M"}, "min_file 8M is larger than max_file 1M"),
    ({"auto": True, "min_record": "1M", "max_file": "512k"}, "min_record 1M is larger than max_file"),
    ({"auto": True, "max_record": "32M"}, "larger than IOzone's 16M"),
    ({"auto": True, "max_file": "3G"}, "not a power of two"),
    ({"processes": 0, "record": "64k", "file": "1M"}, "processes 0 is not at least 1"),
    ({"processes": 2, "auto": True}, "cannot use auto mode"),
    ({"processes": 2, "record": ("64k", "1M"), "file": "8M"}, "one record size and one file size"),
    ({"processes": 2, "record": "64k", "file": ("1M", "2M")}, "one record size and one file size"),
    ({"processes": 2, "tests": ("write", "record_rewrite")}, "'record_rewrite' is not reported"),
    ({"processes": 2, "tests": ("frewrite",)}, "'frewrite' is not reported"),
    ({"processes": 2, "tests": ("freread",)}, "'freread' is not reported"),
    ({"dedup_percent": 101}, "dedup_percent 101 is not between 0 and 100"),
    ({"dedup_percent": -1}, "dedup_percent -1"),
    ({"timeout": 0}, "timeout 0 is not positive"),
])
def test_validation(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message) as info:
        Iozone(**kwargs)  # type: ignore[arg-type]
    assert "\n" not in str(info.value)


# --- parsing: table and auto mode ------------------------------------------------------------


def test_parse_auto() -> None:
    workload = Iozone(tests=SIX, auto=True, min_record="64k", max_record="256k", min_file="1m",
                      max_file="4m")
    metrics = workload.parse(load("auto_i0_i1_i2.txt"))
    assert len(metrics) == 9 * 6
    assert all(m.unit == "MB/s" and m.direction is Direction.HIGHER for m in metrics)
    got = by_key(metrics)
    # "1024      64  3556008  4783849 20471166  6874084  8122014  2198257"
    assert got[("iozone.write", "64K", "1M")].value == pytest.approx(3556008 * 1024 / 1e6)
    assert got[("iozone.random_write", "64K", "1M")].value == pytest.approx(mbs(2198257))
    # "4096     256  4447510 11940367 13126371 18800352 20579482 15999048"
    assert got[("iozone.write", "256K", "4M")].value == pytest.approx(mbs(4447510))
    assert got[("iozone.reread", "256K", "4M")].value == pytest.approx(mbs(18800352))
    assert got[("iozone.random_read", "256K", "4M")].value == pytest.approx(mbs(20579482))
    assert got[("iozone.write", "256K", "4M")].params == {"record": "256K", "file": "4M"}


def test_parse_auto_reports_only_requested_tests() -> None:
    workload = Iozone(tests=("random_read", "reread"), auto=True, min_record="64k", max_record="256k",
                      min_file="1m", max_file="4m")
    metrics = workload.parse(load("auto_i0_i1_i2.txt"))
    assert {m.name for m in metrics} == {"iozone.random_read", "iozone.reread"}
    assert len(metrics) == 18
    # "2048     128  3543986 17940335 26284531 26204348 26284531 24984852"
    assert by_key(metrics)[("iozone.random_read", "128K", "2M")].value == pytest.approx(mbs(26284531))


def test_parse_auto_with_excel_report() -> None:
    workload = Iozone(tests=SIX, auto=True, min_record="64k", max_record="256k", min_file="1m",
                      max_file="4m")
    got = by_key(workload.parse(load("auto_excel_i0_i1_i2.txt")))
    assert len(got) == 54
    # "2048     128  4385291 10834854  8464610 23546602 18441025  7616502"
    assert got[("iozone.read", "128K", "2M")].value == pytest.approx(mbs(8464610))
    assert got[("iozone.random_write", "128K", "2M")].value == pytest.approx(mbs(7616502))


def test_parse_auto_grid_must_match() -> None:
    workload = Iozone(tests=SIX, auto=True, min_record="64k", max_record="512k", min_file="1m",
                      max_file="4m")
    with pytest.raises(ParseError, match="no row for 1M file, 512K records"):
        workload.parse(load("auto_i0_i1_i2.txt"))


def test_parse_auto_flush_cpu_excel() -> None:
    workload = Iozone(tests=SIX, auto=True, min_record="64k", max_record="256k", min_file="1m",
                      max_file="4m", flush=True, cpu=True)
    metrics = workload.parse(load("auto_z_flush_cpu_excel.txt"))
    assert len(metrics) == 9 * 6 * 2
    got = by_key(metrics)
    # "1024      64   810706  2039583  8525047  8000971  8474583  1992279"
    assert got[("iozone.write", "64K", "1M")].value == pytest.approx(mbs(810706))
    # Writer CPU report, row "1024": 37.75 38.63 43.06; Random write row "4096": 29.82 24.13 24.28
    cpu = got[("iozone.write.cpu", "64K", "1M")]
    assert (cpu.value, cpu.unit, cpu.direction) == (37.75, "%", Direction.LOWER)
    assert got[("iozone.write.cpu", "256K", "1M")].value == 43.06
    assert got[("iozone.random_write.cpu", "128K", "4M")].value == 24.13
    assert got[("iozone.reread.cpu", "64K", "2M")].value == 53.13


def test_parse_all_thirteen() -> None:
    workload = Iozone(tests=TESTS, record="1M", file="8M")
    metrics = workload.parse(load("all13_r1m_s8m.txt"))
    assert [m.name for m in metrics] == [f"iozone.{t}" for t in TESTS]
    row = [330898, 12884230, 27295505, 26434519, 28637752, 20638888, 25760677, 39009441, 51221596,
           8007759, 12879400, 24166268, 32760823]
    for metric, kb_per_s in zip(metrics, row):
        assert metric.value == pytest.approx(mbs(kb_per_s))
        assert metric.params == {"record": "1M", "file": "8M"}


def test_parse_all_thirteen_excel() -> None:
    metrics = Iozone(tests=TESTS, record="1M", file="8M").parse(load("all13_excel_r1m_s8m.txt"))
    assert by_key(metrics)[("iozone.record_rewrite", "1M", "8M")].value == pytest.approx(mbs(41406968))
    assert by_key(metrics)[("iozone.freread", "1M", "8M")].value == pytest.approx(mbs(25607089))


def test_parse_all_thirteen_excel_cpu() -> None:
    metrics = Iozone(tests=TESTS, record="1M", file="8M", cpu=True).parse(load("all13_excel_cpu_r1m_s8m.txt"))
    got = by_key(metrics)
    assert len(metrics) == 26
    assert got[("iozone.stride_read", "1M", "8M")].value == pytest.approx(mbs(44750564))
    expected_cpu = [58.23, 29.14, 77.69, 78.28, 86.39, 29.95, 74.07, 99.53, 98.88, 45.86, 33.83,
                    86.02, 80.24]
    assert [got[(f"iozone.{t}.cpu", "1M", "8M")].value for t in TESTS] == expected_cpu


def test_parse_i0_to_i12_output() -> None:
    metrics = Iozone(tests=TESTS, record="1M", file="8M").parse(load("i0_to_i12_r1m_s8m.txt"))
    assert len(metrics) == 13
    assert by_key(metrics)[("iozone.backward_read", "1M", "8M")].value == pytest.approx(mbs(14603729))


def test_parse_size_lists() -> None:
    workload = Iozone(tests=("write", "rewrite", "read", "reread"), record=("64k", "1M"),
                      file=("512k", "2M"))
    got = by_key(workload.parse(load("lists_r64k_r1m_s512k_s2m.txt")))
    assert len(got) == 12
    assert got[("iozone.write", "64K", "512K")].value == pytest.approx(mbs(3768799))
    assert got[("iozone.reread", "1M", "2M")].value == pytest.approx(mbs(41738079))
    assert ("iozone.write", "1M", "512K") not in got


def test_parse_flush() -> None:
    metrics = Iozone(tests=("write", "read"), record="64k", file="8M", flush=True).parse(
        load("flush_r64k_s8m.txt"))
    assert [(m.name, m.value) for m in metrics] == [("iozone.write", pytest.approx(mbs(793805))),
                                                    ("iozone.read", pytest.approx(mbs(10476150)))]


def test_parse_flush_odirect() -> None:
    workload = Iozone(tests=SIX, record=("64k", "1M"), file="8M", flush=True, direct=True)
    got = by_key(workload.parse(load("flush_odirect_r64k_r1m_s8m.txt")))
    assert len(got) == 12
    assert got[("iozone.read", "64K", "8M")].value == pytest.approx(mbs(423661))
    assert got[("iozone.random_write", "1M", "8M")].value == pytest.approx(mbs(1970642))


def test_parse_odirect_small_records() -> None:
    got = by_key(Iozone(tests=("write", "read"), record="1k", file="64k", direct=True).parse(
        load("odirect_r1k_s64k.txt")))
    assert got[("iozone.write", "1K", "64K")].value == pytest.approx(mbs(18269))


def test_parse_odirect_tmpfs() -> None:
    got = by_key(Iozone(tests=("reread",), record="64k", file="4M", direct=True).parse(
        load("odirect_tmpfs.txt")))
    assert got[("iozone.reread", "64K", "4M")].value == pytest.approx(mbs(7061751))


def test_parse_cpu_table_without_flag() -> None:
    got = by_key(Iozone(tests=("write", "read"), record="64k", file="4M").parse(
        load("cpu_table_r64k_s4m.txt")))
    assert got[("iozone.write", "64K", "4M")].value == pytest.approx(mbs(4404184))


def test_parse_cpu_requested_but_no_excel_report() -> None:
    with pytest.raises(ParseError, match="no CPU utilisation report for write"):
        Iozone(tests=("write", "read"), record="64k", file="4M", cpu=True).parse(
            load("cpu_table_r64k_s4m.txt"))


def test_parse_table_wrong_sizes() -> None:
    with pytest.raises(ParseError, match="no row for 16M file, 64K records"):
        Iozone(tests=("write", "read")).parse(load("flush_r64k_s8m.txt"))
    with pytest.raises(ParseError, match="3 rows, expected 2"):
        Iozone(tests=("write", "read"), record=("64k", "1M"), file="2M").parse(
            load("lists_r64k_r1m_s512k_s2m.txt"))


def test_parse_table_column_count_must_match_groups() -> None:
    with pytest.raises(ParseError, match="incomplete table row '8192      64   793805"):
        Iozone(tests=SIX, record="64k", file="8M").parse(load("flush_r64k_s8m.txt"))
    with pytest.raises(ParseError, match="has more values than the tests run"):
        Iozone(tests=("write",), record="64k", file="8M").parse(load("flush_r64k_s8m.txt"))


def test_parse_table_function() -> None:
    rows = parse_table(load("flush_r64k_s8m.txt"), frozenset({0, 1}))
    assert rows == {(8192, 64): {"write": 793805.0, "rewrite": 1946748.0, "read": 10476150.0,
                                 "reread": 11207409.0}}


def test_parse_excel_cpu_function() -> None:
    reports = parse_excel_cpu(load("auto_z_flush_cpu_excel.txt"))
    assert set(reports) == set(SIX)
    assert reports["read"][(4096, 256)] == 62.09
    assert parse_excel_cpu(load("auto_i0_i1_i2.txt")) == {}


# --- parsing: throughput mode ----------------------------------------------------------------


def test_parse_throughput() -> None:
    workload = Iozone(tests=("write", "rewrite", "read", "reread"), record="64k", file="8M", processes=2)
    metrics = workload.parse(load("throughput_l2_u2_r64k_s8m.txt"))
    assert [(m.name, m.value) for m in metrics] == [
        ("iozone.write", pytest.approx(228676.73 * 1024 / 1e6)),
        ("iozone.rewrite", pytest.approx(mbs(15497270.75))),
        ("iozone.read", pytest.approx(mbs(15031785.00))),
        ("iozone.reread", pytest.approx(mbs(15374822.00))),
    ]
    assert all(m.params == {"processes": "2", "record": "64K", "file": "8M"} for m in metrics)
    assert all(m.unit == "MB/s" and m.direction is Direction.HIGHER for m in metrics)


def test_parse_throughput_cpu() -> None:
    workload = Iozone(tests=("write", "rewrite", "read", "reread"), record="64k", file="8M", processes=2,
                      cpu=True)
    metrics = workload.parse(load("throughput_cpu_l2_u2_r64k_s8m.txt"))
    assert [m.name for m in metrics] == ["iozone.write", "iozone.write.cpu", "iozone.rewrite",
                                         "iozone.rewrite.cpu", "iozone.read", "iozone.read.cpu",
                                         "iozone.reread", "iozone.reread.cpu"]
    assert metrics[0].value == pytest.approx(mbs(7972620.00))
    assert [m.value for m in metrics if m.name.endswith(".cpu")] == [198.45, 107.44, 192.85, 100.32]
    assert metrics[1].unit == "%" and metrics[1].direction is Direction.LOWER


def test_parse_throughput_cpu_requested_but_absent() -> None:
    with pytest.raises(ParseError, match="no CPU utilization line for write"):
        Iozone(tests=("write",), record="64k", file="8M", processes=2, cpu=True).parse(
            load("throughput_l2_u2_r64k_s8m.txt"))


def test_parse_throughput_all_tests() -> None:
    workload = Iozone(tests=THROUGHPUT_TESTS, record="64k", file="4M", processes=2)
    got = {m.name: m.value for m in workload.parse(load("throughput_all13_l2_u2_r64k_s4m.txt"))}
    assert got == {
        "iozone.write": pytest.approx(mbs(2675419.38)),
        "iozone.rewrite": pytest.approx(mbs(18087225.00)),
        "iozone.read": pytest.approx(mbs(21485623.00)),
        "iozone.reread": pytest.approx(mbs(3350202.75)),
        "iozone.backward_read": pytest.approx(mbs(3750752.25)),
        "iozone.stride_read": pytest.approx(mbs(17445027.50)),
        "iozone.random_read": pytest.approx(mbs(1097973.75)),
        "iozone.random_write": pytest.approx(mbs(6001463.12)),
        "iozone.fwrite": pytest.approx(mbs(11542057.50)),
        "iozone.fread": pytest.approx(mbs(5813707.25)),
    }


def test_parse_throughput_dedup() -> None:
    workload = Iozone(tests=SIX, record="64k", file="8M", processes=2, dedup_percent=50)
    got = {m.name: m.value for m in workload.parse(load("throughput_dedup50_l2_u2_r64k_s8m.txt"))}
    assert got["iozone.random_read"] == pytest.approx(mbs(282831.98))
    assert got["iozone.random_write"] == pytest.approx(mbs(9668084.50))


def test_parse_throughput_wrong_process_count() -> None:
    with pytest.raises(ParseError, match="no throughput result for write with 3 processes"):
        Iozone(tests=("write",), record="64k", file="8M", processes=3).parse(
            load("throughput_l2_u2_r64k_s8m.txt"))


def test_parse_throughput_missing_test() -> None:
    with pytest.raises(ParseError, match="no throughput result for fwrite"):
        Iozone(tests=("fwrite",), record="64k", file="8M", processes=2).parse(
            load("throughput_l2_u2_r64k_s8m.txt"))


def test_parse_throughput_function() -> None:
    results = parse_throughput(load("throughput_cpu_l2_u2_r64k_s8m.txt"))
    assert [(r.processes, r.test, r.kb_per_s, r.cpu_percent) for r in results] == [
        (2, "write", 7972620.00, 198.45), (2, "rewrite", 10015064.00, 107.44),
        (2, "read", 25195934.00, 192.85), (2, "reread", 12802618.00, 100.32)]


def test_table_output_is_not_throughput_output() -> None:
    with pytest.raises(ParseError, match="no 'Children see throughput' lines"):
        Iozone(tests=("write",), record="64k", file="8M", processes=2).parse(load("flush_r64k_s8m.txt"))
    with pytest.raises(ParseError, match="no result table"):
        Iozone(tests=("write",), record="64k", file="8M").parse(load("throughput_l2_u2_r64k_s8m.txt"))


# --- parsing: failures -----------------------------------------------------------------------


TABLE = Iozone(tests=("write", "read"), record="64k", file="4M")
AUTO = Iozone(tests=SIX, auto=True, min_record="64k", max_record="256k", min_file="1m", max_file="4m")
THROUGHPUT = Iozone(tests=("write", "read"), record="64k", file="4M", processes=2)


@pytest.mark.parametrize("workload,name,quoted", [
    (TABLE, "error_nonexistent_dir.txt",
     "Can not open temp file: /var/tmp/iozone-capture/no-such-dir/x.tmp"),
    (THROUGHPUT, "error_throughput_nonexistent_dir.txt",
     "Can not open temp file: /var/tmp/iozone-capture/no-such-dir/f1"),
    (TABLE, "error_read_without_write.txt",
     "Can not open temporary file /var/tmp/iozone-capture/x.tmp for read"),
    (TABLE, "error_random_without_write.txt", "Error reading block at 2555904"),
    (Iozone(tests=("write",), record="16M", file="64M"), "error_record_too_big.txt",
     "Error: maximum record size 32768 kB is greater than maximum buffer size 16384 kB"),
    (AUTO, "killed_sigterm_auto.txt", "iozone: interrupted"),
    (THROUGHPUT, "killed_sigterm_throughput.txt", "iozone: interrupted"),
])
def test_parse_failure_quotes_iozone(workload: Iozone, name: str, quoted: str) -> None:
    with pytest.raises(ParseError) as info:
        workload.parse(load(name))
    assert f"iozone reported: {quoted}" in str(info.value)
    assert info.value.tool == "iozone"


@pytest.mark.parametrize("workload,name,problem", [
    (AUTO, "truncated_auto_mid_row.txt", "incomplete table row '2048     128  3543986 179403'"),
    (AUTO, "truncated_auto_row_boundary.txt", "not followed by 'iozone test complete.'"),
    (Iozone(tests=("write", "rewrite", "read", "reread"), record="64k", file="8M", processes=2),
     "truncated_throughput.txt", "not followed by 'iozone test complete.'"),
    (Iozone(tests=SIX, auto=True, min_record="64k", max_record="256k", min_file="1m", max_file="4m",
            cpu=True, flush=True), "truncated_cpu_excel.txt", "incomplete CPU utilisation report header"),
])
def test_parse_truncated(workload: Iozone, name: str, problem: str) -> None:
    with pytest.raises(ParseError, match="cannot parse iozone output") as info:
        workload.parse(load(name))
    assert problem in str(info.value)


def test_parse_zero_values() -> None:
    with pytest.raises(ParseError, match="write reported 0 kB/s for 512 kB file, 1024 kB records"):
        parse_table(load("zero_record_larger_than_file.txt"), frozenset({0}))


@pytest.mark.parametrize("workload", [TABLE, AUTO, THROUGHPUT])
@pytest.mark.parametrize("output", ["", "iozone: command not found\n", "\n\n"])
def test_parse_nothing(workload: Iozone, output: str) -> None:
    with pytest.raises(ParseError):
        workload.parse(output)


def test_parse_header_without_rows() -> None:
    output = load("all13_r1m_s8m.txt")
    header_only = output[: output.index("            8192")] + "\niozone test complete.\n"
    with pytest.raises(ParseError, match="result table has no rows"):
        Iozone(tests=TESTS, record="1M", file="8M").parse(header_only)


@pytest.mark.parametrize("name", sorted(p.name for p in DATA.glob("*.txt")))
def test_captured_files_are_small(name: str) -> None:
    assert (DATA / name).stat().st_size < 200_000


CPU_AUTO = Iozone(tests=SIX, auto=True, min_record="64k", max_record="256k", min_file="1m", max_file="4m",
                  flush=True, cpu=True)


def test_parse_cpu_zero_cells_are_omitted() -> None:
    output = load("auto_z_flush_cpu_excel.txt").replace('"1024"    37.75', '"1024"     0.00')
    got = by_key(CPU_AUTO.parse(output))
    assert ("iozone.write.cpu", "64K", "1M") not in got
    assert got[("iozone.write.cpu", "128K", "1M")].value == 38.63
    assert got[("iozone.write", "64K", "1M")].value == pytest.approx(mbs(810706))


def test_parse_cpu_short_row() -> None:
    output = load("auto_z_flush_cpu_excel.txt").replace('"2048"    33.71  36.95  34.74', '"2048"    33.71')
    with pytest.raises(ParseError, match="""incomplete CPU utilisation row '"2048"    33.71'"""):
        CPU_AUTO.parse(output)


def test_parse_cpu_report_without_rows() -> None:
    output = load("auto_z_flush_cpu_excel.txt")
    start = output.index('"1024"    37.67')
    output = output[:start] + output[output.index("\n\n", start):]
    with pytest.raises(ParseError, match="Reader CPU utilisation report has no rows"):
        CPU_AUTO.parse(output)


def test_parse_cpu_garbled_row() -> None:
    output = load("auto_z_flush_cpu_excel.txt").replace('"2048"    33.71', '"20')
    with pytest.raises(ParseError, match="incomplete CPU utilisation row"):
        CPU_AUTO.parse(output)

"""Bonnie workload: argv, validation, and parsing of CSV captured with bonnie++ 2.00a."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_fsbench.errors import ParseError
from pytest_fsbench.metrics import Direction, Metric
from pytest_fsbench.workloads.base import Workload
from pytest_fsbench.workloads.bonnie import Bonnie, csv_metrics, find_csv_line, latency_ms

DATA = Path(__file__).resolve().parents[2] / "data" / "bonnie"
WORK = Path("/mnt/target/work")
SCRATCH = Path("/tmp/scratch")


def read(name: str) -> str:
    return (DATA / name).read_text()


def by_name(metrics: list[Metric]) -> dict[str, Metric]:
    names = [m.name for m in metrics]
    assert len(names) == len(set(names)), names
    return {m.name: m for m in metrics}


def kib(value: float) -> float:
    """K/sec (KiB/s) in MB/s."""
    return value * 1024 / 1e6


def flag(argv: list[str], option: str) -> str:
    return argv[argv.index(option) + 1]


# -- contract and argv -------------------------------------------------------------------------


def test_is_a_workload() -> None:
    b = Bonnie()
    assert isinstance(b, Workload)
    assert b.name == "bonnie"
    assert b.files() == {}
    assert b.prepare_argvs(WORK, SCRATCH) == []
    assert b.timeout == 3600.0


def test_default_argv_exact() -> None:
    assert Bonnie().argv(WORK, SCRATCH) == [
        "bonnie++", "-d", "/mnt/target/work", "-u", "root", "-s", "1024", "-r", "512",
        "-n", "1", "-m", "fsbench", "-x", "1", "-q", "-z", "0", "-f",
    ]


def test_s2_command_options() -> None:
    # S2: bonnie++ -d /tank/ -u root -n 128 -x 1 -q -z 0 -f
    argv = Bonnie(files_k=128, seed=0, fast=True).argv(Path("/tank"), SCRATCH)
    assert flag(argv, "-d") == "/tank"
    assert flag(argv, "-u") == "root"
    assert flag(argv, "-n") == "128"
    assert flag(argv, "-x") == "1"
    assert flag(argv, "-z") == "0"
    assert "-q" in argv
    assert argv[-1] == "-f"


@pytest.mark.parametrize(
    ("kwargs", "option", "value"),
    [
        ({"size_mb": 64}, "-s", "64"),
        ({"size_mb": 64}, "-r", "32"),
        ({"size_mb": 64, "ram_mb": 16}, "-r", "16"),
        ({"size_mb": 64, "ram_mb": 0}, "-r", "0"),
        ({"size_mb": 0, "files_k": 4}, "-s", "0"),
        ({"size_mb": 0, "files_k": 4}, "-r", "0"),
        ({"files_k": 16}, "-n", "16"),
        ({"files_k": 0}, "-n", "0"),
        ({"seed": 1234}, "-z", "1234"),
        ({"machine": "ext4-hdd"}, "-m", "ext4-hdd"),
        ({"user": "nobody"}, "-u", "nobody"),
    ],
)
def test_argv_parameters(kwargs: dict[str, object], option: str, value: str) -> None:
    assert flag(Bonnie(**kwargs).argv(WORK, SCRATCH), option) == value  # type: ignore[arg-type]


def test_fast_mode_flag() -> None:
    assert "-f" in Bonnie(fast=True).argv(WORK, SCRATCH)
    assert "-f" not in Bonnie(fast=False).argv(WORK, SCRATCH)


def test_argv_is_strings_only() -> None:
    assert all(isinstance(a, str) for a in Bonnie(size_mb=64).argv(WORK, SCRATCH))


def test_params() -> None:
    assert Bonnie(size_mb=512, files_k=4, seed=1, fast=False).params() == {
        "size_mb": "512",
        "ram_mb": "256",
        "files_k": "4",
        "seed": "1",
        "fast": "0",
    }


def test_frozen() -> None:
    with pytest.raises(AttributeError):
        Bonnie().seed = 3  # type: ignore[misc]


# -- validation --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"size_mb": -1}, "size_mb must be non-negative"),
        ({"files_k": -1}, "files_k must be non-negative"),
        ({"size_mb": 0, "files_k": 0}, "both 0: nothing would be measured"),
        ({"size_mb": 64, "ram_mb": 33}, "ram_mb 33 must be 0 to half of size_mb"),
        ({"size_mb": 64, "ram_mb": -1}, "ram_mb -1 must be 0 to half of size_mb"),
        ({"seed": -5}, "seed must be non-negative"),
        ({"machine": "a,b"}, "machine label 'a,b' may only use"),
        ({"machine": "my box"}, "machine label 'my box' may only use"),
        ({"machine": ""}, "machine label '' may only use"),
        ({"user": ""}, "user '' is not a user name"),
        ({"timeout": -1.0}, "timeout must be positive"),
    ],
)
def test_validation(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message) as exc:
        Bonnie(**kwargs)  # type: ignore[arg-type]
    assert "\n" not in str(exc.value)


# -- parsing real outputs ----------------------------------------------------------------------


def test_parse_fast_run() -> None:
    # 1.98,2.00a,fsbench,1,0,1G,,8192,5,,,316599,90,1454815,83,,,+++++,+++,+++++,+++,16,...
    m = by_name(Bonnie(size_mb=1024, files_k=16).parse(read("fast_s1024_n16.out")))
    assert m["bonnie.block_write"].value == pytest.approx(kib(316599))
    assert m["bonnie.block_write"].value == pytest.approx(324.197376)
    assert m["bonnie.block_write"].unit == "MB/s"
    assert m["bonnie.block_write"].direction is Direction.HIGHER
    assert m["bonnie.block_write.cpu"].value == 90
    assert m["bonnie.block_write.cpu"].unit == "%"
    assert m["bonnie.block_write.cpu"].direction is Direction.LOWER
    assert m["bonnie.block_rewrite"].value == pytest.approx(kib(1454815))
    assert m["bonnie.block_rewrite.cpu"].value == 83
    assert m["bonnie.seq_create"].value == 20964
    assert m["bonnie.seq_create"].unit == "ops/s"
    assert m["bonnie.seq_create.cpu"].value == 99
    # latencies: put_block 1421us, rewrite 175us, get_block 93us, seeks 3022us, ...
    assert m["bonnie.block_write.latency"].value == pytest.approx(1.421)
    assert m["bonnie.block_write.latency"].unit == "ms"
    assert m["bonnie.block_write.latency"].direction is Direction.LOWER
    assert m["bonnie.block_rewrite.latency"].value == pytest.approx(0.175)
    assert m["bonnie.block_read.latency"].value == pytest.approx(0.093)
    assert m["bonnie.seeks.latency"].value == pytest.approx(3.022)
    assert m["bonnie.seq_create.latency"].value == pytest.approx(0.438)
    assert m["bonnie.rand_delete.latency"].value == pytest.approx(2.252)
    # "+++++" results are left out, not turned into numbers
    for skipped in ("block_read", "seeks", "seq_stat", "seq_delete", "rand_create",
                    "rand_stat", "rand_delete"):
        assert f"bonnie.{skipped}" not in m
        assert f"bonnie.{skipped}.cpu" not in m
    # fast mode: no per-char results at all
    assert not any(k.startswith("bonnie.char_") for k in m)
    assert len(m) == 16


def test_parse_per_char_run() -> None:
    # 1.98,2.00a,fsbench,1,1,512M,,8192,5,1332,98,699740,80,+++++,+++,2228,99,+++++,...
    m = by_name(Bonnie(size_mb=512, files_k=4, fast=False, seed=1).parse(read("perchar_s512_n4.out")))
    assert m["bonnie.char_write"].value == pytest.approx(kib(1332))
    assert m["bonnie.char_write.cpu"].value == 98
    assert m["bonnie.char_write.latency"].value == pytest.approx(35.868)
    assert m["bonnie.block_write"].value == pytest.approx(kib(699740))
    assert m["bonnie.block_write.cpu"].value == 80
    assert m["bonnie.char_read"].value == pytest.approx(kib(2228))
    assert m["bonnie.char_read.cpu"].value == 99
    assert m["bonnie.char_read.latency"].value == pytest.approx(4.895)
    assert m["bonnie.seq_create"].value == 994
    assert m["bonnie.seq_create.cpu"].value == 74
    assert m["bonnie.seq_create.latency"].value == pytest.approx(15.24)
    assert "bonnie.block_rewrite" not in m and "bonnie.block_read" not in m
    assert m["bonnie.block_read.latency"].value == pytest.approx(0.098)


def test_parse_io_too_fast_but_creates_measured() -> None:
    m = by_name(Bonnie(size_mb=64, files_k=1).parse(read("mostly_too_fast_s64_n1.out")))
    assert {k for k in m if "." not in k.removeprefix("bonnie.")} == {
        "bonnie.seq_create", "bonnie.rand_create"
    }
    assert m["bonnie.seq_create"].value == 820
    assert m["bonnie.seq_create.cpu"].value == 99
    assert m["bonnie.rand_create"].value == 751
    assert m["bonnie.rand_create.cpu"].value == 79
    assert m["bonnie.block_write.latency"].value == pytest.approx(2.979)


def test_parse_all_too_fast_raises() -> None:
    with pytest.raises(ParseError, match=r"every test was too fast to measure \(\+\+\+\+\+\)"):
        Bonnie(size_mb=64, files_k=1).parse(read("all_too_fast_s64_n1.out"))


def test_parse_files_only() -> None:
    m = by_name(Bonnie(size_mb=0, files_k=8).parse(read("files_only_n8.out")))
    assert m["bonnie.seq_create"].value == 2062
    assert m["bonnie.seq_create.cpu"].value == 82
    assert m["bonnie.rand_create"].value == 1902
    assert m["bonnie.rand_create.cpu"].value == 88
    assert m["bonnie.seq_stat.latency"].value == pytest.approx(18.42)
    assert not any(k.startswith(("bonnie.block", "bonnie.seeks", "bonnie.char")) for k in m)


def test_parse_csv_after_text_report() -> None:
    text = read("text_and_csv_no_q.out")
    assert text.startswith("Using uid:0, gid:0.")
    m = by_name(Bonnie(size_mb=64, files_k=1).parse(text))
    # the CSV's values, not the text table's ("1024  50")
    assert m["bonnie.seq_create"].value == 619
    assert m["bonnie.seq_create.cpu"].value == 50
    assert m["bonnie.rand_create"].value == 663
    assert m["bonnie.seeks.latency"].value == pytest.approx(36.339)


def test_parse_header_line_is_ignored() -> None:
    header = "format_version,bonnie_version,name,concurrency,seed,file_size\n"
    m = by_name(Bonnie(size_mb=1024, files_k=16).parse(header + read("fast_s1024_n16.out")))
    assert m["bonnie.seq_create"].value == 20964


def test_parse_fractional_seeks() -> None:
    line = read("fast_s1024_n16.out").strip().split(",")
    line[19], line[20] = "523.4", "12"
    m = by_name(Bonnie(size_mb=1024, files_k=16).parse(",".join(line)))
    assert m["bonnie.seeks"].value == pytest.approx(523.4)
    assert m["bonnie.seeks"].unit == "ops/s"
    assert m["bonnie.seeks.cpu"].value == 12


@pytest.mark.parametrize(
    ("text", "ms"),
    [("4065us", 4.065), ("12ms", 12.0), ("101s", 101000.0), ("0us", 0.0)],
)
def test_latency_units(text: str, ms: float) -> None:
    assert latency_ms(text) == pytest.approx(ms)


def test_csv_metrics_helper() -> None:
    fields = find_csv_line(read("fast_s1024_n16.out"))
    assert len(fields) == 50 and fields[0] == "1.98" and fields[1] == "2.00a"
    assert by_name(csv_metrics(fields))["bonnie.block_write.cpu"].value == 90


# -- failures ----------------------------------------------------------------------------------


def test_fail_nonexistent_dir() -> None:
    text = read("fail_nonexistent_dir.out")
    assert "Can't change to directory" in text
    with pytest.raises(ParseError, match="no CSV result line"):
        Bonnie(size_mb=64, files_k=1).parse(text)


def test_fail_truncated() -> None:
    with pytest.raises(ParseError, match="CSV line has 33 columns, expected 50"):
        Bonnie(size_mb=1024, files_k=16).parse(read("truncated.out"))


def test_missing_expected_result() -> None:
    # per-char tests were configured but the output (a -f run) has none
    with pytest.raises(ParseError, match=r"no result for char_write \(column 9\)"):
        Bonnie(size_mb=1024, files_k=16, fast=False).parse(read("fast_s1024_n16.out"))
    # block I/O configured, file tests only in the output
    with pytest.raises(ParseError, match="no result for block_write"):
        Bonnie(size_mb=64, files_k=8).parse(read("files_only_n8.out"))


def _edit(col: int, value: str) -> str:
    line = read("fast_s1024_n16.out").strip().split(",")
    line[col] = value
    return ",".join(line)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "no CSV result line"),
        ("garbage\n", "no CSV result line"),
        ("Writing intelligently...done\n", "no CSV result line"),
        (read("fast_s1024_n16.out") * 2, "expected one CSV result line, found 2"),
        ("1.97,1.97,fsbench,1,0,1G" + "," * 44, "CSV format_version 1.97, expected 1.98"),
        ("1.98,2.00a,fsbench\n", "CSV line has 3 columns, expected 50"),
        (read("fast_s1024_n16.out").strip() + ",extra", "CSV line has 51 columns"),
        (_edit(11, "fast"), "block_write is 'fast', not a number"),
        (_edit(11, "-5"), "block_write is '-5'"),
        (_edit(12, "9x"), "block_write cpu is '9x', not a number"),
        (_edit(39, "12 parsecs"), "block_write latency is '12 parsecs', not a latency"),
        (_edit(39, "12"), "block_write latency is '12', not a latency"),
    ],
)
def test_parse_garbage(text: str, message: str) -> None:
    with pytest.raises(ParseError, match=message):
        Bonnie(size_mb=1024, files_k=16).parse(text)


def test_no_results_at_all() -> None:
    empty = "1.98,2.00a,fsbench,1,0" + "," * 45
    with pytest.raises(ParseError, match="holds no test results"):
        csv_metrics(find_csv_line(empty))

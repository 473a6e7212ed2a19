"""Fio workload: argv per parameter, validation, and parsing of outputs captured with fio 3.33."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_fsbench.errors import ParseError
from pytest_fsbench.metrics import Direction, Metric
from pytest_fsbench.workloads.base import Workload
from pytest_fsbench.workloads.fio import Fio, extract_json

DATA = Path(__file__).resolve().parents[2] / "data" / "fio"
WORK = Path("/mnt/target/work")
SCRATCH = Path("/tmp/scratch")


def read(name: str) -> str:
    return (DATA / name).read_text()


def replaced(name: str, old: str, new: str) -> str:
    """A captured file with one edit (asserting the edited text is really there)."""
    text = read(name)
    assert old in text
    return text.replace(old, new)


def by_name(metrics: list[Metric]) -> dict[str, Metric]:
    names = [m.name for m in metrics]
    assert len(names) == len(set(names)), names
    return {m.name: m for m in metrics}


def opt(argv: list[str], key: str) -> str | None:
    """The value of --key=value in argv, "" for a bare --key, None if absent."""
    for a in argv:
        if a == f"--{key}":
            return ""
        if a.startswith(f"--{key}="):
            return a.split("=", 1)[1]
    return None


# -- contract and argv -------------------------------------------------------------------------


def test_is_a_workload() -> None:
    f = Fio()
    assert isinstance(f, Workload)
    assert f.name == "fio"
    assert f.files() == {}
    assert f.timeout == 1800.0


def test_default_argv_exact() -> None:
    assert Fio().argv(WORK, SCRATCH) == [
        "fio",
        "--output-format=json",
        "--eta=never",
        "--name=fsbench",
        "--directory=/mnt/target/work",
        "--bs=128k",
        "--size=256M",
        "--numjobs=1",
        "--randrepeat=1",
        "--randseed=42",
        "--fallocate=none",
        "--rw=write",
        "--ioengine=psync",
        "--iodepth=1",
        "--direct=0",
        "--end_fsync=1",
        "--group_reporting",
    ]


def test_argv_is_strings_only() -> None:
    argv = Fio(rw="randrw", runtime=5, buffer_compress_percentage=30).argv(WORK, SCRATCH)
    assert all(isinstance(a, str) for a in argv)
    assert argv[0] == "fio"


@pytest.mark.parametrize("rw", ["read", "write", "randread", "randwrite", "readwrite", "randrw"])
def test_argv_rw(rw: str) -> None:
    assert opt(Fio(rw=rw).argv(WORK, SCRATCH), "rw") == rw


@pytest.mark.parametrize(
    ("kwargs", "key", "value"),
    [
        ({"bs": "4k"}, "bs", "4k"),
        ({"size": "1G"}, "size", "1G"),
        ({"numjobs": 4}, "numjobs", "4"),
        ({"ioengine": "libaio", "iodepth": 32}, "iodepth", "32"),
        ({"ioengine": "libaio"}, "ioengine", "libaio"),
        ({"direct": True}, "direct", "1"),
        ({"direct": False}, "direct", "0"),
        ({"randseed": 7}, "randseed", "7"),
        ({"fallocate": "posix"}, "fallocate", "posix"),
        ({}, "fallocate", "none"),
        ({}, "randrepeat", "1"),
        ({}, "group_reporting", ""),
        ({}, "output-format", "json"),
    ],
)
def test_argv_parameters(kwargs: dict[str, object], key: str, value: str) -> None:
    assert opt(Fio(**kwargs).argv(WORK, SCRATCH), key) == value  # type: ignore[arg-type]


def test_runtime_makes_job_time_based() -> None:
    argv = Fio(runtime=30).argv(WORK, SCRATCH)
    assert opt(argv, "runtime") == "30"
    assert opt(argv, "time_based") == ""
    plain = Fio().argv(WORK, SCRATCH)
    assert opt(plain, "runtime") is None and opt(plain, "time_based") is None


def test_rwmixread_only_for_mixed_patterns() -> None:
    assert opt(Fio(rw="randrw").argv(WORK, SCRATCH), "rwmixread") == "50"
    assert opt(Fio(rw="readwrite", rwmixread=70).argv(WORK, SCRATCH), "rwmixread") == "70"
    assert opt(Fio(rw="randread").argv(WORK, SCRATCH), "rwmixread") is None


def test_compression_options() -> None:
    argv = Fio(buffer_compress_percentage=50, buffer_compress_chunk="8k").argv(WORK, SCRATCH)
    assert opt(argv, "buffer_compress_percentage") == "50"
    assert opt(argv, "buffer_compress_chunk") == "8k"
    assert opt(argv, "refill_buffers") == ""
    plain = Fio().argv(WORK, SCRATCH)
    assert opt(plain, "buffer_compress_percentage") is None
    assert opt(plain, "refill_buffers") is None


def test_compress_zero_is_passed() -> None:
    assert opt(Fio(buffer_compress_percentage=0).argv(WORK, SCRATCH), "buffer_compress_percentage") == "0"


@pytest.mark.parametrize(
    ("rw", "end_fsync", "expected"),
    [
        ("write", None, "1"),
        ("randwrite", None, "1"),
        ("randrw", None, "1"),
        ("read", None, None),
        ("randread", None, None),
        ("read", True, "1"),
        ("write", False, None),
    ],
)
def test_end_fsync(rw: str, end_fsync: bool | None, expected: str | None) -> None:
    assert opt(Fio(rw=rw, end_fsync=end_fsync).argv(WORK, SCRATCH), "end_fsync") == expected


@pytest.mark.parametrize("rw", ["write", "randwrite"])
def test_no_prepare_for_writes(rw: str) -> None:
    assert Fio(rw=rw).prepare_argvs(WORK, SCRATCH) == []
    assert Fio(rw=rw).prepare_once_argvs(WORK, SCRATCH) == []


@pytest.mark.parametrize("rw", ["read", "randread", "readwrite", "randrw"])
def test_prepare_writes_the_same_files_for_reads_once(rw: str) -> None:
    f = Fio(rw=rw, bs="4k", size="32M", numjobs=3, randseed=9, direct=True, ioengine="libaio",
            iodepth=16, buffer_compress_percentage=40, runtime=10)
    assert f.prepare_argvs(WORK, SCRATCH) == []
    (prep,) = f.prepare_once_argvs(WORK, SCRATCH)
    main = f.argv(WORK, SCRATCH)
    for key in ("name", "directory", "size", "numjobs", "bs", "randseed", "fallocate",
                "buffer_compress_percentage", "buffer_compress_chunk", "refill_buffers"):
        assert opt(prep, key) == opt(main, key), key
    assert opt(prep, "rw") == "write"
    assert opt(prep, "end_fsync") == "1"
    assert opt(prep, "runtime") is None and opt(prep, "time_based") is None
    assert opt(prep, "ioengine") == "psync" and opt(prep, "direct") == "0"


def test_params() -> None:
    assert Fio(rw="randrw", rwmixread=70, runtime=3, buffer_compress_percentage=50).params() == {
        "rw": "randrw",
        "bs": "128k",
        "size": "256M",
        "numjobs": "1",
        "iodepth": "1",
        "ioengine": "psync",
        "direct": "0",
        "randseed": "42",
        "fallocate": "none",
        "end_fsync": "1",
        "runtime": "3",
        "rwmixread": "70",
        "buffer_compress_percentage": "50",
        "buffer_compress_chunk": "4k",
    }
    assert "rwmixread" not in Fio(rw="read").params()
    assert Fio(rw="read").params()["end_fsync"] == "0"


def test_frozen() -> None:
    with pytest.raises(AttributeError):
        Fio().rw = "read"  # type: ignore[misc]


# -- validation --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"rw": "sequential"}, "fio rw 'sequential' is not one of"),
        ({"bs": "4 k"}, "fio bs '4 k' is not a size"),
        ({"bs": "0"}, "fio bs '0' is not a size"),
        ({"size": "lots"}, "fio size 'lots' is not a size"),
        ({"buffer_compress_chunk": "-4k"}, "buffer_compress_chunk"),
        ({"numjobs": 0}, "numjobs must be at least 1"),
        ({"iodepth": 0}, "iodepth must be at least 1"),
        ({"ioengine": "windowsaio"}, "ioengine 'windowsaio' is not one of"),
        ({"iodepth": 8}, "iodepth 8 needs an asynchronous ioengine, not psync"),
        ({"runtime": 0}, "runtime must be at least 1"),
        ({"rw": "read", "rwmixread": 70}, "rwmixread applies to readwrite/randrw"),
        ({"rw": "randrw", "rwmixread": 101}, "rwmixread must be 0-100"),
        ({"randseed": -1}, "randseed must be non-negative"),
        ({"buffer_compress_percentage": 101}, "buffer_compress_percentage must be 0-100, not 101"),
        ({"buffer_compress_percentage": -1}, "buffer_compress_percentage must be 0-100, not -1"),
        ({"fallocate": "sometimes"}, "fallocate 'sometimes' is not one of"),
        ({"timeout": 0}, "timeout must be positive"),
    ],
)
def test_validation(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message.replace("(", r"\(")) as exc:
        Fio(**kwargs)  # type: ignore[arg-type]
    assert "\n" not in str(exc.value)


@pytest.mark.parametrize("pct", [0, 50, 100])
def test_compress_bounds_accepted(pct: int) -> None:
    assert Fio(buffer_compress_percentage=pct).buffer_compress_percentage == pct


# -- parsing real outputs ----------------------------------------------------------------------


def test_parse_seq_write() -> None:
    m = by_name(Fio(rw="write", bs="128k", size="64M").parse(read("seq_write.json")))
    assert set(m) == {
        "fio.write.bw", "fio.write.iops", "fio.write.clat_p50", "fio.write.clat_p99",
        "fio.write.clat_p99.9", "fio.cpu.usr", "fio.cpu.sys",
    }
    assert m["fio.write.bw"].value == pytest.approx(615.677651)  # bw_bytes 615677651
    assert m["fio.write.bw"].unit == "MB/s"
    assert m["fio.write.bw"].direction is Direction.HIGHER
    assert m["fio.write.iops"].value == pytest.approx(4697.247706)
    assert m["fio.write.iops"].unit == "ops/s"
    assert m["fio.write.clat_p50"].value == pytest.approx(0.030592)  # 30592 ns
    assert m["fio.write.clat_p99"].value == pytest.approx(3.227648)
    assert m["fio.write.clat_p99.9"].value == pytest.approx(12.648448)
    assert m["fio.write.clat_p99"].unit == "ms"
    assert m["fio.write.clat_p99"].direction is Direction.LOWER
    assert m["fio.cpu.usr"].value == 0.0
    assert m["fio.cpu.sys"].value == pytest.approx(45.37037)
    assert m["fio.cpu.sys"].unit == "%"
    assert m["fio.cpu.sys"].direction is Direction.LOWER


def test_parse_seq_read() -> None:
    m = by_name(Fio(rw="read").parse(read("seq_read.json")))
    assert not any(k.startswith("fio.write") for k in m)
    assert m["fio.read.bw"].value == pytest.approx(313.592822)
    assert m["fio.read.iops"].value == pytest.approx(2392.523364)
    assert m["fio.read.clat_p50"].value == pytest.approx(0.33792)
    assert m["fio.read.clat_p99.9"].value == pytest.approx(10.420224)
    assert m["fio.cpu.sys"].value == pytest.approx(51.643192)


def test_parse_randread() -> None:
    m = by_name(Fio(rw="randread", bs="4k", runtime=2).parse(read("randread.json")))
    assert m["fio.read.bw"].value == pytest.approx(47.760055)
    assert m["fio.read.iops"].value == pytest.approx(11660.169915)
    assert m["fio.read.clat_p99"].value == pytest.approx(0.207872)
    assert m["fio.cpu.usr"].value == pytest.approx(4.2)


def test_parse_randwrite() -> None:
    m = by_name(Fio(rw="randwrite", bs="4k", runtime=2).parse(read("randwrite.json")))
    assert m["fio.write.bw"].value == pytest.approx(344.187081)
    assert m["fio.write.iops"].value == pytest.approx(84030.049261)
    assert m["fio.write.clat_p50"].value == pytest.approx(0.003024)
    assert m["fio.write.clat_p99.9"].value == pytest.approx(0.116224)


def test_parse_randrw_has_both_directions() -> None:
    m = by_name(Fio(rw="randrw", rwmixread=70).parse(read("randrw.json")))
    assert len(m) == 5 + 5 + 2
    assert m["fio.read.bw"].value == pytest.approx(49.147916)
    assert m["fio.read.iops"].value == pytest.approx(11999.002991)
    assert m["fio.write.bw"].value == pytest.approx(20.929212)
    assert m["fio.write.iops"].value == pytest.approx(5109.670987)
    assert m["fio.read.clat_p50"].value == pytest.approx(0.051456)
    assert m["fio.write.clat_p99"].value == pytest.approx(0.009408)
    assert m["fio.cpu.sys"].value == pytest.approx(30.42394)


def test_parse_numjobs2_group_reported() -> None:
    m = by_name(Fio(rw="write", numjobs=2).parse(read("numjobs2.json")))
    # two 32 MiB files, one aggregated job entry
    assert m["fio.write.bw"].value == pytest.approx(1398.101333)
    assert m["fio.write.iops"].value == pytest.approx(10666.666667)
    assert m["fio.write.clat_p99.9"].value == pytest.approx(5.341184)


def test_parse_compress50() -> None:
    m = by_name(Fio(rw="write", buffer_compress_percentage=50).parse(read("compress50.json")))
    assert m["fio.write.bw"].value == pytest.approx(1100.145311)
    assert m["fio.write.iops"].value == pytest.approx(8393.442623)
    assert m["fio.cpu.usr"].value == pytest.approx(6.666667)


def test_parse_libaio_direct() -> None:
    f = Fio(rw="randread", bs="4k", ioengine="libaio", iodepth=8, direct=True, runtime=2)
    m = by_name(f.parse(read("libaio_direct_randread.json")))
    assert m["fio.read.bw"].value == pytest.approx(190.944015)
    assert m["fio.read.iops"].value == pytest.approx(46617.191404)
    assert m["fio.read.clat_p50"].value == pytest.approx(0.142336)


def test_parse_skips_lines_before_json() -> None:
    text = read("warning_before_json.out")
    assert text.startswith("note: both iodepth")
    m = by_name(Fio(rw="write").parse(text))
    assert m["fio.write.bw"].value == pytest.approx(1048.576)  # bw_bytes 1048576000


def test_parse_uses_kib_bw_without_bw_bytes() -> None:
    text = replaced("seq_write.json", '"bw_bytes" : 615677651,', "")
    m = by_name(Fio(rw="write").parse(text))
    assert m["fio.write.bw"].value == pytest.approx(601247 * 1024 / 1e6)  # "bw" is KiB/s


def test_parse_sums_separate_job_entries() -> None:
    import json

    doc = extract_json(read("seq_write.json"))
    job = doc["jobs"][0]
    doc["jobs"] = [job, job]
    m = by_name(Fio(rw="write").parse(json.dumps(doc)))
    assert m["fio.write.bw"].value == pytest.approx(2 * 615.677651)
    assert m["fio.write.iops"].value == pytest.approx(2 * 4697.247706)
    assert m["fio.write.clat_p99"].value == pytest.approx(3.227648)
    assert m["fio.cpu.sys"].value == pytest.approx(45.37037)


# -- failures ----------------------------------------------------------------------------------


def test_fail_nonexistent_dir() -> None:
    with pytest.raises(ParseError, match="no JSON object"):
        Fio(rw="write").parse(read("fail_nonexistent_dir.out"))


def test_fail_enospc_job_error() -> None:
    # the JSON is complete and even shows bandwidth, but the job failed with ENOSPC
    with pytest.raises(ParseError, match="job fsbench reports error 28"):
        Fio(rw="write").parse(read("fail_enospc.out"))


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "no JSON object"),
        ("garbage\n", "no JSON object"),
        ('{\n  "fio version" : "fio-3.33",\n  "jobs" : [\n', "no JSON object"),
        ('{\n  "fio version" : "fio-3.33"\n}\n', "no jobs"),
        ('{\n  "jobs" : []\n}\n', "no jobs"),
        ("[\n1]\n", "no JSON object"),
    ],
)
def test_parse_garbage(text: str, message: str) -> None:
    with pytest.raises(ParseError, match=message):
        Fio().parse(text)


def test_parse_truncated_capture() -> None:
    text = read("seq_write.json")
    with pytest.raises(ParseError, match="no JSON object"):
        Fio(rw="write").parse(text[: len(text) // 2])


def test_parse_rejects_other_pattern() -> None:
    with pytest.raises(ParseError, match="ran rw=write, expected rw=read"):
        Fio(rw="read").parse(read("seq_write.json"))


def test_parse_rejects_direction_without_data() -> None:
    text = replaced("randrw.json", '"io_bytes" : 41984000', '"io_bytes" : 0')
    with pytest.raises(ParseError, match="write section moved no data"):
        Fio(rw="randrw").parse(text)


def test_parse_rejects_missing_percentiles() -> None:
    text = replaced("seq_write.json", '"99.900000"', '"99.800000"')
    with pytest.raises(ParseError, match="no 99.9th clat percentile"):
        Fio(rw="write").parse(text)


def test_parse_rejects_non_numeric_value() -> None:
    text = replaced("seq_write.json", '"iops" : 4697.247706', '"iops" : "fast"')
    with pytest.raises(ParseError, match="iops missing or not a number"):
        Fio(rw="write").parse(text)

"""Filebench workload: customising a personality text, argv, validation, parsing of real outputs.

fsbench carries no filebench personality: `customise` is tested on small made-up texts written
here, and the stock personalities only in `test_installed_*`, which skip without filebench.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from pytest_fsbench.errors import ParseError, ToolMissing
from pytest_fsbench.metrics import Direction
from pytest_fsbench.workloads.base import Workload
from pytest_fsbench.workloads.filebench import (
    MISSING_REASON,
    PERSONALITIES,
    SCALE_VARIABLES,
    Filebench,
    check_reused,
    creating,
    customise,
    find_filebench,
    flowop_kinds,
    mib_to_mb,
    parse_output,
    reusing,
    size_bytes,
)

DATA = Path(__file__).resolve().parents[2] / "data" / "filebench"
NAMES = ["fileserver", "webserver", "oltp", "varmail", "videoserver", "webproxy"]

#: a made-up personality: a few variables, a placeholder fileset, a run line
SYNTH = """\
# made up for fsbench's tests
set $dir=/tmp
set $nfiles=100
set $filesize=cvar(type=cvar-gamma,parameters=mean:4096;gamma:1.5)
set $nthreads=4
set $reuse=false
set $runtime=30

define fileset name=placeholder,path=$dir,size=$filesize,entries=$nfiles

run $runtime
"""

#: a made-up personality with a plain size, a psrun line, and no final newline
SYNTH2 = (
    "set $dir=/tmp\nset  $meanfilesize = 16k\n"
    "define fileset name=x,path=$dir,size=$meanfilesize\npsrun -10 60"
)

#: the variables each captured run set (README.txt); the rest were the stock values
CAPTURED = {
    "fileserver": {"nfiles": "1000", "nthreads": "16"},
    "webserver": {"nthreads": "16"},
    "oltp": {"nshadows": "20", "ndbwriters": "2"},
    "varmail": {},
    "videoserver": {"filesize": "32m", "nthreads": "8", "numactivevids": "8", "numpassivevids": "8"},
    "webproxy": {"nfiles": "1000", "nthreads": "16"},
    "fail-run-stopped-early": {"nfiles": "50", "meanfilesize": "16k", "nthreads": "16"},
}


def read(name: str) -> str:
    return (DATA / name).read_text()


def by_name(metrics, name, flowop=None):
    found = [m for m in metrics if m.name == name and m.params.get("flowop") == flowop]
    assert len(found) == 1, (name, flowop, found)
    return found[0]


def set_lines(text: str) -> dict[str, str]:
    return dict(re.findall(r"^\s*set\s+\$(\w+)\s*=\s*(\S*)", text, re.M))


def other_lines(text: str) -> list[str]:
    """The lines that are neither `set` nor `run`/`psrun` lines."""
    return [line for line in text.splitlines() if not re.match(r"\s*(set|run|psrun)(\s|$)", line)]


# ---------------------------------------------------------------- customise() on made-up texts


def test_customise_rewrites_dir_overrides_runtime_and_run():
    out = customise(SYNTH, "fsbench-filebench", {"nfiles": "7", "reuse": "true"}, 5)
    assert out == SYNTH.replace("set $dir=/tmp", "set $dir=fsbench-filebench") \
        .replace("set $nfiles=100", "set $nfiles=7").replace("set $reuse=false", "set $reuse=true") \
        .replace("set $runtime=30", "set $runtime=5").replace("run $runtime\n", "") + "run 5\n"


def test_customise_without_overrides_changes_only_dir_and_run():
    out = customise(SYNTH, "/mnt/t/data", {}, 60)
    assert other_lines(out) == other_lines(SYNTH)
    assert set_lines(out) == {**set_lines(SYNTH), "dir": "/mnt/t/data", "runtime": "60"}
    assert out.endswith("\nrun 60\n") and len(re.findall(r"^run", out, re.M)) == 1


def test_customise_meanfilesize_sets_the_mean_of_a_filesize_cvar():
    out = customise(SYNTH, "d", {"meanfilesize": "128k"}, 5)
    assert "set $filesize=cvar(type=cvar-gamma,parameters=mean:131072;gamma:1.5)\n" in out
    assert "meanfilesize" not in out
    # an explicit filesize wins over the cvar and is written as given
    assert "set $filesize=2m\n" in customise(SYNTH, "d", {"filesize": "2m"}, 5)


def test_customise_plain_meanfilesize_psrun_and_missing_newline():
    out = customise(SYNTH2, "d", {"meanfilesize": "64k"}, 9)
    assert out == (
        "set $dir=d\nset $meanfilesize=64k\ndefine fileset name=x,path=$dir,size=$meanfilesize\nrun 9\n"
    )


def test_customise_keeps_lines_that_only_start_like_run():
    text = "set $dir=/tmp\nset $runtime=1\n# run 60\nrunning=1\n  run 60\n"
    assert customise(text, "d", {}, 3) == "set $dir=d\nset $runtime=3\n# run 60\nrunning=1\nrun 3\n"


@pytest.mark.parametrize(
    ("text", "overrides", "directory", "runtime", "message"),
    [
        (SYNTH, {"nshadows": "5"}, "d", 5,
         "does not set $nshadows (it sets $dir, $nfiles, $filesize, $nthreads, $reuse, $runtime)"),
        (SYNTH2, {"filesize": "5"}, "d", 5, "does not set $filesize"),
        ("set $meanfilesize=4k\n", {}, "d", 5, "does not set $dir"),
        (SYNTH, {"nfiles": "true"}, "d", 5, "nfiles='true': expected a number"),
        (SYNTH, {"nfiles": "1.5m"}, "d", 5, "expected a number"),
        (SYNTH, {"meanfilesize": "big"}, "d", 5, "expected a number"),
        (SYNTH, {"reuse": "1"}, "d", 5, "reuse='1': expected true or false"),
        (SYNTH, {"dir": "/x"}, "d", 5, "$dir is set by fsbench"),
        (SYNTH, {"runtime": "5"}, "d", 5, "$runtime is set by fsbench"),
        (SYNTH, {}, "./data", 5, "cannot parse the directory './data'"),
        (SYNTH, {}, "/tmp/test[ext4]", 5, "cannot parse the directory"),
        (SYNTH, {}, "d", 0, "runtime must be"),
    ],
)
def test_customise_errors(text, overrides, directory, runtime, message):
    with pytest.raises(ValueError, match=re.escape(message)) as info:
        customise(text, directory, overrides, runtime)
    assert "\n" not in str(info.value)


# ---------------------------------------------------------------- the fileset made before the measured run


def test_reusing_puts_reuse_on_every_fileset_line_and_nothing_else():
    text = ("set $dir=d\n"
            "define fileset name=a,path=$dir,size=$filesize,entries=$nfiles,prealloc=80\n"
            "define fileset name=b,path=$dir,entries=4,reuse,prealloc\n"
            "define fileset name=$vids,path=$dir,reuse=$reuseit,prealloc=50,paralloc  \n"
            "define process name=reuser,instances=1\n"
            "  flowop openfile name=reuse,filesetname=a,fd=1\n"
            "run 5\n")
    assert reusing(text) == (
        "set $dir=d\n"
        "define fileset name=a,path=$dir,size=$filesize,entries=$nfiles,prealloc=80,reuse\n"
        "define fileset name=b,path=$dir,entries=4,prealloc,reuse\n"
        "define fileset name=$vids,path=$dir,prealloc=50,paralloc,reuse\n"
        "define process name=reuser,instances=1\n"
        "  flowop openfile name=reuse,filesetname=a,fd=1\n"
        "run 5\n")


def test_creating_replaces_the_run_line_with_create_files():
    text = customise(SYNTH, "d", {}, 5)
    assert creating(text) == text.replace("run 5\n", "create files\n")
    assert creating("run 5\n") == "create files\n"
    with pytest.raises(ValueError, match="does not end with its run line"):
        creating(SYNTH.replace("run $runtime\n", ""))


def test_flowop_kinds_from_the_workload_text():
    text = ("flowop openfile name=openfile1,filesetname=b,fd=1\n"
            "    flowop readwholefile name=readfile1,fd=1,iosize=$iosize\n"
            "flowop aiowrite name=lg-write,filesetname=logfile,\n        iosize=256k,random,dsync\n"
            "flowop appendfilerand name=appendlog,filesetname=logfiles,iosize=1k,fd=2\n"
            "flowop read name=shadowread,filesetname=datafiles,iosize=2k\n"
            "flowop aiowait name=lg-aiowait\n# flowop write name=commented,fd=1\n")
    assert flowop_kinds(text) == {"readfile1": "read", "lg-write": "write", "appendlog": "write",
                                  "shadowread": "read"}


#: the data-moving flowops of the stock personalities (names and types as in Filebench 1.5-alpha3's
#: workloads/<personality>.f; test_installed_flowop_kinds checks them against the installation)
KINDS = {
    "fileserver": {"appendfilerand1": "write", "readfile1": "read", "wrtfile1": "write"},
    "webserver": {"appendlog": "write", **{f"readfile{i}": "read" for i in range(1, 11)}},
    "oltp": {"dbwrite-a": "write", "lg-write": "write", "shadowread": "read"},
    "varmail": {"appendfilerand2": "write", "appendfilerand3": "write", "readfile3": "read",
                "readfile4": "read"},
    "videoserver": {"newvid": "write", "vidreader": "read"},
    "webproxy": {"appendfilerand1": "write", **{f"readfile{i}": "read" for i in range(2, 7)}},
}


@pytest.mark.parametrize("personality", NAMES)
def test_bytes_moved_are_the_summary_figures_io(personality):
    """A run captured as fsbench now makes it (README.txt): the fileset reused, the bytes read and
    written add up to the IO Summary's MiB/s over the run's seconds."""
    text = read(f"reused-{personality}.txt")
    check_reused(text)
    metrics = parse_output(text, KINDS[personality])
    mb = by_name(metrics, "filebench.mb_per_s")
    summary = re.search(r"IO Summary: +(\d+) ops ([\d.]+) ops/s", text)
    seconds = int(summary.group(1)) / float(summary.group(2))
    assert 4.9 < seconds < 5.1  # "run 5"
    parts = dict(mb.io)
    assert set(parts) == {"read", "write"}
    assert sum(parts.values()) == pytest.approx(mb.value * 1e6 * seconds, rel=0.01)
    flowop_mb = {m.params["flowop"]: m.value for m in metrics if m.name == "filebench.flowop_mb_per_s"}
    reads = sum(v for k, v in flowop_mb.items() if KINDS[personality].get(k) == "read")
    assert parts["read"] == pytest.approx(reads * 1e6 * seconds, rel=1e-6)
    for name in ("filebench.ops_per_s", "filebench.ms_per_op"):
        figure = by_name(metrics, name)
        assert figure.io is None and figure.same_io_as == "filebench.mb_per_s"


def test_webserver_reads_and_writes():
    # readfile1..10 at 41.6-42.7 mb/s, appendlog 1.4 mb/s, over 448277 / 88310.797 s
    mb = by_name(parse_output(read("reused-webserver.txt"), KINDS["webserver"]), "filebench.mb_per_s")
    seconds = 448277 / 88310.797
    reads = 42.1 + 42.0 + 41.8 + 42.1 + 42.0 + 41.8 + 42.7 + 41.6 + 41.7 + 42.4
    assert mb.io == (("read", round(reads * 1048576 * seconds)), ("write", round(1.4 * 1048576 * seconds)))


def test_without_kinds_no_io_is_declared():
    metrics = parse_output(read("reused-varmail.txt"))
    assert all(m.io is None and m.same_io_as is None for m in metrics)


def test_a_flowop_that_moved_bytes_of_no_known_kind_raises():
    kinds = dict(KINDS["fileserver"])
    del kinds["wrtfile1"]
    with pytest.raises(ParseError, match="flowop wrtfile1 moved .* MiB/s but the workload text has no"):
        parse_output(read("reused-fileserver.txt"), kinds)


@pytest.mark.parametrize("name", ["fileserver.txt", "webserver.txt", "oltp.txt", "ok-dir-created.txt"])
def test_a_fileset_made_inside_the_measured_run_is_refused(name):
    """The earlier captures made their filesets in the run they measured (issue 36)."""
    with pytest.raises(ParseError, match="was created inside the measured run"):
        check_reused(read(name))


@pytest.mark.parametrize("personality", NAMES)
def test_the_preparation_made_the_filesets_the_run_reused(personality):
    made = re.findall(r"^[\d.]+: (\S+) populated: (.*)$", read(f"create-{personality}.txt"), re.M)
    reused = re.findall(r"^[\d.]+: (\S+) populated: (.*)$", read(f"reused-{personality}.txt"), re.M)
    assert made and made == reused  # same files, same sizes: Filebench's generators are not seeded
    assert "Removing" in read(f"create-{personality}.txt")
    assert "Running..." not in read(f"create-{personality}.txt")


def test_parse_checks_the_fileset_was_reused():
    stock = "set $dir=/tmp\nflowop openfile name=openfile1\nflowop readwholefile name=readfile1,fd=1\n"
    fb = Filebench("webserver", "stock", stock_text=stock)
    with pytest.raises(ParseError, match="fileset logfiles was created inside the measured run"):
        fb.parse(read("webserver.txt"))
    with pytest.raises(ParseError, match="flowop appendlog moved"):  # this text has no appendlog
        fb.parse(read("reused-webserver.txt"))
    stock += "flowop appendfilerand name=appendlog,iosize=1k\n" + "".join(
        f"flowop readwholefile name=readfile{i},fd=1\n" for i in range(2, 11))
    mb = by_name(Filebench("webserver", "stock", stock_text=stock).parse(read("reused-webserver.txt")),
                 "filebench.mb_per_s")
    assert mb.io == parse_output(read("reused-webserver.txt"), KINDS["webserver"])[0].io


# ---------------------------------------------------------------- the workload object


def test_is_a_workload():
    fb = Filebench("fileserver")
    assert isinstance(fb, Workload)
    assert fb.name == "filebench"
    hash(fb)  # frozen and hashable, overrides and stock text included
    hash(Filebench("oltp", "stock", {"nshadows": 5}, stock_text="set $dir=a\nset $nshadows=2\n"))
    assert tuple(NAMES) == PERSONALITIES


def test_files_customise_the_given_stock_text():
    fb = Filebench("fileserver", overrides={"nthreads": 2}, runtime=5, stock_text=SYNTH)
    variables = {"nfiles": "10000", "meanfilesize": "16k", "nthreads": "2"}
    text = customise(SYNTH, "fsbench-filebench", variables, 5)
    assert fb.workload_text() == text
    assert fb.files() == {"fileserver.f": reusing(text), "fileserver-create.f": creating(text)}
    assert fb.params()["stock_sha256"] and len(fb.params()["stock_sha256"]) == 16
    assert fb.params() != Filebench("fileserver", overrides={"nthreads": 2}, runtime=5,
                                    stock_text=SYNTH + "#\n").params()


def test_stock_text_validates_overrides_at_once():
    with pytest.raises(ValueError, match=re.escape("filebench oltp: does not set $nshadows (it sets $dir")):
        Filebench("oltp", overrides={"nshadows": 5}, stock_text=SYNTH.replace("$nfiles", "$ndbwriters"))
    message = "filebench videoserver: reuse='1': expected true or false"
    with pytest.raises(ValueError, match=re.escape(message)):
        Filebench("videoserver", scale="stock", overrides={"reuse": 1}, stock_text=SYNTH)


def test_stock_file_from_workloads_dir_env_and_prefix(monkeypatch, tmp_path):
    monkeypatch.delenv("FSBENCH_FILEBENCH_WORKLOADS", raising=False)
    prefix = tmp_path / "prefix"
    (prefix / "bin").mkdir(parents=True)
    exe = prefix / "bin" / "filebench"
    exe.write_text("#!/bin/sh\n")
    exe.chmod(0o755)
    shipped = prefix / "share" / "filebench" / "workloads"
    shipped.mkdir(parents=True)
    (shipped / "varmail.f").write_text(SYNTH)
    # next to the binary, given by path or found on PATH (through a symlink)
    expected = customise(SYNTH, "fsbench-filebench", {}, 15)
    assert Filebench("varmail", binary=str(exe)).workload_text() == expected
    (tmp_path / "path").mkdir()
    os.symlink(exe, tmp_path / "path" / "filebench")
    monkeypatch.setenv("PATH", str(tmp_path / "path"))
    monkeypatch.delenv("FSBENCH_FILEBENCH", raising=False)
    fb = Filebench.from_installation("varmail", scale="stock")
    assert fb.stock_text == SYNTH and fb.binary == "filebench" and fb.runtime == 60
    # $FSBENCH_FILEBENCH_WORKLOADS, then workloads_dir=, win over the binary's prefix
    (tmp_path / "env").mkdir()
    (tmp_path / "env" / "varmail.f").write_text(SYNTH2)
    monkeypatch.setenv("FSBENCH_FILEBENCH_WORKLOADS", str(tmp_path / "env"))
    assert Filebench.from_installation("varmail").stock_text == SYNTH2
    assert Filebench.from_installation("varmail", workloads_dir=str(shipped)).stock_text == SYNTH
    # read once, then recorded
    fb = Filebench("varmail")
    assert "stock_sha256" not in fb.params()
    fb.files()
    (tmp_path / "env" / "varmail.f").unlink()
    assert fb.files()["varmail-create.f"].startswith("set $dir=fsbench-filebench\n")
    assert "stock_sha256" in fb.params()


def test_stock_file_missing(monkeypatch, tmp_path):
    monkeypatch.delenv("FSBENCH_FILEBENCH_WORKLOADS", raising=False)
    monkeypatch.delenv("FSBENCH_FILEBENCH", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(ToolMissing, match="filebench not found"):
        Filebench("oltp").files()
    message = f"cannot read filebench's stock personality {tmp_path}/oltp.f"
    with pytest.raises(ToolMissing, match=re.escape(message)):
        Filebench.from_installation("oltp", workloads_dir=str(tmp_path))
    with pytest.raises(ValueError, match="unknown filebench personality 'mailserver'"):
        Filebench.from_installation("mailserver", workloads_dir=str(tmp_path))


def test_runtime_per_scale():
    assert Filebench("fileserver").runtime == 15
    assert Filebench("fileserver", scale="paper").runtime == 60
    assert Filebench("fileserver", scale="stock").runtime == 60
    assert Filebench("fileserver", scale="stock", runtime=7).runtime == 7
    assert Filebench("fileserver", runtime=10).timeout == 910.0
    assert Filebench("fileserver", runtime=10, timeout=100).timeout == 100


def test_paper_scale_is_s1():
    assert Filebench("fileserver", scale="paper").variables() == {
        "nfiles": "10000", "meanfilesize": "128k", "nthreads": "50", "iosize": "1m", "meanappendsize": "16k"}
    assert Filebench("oltp", scale="paper").variables() == {
        "iosize": "2k", "nshadows": "200", "ndbwriters": "10", "filesize": "10m", "nfiles": "10"}
    assert Filebench("webserver", scale="paper").variables() == {
        "nfiles": "1000", "meanfilesize": "16k", "nthreads": "100"}
    for personality in ("varmail", "videoserver", "webproxy"):  # S1 did not run them: stock values
        assert Filebench(personality, scale="paper").variables() == {}


@pytest.mark.parametrize("personality", NAMES)
def test_stock_scale_sets_nothing(personality):
    assert Filebench(personality, scale="stock").variables() == {}
    assert Filebench(personality, scale="stock").params() == {
        "personality": personality, "scale": "stock", "runtime": "60"}


@pytest.mark.parametrize("personality", NAMES)
def test_captured_runs_used_the_quick_scale(personality):
    """The captures ran the stock personality with README.txt's overrides: today's quick scale,
    but for two changes made since. webserver also sets meanappendsize=1k (see below); fileserver
    has 10000 files of 16k, because with 1000 files of 128k a 15 s run on a fast target used up
    its fileset and stopped early ("createfile1 could not obtain a file")."""
    expected = dict(CAPTURED[personality])
    if personality == "webserver":
        expected["meanappendsize"] = "1k"
    if personality == "fileserver":
        expected.update(nfiles="10000", meanfilesize="16k")
    assert Filebench(personality, runtime=5).variables() == expected


def test_quick_webserver_bounds_its_log():
    """webserver appends to one log file for the whole run: at 16k appends it grew by 565 MB in
    5 s on the dev VM; at 1k it grew by 160 MB in 15 s."""
    assert SCALE_VARIABLES["quick"]["webserver"]["meanappendsize"] == "1k"


def test_overrides_replace_values_and_are_recorded():
    fb = Filebench("oltp", overrides={"nshadows": 5, "IOSIZE".lower(): "8K"})
    assert fb.overrides == (("iosize", "8k"), ("nshadows", "5"))
    assert fb.variables() == {"nshadows": "5", "ndbwriters": "2", "iosize": "8k"}
    assert fb.params() == {"personality": "oltp", "scale": "quick", "runtime": "15",
                           "nshadows": "5", "ndbwriters": "2", "iosize": "8k"}
    stock = "set $dir=/tmp\nset $nshadows=200\nset $ndbwriters=10\nset $iosize=2k\n"
    text = Filebench("oltp", overrides={"nshadows": 5, "iosize": "8K"}, stock_text=stock).workload_text()
    assert "set $nshadows=5\nset $ndbwriters=2\nset $iosize=8k\n" in text


def test_overrides_given_as_pairs_and_booleans():
    assert Filebench("varmail", overrides=(("nthreads", "4"),)).variables() == {"nthreads": "4"}
    fb = Filebench("videoserver", scale="stock", overrides={"reuse": True}, stock_text=SYNTH)
    assert "set $reuse=true\n" in fb.workload_text()


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"personality": "mailserver"}, "unknown filebench personality 'mailserver'"),
        ({"personality": "oltp", "scale": "huge"}, "unknown filebench scale 'huge'"),
        ({"personality": "fileserver", "overrides": {"dir": "/tmp"}}, "$dir is set by fsbench"),
        ({"personality": "fileserver", "overrides": {"runtime": 5}}, "$runtime is set by fsbench"),
        ({"personality": "fileserver", "overrides": {"nfiles": "10 files"}}, "expected a number"),
        ({"personality": "fileserver", "overrides": {"iosize": "1.5m"}}, "expected a number"),
        ({"personality": "fileserver", "overrides": {"nfiles": "5\n"}}, "expected a number"),
        ({"personality": "fileserver", "runtime": 0}, "runtime must be"),
        ({"personality": "fileserver", "runtime": 2.5}, "runtime must be"),
        ({"personality": "fileserver", "runtime": 60, "timeout": 30}, "must exceed the runtime"),
    ],
)
def test_validation(kwargs, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        Filebench(**kwargs)


@pytest.mark.parametrize("bad", ["./data", "/tmp/a b", "/tmp/test[ext4]", ""])
def test_workload_text_refuses_paths_filebench_would_mangle(bad):
    with pytest.raises(ValueError, match="cannot parse the directory"):
        Filebench("fileserver", stock_text=SYNTH).workload_text(bad)


def test_argv_and_prepare():
    fb = Filebench("webserver", binary="/opt/fb/bin/filebench")
    start = ["setarch", "-R", "env", "-C", "/mnt/t/w", "/opt/fb/bin/filebench", "-f"]
    assert fb.prepare_argvs(Path("/mnt/t/w"), Path("/run/fsbench/s")) == [
        start + ["/run/fsbench/s/webserver-create.f"]]
    assert fb.argv(Path("/mnt/t/w"), Path("/run/fsbench/s")) == start + ["/run/fsbench/s/webserver.f"]


def test_argv_makes_relative_paths_absolute(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    argv = Filebench("oltp", binary="bin/filebench").argv(Path("w"), Path("s"))
    t = str(tmp_path)
    assert argv == ["setarch", "-R", "env", "-C", f"{t}/w", f"{t}/bin/filebench", "-f", f"{t}/s/oltp.f"]


def test_binary_default_and_find(monkeypatch, tmp_path):
    monkeypatch.delenv("FSBENCH_FILEBENCH", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    assert Filebench("oltp").binary == "filebench"
    assert find_filebench() is None
    exe = tmp_path / "filebench"
    exe.write_text("#!/bin/sh\n")
    exe.chmod(0o755)
    assert find_filebench() == str(exe)
    other = tmp_path / "fb"
    monkeypatch.setenv("FSBENCH_FILEBENCH", str(other))
    assert find_filebench() is None  # named but absent: do not fall back silently
    other.write_text("#!/bin/sh\n")
    other.chmod(0o755)
    assert find_filebench() == str(other)
    assert Filebench("oltp").binary == str(other)
    assert "FSBENCH_FILEBENCH" in MISSING_REASON and "PATH" in MISSING_REASON


# ---------------------------------------------------------------- the installed stock personalities

def installed_binary() -> str:
    found = find_filebench()
    if found is None:
        pytest.skip(MISSING_REASON)
    return found


@pytest.fixture
def binary(monkeypatch) -> str:
    monkeypatch.delenv("FSBENCH_FILEBENCH_WORKLOADS", raising=False)
    return installed_binary()


@pytest.mark.parametrize("personality", NAMES)
@pytest.mark.parametrize("scale", ["quick", "paper", "stock"])
def test_installed_personality_is_customised(binary, personality, scale):
    fb = Filebench.from_installation(personality, scale=scale, binary=binary)
    stock = fb.stock_text
    text = fb.workload_text()
    assert other_lines(text) == other_lines(stock)  # the definitions are filebench's, untouched
    assert text.endswith(f"\nrun {fb.runtime}\n") and len(re.findall(r"^\s*(ps)?run\b", text, re.M)) == 1
    sets, stock_sets = set_lines(text), set_lines(stock)
    assert sets["dir"] == "fsbench-filebench"
    for key, value in fb.variables().items():
        if key == "meanfilesize" and "meanfilesize" not in stock_sets:
            assert f"mean:{size_bytes(value)};" in sets["filesize"]
        else:
            assert sets[key] == value
    changed = {k for k in stock_sets if sets[k] != stock_sets[k]}
    expected = {"dir", "filesize" if "meanfilesize" in fb.variables() else "", *fb.variables()}
    assert changed <= expected | {"runtime"}
    definitions = "\n".join(line for line in other_lines(text) if not line.lstrip().startswith("#"))
    used = set(re.findall(r"\$([a-z]+)", definitions))
    assert used <= set(sets)


@pytest.mark.parametrize("personality", NAMES)
def test_installed_quick_scale_fits_a_small_loop_device(binary, personality):
    """Quick filesets stay well under 1 GB (videoserver: 16 files of 32m at most)."""
    sets = set_lines(Filebench.from_installation(personality, binary=binary).workload_text())
    nfiles = sum(int(sets.get(k, "0")) for k in ("nfiles", "numactivevids", "numpassivevids"))
    size = sets.get("meanfilesize", sets.get("filesize", "0"))
    mean = re.search(r"mean:([0-9]+)", size)
    assert nfiles * (int(mean.group(1)) if mean else size_bytes(size)) < 600 * 1024 * 1024


@pytest.mark.parametrize("personality", NAMES)
def test_installed_flowop_kinds(binary, personality):
    """KINDS (used on the captures without Filebench) are what the installed stock file says."""
    assert flowop_kinds(Filebench.from_installation(personality, binary=binary).stock()) == KINDS[personality]


@pytest.mark.parametrize("personality", NAMES)
def test_installed_files_create_then_reuse(binary, personality):
    fb = Filebench.from_installation(personality, binary=binary)
    files = fb.files()
    measured, create = files[f"{personality}.f"], files[f"{personality}-create.f"]
    filesets = re.findall(r"^define fileset .*$", measured, re.M)
    assert filesets and all(line.endswith(",reuse") and line.count("reuse") == 1 for line in filesets)
    assert other_lines(create) == other_lines(fb.workload_text()) + ["create files"]
    assert not re.search(r"^\s*(ps)?run\b", create, re.M)


def test_installed_captured_overrides_apply(binary):
    """The overrides README.txt lists for the captures are all variables of the stock files."""
    for name, overrides in CAPTURED.items():
        personality = "fileserver" if name.startswith("fail-") else name
        Filebench.from_installation(personality, overrides=overrides, runtime=5, binary=binary)


# ---------------------------------------------------------------- parsing real outputs


def test_units():
    assert size_bytes("16k") == 16384 and size_bytes("1m") == 1048576 and size_bytes("3") == 3
    assert mib_to_mb(1.0) == pytest.approx(1.048576)


@pytest.mark.parametrize(
    ("name", "ops_s", "mib_s", "ms_op", "nflowops"),
    [
        ("fileserver", 15888.468, 365.6, 0.941, 11),
        ("webserver", 288260.520, 1445.0, 0.046, 31),
        ("oltp", 22201.429, 43.6, 0.032, 12),
        ("varmail", 11784.885, 42.2, 1.338, 13),
        ("videoserver", 391.347, 103.2, 0.065, 7),
        ("webproxy", 173262.482, 434.4, 0.069, 20),
        ("ok-dir-created", 43603.172, 1004.4, 0.319, 11),
    ],
)
def test_io_summary(name, ops_s, mib_s, ms_op, nflowops):
    metrics = parse_output(read(f"{name}.txt"))
    ops = by_name(metrics, "filebench.ops_per_s")
    assert (ops.value, ops.unit, ops.direction) == (ops_s, "ops/s", Direction.HIGHER)
    mb = by_name(metrics, "filebench.mb_per_s")
    assert mb.value == pytest.approx(mib_s * 1.048576)
    assert (mb.unit, mb.direction) == ("MB/s", Direction.HIGHER)
    lat = by_name(metrics, "filebench.ms_per_op")
    assert (lat.value, lat.unit, lat.direction) == (ms_op, "ms", Direction.LOWER)
    flowops = {m.params["flowop"] for m in metrics if m.name == "filebench.flowop_ops_per_s"}
    assert len(flowops) == nflowops


def test_flowop_lines_fileserver():
    metrics = parse_output(read("fileserver.txt"))
    # readfile1  7277ops  1445ops/s 182.4mb/s  0.202ms/op [0.002ms - 96.209ms]
    assert by_name(metrics, "filebench.flowop_ops_per_s", "readfile1").value == 1445
    assert by_name(metrics, "filebench.flowop_mb_per_s", "readfile1").value == pytest.approx(182.4 * 1.048576)
    lat = by_name(metrics, "filebench.flowop_ms_per_op", "createfile1")
    assert (lat.value, lat.unit, lat.direction) == (7.427, "ms", Direction.LOWER)
    assert by_name(metrics, "filebench.flowop_mb_per_s", "statfile1").value == 0.0


def test_flowop_that_never_ran_has_no_latency():
    metrics = parse_output(read("oltp.txt"))
    # random-rate  0ops  0ops/s  0.0mb/s  0.000ms/op
    assert by_name(metrics, "filebench.flowop_ops_per_s", "random-rate").value == 0
    latencies = {m.params["flowop"] for m in metrics if m.name == "filebench.flowop_ms_per_op"}
    assert "random-rate" not in latencies and "shadowread" in latencies
    assert by_name(metrics, "filebench.flowop_ms_per_op", "lg-block").value == 177.218
    assert by_name(metrics, "filebench.flowop_mb_per_s", "lg-write").value == pytest.approx(1.4 * 1.048576)


def test_videoserver_padded_summary():
    # "IO Summary:  1957 ops 391.347 ops/s 391/0 rd/wr 103.2mb/s 0.065ms/op"
    metrics = parse_output(read("videoserver.txt"))
    assert by_name(metrics, "filebench.flowop_ms_per_op", "serverlimit").value == 18.750
    assert by_name(metrics, "filebench.flowop_ops_per_s", "wrtopen").value == 0  # 1 op, rounds to 0/s


@pytest.mark.parametrize(
    ("name", "problem"),
    [
        ("fail-aslr-on.txt", "no IO Summary line"),  # ASLR on: workers crash, master hangs
        ("fail-truncated.txt", "no IO Summary line"),
        ("fail-dir-not-creatable.txt", "Failed to pre-allocate file"),
        ("fail-run-stopped-early.txt", "Run stopped early"),
        ("fail-illegal-character.txt", "Illegal character at '.'"),  # ran anyway, exit 0
        ("fail-missing-workload-file.txt", "Cannot open file"),
    ],
)
def test_failures_raise(name, problem):
    with pytest.raises(ParseError, match=re.escape(problem)) as info:
        parse_output(read(name))
    assert info.value.tool == "filebench"


def test_summary_cut_mid_line_raises():
    text = read("webserver.txt")
    cut = text[: text.index("IO Summary") + 40]
    with pytest.raises(ParseError, match="incomplete IO Summary"):
        parse_output(cut)


def test_zero_operations_raise():
    text = read("varmail.txt").replace("IO Summary: 59019 ops", "IO Summary: 0 ops")
    with pytest.raises(ParseError, match="0 operations"):
        parse_output(text)


@pytest.mark.parametrize(
    "text", ["", "dd: 1+0 records in\n", "IO Summary: 5 ops 1.0 ops/s 1/1 rd/wr 1.0mb/s 1.0ms/op\n"]
)
def test_not_filebench_output(text):
    with pytest.raises(ParseError):
        parse_output(text)

"""Kernel build workload: prepare/argv, validation, parsing of real build outputs."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from pytest_fsbench.errors import ParseError, ToolMissing
from pytest_fsbench.metrics import Direction
from pytest_fsbench.workloads import kernel_build
from pytest_fsbench.workloads.base import Workload
from pytest_fsbench.workloads.kernel_build import (
    MISSING_REASON,
    TIME_FORMAT,
    KernelBuild,
    availability_errors,
    default_jobs,
    find_kernel_source,
    newest_source,
    parse_output,
)

DATA = Path(__file__).resolve().parents[2] / "data" / "kernel_build"
TARBALL = Path("/usr/src/linux-source-6.1.tar.xz")


def read(name: str) -> str:
    return (DATA / name).read_text()


def test_is_a_workload():
    kb = KernelBuild(source=TARBALL)
    assert isinstance(kb, Workload)
    assert kb.name == "kernel_build"
    assert kb.config == "defconfig" and kb.target is None and kb.timeout == 3600.0
    assert kb.jobs == default_jobs() >= 1
    assert kb.files() == {}
    hash(kb)


def test_prepare_argvs():
    kb = KernelBuild(source=TARBALL, config="tinyconfig", jobs=2)
    assert kb.prepare_argvs(Path("/mnt/t/w"), Path("/s")) == [
        ["rm", "-rf", "--one-file-system", "/mnt/t/w/linux"],
        ["mkdir", "-p", "/mnt/t/w/linux"],
        ["tar", "-xf", str(TARBALL), "-C", "/mnt/t/w/linux", "--strip-components=1"],
        ["make", "-C", "/mnt/t/w/linux", "tinyconfig"],
    ]


def test_argv_is_timed_make():
    kb = KernelBuild(source=TARBALL, config="tinyconfig", jobs=2)
    assert kb.argv(Path("/mnt/t/w"), Path("/s")) == [
        "/usr/bin/time", "-f", TIME_FORMAT, "make", "-C", "/mnt/t/w/linux", "-j2"]
    with_target = KernelBuild(source=TARBALL, jobs=8, target="bzImage").argv(Path("/w"), Path("/s"))
    assert with_target[-2:] == ["-j8", "bzImage"]


def test_params():
    kb = KernelBuild(source=TARBALL, config="allnoconfig", jobs=3)
    assert kb.params() == {
        "source": "linux-source-6.1.tar.xz", "config": "allnoconfig", "jobs": "3", "target": ""}


def test_no_source_raises_tool_missing_at_prepare():
    kb = KernelBuild(source=None)
    assert kb.params()["source"] == ""
    with pytest.raises(ToolMissing, match="linux-source"):
        kb.prepare_argvs(Path("/w"), Path("/s"))


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"config": "menuconfig; rm"}, "is not a kernel configuration target make knows"),
        ({"config": ""}, "is not a kernel configuration target make knows"),
        ({"config": "defconfig\n"}, "is not a kernel configuration target make knows"),
        ({"jobs": 0}, "jobs must be a whole number"),
        ({"jobs": True}, "jobs must be a whole number"),
        ({"jobs": "4"}, "jobs must be a whole number"),
        ({"target": "bz Image"}, "is not a make target name"),
        ({"timeout": 0}, "timeout must be > 0"),
    ],
)
def test_validation(kwargs, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        KernelBuild(source=TARBALL, **kwargs)


@pytest.mark.parametrize(
    "config", ["defconfig", "tinyconfig", "allnoconfig", "x86_64_defconfig", "olddefconfig"]
)
def test_config_targets_accepted(config):
    assert KernelBuild(source=TARBALL, config=config).config == config


def test_newest_source_by_version():
    paths = [Path(f"/usr/src/linux-source-{v}.tar.xz") for v in ("6.1", "6.10", "5.19")]
    assert newest_source(paths) == Path("/usr/src/linux-source-6.10.tar.xz")
    assert newest_source([Path("/usr/src/linux-source-x.tar.xz")]) is None
    assert newest_source([]) is None


def test_find_kernel_source(tmp_path):
    assert find_kernel_source(tmp_path) is None
    for v in ("6.1", "6.12"):
        (tmp_path / f"linux-source-{v}.tar.xz").write_bytes(b"")
    assert find_kernel_source(tmp_path) == tmp_path / "linux-source-6.12.tar.xz"


def test_availability_errors(tmp_path, monkeypatch):
    time = tmp_path / "time"
    time.write_text("#!/bin/sh\n")
    time.chmod(0o755)
    monkeypatch.setattr(kernel_build, "TIME_BINARY", str(time))
    assert availability_errors(None) == [MISSING_REASON]
    absent = tmp_path / "nope.tar.xz"
    assert availability_errors(absent) == [f"kernel source tarball {absent} not found"]
    tarball = tmp_path / "linux-source-6.1.tar.xz"
    tarball.write_bytes(b"")
    assert availability_errors(tarball) == []
    monkeypatch.setattr(kernel_build, "TIME_BINARY", str(tmp_path / "absent"))
    assert [e for e in availability_errors(tarball) if "GNU time" in e]


def test_parse_real_tinyconfig_build():
    metrics = KernelBuild(source=TARBALL).parse(read("tinyconfig-j2.txt"))
    # fsbench-time: elapsed=148.13 user=141.93 sys=47.56 exit=0
    assert [(m.name, m.value, m.unit, m.direction) for m in metrics] == [
        ("kernel_build.seconds", 148.13, "s", Direction.LOWER),
        ("kernel_build.user_seconds", 141.93, "s", Direction.LOWER),
        ("kernel_build.sys_seconds", 47.56, "s", Direction.LOWER),
    ]


def test_build_log_mentioning_error_files_is_not_a_failure():
    text = read("tinyconfig-j2.txt")
    assert "arch/x86/boot/compressed/error.o" in text  # a file called error.c is compiled
    assert parse_output(text)[0].value == 148.13


@pytest.mark.parametrize(
    ("name", "problem"),
    [
        ("fail-no-such-target.txt", "make: *** No rule to make target 'no-such-target'"),
        ("fail-compile-error.txt", "init/version.c:56:2: error: #error fsbench capture"),
        ("fail-truncated.txt", "no 'fsbench-time:' line"),
        ("tinyconfig-j2.prepare.txt", "no 'fsbench-time:' line"),
    ],
)
def test_failures_raise(name, problem):
    with pytest.raises(ParseError, match=re.escape(problem)) as info:
        parse_output(read(name))
    assert info.value.tool == "kernel_build"


def test_nonzero_exit_alone_raises():
    text = read("tinyconfig-j2.txt").replace("exit=0", "exit=2")
    with pytest.raises(ParseError, match="make exited with status 2"):
        parse_output(text)


def test_killed_by_signal_raises():
    text = read("tinyconfig-j2.txt").replace("fsbench-time:", "Command terminated by signal 9\nfsbench-time:")
    with pytest.raises(ParseError, match="Command terminated by signal 9"):
        parse_output(text)


def test_two_time_lines_raise():
    text = read("tinyconfig-j2.txt")
    with pytest.raises(ParseError, match="2 'fsbench-time:' lines"):
        parse_output(text + text.splitlines()[-1] + "\n")

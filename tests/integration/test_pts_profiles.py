"""Each fsbench PTS profile's install.sh and run script, run as PTS runs them (HOME = the install
directory, LOG_FILE, INSTALL_FOOTNOTE; the base profile they extend installed first, in a
directory of its own that TEST_EXTENDS names) with the system's tools, and its
results-definition applied to the real output (PTS itself: test_pts_run.py)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from pytest_fsbench.pts.profiles import PROFILES_DIR, profiles
from pytest_fsbench.workloads.filebench import find_filebench
import pts_template

pytestmark = pytest.mark.root


def extended(home: Path) -> Path:
    """Where the base profile is installed beside a profile's install directory home."""
    return home.parent / "fsbench-base"


def install(profile: str, home: Path, extra_path: str = "") -> Path:
    src = profiles()[profile].path
    base = extended(home)
    for directory, script in ((base, PROFILES_DIR / "fsbench-base-1.0.0" / "install.sh"), (home, src / "install.sh")):
        directory.mkdir(parents=True)
        env = {**os.environ, "HOME": str(directory), "TEST_EXTENDS": str(base), "NUM_CPU_CORES": "2",
               "INSTALL_FOOTNOTE": str(directory / "install-footnote"), "FSBENCH_PTS_SYSTEM_TOOLS": "1",
               "PATH": f"{extra_path}{os.environ['PATH']}"}
        subprocess.run(["sh", str(script)], cwd=directory, env=env, check=True, timeout=900)
    assert "not the pinned" in (home / "install-footnote").read_text(), "the result says a system tool ran"
    return src


def execute(profile: str, home: Path, *args: str, timeout: float = 900) -> str:
    env = {**os.environ, "HOME": str(home), "LOG_FILE": str(home / "log"), "NUM_CPU_CORES": "2",
           "TEST_EXTENDS": str(extended(home))}
    subprocess.run([str(home / profile), *args], cwd=home, env=env, timeout=timeout)
    assert (home / "test-exit-status").read_text().strip() == "0", (home / "log").read_text()[-2000:]
    leftovers = [p.name for p in home.iterdir() if re.fullmatch(rf"{profile}\.\d+", p.name)]
    assert not leftovers, f"the run script left {leftovers}"
    return (home / "log").read_text()


def values(src: Path, output: str, arguments: str) -> list[float | None]:
    parsers = pts_template.matching(pts_template.parsers(str(src / "results-definition.xml")), arguments)
    return [pts_template.value(p, output) for p in parsers]


@pytest.fixture
def home(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("pts-install", numbered=True) / "fsbench"


def test_dd_profile_writes_and_reads(home):
    src = install("fsbench-dd", home)
    for args in (["--test=write", "--bs=1048576", "--size-mib=128", "--data=random", "--cache=direct"],
                 ["--test=read", "--bs=1048576", "--size-mib=128", "--data=zeros", "--cache=drop"]):
        found = values(src, execute("fsbench-dd", home, *args), " ".join(args))
        assert len(found) == 1 and found[0] and found[0] > 0
    assert (home / "pts-test-version").read_text().strip().replace(".", "").isdigit()
    assert not list(Path("/dev/shm").glob("fsbench-dd.*")), "the staged random data is removed"


def test_dd_profile_refuses_a_bad_argument(home):
    install("fsbench-dd", home)
    done = subprocess.run([str(home / "fsbench-dd"), "--test=append"], cwd=home,
                          env={**os.environ, "HOME": str(home), "TEST_EXTENDS": str(extended(home))},
                          capture_output=True, text=True)
    assert done.returncode == 2 and "bad --test=append" in done.stderr


@pytest.mark.skipif(shutil.which("iozone") is None, reason="iozone not installed (./fsbench.sh setup installs it)")
@pytest.mark.parametrize("test,tag", [("-i0", "#WRITE"), ("-i0", "#REWRITE"), ("-i0 -i1", "#READ"),
                                      ("-i0 -i2", "#RANDWRITE"), ("-i0 -i5", "#STRIDEREAD"), ("-i6 -i7", "#FREREAD")])
def test_iozone_profile_parses_the_test_chosen(home, test, tag):
    src = install("fsbench-iozone", home)
    args = ["-e", "-r", "1m", "-s", "64m", *test.split(), tag, "#BUFFERED"]
    found = values(src, execute("fsbench-iozone", home, *args), " ".join(args))
    assert len(found) == 1, f"exactly one parser matches {tag}"
    assert found[0] and found[0] > 0


@pytest.mark.skipif(shutil.which("bonnie++") is None and not Path("/usr/sbin/bonnie++").exists(),
                    reason="bonnie++ not installed (./fsbench.sh setup installs it)")
def test_bonnie_profile_reports_its_block_tests(home):
    src = install("fsbench-bonnie", home)
    output = execute("fsbench-bonnie", home, "--size-mib=1024", "--files-k=1")
    parsers = pts_template.parsers(str(src / "results-definition.xml"))
    by_test = {p["AppendToArgumentsDescription"]: pts_template.value(p, output) for p in parsers}
    assert by_test["Test: Sequential Block Write"] > 0 and by_test["Test: Sequential Rewrite"] > 0


@pytest.mark.skipif(find_filebench() is None, reason="filebench not built; see README (FSBENCH_FILEBENCH)")
def test_filebench_profile_runs_a_quick_personality(home):
    binary = Path(find_filebench())
    src = install("fsbench-filebench", home, extra_path=f"{binary.parent}:")
    output = execute("fsbench-filebench", home, "--personality=varmail", "--runtime=5", "--file-set=quick")
    ops, mbs, latency = values(src, output, "")
    assert ops > 0 and mbs >= 0 and latency > 0
    # the file set was made before the measured run, which only reused it (as the pytest face runs it)
    assert re.search(r"^[\d.]+: Reusing existing bigfileset tree$", output, re.M), output[-2000:]


@pytest.mark.slow
@pytest.mark.skipif(not list(Path("/usr/src").glob("linux-source-*.tar.*")),
                    reason="no /usr/src/linux-source-*.tar.* (./fsbench.sh setup installs Debian's linux-source)")
def test_kernel_build_profile_times_make(home):
    src = install("fsbench-kernel-build", home)
    output = execute("fsbench-kernel-build", home, "--config=tinyconfig", "--jobs=cores", timeout=1800)
    (seconds,) = values(src, output, "")
    assert seconds and seconds > 0

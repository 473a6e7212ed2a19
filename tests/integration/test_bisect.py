"""A real bisect on User-mode Linux kernels: Linux 6.1 from Debian's linux-source-6.1, made a git
tree with its series of commits by scripts/kernel_series.py, three of them bisected (the middle
one slows ext4's writes), each step's kernel built, booted and measured interleaved with both
endpoints'; interrupted once after its range check and resumed; the culprit named and confirmed,
the page opened in a real browser; the plan of the whole series.

A kernel's first build takes 5-13 minutes on a 2-core machine (measured: 4.8 min quiet, 12.5 beside
other jobs), too long for every run of the suite: the tree and the bisect's work directory (its
checkout and build directory) are kept between runs outside the repository, in
$FSBENCH_TEST_CACHE (default /var/cache/fsbench-tests), as CI keeps a cache. A run with the cache
rebuilds every kernel the bisect needs from the kept build directory (its kernels are removed
first: each is compiled again, only what its commit changed, about 15-20 s each) and measures them:
about 5 minutes. The first run on a machine also unpacks the tree (1-4 min) and builds it fully."""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from lxml import html as lxml_html

from conftest import load_script, sigint_default
from pytest_fsbench.bisect.build import KINDS, UML, VM, Layout, configuration_gaps, prepare
from pytest_fsbench.kernels.vm import vng_program
from pytest_fsbench.store.results import Store
from pytest_fsbench.system.commands import execute

REPO = Path(__file__).resolve().parents[2]
CACHE = Path(os.environ.get("FSBENCH_TEST_CACHE", "/var/cache/fsbench-tests")) / "bisect"
SOURCE = Path("/usr/src/linux-source-6.1.tar.xz")
CHROMIUM = next((found for name in ("chromium", "chromium-browser") if (found := shutil.which(name))), None)
#: commits 5, 6 and 7 of the series: 6 flushes the device after every write (scripts/kernel_series.py)
GOOD, BAD, CULPRIT = "slowed~6", "slowed~3", "slowed~4"
CASES = ["-k", "dd and write", "--fs=ext4", "--dd-size=64M", "--warmup=0"]

pytestmark = [pytest.mark.root, pytest.mark.slow,
              pytest.mark.skipif(not SOURCE.exists(), reason=f"{SOURCE} is not installed (Debian package "
                                 "linux-source-6.1; ./fsbench.sh setup installs it)")]


@pytest.fixture(scope="module")
def tree() -> Iterator[Path]:
    """The series' tree, made once and kept in the cache (one test suite at a time uses it)."""
    CACHE.mkdir(parents=True, exist_ok=True)
    with open(CACHE.parent / "bisect.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another suite's bisect on the same cache: wait for it
        series = CACHE / "linux-series"
        if not (series / ".git").is_dir() or subprocess.run(["git", "-C", str(series), "rev-parse", "--verify",
                                                             "steady"], capture_output=True).returncode != 0:
            shutil.rmtree(series, ignore_errors=True)
            load_script("kernel_series").make(series, SOURCE)
        yield series


def bisect(*args: str, store: Path) -> subprocess.Popen:
    """fsbench bisect with args (its own options, then -- and the cases'), into store."""
    return subprocess.Popen([sys.executable, "-m", "pytest_fsbench.cli", "bisect", f"--store={store}", *args],
                            cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True, preexec_fn=sigint_default)


def test_the_plan_of_the_whole_series(tree, tmp_path):
    done = subprocess.run([sys.executable, "-m", "pytest_fsbench.cli", "bisect", "--plan", f"--tree={tree}",
                           "--good=base", "--bad=slowed", f"--store={tmp_path / 'none.db'}", "--", *CASES],
                          cwd=REPO, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "10 commits after the good one, so about 4 steps" in done.stdout
    assert "builds: 7 kernels" in done.stdout and "measuring: 6 sessions" in done.stdout
    assert not (tmp_path / "none.db").exists()  # a plan records nothing


@pytest.mark.parametrize("kind", KINDS)
def test_each_kind_of_kernel_is_configured_with_what_the_cases_need(tree, tmp_path, kind):
    """The series' tree configured as a bisect configures its kernels (UML: allnoconfig; a virtual
    machine: x86_64's defconfig with virtme-ng's options, which turn ext4 off, laid under fsbench's),
    without building: every option fsbench needs survives kconfig. The tree itself is the source
    (make O= writes only into the build directory)."""
    if kind == VM and vng_program() is None:
        pytest.skip("virtme-ng is not installed (./fsbench.sh setup --kernel=vm installs it)")
    layout = Layout(tmp_path / "work")
    layout.work.mkdir()
    layout.source.symlink_to(tree)
    prepare(layout, kind, "", execute)
    assert configuration_gaps(layout, kind, tmp_path / "config.log", execute) == []
    config = (layout.build / ".config").read_text()
    assert "CONFIG_EXT4_FS=y" in config and "CONFIG_BLK_DEV_LOOP=y" in config
    assert ("CONFIG_HOSTFS=y" in config) == (kind == UML) and ("CONFIG_VIRTIO_BLK=y" in config) == (kind == VM)


def test_a_real_bisect_interrupted_resumed_names_the_culprit_and_confirms_it(tree, tmp_path, no_leftovers):
    work = CACHE / "work"
    shutil.rmtree(work / "kernels", ignore_errors=True)  # every kernel built again, from the kept build directory
    store = tmp_path / "fsbench.db"
    page = tmp_path / "bisect.html"
    first = bisect(f"--tree={tree}", f"--good={GOOD}", f"--bad={BAD}", f"--work-dir={work}", "--confirm-rounds=5",
                   f"--report={page}", "--", *CASES, store=store)
    said = []
    assert first.stdout is not None
    for line in first.stdout:  # interrupted as the first step starts: its range is decided and kept
        said.append(line)
        if line.startswith("step 1:"):
            time.sleep(20)  # in the step's build or session
            os.killpg(first.pid, signal.SIGINT)
            break
    said += first.stdout.readlines()
    assert first.wait(timeout=600) == 130, "".join(said)
    out = "".join(said)
    assert "fsbench bisect --resume=1 continues it" in " ".join(out.split()), out
    interrupted = Store(store, create=False).bisect(1)
    assert interrupted.status == "interrupted"
    assert [s["kind"] for s in interrupted.record["steps"]] == ["range"]
    assert interrupted.record["steps"][0]["verdict"] == "regression"

    again = bisect("--resume", f"--report={page}", store=store)
    rest, _ = again.communicate(timeout=1800)
    assert again.returncode == 0, out + rest
    assert "range:" not in rest.split("step 1:")[0]  # the range is not measured again
    culprit = subprocess.run(["git", "-C", str(tree), "rev-parse", CULPRIT], capture_output=True, text=True).stdout
    said = " ".join(rest.split())  # its closing lines as the terminal's width wraps them
    assert f"first bad commit: {culprit.strip()} ext4: flush the device after every buffered write" in said, rest
    assert "confirmed against its parent" in said and "work.flushes_per_gb" in said
    kept = Store(store, create=False).bisect(1)
    assert kept.status == "finished"
    steps = kept.record["steps"]
    assert [(s["kind"], s["verdict"]) for s in steps] == [("range", "regression"), ("step", "like bad"),
                                                         ("step", "like good"), ("confirm", "confirmed")]
    assert all(s["session"] for s in steps) and all(2 <= s["rounds"] <= 10 for s in steps)
    built = [k for k in kept.record["kernels"].values() if not k["reused"]]
    assert len(built) == 4 and all(k["build_seconds"] > 0 and k["boot_seconds"] > 0 for k in built)
    sessions = {row.id for row in Store(store, create=False).sessions()}
    assert {s["session"] for s in steps} <= sessions
    check_page(page, tmp_path)


def check_page(page: Path, tmp_path: Path) -> None:
    """The page in a real browser: the good endpoint and three commits in one line, coloured by
    their verdicts, the culprit outlined."""
    tree = lxml_html.fromstring(page.read_text())
    boxes = tree.xpath("//div[contains(@class, 'commit')]")
    assert [b.get("class").split()[-1] for b in boxes] == ["good", "good", "culprit", "bad"]
    if CHROMIUM is None:
        pytest.skip("the page was checked as HTML; laying it out needs a browser: Debian package chromium")
    probe = tmp_path / "probe.html"
    probe.write_text(page.read_text().replace("</body>", "<script>document.body.insertAdjacentHTML('beforeend', "
                                              "'<pre id=probe>' + JSON.stringify([...document.querySelectorAll("
                                              "'.commit')].map(b => b.getBoundingClientRect().top)) + '</pre>')"
                                              "</script></body>"))
    done = subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--window-size=1400,900",
                           "--dump-dom", probe.as_uri()], capture_output=True, text=True, timeout=120,
                          stdin=subprocess.DEVNULL)
    tops = json.loads(lxml_html.fromstring(done.stdout).xpath("//pre[@id='probe']")[0].text_content())
    assert len(tops) == 4 and len(set(tops)) == 1, tops  # one line of commits

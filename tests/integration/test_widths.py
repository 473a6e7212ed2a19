"""Every line fsbench writes fits the terminal, at 80 and at 120 columns (issue 43: `fsbench doctor`
had 35 lines over 80 at COLUMNS=80, --help lines to 99 columns, stacked comparison rows 88, pytest's
warnings summary a gate line again in 307-345 columns): a real paired session gated against a real
saved baseline, as a user runs it, then every fsbench command on its store. pytest's own lines
(its header, separators, its FAILURES' source) are pytest's to lay out."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.root
REPO = Path(__file__).resolve().parents[2]
#: pytest's own header lines and its separators (=== x ===, --- x ---, as wide as the terminal)
PYTESTS_OWN = re.compile(r"^(platform |rootdir: |configfile: |plugins: |cachedir: |collected |[=_-]{3}|-- Docs: )|"
                         r"(===|---|___)$")


def run(argv: list[str], columns: int) -> subprocess.CompletedProcess:
    """argv at a terminal of that width. Without CI's variables: on a CI runner pytest writes its
    short summary's FAILED lines whole, however wide (a user's terminal truncates them)."""
    env = {name: value for name, value in os.environ.items() if name not in ("CI", "BUILD_NUMBER")}
    return subprocess.run(argv, cwd=REPO, capture_output=True, text=True, timeout=600,
                          env={**env, "COLUMNS": str(columns)})


def too_wide(text: str, columns: int) -> list[str]:
    return [line for line in text.splitlines() if len(line) > columns and not PYTESTS_OWN.search(line)]


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> Path:
    """A store with a saved baseline (session 1)."""
    where = tmp_path_factory.mktemp("widths")
    saved = run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *session_args(where), "--save=base"], 120)
    assert saved.returncode == 0, saved.stdout[-3000:]
    return where / "fsbench.db"


def session_args(where: Path) -> list[str]:
    return ["benchmarks/test_dd.py", "-k", "write", "--fs=ext4", "--dd-size=8M", "--runs=6", "--image-size=512M",
            f"--image-dir={where / 'images'}", f"--store={where / 'fsbench.db'}"]


@pytest.mark.parametrize("columns", [80, 120])
def test_a_paired_gated_session_fits_the_terminal(columns, store, no_leftovers):
    done = run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *session_args(store.parent),
                "--compare=base", "--fail-on-regression=5%", "--fail-on-regression=work:5%",
                "--paired=ext4:mount=sync"], columns)
    assert done.returncode in (0, 1), done.stdout[-3000:] + done.stderr[-2000:]  # the gate decides which
    assert not too_wide(done.stdout, columns), too_wide(done.stdout, columns)
    # the answer first: its lines open fsbench's summary, before the tables
    lines = done.stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if "fsbench verdicts" in line)
    assert lines[start + 1].startswith(("sync vs default (ext4-single-1M): dd.write ", "session ")), lines[start:]
    assert "fsbench results" in "".join(lines[start + 2:start + 8])


#: each command (STORE: the session's store; TREE: a small git tree that passes for a kernel's, BISECTS:
#: a store holding two bisects) and the exit statuses it may end with
COMMANDS = [*[([command, "--help"], {0}) for command in
                                 ("doctor", "cleanup", "compare", "study", "report", "export", "upload", "profiles",
                                  "baseline", "docs", "sessions", "push", "changes", "publish", "fleet", "bisect")],
            (["doctor", "--kernel=host", "--store={store}"], {0}), (["sessions", "--store={store}"], {0}),
            (["compare", "base", "last", "--fail-on-regression=5%", "--store={store}"], {0, 1}),
            (["baseline", "--store={store}"], {0}), (["changes", "--all-hosts", "--store={store}"], {0}),
            (["profiles"], {0}), (["study"], {0}), (["compare", "nosuch", "last", "--store={store}"], {2}),
            (["report", "last", "--compare=base", "-o", "{tmp}/report.html", "--store={store}"], {0}),
            (["publish", "{tmp}/site", "--reports=newest", "--store={store}"], {0}),
            (["publish", "{tree}", "--store={store}"], {2}),
            (["bisect", "--plan", "--tree={tree}", "--good=good", "--bad=bad", "--store={store}", "--", "-k",
              "dd and write", "--fs=ext4"], {0}),
            (["bisect", "--list", "--store={store}"], {0}), (["bisect", "--list", "--store={bisects}"], {0}),
            (["bisect", "--store={store}"], {2}), (["bisect", "--tree={tree}", "--good=bad", "--bad=good"], {2}),
            (["bisect", "--resume=x", "--store={bisects}"], {2}), (["cleanup", "--dry-run"], {0})]


def kernel_tree(path: Path) -> Path:
    """A git tree that passes for a kernel's (a Kbuild at its top), its commits' subjects as long
    as a kernel's, tagged good (the first) and bad (the last)."""
    git = ["git", "-C", str(path), "-c", "user.name=t", "-c", "user.email=t@t.invalid"]
    path.mkdir()
    subprocess.run([*git, "init", "-q"], check=True)
    (path / "Kbuild").write_text("# the top of a kernel's tree\n")
    for number in range(12):
        (path / "Makefile").write_text(f"# version {number}\n")
        subprocess.run([*git, "add", "-A"], check=True)
        subprocess.run([*git, "commit", "-q", "-m", f"ext4: change {number} of the buffered write path, so that "
                        "the journal commits when its transaction is full"], check=True)
        if number in (0, 11):
            subprocess.run([*git, "tag", "good" if number == 0 else "bad"], check=True)
    return path


def bisects_store(path: Path) -> Path:
    """A store holding a finished bisect that named its culprit and an interrupted one."""
    from pytest_fsbench.store.results import Store

    store = Store(path)
    good, bad = "6bc361e1cd12" * 3 + "abcd", "5b291b3fd645" * 3 + "abcd"
    found = store.start_bisect("vm", "/var/lib/kernels/linux-series-with-a-long-name", good, bad, {})
    store.save_bisect(found, "finished", {"result": {
        "verdict": "found", "culprit": "3d1d745a" * 5, "confirmed": "confirmed: work.flushes_per_gb +4000% p<0.001",
        "subject": "ext4: flush the device after every write in the buffered write path of the journal"}})
    store.save_bisect(store.start_bisect("vm", "/var/lib/kernels/linux-series", good, bad, {}), "interrupted", {})
    store.close()
    return path


@pytest.mark.parametrize("columns", [80, 120])
def test_every_fsbench_command_fits_the_terminal(columns, store, tmp_path, monkeypatch, capsys):
    """Each command as the fsbench entry point runs it (in this process: a child each took 2 minutes
    for both widths), at a terminal COLUMNS wide."""
    from pytest_fsbench import cli

    monkeypatch.setenv("COLUMNS", str(columns))
    places = {"{tmp}": tmp_path, "{store}": store, "{tree}": kernel_tree(tmp_path / "linux"),
              "{bisects}": bisects_store(tmp_path / "bisects.db")}
    for words, status in COMMANDS:
        argv = [re.sub(r"\{\w+\}", lambda found: str(places[found.group(0)]), arg) for arg in words]
        try:
            exited = cli.main(argv)
        except SystemExit as exc:  # --help
            exited = exc.code
        said = capsys.readouterr()
        assert exited in status and (said.out or said.err), (argv, exited, said.err[-2000:])
        if exited == 2:  # a usage error is one line, whatever its width (the project's rule)
            assert len(said.err.splitlines()) == 1, said.err
            continue
        assert not too_wide(said.out + said.err, columns), (argv, too_wide(said.out + said.err, columns))

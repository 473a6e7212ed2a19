"""Every command in the README and on the documentation site runs as written, from the checkout
after ./fsbench.sh setup: each line of a ```sh block is a command (or several, joined with ; or
&&); pytest lines run with --collect-only (their options are checked, their cases collected,
nothing built), fsbench lines that only read run as they are, and the rest are skipped for the
reason REASONS gives them, never silently. They run against a store of the test's own, which a
real short session made and saved as the baselines the pages name (base, nightly), so a
--compare line is checked against a baseline that exists."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
from pathlib import Path

import pytest

from pytest_fsbench.store.results import Store

REPO = Path(__file__).resolve().parents[2]
PAGES = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]
BLOCK = re.compile(r"^```sh\n(.*?)^```", re.S | re.M)
PYTEST, FSBENCH = ".venv/bin/pytest", ".venv/bin/fsbench"
#: the set-up script: its `packages` lists what a command would install, installing nothing
SCRIPT = "./fsbench.sh"

#: fsbench commands the test runs as written, in a directory of their own (what they write lands there)
FSBENCH_RUNS = re.compile(r"^\.venv/bin/fsbench (--help|--version|doctor|profiles|sessions|baseline|docs|study"
                          r"|compare|report|export|changes|publish|cleanup --dry-run|bisect --list)( |$)")
#: what the test does not run, and why; the first pattern a command line matches decides
REASONS: tuple[tuple[str, str], ...] = (
    (r"^\./fsbench\.sh (?!packages )", "installs packages, then runs the whole quick bench or fsbench's tests (minutes)"),
    (r"^\.venv/bin/fsbench baseline --drop", "forgets a baseline of the store"),
    (r"^\.venv/bin/fsbench (push|upload) ", "sends sessions to another store, or to PTS's upload"),
    (r"^\.venv/bin/fsbench study \S+(?!.*--plan)", "runs a study (minutes to hours)"),
    (r"^\.venv/bin/fsbench cleanup(?! --dry-run)", "removes what killed sessions left on this machine"),
    (r"^\.venv/bin/fsbench bisect (?!--list)", "bisects a kernel tree of yours: builds its kernels and measures "
     "them (tens of minutes; tests/integration/test_bisect.py runs a real bisect)"),
    (r"^\.venv/bin/python scripts/kernel_series\.py", "unpacks Linux's source into a git tree of 1.7 GB (minutes)"),
    (r"^\.venv/bin/python scripts/", "an evidence script: minutes of measuring"),
    (r"^\.venv/bin/python -m http\.server", "serves a directory until it is stopped"),
    (r"--kernel=\S*(uml|vm):\w+=/src/", "boots a kernel you built (its path is yours)"),
    (r"--devices=/dev/", "overwrites the disks it names (they are yours)"),
    (r"^(apt-get|pg_ctlcluster|su postgres|echo .*pgpass|export FSBENCH_STORE=postgresql)",
     "sets up a PostgreSQL server, as root, once"),
    (r"FSBENCH_STORE=postgresql|& \.venv", "needs the team's PostgreSQL server"),
    (r"@[a-z]", "names another machine of a team's store"),
    (r"^phoronix-test-suite|--pts-save", "needs the Phoronix Test Suite, which no package registry carries"),
)
#: pages whose commands the test does not run, and why (the first pattern of REASONS still decides a line)
PAGE_REASONS = {
    "docs/fleet.md": "sets up Slurm, munge and network namespaces as root, or submits to a cluster "
                     "(tests/integration/test_fleet_cluster.py builds such a cluster and runs fsbench fleet on it)",
}
#: the sessions the pages name (compare base 3, compare 1 2, report 3, export 3, ...)
SESSIONS = 3


def shell_commands(text: str) -> list[str]:
    """The command lines of a page's ```sh blocks, continuation lines joined."""
    lines = [line.strip() for block in BLOCK.findall(text)
             for line in block.replace("\\\n", " ").splitlines()]
    return [line for line in lines if line and not line.startswith("#")]


def parts(line: str) -> list[list[str]]:
    """A command line's commands (split at ;, && and &), each as its words, comments left out."""
    lexer = shlex.shlex(line, posix=True, punctuation_chars=";&")
    lexer.whitespace_split = True
    commands: list[list[str]] = [[]]
    for word in lexer:
        if word in (";", "&&", "&"):
            commands.append([])
        else:
            commands[-1].append(word)
    return [command for command in commands if command]


def documented() -> list[tuple[str, str]]:
    return [(str(page.relative_to(REPO)), command)
            for page in PAGES for command in shell_commands(page.read_text())]


def skip_reason(command: str, page: str = "") -> str | None:
    return next((reason for pattern, reason in REASONS if re.search(pattern, command)), PAGE_REASONS.get(page))


def runnable(line: str) -> bool:
    """Whether every command of the line is one the test runs: pytest, or fsbench that only reads."""
    return all(words[0] == PYTEST or FSBENCH_RUNS.match(" ".join(words)) or words[:2] == [SCRIPT, "packages"]
               for words in parts(line))


def argv_of(words: list[str]) -> list[str]:
    """A pytest command collects only."""
    if words[0] != PYTEST:
        return words
    return words if "--collect-only" in words else [*words, "--collect-only", "-q"]


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> Path:
    """A store holding SESSIONS real short sessions (dd write on btrfs and ext4, 10 runs of 16M each), the
    first saved as base, and through the store as nightly too."""
    where = tmp_path_factory.mktemp("doc-commands")
    for session in range(SESSIONS):
        save = ["--save=base"] if session == 0 else []
        # ext4 too: the README's CI step gates ext4 against nightly, and a gate whose baseline holds
        # none of the session's tests is refused before measuring (issue 34)
        made = subprocess.run([PYTEST, "benchmarks/test_dd.py", "-k", "write", "--fs=btrfs,ext4", "--runs=10",
                               "--warmup=0", "--dd-size=16M", f"--store={where / 'fsbench.db'}",
                               f"--image-dir={where / 'images'}", *save, "-q", "-p", "no:cacheprovider"],
                              cwd=REPO, capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL)
        assert made.returncode == 0, made.stdout[-3000:] + made.stderr[-2000:]
    opened = Store(where / "fsbench.db", create=False)
    try:
        opened.save_baseline("nightly", 1)
    finally:
        opened.close()
    return where / "fsbench.db"


def test_the_pages_have_commands_and_every_one_has_a_consistent_form():
    commands = documented()
    assert len(commands) >= 40, len(commands)
    readme = [command for page, command in commands if page == "README.md"]
    assert len(readme) >= 8, readme
    bare = [(page, c) for page, c in commands if re.match(r"(pytest|fsbench|python3?) ", c)]
    assert bare == [], "write .venv/bin/pytest and .venv/bin/fsbench, as every other command does"
    unknown = [(page, line) for page, line in commands if skip_reason(line, page) is None and not runnable(line)]
    assert unknown == [], "a command neither run nor skipped for a stated reason"


@pytest.mark.root
@pytest.mark.parametrize(("page", "line"), documented(), ids=lambda value: value[:80])
def test_the_command_runs_as_written(page, line, store, tmp_path):
    reason = skip_reason(line, page)
    if reason is not None:
        pytest.skip(f"{page}: {reason}")
    assert runnable(line), f"{page}: {line}: neither run nor skipped for a stated reason"
    for words in parts(line):
        where = REPO if words[0] in (PYTEST, SCRIPT) else tmp_path  # fsbench's files land in the test's directory
        command = argv_of(words) if words[0] == PYTEST else [str(REPO / words[0]), *words[1:]]
        done = subprocess.run(command, cwd=where, env={**os.environ, "FSBENCH_STORE": str(store)},
                              capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL)
        # compare's exit status is its verdict (1: a regression, or a significantly worse metric): on
        # sessions measured minutes apart on a shared machine either can be right, so both are
        # accepted, never a usage error (2) or a traceback
        ok = (0, 1) if words[:2] == [FSBENCH, "compare"] else (0,)
        assert done.returncode in ok, f"{page}: {line}\n{done.stdout[-2000:]}{done.stderr[-2000:]}"
        assert "Traceback" not in done.stderr, f"{page}: {line}\n{done.stderr[-2000:]}"
        if words[0] == PYTEST:
            assert re.search(r"^(\d+/)?\d+ tests? collected", done.stdout, re.M), done.stdout[-2000:]

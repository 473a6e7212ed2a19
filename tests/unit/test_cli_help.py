"""The fsbench command's first screen: --version says the installed version, --help says that
benchmarks are pytest tests and shows the commonest commands."""

from __future__ import annotations

from importlib import metadata

import pytest

from pytest_fsbench import cli


def test_version_is_the_installed_packages(capsys):
    with pytest.raises(SystemExit) as exited:
        cli.main(["--version"])
    assert exited.value.code == 0
    assert capsys.readouterr().out == f"fsbench {metadata.version('pytest-fsbench')}\n"


def test_help_says_benchmarks_are_pytest_tests_and_shows_the_commonest_commands(capsys):
    with pytest.raises(SystemExit) as exited:
        cli.main(["--help"])
    out = capsys.readouterr().out
    assert exited.value.code == 0
    assert "The benchmarks are pytest tests" in out and ".venv/bin/pytest benchmarks/test_dd.py --fs=" in out
    named = [line.split()[1] for line in out.splitlines() if line.startswith("  .venv/bin/fsbench ")]
    # bisect's too: a merge once left it out
    assert named == ["doctor", "sessions", "compare", "report", "study", "cleanup", "fleet", "bisect"], named
    assert max(map(len, out.splitlines())) <= 120


@pytest.mark.parametrize("columns", [80, 120])
def test_help_fits_the_terminal(columns, capsys, monkeypatch):
    """Issue 43: --help's description and examples were 99 columns on an 80-column terminal."""
    monkeypatch.setenv("COLUMNS", str(columns))
    with pytest.raises(SystemExit):
        cli.main(["--help"])
    out = capsys.readouterr().out
    assert max(map(len, out.splitlines())) <= columns, [line for line in out.splitlines() if len(line) > columns]
    # the examples, broken between arguments, still paste as commands
    assert "  .venv/bin/pytest benchmarks/test_dd.py --fs=btrfs --compare=base" in out

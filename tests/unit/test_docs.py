"""The README's reference tables are the ones the registries generate (fsbench docs)."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_fsbench import docs
from pytest_fsbench.filesystems import FILESYSTEMS
from pytest_fsbench.workloads import PARAMS

README = Path(__file__).resolve().parents[2] / "README.md"


def test_the_readme_carries_the_generated_tables():
    assert docs.current_block(README) == docs.tables(), "run: fsbench docs --write README.md"


def test_every_option_parameter_and_filesystem_has_a_row():
    block = docs.tables()
    assert all(f"`--{param.name}` | `{param.ini}`" in block for param in PARAMS)
    assert all(f"\n| {fs} | " in block for fs in FILESYSTEMS)
    assert "| `--fs` | `fsbench_fs` |" in block and "| `--save=NAME` |  |" in block


def test_replacing_needs_the_markers_and_keeps_the_rest():
    text = f"before\n{docs.BEGIN}\nold\n{docs.END}\nafter\n"
    assert docs.replace_block(text, "NEW") == "before\nNEW\nafter\n"
    with pytest.raises(ValueError, match="no generated block"):
        docs.replace_block("no markers here", "NEW")

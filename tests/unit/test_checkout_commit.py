"""The fsbench commit a session records (its manifest's fsbench_commit, shown in every report and
compared by fsbench changes), read from real git checkouts: a clone's branch, the same branch once
git packed its refs, a worktree's branch, a detached HEAD (issue 43: a worktree's report said
"commit unknown", as did a checkout after git gc)."""

from __future__ import annotations

import subprocess
from pathlib import Path

from pytest_fsbench.session import git_commit


def git(where: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(where), "-c", "user.name=t", "-c", "user.email=t@t.invalid", *args],
                          check=True, capture_output=True, text=True).stdout.strip()


def test_the_commit_of_a_checkout_a_worktree_packed_refs_and_a_detached_head(tmp_path):
    top = tmp_path / "fsbench"
    top.mkdir()
    git(top, "init", "-q", "-b", "main")
    (top / "README.md").write_text("one\n")
    git(top, "add", "-A")
    git(top, "commit", "-q", "-m", "one")
    first = git(top, "rev-parse", "HEAD")
    assert git_commit(top) == first
    git(top, "worktree", "add", "-q", "-b", "topic", str(tmp_path / "wt"))
    (tmp_path / "wt" / "README.md").write_text("two\n")
    git(tmp_path / "wt", "commit", "-q", "-am", "two")
    second = git(tmp_path / "wt", "rev-parse", "HEAD")
    assert git_commit(tmp_path / "wt") == second and git_commit(top) == first
    git(top, "pack-refs", "--all")
    assert not (top / ".git" / "refs" / "heads" / "main").exists()
    assert git_commit(top) == first and git_commit(tmp_path / "wt") == second
    git(top, "checkout", "-q", "--detach", first)
    assert git_commit(top) == first
    assert git_commit(tmp_path / "none") is None

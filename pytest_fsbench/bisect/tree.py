"""The kernel tree a bisect measures: the user's git repository, read only (its commits, their
subjects and what they changed), and the bisect's own checkout of it, a shared clone in the
bisect's work directory whose files git rewrites only where a commit changed them, so the build
beside it recompiles only what changed."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from ..errors import CommandError, UsageError
from ..options import special_kind
from ..system.commands import Executor


@dataclass(frozen=True)
class Commit:
    sha: str
    subject: str


def _git(execute: Executor, tree: Path, *args: str, timeout: float = 600.0, check: bool = True):
    return execute(["git", "-C", str(tree), *args], timeout=timeout, check=check)


def check_tree(tree: Path, execute: Executor) -> None:
    """UsageError unless tree is a git repository of a Linux source (its top-level Kbuild files)."""
    if not tree.is_dir():
        raise UsageError(f"--tree={tree}: {not_a_directory(tree)}; name a git repository of the Linux kernel's source")
    if _git(execute, tree, "rev-parse", "--git-dir", check=False).returncode != 0:
        raise UsageError(f"--tree={tree}: not a git repository; bisect needs the kernel's history (git clone it, or "
                         "make one: scripts/kernel_series.py)")
    if not (tree / "Kbuild").is_file() and _git(execute, tree, "cat-file", "-e", "HEAD:Kbuild",
                                                 check=False).returncode != 0:
        raise UsageError(f"--tree={tree}: no Linux source in it (no Kbuild at its top); name the kernel's tree")


def not_a_directory(path: Path) -> str:
    """What a path that is no directory is: missing, or what it is instead (a file, a FIFO, a
    device: it exists, so "no such directory" would send the user looking for it)."""
    if not path.exists():
        return "no such directory"
    if os.path.samefile(path, os.devnull):
        return "is the null device, not a directory"
    return f"is {special_kind(path) or 'a file'}, not a directory"


def resolve(tree: Path, rev: str, option: str, execute: Executor) -> str:
    """The commit a revision names (a hash, tag or branch), as a full hash."""
    done = _git(execute, tree, "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}", check=False)
    if done.returncode != 0 or not done.stdout.strip():
        raise UsageError(f"{option}={rev}: names no commit in {tree}; give a hash, tag or branch (git log shows them)")
    return done.stdout.strip()


def commits_between(tree: Path, good: str, bad: str, execute: Executor) -> list[Commit]:
    """The commits after good up to bad, oldest first, on bad's first-parent line (as `git bisect
    start --first-parent` walks a history with merges: a culprit merge is named as the merge)."""
    if _git(execute, tree, "merge-base", "--is-ancestor", good, bad, check=False).returncode != 0:
        raise UsageError(not_an_ancestor(tree, good, bad, execute))
    out = _git(execute, tree, "log", "--first-parent", "--reverse", "--format=%H%x09%s", f"{good}..{bad}").stdout
    found = [Commit(*line.split("\t", 1)) if "\t" in line else Commit(line, "") for line in out.splitlines() if line]
    if not found:
        raise UsageError(f"--good={good[:12]} and --bad={bad[:12]} are the same commit: nothing lies between them")
    if found[-1].sha != bad:
        raise UsageError(f"--good={good[:12]} is not on the first-parent line of --bad={bad[:12]}; name a good commit "
                         "on it (git log --first-parent BAD)")
    return found


def not_an_ancestor(tree: Path, good: str, bad: str, execute: Executor) -> str:
    """Why good is no ancestor of bad: the two given the other way round, or on two branches
    (issue 44's sweep: a side branch's commit was told to swap them, which cannot help)."""
    if _git(execute, tree, "merge-base", "--is-ancestor", bad, good, check=False).returncode == 0:
        return (f"--good={good[:12]} is a descendant of --bad={bad[:12]}, not an ancestor: a bisect looks for the "
                "commit after the good one that made it worse; swap them")
    base = _git(execute, tree, "merge-base", good, bad, check=False).stdout.strip()
    where = f"their branches part at {base[:12]}" if base else "they share no history"
    return (f"--good={good[:12]} is not an ancestor of --bad={bad[:12]} ({where}): a bisect walks the history "
            f"that leads to --bad; name a good commit on it{f', e.g. {base[:12]}' if base else ''}")


def changed_files(tree: Path, sha: str, execute: Executor) -> list[str]:
    """What a commit changed: its files, as git show --stat lists them."""
    out = _git(execute, tree, "show", "--stat=200", "--format=", sha, check=False).stdout
    return [line.strip() for line in out.splitlines() if line.strip()]


def checkout(tree: Path, source: Path, sha: str, execute: Executor) -> None:
    """The bisect's own checkout of sha: a shared clone of tree made once (the user's repository
    and its working files are never touched), then git checkout, which rewrites only the files
    that differ, so their neighbours keep their times and make rebuilds only what changed."""
    if not (source / ".git").is_dir():
        source.parent.mkdir(parents=True, exist_ok=True)
        execute(["git", "clone", "--quiet", "--shared", "--no-checkout", str(tree), str(source)], timeout=3600)
    if _git(execute, source, "cat-file", "-e", f"{sha}^{{commit}}", check=False).returncode != 0:
        _git(execute, source, "fetch", "--quiet", "origin", timeout=3600)
    try:
        _git(execute, source, "-c", "advice.detachedHead=false", "checkout", "--quiet", "--force", "--detach", sha,
             timeout=3600)
    except CommandError as exc:
        raise CommandError(exc.argv, exc.returncode, exc.output,
                           f"could not check {sha[:12]} out in the bisect's own checkout {source}") from None

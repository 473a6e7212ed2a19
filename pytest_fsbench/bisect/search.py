"""Which commit a bisect measures next, and what its verdicts say of the first bad commit, as `git
bisect` decides them: the range is the commits after the good endpoint up to the bad one (oldest
first, the bad one last, on the first-parent line), each measured commit is good, bad or skipped
(it did not build, boot or decide), and the next commit is the untested one nearest the middle of
the commits still in question, skipped ones left out. Pure: lists of hashes in, a hash out."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

GOOD, BAD, SKIP = "good", "bad", "skip"


@dataclass(frozen=True)
class Standing:
    """Where the search stands: the commits still in question (the first bad commit is one of
    them), the untested ones among them, and the first bad one once only it is left."""

    in_question: tuple[str, ...]
    untested: tuple[str, ...]

    @property
    def found(self) -> str | None:
        """The first bad commit, once it is the only one in question."""
        return self.in_question[0] if len(self.in_question) == 1 else None

    @property
    def done(self) -> bool:
        """Nothing more to measure: found, or only skipped commits (and the first bad) left."""
        return self.found is not None or not self.untested


def standing(commits: Sequence[str], verdicts: Mapping[str, str]) -> Standing:
    """commits: the range, oldest first, ending with the bad endpoint (known bad). The first bad
    commit lies after the newest good one and at or before the oldest bad one after it."""
    if not commits:
        raise ValueError("an empty range has no first bad commit")
    last_good = max((i for i, sha in enumerate(commits) if verdicts.get(sha) == GOOD), default=-1)
    first_bad = min((i for i, sha in enumerate(commits) if verdicts.get(sha) == BAD and i > last_good),
                    default=len(commits) - 1)
    in_question = tuple(commits[last_good + 1:first_bad + 1])
    untested = tuple(sha for sha in in_question[:-1] if sha not in verdicts)
    return Standing(in_question, untested)


def next_commit(commits: Sequence[str], verdicts: Mapping[str, str]) -> str | None:
    """The untested commit in question nearest the middle of those in question (the earlier of two
    equally near), None when nothing is left to measure."""
    where = standing(commits, verdicts)
    if where.done:
        return None
    middle = (len(where.in_question) - 1) / 2
    position = {sha: i for i, sha in enumerate(where.in_question)}
    return min(where.untested, key=lambda sha: (abs(position[sha] - middle), position[sha]))


def steps_expected(commits: int) -> int:
    """The steps a bisect of a range of this many commits (the bad endpoint among them) takes
    without a skip: log2 of the commits in question, rounded up."""
    return math.ceil(math.log2(commits)) if commits > 1 else 0

"""The search alone: which commit comes next, skips as git bisect skip treats them, the first bad
commit found, and the steps a range takes."""

from __future__ import annotations

import math

import pytest

from pytest_fsbench.bisect.search import BAD, GOOD, SKIP, next_commit, standing, steps_expected

COMMITS = [f"c{i}" for i in range(1, 11)]  # c10 is the bad endpoint


def bisect_to(culprit: int, commits: list[str] = COMMITS, skipped: frozenset[str] = frozenset()) -> tuple[list[str], dict]:
    """The commits a search measures when every verdict is right (commit i is bad from culprit on)."""
    verdicts: dict[str, str] = {}
    measured = []
    while (sha := next_commit(commits, verdicts)) is not None:
        measured.append(sha)
        index = commits.index(sha) + 1
        verdicts[sha] = SKIP if sha in skipped else BAD if index >= culprit else GOOD
    return measured, verdicts


@pytest.mark.parametrize("culprit", range(1, 11))
def test_every_culprit_of_ten_commits_is_found_in_at_most_four_steps(culprit):
    measured, verdicts = bisect_to(culprit)
    assert standing(COMMITS, verdicts).found == f"c{culprit}"
    assert len(measured) <= steps_expected(len(COMMITS)) == 4


def test_the_first_step_is_the_middle_and_the_next_halves_what_is_left():
    assert next_commit(COMMITS, {}) == "c5"  # of c1..c10, the earlier of the two middles
    assert next_commit(COMMITS, {"c5": GOOD}) == "c8"  # c6..c10 left
    assert next_commit(COMMITS, {"c5": BAD}) == "c3"  # c1..c5 left


def test_a_skipped_commit_is_stepped_around_and_named_among_the_candidates_when_it_must_be():
    measured, verdicts = bisect_to(6, skipped=frozenset({"c6"}))
    where = standing(COMMITS, verdicts)
    assert where.found is None and where.done
    assert where.in_question == ("c6", "c7")  # c6 could not be told: the first bad is c6 or c7
    assert "c6" in measured and verdicts["c6"] == SKIP


def test_a_skip_next_to_a_decided_commit_still_finds_the_culprit():
    _, verdicts = bisect_to(7, skipped=frozenset({"c5"}))
    assert standing(COMMITS, verdicts).found == "c7"


def test_the_bad_endpoint_alone_is_the_culprit_when_everything_before_is_good():
    _, verdicts = bisect_to(10)
    assert standing(COMMITS, verdicts).found == "c10"
    assert standing(["only"], {}).found == "only" and next_commit(["only"], {}) is None


def test_steps_expected_is_log2_rounded_up():
    assert [steps_expected(n) for n in (1, 2, 3, 8, 10, 64, 65)] == [0, 1, 2, 3, 4, 6, 7]
    assert steps_expected(1000) == math.ceil(math.log2(1000))


def test_an_empty_range_is_refused():
    with pytest.raises(ValueError, match="empty range"):
        standing([], {})

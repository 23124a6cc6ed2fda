"""The bisection search over a table of outcomes: every position of the culprit, undecided steps,
a BAD that does not differ, and the number of campaigns it spends."""

from __future__ import annotations

import math

import pytest

from reportgen.errors import UserError
from reportgen.history.bisect import Outcome, bisect


def _table(n: int, culprit: int, *, slow: float = 0.9, undecided: frozenset[int] = frozenset()):
    commits = [f"{i:040x}" for i in range(1, n + 1)]
    calls: list[str] = []

    def compare(sha: str) -> Outcome:
        calls.append(sha)
        i = commits.index(sha)
        ratio = slow if i >= culprit else 1.0
        differs = None if i in undecided else i >= culprit
        return Outcome(sha, differs, ratio, pairs=4, runs=8, minutes=2.0)

    return commits, compare, calls


@pytest.mark.parametrize("n", [1, 2, 3, 7, 8, 13])
def test_finds_every_culprit_position_in_log_steps(n: int) -> None:
    for culprit in range(n):
        commits, compare, calls = _table(n, culprit)
        res = bisect("0" * 40, commits[-1], commits, compare)
        assert res.culprit == commits[culprit]
        assert res.certain
        assert len(calls) == len(set(calls)) <= 1 + math.ceil(math.log2(n))
        assert res.runs == 8 * len(calls) and res.minutes == 2.0 * len(calls)
        assert res.culprit_step is not None and res.culprit_step.call == "differs"


def test_bad_that_does_not_differ_has_no_culprit_after_one_campaign() -> None:
    commits, compare, calls = _table(8, culprit=99)
    res = bisect("0" * 40, commits[-1], commits, compare)
    assert res.culprit is None and calls == [commits[-1]]
    assert "does not differ" in res.notes[0]


def test_undecided_step_is_classified_by_its_estimate_and_named() -> None:
    commits, compare, _ = _table(8, culprit=5, undecided=frozenset({3, 5}))
    res = bisect("0" * 40, commits[-1], commits, compare)
    # Commit 3 (ratio 1.0) is nearer no change, commit 5 (0.9) nearer BAD: the search still ends at 5.
    assert res.culprit == commits[5]
    assert not res.certain and "re-measure" in res.notes[0]
    assert [s.decided for s in res.steps if s.index in (3, 5)] == [False, False]


def test_an_improvement_is_a_difference_too() -> None:
    commits, compare, _ = _table(6, culprit=2, slow=1.2)
    assert bisect("0" * 40, commits[-1], commits, compare).culprit == commits[2]


def test_a_step_that_differs_the_other_way_from_bad_does_not_carry_its_change() -> None:
    """BAD is slower; commit 1 measured faster than GOOD (decided): it is on GOOD's side, and the
    search still ends at the slow commit 2."""
    commits = [f"{i:040x}" for i in range(1, 5)]
    ratios = {commits[0]: 1.0, commits[1]: 1.4, commits[2]: 0.5, commits[3]: 0.5}

    def compare(sha: str) -> Outcome:
        return Outcome(sha, ratios[sha] != 1.0, ratios[sha], pairs=3)

    res = bisect("0" * 40, commits[-1], commits, compare)
    assert res.culprit == commits[2] and res.certain
    assert next(s for s in res.steps if s.outcome.sha == commits[1]).call == "same"


def test_bad_range_is_a_user_error() -> None:
    with pytest.raises(UserError, match="no commit between"):
        bisect("a", "b", [], lambda s: Outcome(s, True, 0.9))
    with pytest.raises(UserError, match="must end at BAD"):
        bisect("a", "b", ["c"], lambda s: Outcome(s, True, 0.9))


def test_an_undecided_bad_is_searched_and_named() -> None:
    commits, compare, _ = _table(8, culprit=4, undecided=frozenset({7}))
    res = bisect("0" * 40, commits[-1], commits, compare)
    assert res.culprit == commits[4] and not res.certain
    assert "BAD's difference from GOOD was not decided" in res.notes[0]

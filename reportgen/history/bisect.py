"""Bisection to the first commit whose performance differs from GOOD's (pure; part of reportgen.history).

The search is a plain function over a `compare(sha) -> Outcome` callable: the caller decides how
a commit is measured against GOOD (reportgen.bisect runs a paired campaign of the two revisions,
balanced random order, stopped when decided; the unit tests pass a table). Keeping the search
pure is what lets it be tested on every shape of history in milliseconds, and the real runs then
prove only the measuring.

The rule, as Chromium's Pinpoint and `git bisect` use it: BAD is measured first (if it does not
differ from GOOD there is nothing to find; if its campaign could not decide, the search goes on as
the user asked, and the result says so); then the range (GOOD, BAD] is halved, each midpoint
measured against GOOD: "differs" moves the upper end down to it, "same" moves the lower end up.
A midpoint that differs the other way from BAD (faster where BAD is slower) is "same": it does not
carry BAD's change.
A midpoint the campaign could not decide (its most pairs spent, the interval still open) is
classified by where its estimate lies: nearer BAD's change than no change is "differs", else
"same"; the step keeps `decided=False` and the result says so, so a reader knows which step to
re-measure with more pairs.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Literal

from reportgen.errors import UserError

Call = Literal["differs", "same"]


@dataclass(frozen=True)
class Outcome:
    """One commit measured against GOOD: the run-level ratio commit / GOOD of the primary metric
    (as the analysis stored it), and whether the campaign decided it.

    `differs` True: the interval cleared the minimum effect either way (accepted or rejected);
    False: no change (the interval inside the equivalence margin, or the minimum effect out of
    reach); None: undecided at the design's last look."""

    sha: str
    differs: bool | None
    ratio: float
    low: float | None = None
    high: float | None = None
    pairs: int = 0
    verdict: str = ""
    experiment: str = ""  # the campaign's folder under runs/ (its evidence)
    minutes: float = 0.0  # wall minutes the campaign took
    runs: int = 0  # runs it spent (formal, both arms)


@dataclass(frozen=True)
class Step:
    """One measured commit, the call made on it and the range left after it."""

    index: int  # position in the range's commits (0 = the first commit after GOOD)
    outcome: Outcome
    call: Call
    decided: bool
    low: int  # after this step: commits[low] is the last known "same" (-1: GOOD itself)
    high: int  # commits[high] is the first known "differs"


@dataclass(frozen=True)
class BisectResult:
    good: str
    bad: str
    commits: tuple[str, ...]  # the commits after GOOD up to BAD, oldest first
    steps: tuple[Step, ...]
    culprit: str | None  # the first commit that differs from GOOD; None: BAD does not differ
    certain: bool  # every step that bounded the culprit was decided by its campaign
    notes: tuple[str, ...] = field(default=())

    @property
    def runs(self) -> int:
        return sum(s.outcome.runs for s in self.steps)

    @property
    def minutes(self) -> float:
        return sum(s.outcome.minutes for s in self.steps)

    @property
    def culprit_step(self) -> Step | None:
        return next((s for s in self.steps if self.culprit and s.outcome.sha == self.culprit), None)


def _call(outcome: Outcome, bad_log: float) -> tuple[Call, bool]:
    x = math.log(outcome.ratio) if outcome.ratio > 0 else 0.0
    if outcome.differs is not None:
        # A commit that moved the other way from BAD (faster where BAD is slower) does not carry BAD's
        # change: it is on GOOD's side of the search, as git bisect's "old" is. Calling it "differs"
        # would send the search below the change it looks for (a busy machine's false difference in
        # the wrong direction did so).
        carries_bad = outcome.differs and x * bad_log >= 0
        return ("differs" if carries_bad else "same"), True
    # Undecided: nearer BAD's change (on logs) than no change at all.
    return ("differs" if abs(x - bad_log) < abs(x) else "same"), False


def bisect(good: str, bad: str, commits: Sequence[str], compare: Callable[[str], Outcome]) -> BisectResult:
    """The first of `commits` (oldest first, BAD last, GOOD excluded) whose performance differs
    from GOOD's; at most 1 + ceil(log2(len(commits))) calls of `compare`."""
    commits = tuple(commits)
    if not commits:
        raise UserError(f"bisect {good[:12]} {bad[:12]}: no commit between them (is GOOD an ancestor of BAD?)")
    if commits[-1] != bad:
        raise UserError(f"bisect: the range must end at BAD ({bad[:12]}), it ends at {commits[-1][:12]}")
    steps: list[Step] = []
    first = compare(bad)
    bad_log = math.log(first.ratio) if first.ratio > 0 else 0.0
    # BAD undecided: the user called it bad, so the search goes on, and says it was not shown.
    call: Call = "same" if first.differs is False else "differs"
    decided = first.differs is not None
    low, high = -1, len(commits) - 1
    steps.append(Step(high, first, call, decided, low, high))
    if call == "same":
        return BisectResult(good, bad, commits, tuple(steps), None, True, ("BAD does not differ from GOOD",))
    extra = () if decided else ("BAD's difference from GOOD was not decided by its campaign: searched as if it were",)
    while high - low > 1:
        mid = (low + high) // 2
        out = compare(commits[mid])
        call, decided = _call(out, bad_log)
        if call == "differs":
            high = mid
        else:
            low = mid
        steps.append(Step(mid, out, call, decided, low, high))
    bounding = [s for s in steps if s.index in (low, high)]
    certain = all(s.decided for s in bounding) and steps[0].decided
    notes = extra + (
        () if certain else ("a step that bounds the culprit was undecided: re-measure it with more pairs",)
    )
    return BisectResult(good, bad, commits, tuple(steps), commits[high], certain, notes)

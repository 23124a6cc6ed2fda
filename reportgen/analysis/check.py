"""One guardrail check's parts: what it is given (`GuardrailInput`), what it returns (`guardrail`,
the document's `GuardrailResult`), its statuses, and `which_runs` for its reasons.

Part of reportgen.analysis (pure). Every guardrail is a `Check`, a function of one
`GuardrailInput`, registered in order in `reportgen.analysis.guardrails.CHECKS`; this module is
below it so that a check in a module of its own (overlap.py, quiet.py) imports these parts without
importing the registry that lists it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Final

from reportgen.analysis.document import GuardrailResult, GuardrailStatus, GuardrailTally
from reportgen.store.run import StoredRun

PASS: Final = "pass"
FAIL: Final = "fail"
WARN: Final = "warn"
NA: Final = "not_applicable"


@dataclass(frozen=True)
class Span:
    """One run's time on its machine, as recorded under the runs folder."""

    label: str  # "other-exp/A1/1", "exp/archive/20261201T100000Z/baseline-1"
    experiment: str
    path: str | None  # "A1/1" for a run in its experiment's own folder (not archived)
    machine: str | None  # fingerprint_id
    start: float  # epoch seconds
    end: float
    end_estimated: bool = False  # no ended_utc: the last write to its files


@dataclass(frozen=True)
class GuardrailInput:
    """Everything a guardrail may look at for one comparison: the finished formal runs of both arms,
    what the spec declares, and the facts the I/O edge gathered about the machine."""

    baseline: Sequence[StoredRun]
    candidate: Sequence[StoredRun]
    expected_steps: int | None  # steps each run should complete ([workload].steps or the steps flag)
    batch_flag: str  # the flag that gives the global batch
    fixed_flags: Sequence[str]  # flags the candidate must not change ([workload].flags)
    windows: Sequence[tuple[str, int, int]]  # (name, first step, last step), at least one
    experiment: str = ""  # the experiment's folder name (the overlap check's own runs)
    spans: Sequence[Span] = ()  # every run recorded on the machines of these runs
    # Fixed-workload flags set anew for every block ([run] seeds = "per-block"): equal within a pair,
    # not across pairs. Empty when the seeds are fixed (then they are ordinary fixed flags).
    seed_flags: Sequence[str] = ()

    @property
    def runs(self) -> list[StoredRun]:
        """The runs of both arms, the baseline's first."""
        return [*self.baseline, *self.candidate]


Check = Callable[[GuardrailInput], GuardrailResult]


def guardrail(
    id: str, title: str, status: GuardrailStatus, reason: str, evidence: str | None = None
) -> GuardrailResult:
    """The document's `GuardrailResult`, with `passed` following `status` (None when not applicable)."""
    return GuardrailResult(
        id=id,
        title=title,
        status=status,
        passed=None if status == NA else status == PASS,
        reason=reason,
        evidence=evidence,
    )


def which_runs(runs: Sequence[StoredRun]) -> str:
    """The runs a passing check covered, by arm: "baseline and A1" with one run per arm,
    "baseline (3 runs) and A1 (3 runs)" with repeats; reads better than a bare count."""
    arms: dict[str, int] = {}
    for r in runs:
        arms[r.arm] = arms.get(r.arm, 0) + 1
    names = [a if n == 1 else f"{a} ({n} runs)" for a, n in arms.items()]
    if not names:
        return "no run"
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def tally(results: Sequence[GuardrailResult]) -> GuardrailTally:
    """The one count of a comparison's guardrails (analysis.json `guardrail_tally`): the verdict's
    sentence and every page read it, so no two places count differently."""
    return GuardrailTally(
        total=len(results),
        passed=sum(g.status == PASS for g in results),
        warned=[g.title for g in results if g.status == WARN],
        failed=[g.title for g in results if g.status == FAIL],
        not_applicable=sum(g.status == NA for g in results),
    )

"""Pairs set aside because the machine was not quiet while they ran (part of reportgen.analysis, pure).

A pair (one block's run of the reference arm and of the candidate) in which one run was disturbed
far more than the other (the `quiet_machine` rule of quiet.py, applied to that pair alone) is set
aside: its runs stay on disk and in the arms' tables, marked, but the comparison is made from the
other pairs, before runlevel.compare sees them. The sequential campaign then still needs a pair
(`needs_pairs`) and runs a new block in its place. Sequential campaigns only: in a fixed campaign
nothing would run a pair in its place, so its pairs are all judged as before (one arm disturbed far
more than the other makes the comparison invalid, and the next step reruns it on a quiet machine).

Up to `MAX_SET_ASIDE` pairs of one comparison may be set aside. A machine that disturbs more pairs
than that is not a passing accident but the machine the campaign runs on: no pair is set aside
then, and the `quiet_machine` guardrail fails (the comparison is invalid, basis `disturbed`),
naming every disturbed pair. A limit at all, because a campaign that set aside pairs without end
would run forever on a busy machine; 2, because on a quiet machine a disturbed pair is rare (a
download, a build beside one run) and the sequential design's error rates count valid pairs only
(docs/analysis.md#disturbed-pairs).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from reportgen.analysis import document as doc
from reportgen.analysis import quiet
from reportgen.analysis.check import FAIL, GuardrailInput, guardrail
from reportgen.store.run import StoredRun
from reportgen.vocab import Status

MAX_SET_ASIDE = 2  # pairs of one comparison; one more makes the comparison invalid (persistent disturbance)


@dataclass(frozen=True)
class Split:
    """The pairs a comparison sets aside and, when the machine disturbed more pairs than the limit,
    the failing `quiet_machine` guardrail that says so (None otherwise: then nothing is set aside)."""

    set_aside: list[doc.SetAsidePair]
    persistent: doc.GuardrailResult | None = None

    def repeats(self) -> set[int]:
        return {p.repeat for p in self.set_aside}


def disturbed_pairs(gi: GuardrailInput) -> list[doc.SetAsidePair]:
    """Every block whose two runs (reference and candidate, both complete) fail the quiet-machine
    check when judged alone, with the check's reason. A failed run is never set aside: its failure
    is the candidate's, whatever else ran beside it."""
    ref = {r.repeat: r for r in gi.baseline if r.status == Status.COMPLETE}
    cand = {r.repeat: r for r in gi.candidate if r.status == Status.COMPLETE}
    out = []
    for rep in sorted(set(ref) & set(cand)):
        g = quiet.check(replace(gi, baseline=[ref[rep]], candidate=[cand[rep]]))
        if g.status == FAIL:
            out.append(
                doc.SetAsidePair(
                    repeat=rep,
                    reference_run=ref[rep].rel,
                    candidate_run=cand[rep].rel,
                    reason=g.reason,
                    evidence=g.evidence,
                )
            )
    return out


def split(inputs: Sequence[GuardrailInput], *, limit: int = MAX_SET_ASIDE) -> Split:
    """The pairs to set aside from one comparison, judged against each reference in `inputs` (the
    baseline, then the candidate's base when it has one): a block disturbed against either is set
    aside for both. More than `limit` blocks: none, and the failing guardrail."""
    pairs: dict[int, doc.SetAsidePair] = {}
    for gi in inputs:
        for p in disturbed_pairs(gi):
            pairs.setdefault(p.repeat, p)
    found = [pairs[k] for k in sorted(pairs)]
    if len(found) <= limit:
        return Split(found)
    named = "; ".join(f"pair {p.repeat} ({p.reference_run}, {p.candidate_run})" for p in found)
    reason = (
        f"persistent disturbance: {len(found)} pairs were disturbed, more than the {limit} a campaign sets aside "
        f"and redoes, so the machine itself is not quiet: {named}; the first: {found[0].reason}"
    )
    return Split([], guardrail(quiet.ID, quiet.TITLE, FAIL, reason, found[0].evidence))


def keep(runs: Sequence[StoredRun], repeats: set[int]) -> list[StoredRun]:
    """`runs` without those of the set-aside blocks."""
    return [r for r in runs if r.repeat not in repeats]


def words(pairs: Sequence[doc.SetAsidePair]) -> str:
    """ "pair 1 (baseline/1, A1/1) set aside: ..." for pages and the PR body; empty without any."""
    return "; ".join(f"pair {p.repeat} ({p.reference_run}, {p.candidate_run}) set aside: {p.reason}" for p in pairs)

"""Disturbed pairs set aside (analysis/set_aside.py) on constructed runs/ trees: a pair whose runs
fail the quiet-machine check alone is left out of the comparison and listed with its reason, a
sequential campaign still needs a pair in its place, and more disturbed pairs than the limit make
the comparison invalid."""

from __future__ import annotations

from pathlib import Path

from builder import FakeArm, analyse, comparison

from reportgen.analysis import set_aside

SEQUENTIAL = {"until": "decided", "min_pairs": 3, "max_pairs": 6}


def _guard(comp, gid: str):
    return next(g for g in comp.guardrails if g.id == gid)


def test_a_pair_disturbed_on_one_side_is_set_aside_and_the_rest_decide(tmp_path: Path) -> None:
    doc = analyse(
        tmp_path,
        {"baseline": FakeArm(disturb="cpu", disturb_repeats=(1,)), "A1": FakeArm(speed=1.3)},
        repeats=4,
        run=SEQUENTIAL,
    )
    comp = comparison(doc, "A1")
    [p] = comp.set_aside
    assert (p.repeat, p.reference_run, p.candidate_run) == (1, "baseline/1", "A1/1")
    assert "baseline was disturbed" in p.reason and "pid 4242 stress" in p.reason
    assert p.evidence == "baseline/1/host.parquet"
    assert [x.repeat for x in comp.run_level.pairs] == [2, 3, 4]
    assert _guard(comp, "quiet_machine").status == "pass"
    assert comp.verdict.pairs == 3 and comp.verdict.status == "accepted", comp.verdict.summary
    # The runs stay in the arm's table, marked by their load.
    base = doc.arm("baseline")
    assert base is not None and [r.repeat for r in base.runs] == [1, 2, 3, 4]
    assert base.runs[0].load is not None and base.runs[0].load.flagged == ["cpu_load"]


def test_a_fixed_campaign_sets_nothing_aside_and_a_disturbed_pair_still_invalidates(tmp_path: Path) -> None:
    """Nothing would run a pair in its place: every pair is judged, as before set-aside existed."""
    doc = analyse(
        tmp_path, {"baseline": FakeArm(disturb="cpu", disturb_repeats=(1,)), "A1": FakeArm(speed=1.3)}, repeats=4
    )
    comp = comparison(doc, "A1")
    assert comp.set_aside == [] and len(comp.run_level.pairs) == 4
    assert _guard(comp, "quiet_machine").status == "fail" and comp.verdict.basis == "disturbed"


def test_a_sequential_campaign_still_needs_a_pair_in_place_of_one_set_aside(tmp_path: Path) -> None:
    doc = analyse(
        tmp_path,
        {"baseline": FakeArm(), "A1": FakeArm(speed=1.3, disturb="cpu", disturb_repeats=(1,))},
        repeats=3,
        run={**SEQUENTIAL, "max_pairs": 3},
    )
    comp = comparison(doc, "A1")
    assert [p.repeat for p in comp.set_aside] == [1]
    assert len(comp.run_level.pairs) == 2 and comp.verdict.basis == "too_few_pairs"
    # Three blocks ran, as many as max_pairs, but only two valid pairs: the campaign goes on.
    assert comp.needs_pairs and doc.campaign.stopped == "open"


def test_the_only_pair_set_aside_still_needs_pairs(tmp_path: Path) -> None:
    doc = analyse(
        tmp_path,
        {"baseline": FakeArm(disturb="cpu"), "A1": FakeArm(speed=1.3)},
        repeats=1,
        run=SEQUENTIAL,
    )
    comp = comparison(doc, "A1")
    assert [p.repeat for p in comp.set_aside] == [1] and comp.verdict.basis == "no_pairs"
    assert comp.verdict.cause == "every pair was set aside (1: the machine was not quiet): a verdict needs at least 3"
    assert comp.needs_pairs


def test_more_disturbed_pairs_than_the_limit_make_the_comparison_invalid(tmp_path: Path) -> None:
    n = set_aside.MAX_SET_ASIDE + 1
    doc = analyse(
        tmp_path,
        {"baseline": FakeArm(disturb="cpu", disturb_repeats=tuple(range(1, n + 1))), "A1": FakeArm(speed=1.3)},
        repeats=n + 1,
        run=SEQUENTIAL,
    )
    comp = comparison(doc, "A1")
    guard = _guard(comp, "quiet_machine")
    assert comp.set_aside == [] and guard.status == "fail"
    assert guard.reason.startswith(f"persistent disturbance: {n} pairs were disturbed, more than the 2")
    assert "pair 1 (baseline/1, A1/1); pair 2" in guard.reason
    assert comp.verdict.status == "invalid" and comp.verdict.basis == "disturbed"
    assert not comp.needs_pairs


def test_both_sides_disturbed_alike_is_not_set_aside(tmp_path: Path) -> None:
    doc = analyse(
        tmp_path,
        {
            "baseline": FakeArm(disturb="cpu", disturb_repeats=(2,)),
            "A1": FakeArm(speed=1.3, disturb="cpu", disturb_repeats=(2,)),
        },
        repeats=3,
        run=SEQUENTIAL,
    )
    comp = comparison(doc, "A1")
    assert comp.set_aside == [] and len(comp.run_level.pairs) == 3


def test_a_pair_disturbed_against_the_base_is_set_aside_for_the_candidate_built_on_it(tmp_path: Path) -> None:
    doc = analyse(
        tmp_path,
        {
            "baseline": FakeArm(),
            "A1": FakeArm(speed=1.3),
            "A3": FakeArm(speed=1.4, base="A1", disturb="cpu", disturb_repeats=(2,)),
        },
        repeats=4,
        run=SEQUENTIAL,
    )
    a3 = comparison(doc, "A3")
    assert [p.repeat for p in a3.set_aside] == [2]
    assert [x.repeat for x in a3.run_level.pairs] == [1, 3, 4]
    assert a3.base_run_level is not None and [x.repeat for x in a3.base_run_level.pairs] == [1, 3, 4]
    assert comparison(doc, "A1").set_aside == []


def test_a_failed_run_is_never_set_aside(tmp_path: Path) -> None:
    doc = analyse(
        tmp_path,
        {"baseline": FakeArm(disturb="cpu", disturb_repeats=(1,)), "A1": FakeArm(speed=1.3, fail_at=20)},
        repeats=3,
        run=SEQUENTIAL,
    )
    comp = comparison(doc, "A1")
    # Not set aside, so not hidden: the disturbance and the failure are both judged (invalid comes first).
    assert comp.set_aside == [] and comp.verdict.status in ("failed", "invalid"), comp.verdict.summary

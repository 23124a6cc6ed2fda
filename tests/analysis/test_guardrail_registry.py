"""The guardrail registry: every guardrail is one `Check` of a `GuardrailInput`, run in `CHECKS`'
order, and a new one is one function and one registration (here in the test alone, as a plug-in
would), with no edit to the existing modules."""

from __future__ import annotations

import json
from pathlib import Path

from builder import FakeArm, make_experiment

from reportgen.analysis import guardrails as gr
from reportgen.analysis.check import FAIL, PASS, GuardrailInput, guardrail
from reportgen.analysis.document import GuardrailResult
from reportgen.analyze import analyze_experiment

BUILT_IN = [
    "steps_completed",
    "no_failures",
    "samples_per_step",
    "token_accounting",
    "finite_training",
    "fixed_workload",
    "same_inputs",
    "same_machine",
    "no_profiler",
    "no_overlap",
    "quiet_machine",
    "same_work",
]


def _guardrails(exp: Path, cand: str = "A1") -> list[dict]:
    # force: the registry changes the analysis between calls while its inputs stay the same
    doc = json.loads(analyze_experiment(exp, force=True).read_text())
    return next(c for c in doc["comparisons"] if c["candidate"] == cand)["guardrails"]


def test_a_comparison_lists_the_registered_guardrails_in_order(tmp_path: Path) -> None:
    exp = make_experiment(tmp_path / "runs", {"baseline": FakeArm(), "A1": FakeArm(speed=1.2)}, repeats=1)
    assert [g["id"] for g in _guardrails(exp)] == BUILT_IN


def few_steps(ctx: GuardrailInput) -> GuardrailResult:
    """A guardrail a plug-in might add: every run logged at most 1000 steps."""
    long = [r.path for r in ctx.runs if len(r.steps) > 1000]
    if long:
        return guardrail("few_steps", "At most 1000 steps", FAIL, f"{', '.join(long)}: too many steps")
    return guardrail("few_steps", "At most 1000 steps", PASS, f"{len(ctx.runs)} runs of at most 1000 steps")


def test_a_registered_guardrail_appears_in_the_comparison_and_unregisters(tmp_path: Path) -> None:
    exp = make_experiment(tmp_path / "runs", {"baseline": FakeArm(), "A1": FakeArm(speed=1.2)}, repeats=1)
    assert gr.register(few_steps) is few_steps
    try:
        guards = _guardrails(exp)
    finally:
        gr.unregister(few_steps)
    assert [g["id"] for g in guards] == [*BUILT_IN[:-1], "few_steps", "same_work"]
    added = next(g for g in guards if g["id"] == "few_steps")
    assert added["status"] == "pass" and added["reason"] == "2 runs of at most 1000 steps"
    assert few_steps not in gr.CHECKS
    assert [g["id"] for g in _guardrails(exp)] == BUILT_IN

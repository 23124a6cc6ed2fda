"""What sits beside a steady-state verdict on the page and in the PR body (render/steady_state.py):
one warm-up line, and one note of what a re-analysis moved."""

from __future__ import annotations

from pathlib import Path

from reportgen.analysis.document import SCHEMA_VERSION, PreviousVerdict, Reanalysis, Window
from reportgen.render import steady_state
from reportgen.render.prbody import render_pr_body
from tests.analysis.builder import FakeArm, analyse


def test_the_warm_up_line_and_the_reanalysis_note(tmp_path: Path) -> None:
    doc = analyse(
        tmp_path,
        {"baseline": FakeArm(ramp_steps=4, cv=0.01), "A1": FakeArm(speed=1.3, ramp_steps=20, cv=0.01)},
        steps=48,
        warmup=24,
        windows=2,
    )
    line = steady_state.warmup_line(doc)
    assert line is not None and line.startswith("Warm-up per launch, beside the steady-state verdicts (steps 0-23")
    assert "A1 +" in line and "s against baseline (95% CI" in line and "3 pairs" in line
    assert line in render_pr_body(doc)
    assert steady_state.page_line(doc).endswith("(../../analysis.md#warm-up-cost-per-launch).\n")
    assert steady_state.reanalysis_note(doc) == ""  # a first analysis: nothing moved
    before = Reanalysis(
        schema_version=8,
        windows=[Window(name="W1", start=8, end=20)],
        verdicts=[PreviousVerdict(candidate="A1", status="rejected", basis="interval")],
        moved=["A1: rejected -> accepted"],
    )
    note = steady_state.reanalysis_note(doc.model_copy(update={"reanalysis": before}))
    assert note.startswith(f"Re-analysed (schema 8 -&gt; {SCHEMA_VERSION}): windows W1 8-20 -&gt; W1 24-35, W2 36-47")
    assert "verdicts moved: A1: rejected -&gt; accepted" in note and "#the-committed-showcases-re-analysed" in note

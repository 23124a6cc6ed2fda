"""The pages and the PR body say which pairs were set aside and why (analysis/set_aside.py)."""

from __future__ import annotations

from pathlib import Path

from reportgen.analyze import analyze_experiment
from reportgen.render import candidate_page, experiment_page
from reportgen.render.load import load_experiment
from reportgen.render.prbody import render_pr_body
from tests.analysis.builder import FakeArm, make_experiment


def test_a_set_aside_pair_is_named_with_its_reason_on_the_pages_and_in_the_pr_body(tmp_path: Path) -> None:
    exp_dir = make_experiment(
        tmp_path / "runs",
        {"baseline": FakeArm(disturb="cpu", disturb_repeats=(1,)), "A1": FakeArm(speed=1.3)},
        repeats=4,
        run={"until": "decided", "min_pairs": 3, "max_pairs": 6},
    )
    analyze_experiment(exp_dir)
    exp = load_experiment(exp_dir)
    page = candidate_page.render(exp, "A1", svg=False).markdown
    assert "## Pairs set aside {#set-aside}" in page
    line = next(x for x in page.splitlines() if x.startswith("- pair 1, "))
    assert (
        "<code>baseline/1</code> and <code>A1/1</code>" in line
        and "baseline was disturbed" in line
        and "baseline/1/host.parquet" in line
    )
    overview = experiment_page.render(exp, svg=False).markdown
    assert "Set aside because the machine was not quiet while they ran" in overview and "A1 pair 1" in overview
    assert "1 set aside" in overview  # the verdict table's pairs cell
    body = render_pr_body(exp.analysis)
    assert "- set aside (machine not quiet): pair 1, `baseline/1` and `A1/1`: " in body


def test_no_section_without_a_pair_set_aside(tmp_path: Path) -> None:
    exp_dir = make_experiment(tmp_path / "runs", {"baseline": FakeArm(), "A1": FakeArm(speed=1.3)}, repeats=3)
    analyze_experiment(exp_dir)
    exp = load_experiment(exp_dir)
    assert "Pairs set aside" not in candidate_page.render(exp, "A1", svg=False).markdown
    assert "set aside" not in render_pr_body(exp.analysis)

"""`reportgen plan-power`: the pairs a change needs and the change a budget can see, from the
committed H200 A/A experiment's pairs (reportgen.analysis.power_plan, and the thin command)."""

from __future__ import annotations

from pathlib import Path

import pytest

from reportgen.analysis import power_plan
from reportgen.cli import main
from reportgen.errors import UserError
from reportgen.render.load import load_analysis

AA = Path(__file__).resolve().parents[2] / "runs" / "aa-1xh200-grpo"  # its analysis.json alone


def test_the_spread_is_pooled_over_the_comparisons_pairs():
    doc = load_analysis(AA)
    s = power_plan.spread_of(doc, "aa")
    pairs = [p for c in doc.comparisons for p in c.run_level.pairs]
    assert s.pairs == len(pairs) and s.df == len(pairs) - len(doc.comparisons)
    assert 0.01 < s.sd < 0.3 and s.upper() > s.sd
    assert s.pair_minutes is not None and s.pair_minutes > 0


def test_more_noise_needs_more_pairs_and_a_bigger_budget_sees_smaller_changes():
    quiet = power_plan.pairs_needed(0.03, 0.20, min_effect=0.05, limit=12)
    noisy = power_plan.pairs_needed(0.12, 0.20, min_effect=0.05, limit=12)
    assert quiet is not None and noisy is not None and quiet < noisy
    assert power_plan.pairs_needed(0.5, 0.06, min_effect=0.05, limit=12) is None
    few = power_plan.effect_within(0.06, 4)
    many = power_plan.effect_within(0.06, 10)
    assert few is not None and many is not None and many < few
    assert power_plan.effect_within(0.06, 1) is None  # below min_pairs


def test_the_documented_commands_print_the_documented_plan(capsys, committed_runs):
    """docs/analysis.md#planning-a-campaign-reportgen-plan-power quotes these two commands and figures."""
    assert main(["plan-power", "aa-1xh200-grpo", "--runs", str(committed_runs)]) == 0
    out = capsys.readouterr().out
    assert "spread of one pair's log ratio: 0.0814 (8 pairs of AA1, AA2, 6 degrees of freedom" in out
    assert "design: sequential from 2 pairs" in out
    assert "max_pairs at the estimated spread: 15" in out and "max_pairs at its 80% upper bound: 28" in out
    assert "one pair (a baseline run and a candidate run): 1.5 GPU minutes" in out
    assert (
        main(
            ["plan-power", "aa-1xh200-grpo", "--runs", str(committed_runs), "--effect", "0.2", "--budget-minutes", "30"]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "accept +20.0% and to reject -20.0%" in out and "budget 30 GPU minutes: 20 pairs per candidate" in out


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--effect", "0.01"], "below the minimum effect"),
        (["--power", "1.5"], "--power 1.5"),
        (["--budget-minutes", "-3"], "--budget-minutes -3"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(capsys, args, said, committed_runs):
    assert main(["plan-power", "aa-1xh200-grpo", "--runs", str(committed_runs), *args]) == 2
    err = capsys.readouterr().err
    assert said in err and err.count("\n") == 1


def test_an_experiment_without_two_pairs_is_refused(tmp_path):
    doc = load_analysis(AA)
    lone = doc.model_copy(
        update={
            "comparisons": [
                c.model_copy(update={"run_level": c.run_level.model_copy(update={"pairs": c.run_level.pairs[:1]})})
                for c in doc.comparisons
            ]
        }
    )
    with pytest.raises(UserError, match="no comparison has two pairs"):
        power_plan.spread_of(lone, "x")

"""The calibration of the verdict with both halves (analysis/calibration_quality.py): the quality half
decides through the analysis' own rules, and without it the campaigns are calibration.simulate's; the
documented `scripts/calibrate.py --quality` command runs."""

from __future__ import annotations

import runpy
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from reportgen.analysis import design as dz
from reportgen.analysis import quality
from reportgen.analysis.calibration import Scenario, sequential_design, simulate
from reportgen.analysis.calibration_quality import ACCEPTED, WORSE, QualityScenario, simulate_joint

REF = Scenario(rho=0.5, offset=0.03, candidates=3)
GPU = sequential_design(dz.MIN_PAIRS, dz.MAX_PAIRS)  # the shipped GPU design (2-16)
SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "calibrate.py"
# Twice the reference spread measured on the learning workload's GPU runs (scripts/calibrate.py QUALITY_SD,
# 0.017): what two runs that share no seed differ by there.
SPREAD = 0.035


def test_without_the_quality_half_the_campaigns_are_the_throughput_calibrations() -> None:
    alone = simulate_joint(GPU, REF, None, sims=300)
    assert alone.counts == simulate(GPU, REF, sims=300).counts


def test_a_quality_loss_of_twice_the_margin_is_rejected_and_an_equal_one_seldom() -> None:
    q = QualityScenario(sd=SPREAD, margin=0.05)
    aa = simulate_joint(GPU, REF, q, sims=400)
    assert aa.worse <= 0.03, aa.counts
    loss = simulate_joint(GPU, replace(REF, effect=0.10), replace(q, effect=-0.10), sims=400)
    assert loss.worse >= 0.9 and loss.rate(ACCEPTED) == 0.0, loss.counts
    same = simulate_joint(GPU, replace(REF, effect=0.10), q, sims=400)
    assert same.rate(ACCEPTED) >= 0.8 and same.worse <= 0.03, same.counts
    assert set(aa.counts) <= {WORSE, ACCEPTED, "rejected", "no_change", "futility", "open", "faster, quality open"}


def test_the_vectorised_rule_is_the_analysis_rule() -> None:
    est = np.array([0.0, -0.2, -0.02, 0.03])
    lo = np.array([-0.04, -0.3, -0.09, -0.01])
    hi = np.array([0.04, -0.1, 0.05, 0.07])
    got = quality.outcomes(est, lo, hi, 0.05, "higher").tolist()
    assert got == [quality.NOT_WORSE, quality.WORSE, quality.OPEN, quality.NOT_WORSE]
    assert [quality._outcome(e, a, b, 0.05, "higher") for e, a, b in zip(est, lo, hi, strict=True)] == [
        "not_worse",
        "worse",
        "open",
        "not_worse",
    ]
    # a metric without a better direction: two-sided
    assert quality._outcome(0.2, 0.1, 0.3, 0.05, None) == "worse"
    assert quality._outcome(0.0, -0.04, 0.04, 0.05, None) == "not_worse"


def test_the_documented_quality_command_runs_in_quick_mode(capsys: pytest.CaptureFixture[str], monkeypatch) -> None:
    monkeypatch.setattr(sys, "argv", [str(SCRIPT), "--quality", "--quick", "--sims", "100"])
    with pytest.raises(SystemExit) as done:
        runpy.run_path(str(SCRIPT), run_name="__main__")
    assert done.value.code == 0
    out = capsys.readouterr().out
    assert "### Training quality" in out and "### Throughput cells with the quality half joined" in out
    assert f"GPU {dz.MIN_PAIRS}-{dz.MAX_PAIRS}, reference cell" in out


def test_the_reference_spread_is_the_committed_learning_showcases() -> None:
    script = runpy.run_path(str(SCRIPT))
    measured = script["measured_quality_spread"]()
    assert measured is not None, f"runs/{script['QUALITY_CAMPAIGN']} has no A1 quality pairs"
    sd, pairs = measured
    assert pairs >= 4 and round(sd, 3) == script["QUALITY_SD"], (sd, pairs)
    assert script["QUALITY_SPREADS"][:2] == (script["QUALITY_SD"], SPREAD)

"""The warm-up as its own paired figure (analysis/warmup_cost.py): on runs that ramp up as the GPU
campaigns' A3 does, per pair of runs against the arm the verdict is decided against, with a paired
interval; the verdict rests on the steady windows beside it; a window the warm-up reaches into is
named for the answer; and the committed showcases give A3 its extra seconds per launch over A1."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from builder import FakeArm, analyse, comparison

from reportgen.analysis import warmup_cost
from reportgen.render import steady_state
from reportgen.store.run_folder import read_experiment


def _extra(ramp: int, step_s: float = 30.0) -> float:
    """The builder's warm-up without noise: step s < ramp takes step_s / (0.5 + 0.5 s / ramp)."""
    return sum(step_s / (0.5 + 0.5 * s / ramp) - step_s for s in range(ramp))


def test_a_slow_warm_up_is_its_own_figure_beside_a_steady_verdict(tmp_path: Path) -> None:
    doc = analyse(
        tmp_path,
        {"baseline": FakeArm(ramp_steps=8, cv=0.01), "A1": FakeArm(speed=1.0, ramp_steps=20, cv=0.01)},
        steps=48,
        warmup=24,
        windows=2,
        repeats=4,
    )
    c = comparison(doc, "A1")
    w = c.warmup_cost
    assert w is not None and w.reference == "baseline" and w.burn_in == 24 and len(w.pairs) == 4
    truth = _extra(20) - _extra(8)  # about +139 s: twelve more slow steps, each up to twice as long
    assert w.low_s is not None and w.high_s is not None and w.low_s < truth < w.high_s, (w, truth)
    assert w.estimate_s == pytest.approx(truth, rel=0.05)
    assert [p.difference_s for p in w.pairs] == pytest.approx([p.candidate_s - p.reference_s for p in w.pairs])
    # the steady windows see no difference: the verdict is not the warm-up's
    assert c.verdict.status in ("no_change", "inconclusive") and c.warmup_in_windows == []
    line = steady_state.warmup_line(doc)
    assert line is not None and line.startswith("Warm-up per launch") and "A1 +1" in line and "against baseline" in line


def test_a_window_inside_the_warm_up_is_named_for_the_answer(tmp_path: Path) -> None:
    doc = analyse(
        tmp_path,
        {"baseline": FakeArm(), "A1": FakeArm(speed=1.3, ramp_steps=20)},
        steps=48,
        warmup=6,
        windows=2,
    )
    c = comparison(doc, "A1")
    assert c.warmup_in_windows and c.warmup_in_windows[0].startswith("W1 (steps 6-26) starts inside the warm-up")
    assert "A1 at step" in c.warmup_in_windows[0]


def test_no_step_time_no_figure(tmp_path: Path) -> None:
    doc = analyse(tmp_path, {"baseline": FakeArm(drop_keys=("perf/step_time",)), "A1": FakeArm(speed=1.2)})
    assert comparison(doc, "A1").warmup_cost is None


def test_the_committed_h200_campaigns_give_a3_its_extra_seconds_over_a1(committed_runs: Path) -> None:
    """Issue 43 measured about +9.7 s per launch (7.0 to 12.5 s, 11 pairs, three of them held out);
    the 8 committed pairs of r2-r4 give the same with windows from step 24."""
    windows = [("W1", 24, 35), ("W2", 36, 47)]
    diffs = []
    for name in (
        "showcase-1xh200-grpo-offload-r2",
        "showcase-1xh200-grpo-offload-r3",
        "showcase-1xh200-grpo-offload-r4",
    ):
        runs = [r for r in read_experiment(committed_runs / name).runs if r.role == "formal" and r.status == "complete"]
        w = warmup_cost.compare(
            [r for r in runs if r.arm == "A1"],
            [r for r in runs if r.arm == "A3"],
            windows,
            reference="A1",
            confidence=0.95,
        )
        assert w is not None
        diffs += [p.difference_s for p in w.pairs]
    assert len(diffs) == 8 and np.mean(diffs) == pytest.approx(9.6, abs=0.3) and min(diffs) > 4

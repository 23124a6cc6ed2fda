"""Warm-up found from the steps (analysis/warmup.py): MSER on made-up series, the committed GPU
showcases' arms (which ramp until step 11-23 while their first window starts at step 8), the
window flag, and a drift that compares steady steps only."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from builder import FakeArm, analyse

from reportgen.analysis import warmup
from reportgen.store.run_folder import read_experiment

KEY = "perf/step_resp_token_per_s"


def test_mser_drops_a_ramp_and_nothing_of_a_steady_series() -> None:
    rng = np.random.default_rng(3)
    steady = 1 + 0.03 * rng.standard_normal(40)
    assert warmup.mser(steady) == 10  # MSER alone drops a quarter of this draw of pure noise ...
    assert warmup.steady_start(steady) == 0  # ... which the walk back keeps
    ramp = np.r_[np.linspace(0.4, 0.95, 10), steady[10:]]
    assert 8 <= warmup.steady_start(ramp) <= 12
    assert warmup.mser([1.0]) == 0 and warmup.steady_start([1.0]) == 0


def test_a_single_slow_step_later_does_not_move_the_end_of_warm_up() -> None:
    rng = np.random.default_rng(4)
    y = np.r_[np.linspace(0.5, 0.95, 6), 1 + 0.02 * rng.standard_normal(30)]
    base = warmup.steady_start(y)
    assert 4 <= base <= 6
    y[20] = 0.6  # a checkpoint step
    assert abs(warmup.steady_start(y) - base) <= 1


def _arms(exp: Path) -> dict:
    arms: dict = {}
    for r in read_experiment(exp).runs:
        if r.role == "formal" and r.status == "complete":
            arms.setdefault(r.arm, []).append(r)
    return arms


def test_the_committed_h200_showcase_settles_where_its_steps_show(committed_runs: Path) -> None:
    arms = _arms(committed_runs / "showcase-1xh200-grpo-offload-r3")
    got = {arm: warmup.settled_at(runs, KEY) for arm, runs in arms.items()}
    # A3 (smaller micro-batches) ramps until past step 20; the baseline and A1 by step 11-12.
    assert 20 <= got["A3"] <= 25 and 8 <= got["baseline"] <= 14 and 8 <= got["A1"] <= 14, got
    lines = warmup.inside([("W1", 8, 20), ("W2", 21, 33), ("W3", 34, 47)], got)
    assert lines[0].startswith(f"W1 (steps 8-20) starts inside the warm-up: settled A1 at step {got['A1']}, A3 at")
    assert "all of W1 is warm-up for A3; the verdict averages warm-up steps in" in lines[0]
    assert lines[1].startswith("W2 (steps 21-33)") and "A3 at step" in lines[1] and len(lines) == 2


def test_the_answers_short_note_names_the_windows_and_the_arms_not_yet_steady() -> None:
    windows = [("W1", 8, 20), ("W2", 21, 33), ("W3", 34, 47)]
    settled = {"A3": 23, "A1": 12, "baseline": None}
    assert warmup.note(windows, settled) == "W1, W2 start inside the warm-up (steady from step: A3 23, A1 12)"
    assert warmup.note(windows[1:], settled) == "W2 starts inside the warm-up (steady from step: A3 23)"
    assert [w[0] for w in warmup.late(windows, settled)] == ["W1", "W2"]
    assert warmup.note(windows[2:], settled) is None and warmup.note(windows, {"A1": None}) is None


def test_too_few_steps_find_nothing_and_flag_nothing(committed_runs: Path) -> None:
    runs = _arms(committed_runs / "showcase-1xh200-grpo-offload-r3")["baseline"]
    short = list(runs)[:1]
    assert warmup.settled_at(short, "no/such_key") is None
    assert warmup.inside([("W1", 0, 5)], {"baseline": None}) == []


def test_analysis_json_says_where_each_arm_settles_and_flags_the_window(tmp_path: Path) -> None:
    # Steady arms: each settles early, nothing drifts.
    doc = analyse(tmp_path, {"baseline": FakeArm(), "A1": FakeArm(speed=1.3)}, repeats=3, warmup=6)
    for arm in doc.arms:
        assert arm.settled_at is not None and arm.settled_at <= 30
    assert doc.baseline_drift is not None and not doc.baseline_drift.flagged


def test_warm_up_is_not_read_as_drift(tmp_path: Path) -> None:
    """A baseline that ramps up through its first window: before, the window's means differed by the
    ramp and the drift was flagged; on steady steps only, it is not."""
    doc = analyse(
        tmp_path,
        {"baseline": FakeArm(ramp_steps=20), "A1": FakeArm(speed=1.3, ramp_steps=20)},
        repeats=3,
        warmup=6,
    )
    base = doc.arm("baseline")
    assert base is not None and base.settled_at is not None and 15 <= base.settled_at <= 24
    drift = doc.baseline_drift
    assert drift is not None and drift.from_step == base.settled_at and not drift.flagged, drift
    assert not any("drifted" in w for w in doc.warnings)
    assert any(w.startswith("W1 (steps 6-23) starts inside the warm-up") for w in doc.warnings), doc.warnings


def test_a_trend_through_the_run_is_drift_not_warm_up(tmp_path: Path) -> None:
    doc = analyse(tmp_path, {"baseline": FakeArm(trend=-0.2, cv=0.01), "A1": FakeArm(speed=1.2)})
    base = doc.arm("baseline")
    assert base is not None and base.settled_at is None
    d = doc.baseline_drift
    assert d is not None and d.flagged and d.from_step is None and (d.first_window, d.last_window) == ("W1", "W3")

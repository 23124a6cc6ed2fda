"""Series from points: campaigns, machine classes apart, order, change points (the machine's health)."""

from __future__ import annotations

import math

import numpy as np

from reportgen.history.series import build
from tests.history.test_model import point

ONE = "1 x NVIDIA H200, driver 580.159.04"
TWO = "2 x NVIDIA H200, driver 580.159.04"


def _campaigns(
    values: list[float],
    *,
    machine: str = ONE,
    prefix: str = "e",
    commits: list[str] | None = None,
    class_id: str | None = "",
) -> list:
    """Baseline campaigns, one run each; `class_id` "" (the default): one made from `machine`."""
    out = []
    for i, v in enumerate(values):
        commit = commits[i] if commits else f"{i:02d}" + "a" * 38
        out.append(
            point(
                experiment=f"{prefix}{i:02d}",
                run="baseline/1",
                value=v,
                low=v * 0.99,
                high=v * 1.01,
                machine_class=machine,
                class_id=(f"class of {machine}" if class_id == "" else class_id),
                commit=commit,
                started_utc=f"2026-12-01T{i // 60:02d}:{i % 60:02d}:00Z",
            )
        )
    return out


def test_machine_classes_never_share_a_series() -> None:
    pts = _campaigns([1000.0] * 3) + _campaigns([2000.0] * 2, machine=TWO, prefix="f")
    series = build(pts)
    assert [(s.key.machine_class, len(s.points)) for s in series] == [(ONE, 3), (TWO, 2)]


def test_a_campaign_is_the_geometric_mean_of_its_runs_with_a_t_interval() -> None:
    pts = [point(run="baseline/1", value=100.0), point(run="baseline/2", value=400.0)]
    (s,) = build(pts)
    (c,) = s.points
    assert math.isclose(c.value, 200.0) and c.n_runs == 2 and c.low is not None and c.high is not None
    assert 0 < c.low < 200.0 < c.high and "t interval" in c.method
    (one,) = build([point()])[0].points
    assert (one.low, one.high) == (990.0, 1010.0) and one.method.startswith("one run")


def test_a_step_becomes_a_change_point_naming_its_commits_and_experiments() -> None:
    rng = np.random.default_rng(7)
    values = list(1000 * np.where(np.arange(16) >= 10, 0.9, 1.0) * np.exp(0.02 * rng.standard_normal(16)))
    (s,) = build(_campaigns(values))
    (ch,) = s.changes
    assert (ch.before.experiment, ch.after.experiment) == ("e09", "e10")
    assert (ch.before.commit, ch.after.commit) == ("09" + "a" * 38, "10" + "a" * 38)
    assert ch.worse and ch.low < -0.1 < ch.high and "PELT" in ch.method


def test_lower_is_better_metrics_call_a_rise_a_regression() -> None:
    values = [1.0] * 6 + [1.2] * 6
    pts = [
        p.model_copy(update={"better": "lower", "metric": "perf/step_time", "primary": False})
        for p in _campaigns(values)
    ]
    # identical points: no noise to read, so nudge them a little
    pts = [p.model_copy(update={"value": p.value * (1 + 0.001 * (i % 3))}) for i, p in enumerate(pts)]
    (s,) = build(pts)
    assert s.changes and s.changes[0].worse


def test_commit_order_puts_a_backfill_where_it_was_merged() -> None:
    pts = _campaigns([1.0, 2.0, 3.0], commits=["c", "a", "b"])
    (s,) = build(pts, commit_order={"a": 0, "b": 1, "c": 2})
    assert [c.commit for c in s.points] == ["a", "b", "c"]
    (t,) = build(pts)
    assert [c.commit for c in t.points] == ["c", "a", "b"]  # without it: the order they ran in


def test_a_series_holds_only_one_fingerprint_class() -> None:
    # Same GPUs and driver, another class by the fingerprint (other CPUs, memory or image): two series.
    pts = _campaigns([2091.0, 2100.0, 2080.0], class_id="a" * 64) + _campaigns([1668.0], prefix="f", class_id="b" * 64)
    series = build(pts)
    assert [(s.key.machine_class, s.key.class_id[:1], len(s.points)) for s in series] == [(ONE, "a", 3), (ONE, "b", 1)]

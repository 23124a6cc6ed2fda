"""The pure statistics of "Where the time went" (reportgen/traces/stats.py)."""

from __future__ import annotations

from reportgen.traces import stats
from reportgen.traces.model import TraceRow


def _row(kind: str, category: str, time_us: float, *, step: int = 1, rank: int = 0, **kw: object) -> TraceRow:
    return TraceRow("train", "t.json.gz", rank, -1, step, "gpu", kind, category, time_us=time_us, **kw)  # type: ignore[arg-type]


def _arm(arm: str, optimizer_us: float, copy_us: float, idle_us: float, wall_us: float) -> stats.ArmTraces:
    rows = []
    for step in (1, 2):
        rows += [
            _row("wall", "step", wall_us, step=step),
            _row("compute", "GEMM", 4_000, step=step),
            _row("memcpy", "D2H", copy_us, step=step, bytes=2**20 if copy_us else 0),
            _row("idle", "gpu_idle", idle_us, step=step),
            _row("cpu_span", "optimizer_step", optimizer_us, step=step),
            _row("top_op", "D2H", copy_us, step=step, name="Memcpy DtoH (Device -> Pageable)"),
        ]
    return stats.arm_stats(arm, [stats.RunSummary(f"profile-{arm}/1", rows)])


def test_per_step_means_and_top_operators():
    a = _arm("baseline", 3_000, 800, 5_000, 10_000)
    assert a.timed and a.view == "gpu" and (a.steps, a.ranks) == (2, 1)
    assert a.per_step["wall"] == 10.0 and a.per_step["GEMM"] == 4.0 and a.per_step["bytes:D2H"] == 2**20
    assert a.per_step["host: optimizer step"] == 3.0 and a.per_step[stats.IDLE] == 5.0
    assert [(o.name, o.ms) for o in a.top_ops] == [("Memcpy DtoH (Device -> Pageable)", 0.8)]
    assert a.pageable[0].gb_per_s is not None and len(a.step_parts) == 6


def test_difference_names_the_host_side_cause():
    d = stats.diff_stats(_arm("baseline", 3_000, 800, 5_000, 10_000), _arm("A1", 300, 0, 1_000, 5_000))
    assert d.wall.difference == -5.0 and not d.same_step and d.same_kernels
    assert [c.part for c in d.causes] == ["host: optimizer step"]
    assert d.idle_ms == -4.0 and d.copied_total == -(2**20) and d.ops[0].difference == -0.8


def test_experiment_stats_none_without_summaries_and_unreadable_named():
    assert stats.experiment_stats([]) is None
    got = stats.experiment_stats([stats.RunSummary("profile-A1/1", None, "damaged")])
    assert got is not None and got.arms[0].notes == ["profile-A1/1/traces.parquet: damaged"] and got.diffs == []

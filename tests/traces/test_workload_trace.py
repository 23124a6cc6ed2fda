"""The embedded workload's own profiler run, summarised: its trace is split by step and shows the
optimizer step span, as a Relax trace would be (a real process, CPU: the session's one profiled run
of tests/workloads/profiled.py, which the console-format test reads too)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from reportgen.traces import model, store
from tests.workloads.profiled import profiled_run


@pytest.mark.slow
def test_workload_trace_is_split_by_step(tmp_path: Path, tmp_path_factory: pytest.TempPathFactory) -> None:
    done, shared = profiled_run(tmp_path_factory)
    assert done.returncode == 0, done.stderr[-2000:]
    run_dir = tmp_path / "run"
    shutil.copytree(shared, run_dir)  # the summary is written into the run folder: a copy of the shared one
    store.summarize_run(run_dir)
    every = model.read(run_dir / model.FILENAME)
    # The run records a memory snapshot too: its rows are of no step (model.WHOLE_TRACE); the
    # profiler trace's rows are what is split by step.
    assert {r.step for r in every if r.source == "memory"} == {model.WHOLE_TRACE}
    rows = [r for r in every if r.source != "memory"]
    assert {r.step for r in rows} == {1, 2}
    assert {r.view for r in rows} == {"cpu"}
    for step in (1, 2):
        walls = [r for r in rows if r.step == step and r.kind == "wall"]
        assert len(walls) == 1 and walls[0].time_us > 0
        opt = [r for r in rows if r.step == step and r.kind == "cpu_span" and r.category == "optimizer_step"]
        assert opt[0].time_us > 0
        gemm = [r for r in rows if r.step == step and r.kind == "compute" and r.category == "GEMM"]
        assert gemm[0].time_us > 0

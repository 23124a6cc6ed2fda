"""The embedded workload's own profiler run, summarised: its trace is split by step and shows the
optimizer step span, as a Relax trace would be (a real process, CPU)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from reportgen.traces import model, store
from tests.workloads.conftest import TINY

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_workload_trace_is_split_by_step(tmp_path):
    env = dict(os.environ, REPORTGEN_RUN_DIR=str(tmp_path))
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    argv = [*TINY, "--num-rollout", "4", "--rollout-batch-size", "2", "--n-samples-per-prompt", "4",
            "--global-batch-size", "8", "--tb-experiment-name", "exp", "--optimizer-cpu-offload",
            "--use-pytorch-profiler", "--profile-step-start", "1", "--profile-step-end", "2"]  # fmt: skip
    done = subprocess.run(
        [sys.executable, "-m", "reportgen.workloads.grpo", *argv], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr[-2000:]
    store.summarize_run(tmp_path)
    rows = model.read(tmp_path / model.FILENAME)
    assert {r.step for r in rows} == {1, 2}
    assert {r.view for r in rows} == {"cpu"}
    for step in (1, 2):
        walls = [r for r in rows if r.step == step and r.kind == "wall"]
        assert len(walls) == 1 and walls[0].time_us > 0
        opt = [r for r in rows if r.step == step and r.kind == "cpu_span" and r.category == "optimizer_step"]
        assert opt[0].time_us > 0
        gemm = [r for r in rows if r.step == step and r.kind == "compute" and r.category == "GEMM"]
        assert gemm[0].time_us > 0

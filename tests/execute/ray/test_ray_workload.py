"""The embedded GRPO workload (CPU profile, tiny step count) submitted to a real local Ray
cluster: the run lands in runs/ with the workload's metrics, provenance and GPU record, pinned to
one node, exactly as the local executor writes it."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from reportgen.cli import main
from tests.conftest import REPO
from tests.helpers import write_spec

pytestmark = [pytest.mark.ray, pytest.mark.slow, pytest.mark.xdist_group("ray-2")]

OFFLOAD_TRIO = ["--optimizer-cpu-offload", "--overlap-cpu-optimizer-d2h-h2d", "--use-precision-aware-optimizer"]


def test_embedded_workload_runs_as_ray_jobs(tmp_path: Path, ray_cluster: str) -> None:
    spec = write_spec(
        tmp_path / "ray-grpo.toml",
        name="ray-grpo",
        title="Embedded workload on Ray",
        recipe={
            "script": REPO / "scripts" / "recipes" / "grpo-recipe.sh",
            "workdir": REPO,
            "entrypoint": "reportgen.workloads.grpo",
            "env": {"NUM_ROLLOUT": "3", "PRESET": "cpu-tiny", "DEVICE": "cpu"},
        },
        workload={"steps": 3, "flags": ["--num-rollout", "--global-batch-size"]},
        analysis={"warmup_steps": 1, "windows": [{"name": "W1", "start": 1, "end": 2}]},
        candidates=[{"id": "A1", "title": "Remove the optimizer offload trio", "remove": OFFLOAD_TRIO}],
    )
    runs = tmp_path / "runs"
    assert main(["run", str(spec), "--runs", str(runs), "--ray", ray_cluster]) == 0
    exp = runs / "ray-grpo"
    node = json.loads((exp / "campaign.json").read_text())["executor"]["node_id"]
    for arm in ("baseline", "A1"):
        run_dir = exp / arm / "1"
        m = json.loads((run_dir / "manifest.json").read_text())
        assert m["status"] == "complete" and m["executor"]["kind"] == "ray" and m["executor"]["node_id"] == node
        assert m["effective_argv"]["--num-rollout"] == "3"
        metrics = pd.read_parquet(run_dir / "metrics.parquet")
        steps = sorted(metrics.loc[metrics.key == "perf/step_resp_token_per_s", "step"].unique())
        assert steps == [0, 1, 2]
        assert {"train/loss", "rollout/raw_reward", "rollout/num_samples"} <= set(metrics.key)
        assert (run_dir / "provenance" / "pip-freeze.txt").stat().st_size > 0
        assert (run_dir / "gpu.parquet").is_file()
    doc = json.loads((exp / "analysis.json").read_text())
    assert [c["candidate"] for c in doc["comparisons"]] == ["A1"]

"""The shipped recipe and default experiment: the spec validates, the recipe runs the workload."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from reportgen.specfile import load_spec

REPO = Path(__file__).resolve().parents[2]
SPEC = REPO / "scripts" / "recipes" / "default.toml"


@pytest.mark.parametrize("profile", [None, "traces", "gpu", "gpu2"])
def test_default_spec_validates(profile):
    spec = load_spec(SPEC, profile=profile)
    cpu = profile in (None, "traces")
    # the CPU demo leaves out A2, whose risk (device memory under the cap) a CPU cannot show
    assert spec.arm_ids() == (["baseline", "A1", "A3"] if cpu else ["baseline", "A1", "A2", "A3"])
    # profiler runs on the GPU, and on the CPU only when asked for (`--profile traces`)
    assert (spec.profiler is None) == (profile is None)
    if spec.profiler is not None:
        assert spec.profiler.arms == ["baseline", "A1"] and spec.profiler.add["--use-pytorch-profiler"] is True
    assert spec.workload.steps == int(spec.recipe.env["NUM_ROLLOUT"])
    last = spec.analysis.windows[-1].end
    assert last == spec.workload.steps - 1
    assert len(spec.analysis.windows) == (2 if cpu else 3)  # the CPU demo's runs are short
    # every profile is a sequential campaign; the GPU ones use the calibrated design
    assert spec.run.until == "decided" and spec.run.order == "interleaved"
    if not cpu:
        assert (spec.run.min_pairs, spec.run.max_pairs, spec.run.budget_minutes) == (3, 12, None)
        assert spec.recipe.env["ROLLOUT_BATCH_SIZE"] == "4"  # not the CPU demo's 2 (profile tables merge)
    a1 = spec.candidate("A1")
    assert set(a1.remove) == {
        "--optimizer-cpu-offload",
        "--overlap-cpu-optimizer-d2h-h2d",
        "--use-precision-aware-optimizer",
    }
    recipe = (REPO / "scripts" / "recipes" / spec.recipe.script).read_text()
    a2 = load_spec(SPEC, profile="gpu").candidate("A2")
    for flag in [*a1.remove, *a2.remove, *spec.candidate("A3").set]:
        assert flag in recipe, flag


@pytest.mark.slow
def test_recipe_runs_the_workload(tmp_path):
    env = dict(
        os.environ,
        NUM_ROLLOUT="2",
        PYTHON=sys.executable,
        TENSORBOARD_DIR=str(tmp_path / "tb"),
        ROLLOUT_BATCH_SIZE="2",
        N_SAMPLES_PER_PROMPT="4",
        GLOBAL_BATCH_SIZE="8",
        DEVICE="cpu",
    )
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    proc = subprocess.run(
        ["bash", str(REPO / "scripts" / "recipes" / "grpo-recipe.sh")],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    # `set -x` prints the effective argv, as a Relax recipe does.
    assert re.search(r"^\+ \S+ -m reportgen\.workloads\.grpo .*--optimizer-cpu-offload", proc.stderr, re.M)
    assert len(re.findall(r" - perf 1: \{", proc.stdout)) == 2
    assert list((tmp_path / "tb").glob("events.out.tfevents.*"))

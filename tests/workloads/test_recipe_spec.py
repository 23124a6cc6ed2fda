"""The shipped recipe and default experiment: the spec validates. That the recipe runs the workload is
checked on the end-to-end pipeline's baseline run (tests/e2e/test_pipeline.py), not on a GRPO run of its own."""

from __future__ import annotations

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
    assert len(spec.analysis.windows) == 2  # two windows after the burn-in (docs/analysis.md#burn-in)
    # every profile is a sequential campaign; the GPU ones use the calibrated design
    assert spec.run.until == "decided" and spec.run.order == "interleaved"
    if not cpu:
        assert (spec.run.min_pairs, spec.run.max_pairs, spec.run.budget_minutes) == (2, 16, None)
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

"""A tiny but real workload for runner tests: a bash recipe in Relax's style whose final command
is a Python trainer stand-in printing Relax-format metric lines, one step every STEP_SLEEP s."""

from __future__ import annotations

import sys
import textwrap
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import write_spec

TRAINER = textwrap.dedent(
    """
    import argparse, os, random, sys, time, zlib
    p = argparse.ArgumentParser()
    p.add_argument("--num-rollout", type=int, default=5)
    p.add_argument("--global-batch-size", type=int, default=4)
    p.add_argument("--step-sleep", type=float, default=0.05)
    p.add_argument("--fail-at", type=int, default=-1)
    p.add_argument("--speed", type=float, default=100.0)
    p.add_argument("--optimizer-cpu-offload", action="store_true")
    p.add_argument("--noise", type=float, default=0.0)  # run-to-run: each run's speed is off by this (sd)
    p.add_argument("--noise-per-experiment", action="store_true")  # another draw in each experiment folder
    p.add_argument("--seed", type=int, default=1234)
    p.add_argument("--rollout-seed", type=int, default=42)  # its reward depends on it, as a trainer's would
    a, _ = p.parse_known_args()
    # The same run folder (arm/repeat, or experiment/arm/repeat) always draws the same offset:
    # tests stay deterministic.
    depth = 3 if a.noise_per_experiment else 2
    here = "/".join(os.environ.get("REPORTGEN_RUN_DIR", "x").split("/")[-depth:])
    offset = 1.0 + a.noise * random.Random(zlib.crc32(here.encode())).gauss(0.0, 1.0)
    print(f"> setting random seeds to {a.seed} ...", flush=True)
    reward = 0.25 + 0.5 * random.Random(a.rollout_seed).random()
    for step in range(a.num_rollout):
        time.sleep(a.step_sleep)
        if step == a.fail_at:
            print("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.46 GiB.", file=sys.stderr, flush=True)
            sys.exit(1)
        speed = a.speed * (0.5 if a.optimizer_cpu_offload else 1.0) * offset
        st = 4 * 8 / speed
        print(f"[2026-08-05 10:11:12] data.py:1 - perf {step}: {{'perf/step_time': {st}, 'perf/train_time': {st/2}, 'perf/train_wait_time': {st/2}, 'perf/step_resp_token_per_s': {speed}, 'perf/step_token_per_s': {speed*2}, 'perf/actor_train_time': {st/3}}}", flush=True)
        print(f"[2026-08-05 10:11:12] data.py:2 - rollout {step}: {{'rollout/raw_reward': {reward}, 'rollout/response_lengths': 8.0, 'rollout/num_samples': {a.global_batch_size}}}", flush=True)
        print(f"[2026-08-05 10:11:12] model.py:3 - step {step}: {{'train/loss': 0.1, 'train/grad_norm': 1.0}}", flush=True)
    """
)

RECIPE = textwrap.dedent(
    """\
    #!/bin/bash
    set -ex
    STEPS=${STEPS:-5}

    # fixed workload
    WORKLOAD_ARGS=(
       --num-rollout ${STEPS}
       --global-batch-size 4
    )

    PERF_ARGS=(
       # the offload flag the candidate removes
       --optimizer-cpu-offload
       --step-sleep ${STEP_SLEEP:-0.05}
    )

    "${PYTHON}" trainer.py \\
       ${WORKLOAD_ARGS[@]} \\
       ${PERF_ARGS[@]}
    """
)

# The recipe with Relax's two seeds, for seeds per block ([run] seeds = "per-block").
SEEDED_RECIPE = RECIPE.replace(
    "   --global-batch-size 4\n", "   --global-batch-size 4\n   --seed 1234\n   --rollout-seed 42\n"
)
SEED_FLAGS = ["--seed", "--rollout-seed"]

# The candidate every runner experiment has: the stand-in trainer is twice as fast without the flag.
A1 = {"id": "A1", "title": "Remove the offload flag", "remove": ["--optimizer-cpu-offload"]}


def make_experiment(
    root: Path,
    *,
    name: str = "exp",
    steps: int = 5,
    sleep: float = 0.05,
    timeout: float = 120,
    order: str | None = "sequential",
    repeats: int | None = 1,
    run: Mapping[str, Any] | None = None,
    candidates: Sequence[Mapping[str, Any]] = (A1,),
    recipe: str = RECIPE,
    seeds: bool = False,
) -> Path:
    """recipe.sh, trainer.py and experiment.toml under `root`; returns the spec's path. The spec's
    [run] holds `timeout`, `order` and `repeats` (None leaves one out) and the keys of `run`.
    `seeds`: the recipe has Relax's `--seed` and `--rollout-seed` (the stand-in's reward depends on
    the latter), and every block runs with its own ([run] seeds = "per-block")."""
    if seeds:
        recipe = SEEDED_RECIPE if recipe == RECIPE else recipe
        run = {"seeds": "per-block", **(run or {})}
    root.mkdir(parents=True, exist_ok=True)
    (root / "trainer.py").write_text(TRAINER)
    (root / "recipe.sh").write_text(recipe)
    fixed = {"order": order, "repeats": repeats}
    return write_spec(
        root / "experiment.toml",
        name=name,
        title="Runner test experiment",
        hypothesis="without offload the stand-in trainer is twice as fast",
        recipe={
            "script": "recipe.sh",
            "python": sys.executable,
            "entrypoint": "trainer.py",
            "env": {"STEPS": str(steps), "STEP_SLEEP": str(sleep)},
        },
        workload={
            "flags": ["--num-rollout", "--global-batch-size", *(SEED_FLAGS if seeds else [])],
            "steps": steps,
            **({"seed_flags": SEED_FLAGS} if seeds else {}),
        },
        run={"timeout_s": timeout, **{k: v for k, v in fixed.items() if v is not None}, **(run or {})},
        analysis={
            "warmup_steps": 1,
            "windows": [{"name": "W1", "start": 1, "end": 2}, {"name": "W2", "start": 3, "end": 4}],
            # the stand-in logs a constant reward (nothing to test): runner tests judge speed alone
            "quality_metric": "none",
        },
        candidates=candidates,
    )


@pytest.fixture
def experiment(tmp_path: Path) -> Path:
    return make_experiment(tmp_path / "recipes")

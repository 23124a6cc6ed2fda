"""The one recipe in Relax's style the tests edit and read: flag arrays with comments, blank lines
and a value of two words, continuation lines, quoted and unquoted array expansions, and one
`ray job submit ... -- python3 -m relax.entrypoints.train` line, as Relax's own scripts have
(tests/ingest/relax_sources.md, `recipe-2gpu`). The plan tests compare its edits byte for byte
(tests/plan/test_plan_recipe_golden.py); the Relax example stands it in for the real script."""

# `{launch}` is the command the recipe ends with: Relax's `ray job submit ... -- python3 -m ...`
# for the byte-for-byte tests, or `printf '%s\n'` to print the effective argv when run.
TEMPLATE = r"""#!/bin/bash

# Qwen3-VL-4B GRPO, 2 GPUs, colocate.
set -ex

NUM_GPUS=${NUM_GPUS:-2}
NUM_ROLLOUT=${NUM_ROLLOUT:-200}
DATA_DIR=${DATA_DIR:-/data}

ROLLOUT_ARGS=(
   --prompt-data ${DATA_DIR}/train.parquet
   --num-rollout ${NUM_ROLLOUT}
   --rollout-batch-size 2

   # sampling
   --rollout-temperature 0.8
   --loss-scale -1
)

PERF_ARGS=(
   --tensor-model-parallel-size 2
   --recompute-granularity full
   --recompute-method uniform
   --recompute-num-layers 1
   --use-dynamic-batch-size
   --max-tokens-per-gpu 9216
)

OPTIMIZER_ARGS=(
   --optimizer adam
   --adam-betas 0.9 0.98   # two values
   # CPU offload: saves memory, costs step time
   --optimizer-cpu-offload
   --overlap-cpu-optimizer-d2h-h2d
   --use-precision-aware-optimizer
)

{launch} --address="http://127.0.0.1:8265" \
   --runtime-env-json='{"env_vars": {"A": "1"}}' \
   -- python3 -m relax.entrypoints.train \
   --actor-num-gpus-per-node ${NUM_GPUS} \
   --colocate \
   ${ROLLOUT_ARGS[@]} \
   ${PERF_ARGS[@]} \
   "${OPTIMIZER_ARGS[@]}" \
   --seed 1234
"""

RAY = "ray job submit"
PRINTF = "printf '%s\\n'"


def recipe(launch: str = RAY, *, tee: str | None = None) -> str:
    """The recipe ending in `launch`; with `tee`, its output also goes to that log file, as Relax's
    scripts end (`... 2>&1 | tee log/run.log`)."""
    text = TEMPLATE.replace("{launch}", launch)
    return text if tee is None else text.replace("   --seed 1234\n", f"   --seed 1234 2>&1 | tee {tee}\n")


RECIPE = recipe()

# What `printf '%s\n'` prints for the unpatched recipe (defaults of the env variables).
BASELINE_ARGV = [
    "--address=http://127.0.0.1:8265",
    '--runtime-env-json={"env_vars": {"A": "1"}}',
    "--",
    "python3",
    "-m",
    "relax.entrypoints.train",
    "--actor-num-gpus-per-node",
    "2",
    "--colocate",
    "--prompt-data",
    "/data/train.parquet",
    "--num-rollout",
    "200",
    "--rollout-batch-size",
    "2",
    "--rollout-temperature",
    "0.8",
    "--loss-scale",
    "-1",
    "--tensor-model-parallel-size",
    "2",
    "--recompute-granularity",
    "full",
    "--recompute-method",
    "uniform",
    "--recompute-num-layers",
    "1",
    "--use-dynamic-batch-size",
    "--max-tokens-per-gpu",
    "9216",
    "--optimizer",
    "adam",
    "--adam-betas",
    "0.9",
    "0.98",
    "--optimizer-cpu-offload",
    "--overlap-cpu-optimizer-d2h-h2d",
    "--use-precision-aware-optimizer",
    "--seed",
    "1234",
]

OFFLOAD = ("--optimizer-cpu-offload", "--overlap-cpu-optimizer-d2h-h2d", "--use-precision-aware-optimizer")
RECOMPUTE = ("--recompute-granularity", "--recompute-method", "--recompute-num-layers")

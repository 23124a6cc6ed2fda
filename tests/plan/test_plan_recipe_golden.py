"""Spec edits applied to a Relax-style bash recipe, compared byte for byte with the expected script."""

from __future__ import annotations

import subprocess

import pytest

from reportgen.plan.recipe import edit_script
from reportgen.specfile.model import Edits
from tests.relax_recipe import OFFLOAD, RECIPE, RECOMPUTE

HEAD = r"""#!/bin/bash

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
"""

A1 = Edits(remove=OFFLOAD)
A2 = Edits(remove=RECOMPUTE)
A3 = Edits(set=(("--max-tokens-per-gpu", ("8192",)),))

EXPECTED_A1 = (
    HEAD
    + r"""
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
)

ray job submit --address="http://127.0.0.1:8265" \
   --runtime-env-json='{"env_vars": {"A": "1"}}' \
   -- python3 -m relax.entrypoints.train \
   --actor-num-gpus-per-node ${NUM_GPUS} \
   --colocate \
   ${ROLLOUT_ARGS[@]} \
   ${PERF_ARGS[@]} \
   "${OPTIMIZER_ARGS[@]}" \
   --seed 1234
"""
)

EXPECTED_A2 = (
    HEAD
    + r"""
PERF_ARGS=(
   --tensor-model-parallel-size 2
   --use-dynamic-batch-size
   --max-tokens-per-gpu 9216
)

OPTIMIZER_ARGS=(
   --optimizer adam
   --adam-betas 0.9 0.98   # two values
   # CPU offload: saves memory, costs step time
)

ray job submit --address="http://127.0.0.1:8265" \
   --runtime-env-json='{"env_vars": {"A": "1"}}' \
   -- python3 -m relax.entrypoints.train \
   --actor-num-gpus-per-node ${NUM_GPUS} \
   --colocate \
   ${ROLLOUT_ARGS[@]} \
   ${PERF_ARGS[@]} \
   "${OPTIMIZER_ARGS[@]}" \
   --seed 1234
"""
)

EXPECTED_A3 = (
    HEAD
    + r"""
PERF_ARGS=(
   --tensor-model-parallel-size 2
   --recompute-granularity full
   --recompute-method uniform
   --recompute-num-layers 1
   --use-dynamic-batch-size
   --max-tokens-per-gpu 8192
)

OPTIMIZER_ARGS=(
   --optimizer adam
   --adam-betas 0.9 0.98   # two values
   # CPU offload: saves memory, costs step time
)

ray job submit --address="http://127.0.0.1:8265" \
   --runtime-env-json='{"env_vars": {"A": "1"}}' \
   -- python3 -m relax.entrypoints.train \
   --actor-num-gpus-per-node ${NUM_GPUS} \
   --colocate \
   ${ROLLOUT_ARGS[@]} \
   ${PERF_ARGS[@]} \
   "${OPTIMIZER_ARGS[@]}" \
   --seed 1234
"""
)

# add after a named flag (two adds keep their order), then add with no anchor: it goes to the
# end of the array edited last (PERF_ARGS, where the anchor lives).
ADD = (
    Edits(add=(("--use-tis", True), ("--tis-clip", ("2.0",))), add_after="--recompute-num-layers"),
    Edits(add=(("--sglang-mem-fraction-static", ("0.7",)),)),
)
EXPECTED_ADD = (
    HEAD
    + r"""
PERF_ARGS=(
   --tensor-model-parallel-size 2
   --recompute-granularity full
   --recompute-method uniform
   --recompute-num-layers 1
   --use-tis
   --tis-clip 2.0
   --use-dynamic-batch-size
   --max-tokens-per-gpu 9216
   --sglang-mem-fraction-static 0.7
)

OPTIMIZER_ARGS=(
   --optimizer adam
   --adam-betas 0.9 0.98   # two values
   # CPU offload: saves memory, costs step time
   --optimizer-cpu-offload
   --overlap-cpu-optimizer-d2h-h2d
   --use-precision-aware-optimizer
)

ray job submit --address="http://127.0.0.1:8265" \
   --runtime-env-json='{"env_vars": {"A": "1"}}' \
   -- python3 -m relax.entrypoints.train \
   --actor-num-gpus-per-node ${NUM_GPUS} \
   --colocate \
   ${ROLLOUT_ARGS[@]} \
   ${PERF_ARGS[@]} \
   "${OPTIMIZER_ARGS[@]}" \
   --seed 1234
"""
)

TAIL_UNCHANGED_ARRAYS = r"""
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
"""

# set inside the continued command line: a value, a quoted JSON value, a switch gaining values,
# and an add after the command's last line (which must gain a continuation).
CMD_SET = (
    Edits(
        set=(
            ("--actor-num-gpus-per-node", ("4",)),
            ("--runtime-env-json", ('{"env_vars": {"B": "2 3"}}',)),
            ("--colocate", ("a b", "c")),
        ),
    ),
    Edits(add=(("--debug-dump", True),), add_after="--seed"),
)
EXPECTED_CMD_SET = (
    HEAD
    + TAIL_UNCHANGED_ARRAYS
    + r"""
ray job submit --address="http://127.0.0.1:8265" \
   --runtime-env-json='{"env_vars": {"B": "2 3"}}' \
   -- python3 -m relax.entrypoints.train \
   --actor-num-gpus-per-node 4 \
   --colocate 'a b' c \
   ${ROLLOUT_ARGS[@]} \
   ${PERF_ARGS[@]} \
   "${OPTIMIZER_ARGS[@]}" \
   --seed 1234 \
   --debug-dump
"""
)

# remove the last line of the continued command: the line before must lose its backslash.
EXPECTED_REMOVE_LAST = (
    HEAD
    + TAIL_UNCHANGED_ARRAYS
    + r"""
ray job submit --address="http://127.0.0.1:8265" \
   --runtime-env-json='{"env_vars": {"A": "1"}}' \
   -- python3 -m relax.entrypoints.train \
   --actor-num-gpus-per-node ${NUM_GPUS} \
   --colocate \
   ${ROLLOUT_ARGS[@]} \
   ${PERF_ARGS[@]} \
   "${OPTIMIZER_ARGS[@]}"
"""
)

# remove a middle line of the command (its own backslash goes with it) and turn a flag with
# values into a switch.
EXPECTED_REMOVE_MIDDLE = (
    HEAD
    + TAIL_UNCHANGED_ARRAYS
    + r"""
ray job submit --address="http://127.0.0.1:8265" \
   --runtime-env-json='{"env_vars": {"A": "1"}}' \
   -- python3 -m relax.entrypoints.train \
   --colocate \
   ${ROLLOUT_ARGS[@]} \
   ${PERF_ARGS[@]} \
   "${OPTIMIZER_ARGS[@]}" \
   --seed
"""
)

CASES = {
    "A1": ([A1], EXPECTED_A1),
    "A2": ([A1, A2], EXPECTED_A2),
    "A3": ([A1, A3], EXPECTED_A3),
    "add": (list(ADD), EXPECTED_ADD),
    "set-in-command": (list(CMD_SET), EXPECTED_CMD_SET),
    "remove-last-continued": ([Edits(remove=("--seed",))], EXPECTED_REMOVE_LAST),
    "remove-middle-continued": (
        [Edits(remove=("--actor-num-gpus-per-node",), set=(("--seed", True),))],
        EXPECTED_REMOVE_MIDDLE,
    ),
}


def test_fixture_head_is_the_recipe_head():
    assert RECIPE.startswith(HEAD + TAIL_UNCHANGED_ARRAYS)


@pytest.mark.parametrize("name", sorted(CASES))
def test_patched_script_is_byte_identical_to_expected(name, tmp_path):
    edits, expected = CASES[name]
    got = edit_script(RECIPE, edits, path="scripts/run.sh")
    if got != expected:
        (tmp_path / f"{name}.got").write_text(got)
    assert got == expected
    # Every patched script is still bash.
    script = tmp_path / f"{name}.sh"
    script.write_text(got)
    check = subprocess.run(["bash", "-n", str(script)], capture_output=True, text=True)
    assert check.returncode == 0, check.stderr


def test_no_edits_keeps_the_recipe():
    assert edit_script(RECIPE, []) == RECIPE
    assert edit_script(RECIPE, [Edits(set=(("--max-tokens-per-gpu", ("9216",)),))]) == RECIPE

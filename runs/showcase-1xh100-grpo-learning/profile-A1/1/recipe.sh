#!/usr/bin/env bash
# GRPO recipe for reportgen's embedded workload (python -m reportgen.workloads.grpo), written in
# Relax's recipe style: `set -ex`, flag arrays by section, environment overrides, one command.
# Its baseline mirrors the task-01 plan's: optimizer offload trio on, full recompute, dynamic batch
# under a token budget. Unlike Relax's launcher it starts no Ray and kills no process.
#
#   bash scripts/recipes/grpo-recipe.sh                      # CPU-tiny model, 48 steps
#   PRESET=gpu-small DEVICE=cuda LR=1.25e-4 NUM_ROLLOUT=80 bash scripts/recipes/grpo-recipe.sh
#   NUM_GPUS=2 PRESET=gpu-small DEVICE=cuda bash scripts/recipes/grpo-recipe.sh   # data parallel, 2 GPUs
#   IGNORE_EOS=1 ...                                          # every response exactly MAX_RESPONSE_LEN tokens
set -ex

NUM_ROLLOUT=${NUM_ROLLOUT:-48}
NUM_GPUS=${NUM_GPUS:-1}
PRESET=${PRESET:-cpu-tiny}
DEVICE=${DEVICE:-auto}
PROJECT_NAME=${PROJECT_NAME:-reportgen}
EXPERIMENT_NAME=${EXPERIMENT_NAME:-grpo-max-${PRESET}}
ROLLOUT_BATCH_SIZE=${ROLLOUT_BATCH_SIZE:-4}
N_SAMPLES_PER_PROMPT=${N_SAMPLES_PER_PROMPT:-8}
GLOBAL_BATCH_SIZE=${GLOBAL_BATCH_SIZE:-32}
MAX_RESPONSE_LEN=${MAX_RESPONSE_LEN:-16}
MAX_PROMPT_LEN=${MAX_PROMPT_LEN:-8}
MAX_TOKENS_PER_GPU=${MAX_TOKENS_PER_GPU:-192}
# Adam's step size. 7e-4 suits the cpu-tiny model (hidden 128); a wider model moves further per step
# (the GPU profile's gpu-small, hidden 1024, sets its own: scripts/recipes/default.toml).
LR=${LR:-7e-4}
# Optional: cap this process's GPU memory to emulate a smaller card (workload-only flag).
EXTRA_ARGS=()
if [ -n "${GPU_MEMORY_FRACTION:-}" ]; then
   EXTRA_ARGS+=(--gpu-memory-fraction "${GPU_MEMORY_FRACTION}")
fi
if [ -n "${GPU_MEMORY_CAP_GIB:-}" ]; then
   EXTRA_ARGS+=(--gpu-memory-cap-gib "${GPU_MEMORY_CAP_GIB}")
fi
# Optional: fixed-length responses (sampling goes on past <eos>), so every arm generates the same
# tokens per step whatever its policy learnt (SGLang's ignore_eos; workload-only flag).
if [ -n "${IGNORE_EOS:-}" ]; then
   EXTRA_ARGS+=(--rollout-ignore-eos)
fi

MODEL_ARGS=(
   # Qwen3 decoder built from a config (no download), started from a warm start on the task: a
   # short supervised pass, made once per machine and cached (workload-only flags; a Relax recipe
   # starts from a pretrained model, --hf-checkpoint)
   --preset ${PRESET}
   --device ${DEVICE}
   --warm-start-steps 400
   --warm-start-accuracy 0.25
)

DISTRIBUTED_ARGS=(
   # one colocated rollout+training process per GPU, data parallel (NCCL, NVLink multicast off)
   --actor-num-gpus-per-node ${NUM_GPUS}
)

ROLLOUT_ARGS=(
   --num-rollout ${NUM_ROLLOUT}
   --rollout-batch-size ${ROLLOUT_BATCH_SIZE}
   --n-samples-per-prompt ${N_SAMPLES_PER_PROMPT}
   --rollout-max-response-len ${MAX_RESPONSE_LEN}
   --rollout-max-prompt-len ${MAX_PROMPT_LEN}
   --rollout-temperature 0.8
   --rollout-seed 42
)

GRPO_ARGS=(
   --advantage-estimator grpo
   --global-batch-size ${GLOBAL_BATCH_SIZE}
   --use-kl-loss
   --kl-loss-coef 0.01
   --kl-loss-type low_var_kl
   --entropy-coef 0.0
   --eps-clip 0.2
   --eps-clip-high 0.28
)

OPTIMIZER_ARGS=(
   --optimizer adam
   --lr ${LR}
   --weight-decay 0.1
   --adam-beta1 0.9
   --adam-beta2 0.98
   --clip-grad 1.0
   --use-pytorch-profiler
   --profile-step-start 3
   --profile-step-end 4
   # fp32 master weights and Adam state on the CPU, copies overlapped, bf16 Adam moments
)

PERF_ARGS=(
   # activation checkpointing of every decoder layer
   --recompute-granularity full
   --recompute-method uniform
   --recompute-num-layers 1
   # pack samples into micro-batches under a token budget
   --use-dynamic-batch-size
   --max-tokens-per-gpu ${MAX_TOKENS_PER_GPU}
)

LOG_ARGS=(
   --seed 1234
   --use-tensorboard
   --tb-project-name ${PROJECT_NAME}
   --tb-experiment-name ${EXPERIMENT_NAME}
)

"${PYTHON:-python3}" -m reportgen.workloads.grpo ${MODEL_ARGS[@]} ${DISTRIBUTED_ARGS[@]} ${ROLLOUT_ARGS[@]} ${GRPO_ARGS[@]} \
   ${OPTIMIZER_ARGS[@]} ${PERF_ARGS[@]} ${LOG_ARGS[@]} ${EXTRA_ARGS[@]}

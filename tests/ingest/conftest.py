"""Hand-written Relax-style console output for the ingest tests, and the specs of hand-made runs.

Lines follow docs/ingest.md: coloured loguru-style and plain logger prefixes, Ray's
`(Actor pid=N) ` prefixes, two `perf N` lines per step (rollout manager, then actor), bare
nan/inf, a nested dict with quoted strings, a line garbled by interleaved output, openr1mm's
`parse error` noise, and an OOM at step 9.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers import write_spec

G, C, B, R = "\x1b[32m", "\x1b[36m", "\x1b[1m", "\x1b[0m"
ACTOR = "(MegatronTrainRayActor pid=1234) "
ROLL = "(RolloutManager pid=2345) "


def colour(ts: str, where: str, msg: str) -> str:
    return f"{G}{ts}{R} | {B}INFO{R} | {C}{where}{R} {msg}"


def plain(ts: str, where: str, msg: str) -> str:
    return f"[{ts}] {where} - {msg}"


def step_time(s: int) -> float:
    return round(30.0 + 0.5 * s, 3)


def step_lines(s: int) -> list[str]:
    ts = f"2026-08-05 10:{11 + s:02d}:12"
    grad = "nan" if s == 3 else f"{1.25 + s / 100}"
    lines = [
        ROLL + plain(ts, "reward.py:88", "parse error: could not find \\boxed{} in response"),
        ROLL
        + colour(
            ts,
            "relax.rollout.manager:301",
            f"perf {s}: {{'perf/rollout_time': {12.5 + s}, 'perf/tokens_per_gpu_per_sec': {900 + s}.5, "
            f"'rollout/response_len/mean': {400 + s}.0, 'rollout/truncated_ratio': 0.0}}",
        ),
        ROLL
        + colour(
            ts,
            "relax.rollout.manager:310",
            f"rollout {s}: {{'rollout/raw_reward': 0.{s + 1}, 'rollout/response_lengths': {400 + s}.0, "
            f"'rollout/log_probs': -0.{s + 3}, 'rollout/meta': {{'source': 'openr1mm', 'note': \"it's {{ok}}\"}}}}",
        ),
        ACTOR
        + plain(
            ts,
            "model.py:412",
            f"step {s}: {{'train/loss': 0.0{s + 1}, 'train/pg_loss': -0.0{s + 2}, 'train/grad_norm': {grad}, "
            f"'train/lr-pg_0': 1e-06, 'train/step': {s}}}",
        ),
        ACTOR
        + colour(
            ts,
            "relax.backends.megatron.actor:977",
            f"perf {s}: {{'perf/train_time': {10.0 + s / 10}, 'perf/train_wait_time': {step_time(s) - 10.0 - s / 10:.3f}, "
            f"'perf/step_time': {step_time(s)}, 'perf/step_resp_token_per_s': {250 + s}.25, "
            f"'perf/actor_train_tflops': inf, 'perf/mfu/actor_train': -inf}}",
        ),
        plain(ts, "train.py:55", f"finished rollout {s}, next in queue"),
    ]
    if s == 3:
        lines.insert(3, ACTOR + "Inf found in gradients (step_id=0) skipping parameter update")
    return lines


OOM_LINE = (
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.46 GiB. GPU 0 has a total capacity "
    "of 79.25 GiB of which 1.10 GiB is free. Including non-PyTorch memory, this process has 78.14 GiB memory in use."
)


def failure_lines() -> list[str]:
    ts = "2026-08-05 10:21:40"
    return [
        ROLL
        + colour(
            ts,
            "relax.rollout.manager:301",
            "perf 9: {'perf/rollout_time': 21.5, 'perf/tokens_per_gpu_per_sec': 909.5, "
            "'rollout/response_len/mean': 409.0, 'rollout/truncated_ratio': 0.0}",
        ),
        ACTOR + plain(ts, "actor.py:120", "Actor training failed at step 9: OutOfMemoryError: CUDA out of memory."),
        ACTOR + "Traceback (most recent call last):",
        ACTOR + '  File "/opt/relax/relax/backends/megatron/actor.py", line 118, in train',
        ACTOR + "    loss.backward()",
        ACTOR + '  File "/usr/lib/python3/site-packages/torch/_tensor.py", line 625, in backward',
        ACTOR + "    torch.autograd.backward(",
        ACTOR + OOM_LINE,
        plain(
            "2026-08-05 10:21:41",
            "train.py:77",
            "Training loop failed with error: ray.exceptions.RayTaskError(OutOfMemoryError)",
        ),
        plain("2026-08-05 10:21:41", "train.py:80", "Graceful shutdown triggered (training failure)"),
    ]


GARBLED = ACTOR + colour(
    "2026-08-05 10:14:12",
    "relax.backends.megatron.actor:977",
    "perf 2: {'perf/train_time': 10.2, 'perf/st" + ROLL + "loading shard 3/8",
)


def relax_stdout(steps: int = 9, *, fail: bool = True) -> str:
    lines = [
        plain("2026-08-05 10:10:01", "train.py:12", "starting Relax training"),
        "> setting random seeds to 1234 ...",
    ]
    for s in range(steps):
        lines += step_lines(s)
        if s == 2:
            lines.append(GARBLED)
    if fail:
        lines += failure_lines()
    else:  # Relax's clean end (relax/entrypoints/train.py:121, :60): without it a log reads as cut
        ts = f"2026-08-05 10:{10 + max(steps, 1):02d}:12"  # the last step's second
        lines += [
            plain(ts, "train.py:121", "Main func successfully"),
            plain(ts, "train.py:60", "Graceful shutdown triggered (atexit) \u2014 cleaning up"),
        ]
    return "\n".join(lines) + "\n"


TRACE = (
    "+ NUM_GPUS=2\n"
    "+ source scripts/entrypoint/local.sh\n"
    "++ ray status\n"
    '+ ray job submit --address=http://127.0.0.1:8265 --runtime-env-json=\'{"env_vars": {"A": "1"}}\' -- '
    "python3 -m relax.entrypoints.train --colocate --tensor-model-parallel-size 2 --num-rollout 200 "
    "--rollout-batch-size 2 --n-samples-per-prompt 8 --global-batch-size 16 --rollout-max-response-len 1024 "
    "--rollout-max-prompt-len 2048 --rollout-temperature 0.8 --max-tokens-per-gpu 9216 "
    "--prompt-template 'Think step by step: {q}' --eval-datasets a.parquet b.parquet --lr=1e-6 "
    "--loss-scale -1 --recompute-granularity full --recompute-method uniform --recompute-num-layers 1\n"
)

DUMP = (
    ACTOR
    + "------------------------ arguments ------------------------\n"
    + ACTOR
    + "  global_batch_size ............................... 16\n"
    + ACTOR
    + "  n_samples_per_prompt ............................ 8\n"
    + ACTOR
    + "  rollout_max_response_len ........................ 1024\n"
    + ACTOR
    + "  use_precision_aware_optimizer ................... False\n"
    + ACTOR
    + "  a_very_long_argument_name_that_has_no_dots_at_all  7\n"
    + ACTOR
    + "  eval_datasets ................................... ['a.parquet', 'b.parquet']\n"
    + ACTOR
    + "-------------------- end of arguments ---------------------\n"
)


@pytest.fixture
def stdout_text() -> str:
    return relax_stdout()


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    d = tmp_path / "run"
    d.mkdir()
    (d / "stdout.log").write_text(relax_stdout(), encoding="utf-8")
    (d / "stderr.log").write_text(TRACE + DUMP + "W1129 some warning\n", encoding="utf-8")
    return d


OFFLOAD = "--optimizer-cpu-offload"


def paste_spec(path: Path) -> Path:
    """The least spec `reportgen ingest` takes for a pasted log: Relax's command line as the recipe."""
    return write_spec(
        path,
        name="x",
        title="t",
        recipe={"argv": ["python3", "-m", "relax.entrypoints.train", OFFLOAD]},
        candidates=[{"id": "A1", "title": "a", "remove": [OFFLOAD]}],
    )


def hand_made_spec(path: Path, *, flags: tuple[str, ...], title: str = "Drop optimizer CPU offload") -> Path:
    """The spec of a run made by hand and ingested: experiment "offload", its recipe the script
    recipe.sh beside it, `flags` the fixed workload, one candidate without the offload flag."""
    return write_spec(
        path,
        name="offload",
        title=title,
        recipe={"script": "recipe.sh"},
        workload={"flags": list(flags)},
        candidates=[{"id": "A1", "title": "no offload", "remove": [OFFLOAD]}],
    )

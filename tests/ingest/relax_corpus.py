"""Relax console logs written from the facts in relax_sources.md (Relax at 039ce87), not from our notes.

Each fixture line is a `(source id, text)` pair; the id names the row of relax_sources.md whose
file, line and format the text follows (`test_relax_corpus.py` checks every id exists there). The
logs are what `ray job submit ... 2>&1 | tee log/x.log` of the 2-GPU recipe leaves: the job's
driver lines (Megatron's argument dump, printed while the driver parses its arguments, then the
entrypoint's logger), the workers' lines behind Ray's `(Name pid=N)` prefix, and Ray's own
job-status lines at the end. The lifecycle fixtures (a cut log, a resumed run, a retried job, an
in-run restart, a fully-async run) and the pastes (a traceback alone, a Ray error banner, a
wrapped terminal copy) follow the rows of the same file.
"""

from __future__ import annotations

import datetime as dt
import math
import random
from collections.abc import Iterable, Sequence

Line = tuple[str, str]

RESET = "\x1b[0m"
GREEN, CYAN = "\x1b[32m", "\x1b[36m"
# colorlog's level colours (relax/utils/logging_utils.py:30-36): bold_white, bold_yellow, bold_red.
LEVEL = {"INFO": "\x1b[01;37m", "WARNING": "\x1b[01;33m", "ERROR": "\x1b[01;31m"}
# The fallback formatter colours the whole line by level (logging_utils.py:14-21).
PLAIN_LEVEL = {"INFO": "\x1b[32m", "WARNING": "\x1b[33m", "ERROR": "\x1b[31m"}

ACTOR = ("MegatronTrainRayActor", 4242)
# With a critic (PPO) the critic's train group is a second set of MegatronTrainRayActor workers (critic-step).
CRITIC = ("MegatronTrainRayActor", 5353)
ROLLOUT = ("RolloutManager", 2323)
SERVE_ACTOR = ("ServeReplica:actor:Actor", 3131)
SERVE_ROLLOUT = ("ServeReplica:rollout:Rollout", 3232)
JOB_ID = "raysubmit_Q3vLk2x7mT9aBcDe"
GIB_ALLOC = "2.46 GiB"
OOM_TEXT = (
    f"CUDA out of memory. Tried to allocate {GIB_ALLOC}. GPU 0 has a total capacity of 79.11 GiB of which "
    "1.23 GiB is free. Including non-PyTorch memory, this process has 77.86 GiB memory in use. Of the allocated "
    "memory 71.02 GiB is allocated by PyTorch, and 5.31 GiB is reserved by PyTorch but unallocated."
)
SAMPLES = 16  # --rollout-batch-size 2 x --n-samples-per-prompt 8 (recipe-2gpu)


START = dt.datetime(2026, 8, 5, 10, 10, 0)


def ts(second: int) -> str:
    return (START + dt.timedelta(seconds=second)).strftime("%Y-%m-%d %H:%M:%S")


def colour(t: str, level: str, module: str, lineno: int, msg: str) -> str:
    """`log-color`: colorlog's format."""
    lc = LEVEL[level]
    return f"{GREEN}{t}{RESET} | {lc}{level}{RESET} | {CYAN}{module}:{lineno}{RESET} {lc}{msg}{RESET}"


def plain(t: str, level: str, filename: str, lineno: int, msg: str) -> str:
    """`log-plain`: the fallback formatter, the whole line in the level's colour."""
    return f"{PLAIN_LEVEL[level]}[{t}] {filename}:{lineno} - {msg}{RESET}"


def ray(who: tuple[str, int], text: str) -> str:
    """`ray-prefix`: a worker's line as the driver prints it (same node: no `ip=`)."""
    return f"{CYAN}({who[0]} pid={who[1]}){RESET} {text}"


def logger_line(fmt: str, t: str, level: str, module: str, lineno: int, msg: str) -> str:
    if fmt == "plain":
        return plain(t, level, module.rsplit(".", 1)[-1] + ".py", lineno, msg)
    return colour(t, level, module, lineno, msg)


def argument_dump(args: dict[str, object]) -> list[Line]:
    """`arg-dump`: Megatron's dump, printed with `print` by the driver while it parses its arguments
    (before `ray.init`): no Ray prefix, no logger prefix."""
    rows = sorted((f"  {k} {'.' * (48 - len(k))} {v}" for k, v in args.items()), key=str.lower)
    out = [("arg-dump", "------------------------ arguments ------------------------")]
    out += [("arg-dump", r) for r in rows]
    out.append(("arg-dump", "-------------------- end of arguments ---------------------"))
    return out


def recipe_args(
    *,
    steps: int,
    hybrid: bool,
    multi_turn: bool,
    offload: bool,
    wandb_key: str | None,
    critic: bool = False,
    critic_only_steps: int = 0,
    extra: dict[str, object] | None = None,
) -> dict[str, object]:
    """The 2-GPU recipe's arguments as Megatron holds them after Relax's defaults (recipe-2gpu);
    `critic`: with `--advantage-estimator ppo` and the critic's defaults (critic-step); `extra`:
    more (`--load`, `--save`, `--use-health-check`, `--fully-async`)."""
    ppo: dict[str, object] = (
        {
            "advantage_estimator": "ppo",
            "critic_lr": 1e-05,
            "num_critic_only_steps": critic_only_steps,
            "value_clip": 0.2,
        }
        if critic
        else {}
    )
    return {
        **ppo,
        "colocate": True,
        "global_batch_size": 16,
        "hybrid": hybrid,
        "log_multi_turn": multi_turn,
        "max_tokens_per_gpu": 9216,
        "micro_batch_size": 2,
        "n_samples_per_prompt": 8,
        "num_rollout": steps,
        "num_steps_per_rollout": None,
        "optimizer_cpu_offload": offload,
        "overlap_cpu_optimizer_d2h_h2d": offload,
        "recompute_granularity": "full",
        "recompute_method": "uniform",
        "recompute_num_layers": 1,
        "rollout_batch_size": 2,
        "rollout_max_response_len": 1024,
        "seed": 1234,
        "tensor_model_parallel_size": 2,
        "use_precision_aware_optimizer": offload,
        "wandb_key": wandb_key,
        **(extra or {}),
    }


class StepValues:
    """Plausible, self-consistent numbers for one rollout step of the 2-GPU recipe."""

    def __init__(self, rng: random.Random, s: int, speed: float, multi_turn: bool) -> None:
        self.resp = [rng.randint(250, 700) for _ in range(SAMPLES)]  # response lengths
        self.prompt = [rng.randint(500, 800) for _ in range(SAMPLES)]  # prompt + image tokens
        self.total = [p + r for p, r in zip(self.prompt, self.resp, strict=True)]
        # Multi-turn: observation tokens sit inside the response and are masked out of the loss.
        self.masked = [r - (rng.randint(40, 120) if multi_turn else 0) for r in self.resp]
        self.turns = [rng.randint(2, 4) if multi_turn else 1 for _ in range(SAMPLES)]
        self.train_time = round((14.0 + rng.uniform(-0.6, 0.6)) / speed, 6)
        self.wait_time = round(16.0 + rng.uniform(-0.8, 0.8) + (9.0 if s == 0 else 0.0), 6)
        self.rollout_time = round(self.wait_time - 2.5, 6)
        self.step_time = self.train_time + self.wait_time


def _mean(xs: Sequence[float]) -> float:
    return sum(xs) / len(xs)


def step_lines(
    rng: random.Random,
    s: int,
    *,
    speed: float,
    hybrid: bool,
    multi_turn: bool,
    fmt: str,
    nan_loss: bool = False,
    fp16_skip: bool = False,
    passrate: bool = False,
    evaluate: bool = False,
    critic: bool = False,
    critic_fp16_skip: bool = False,
    critic_nan: bool = False,
    t0: int = 0,
) -> list[Line]:
    v = StepValues(rng, s, speed, multi_turn)
    t = ts(t0 + s * 31)
    rollout_perf = {
        "rollout/response_len/mean": _mean(v.resp),
        "rollout/response_len/median": float(sorted(v.resp)[SAMPLES // 2]),
        "rollout/response_len/max": max(v.resp),
        "rollout/response_len/min": min(v.resp),
        "rollout/repetition_frac": 0.0,
        "rollout/truncated_ratio": 0.0,
        "rollout/num_turn/mean": _mean(v.turns),
        "rollout/num_turn/max": max(v.turns),
        "rollout/num_turn/min": min(v.turns),
        "perf/rollout_time": v.rollout_time,
        "perf/tokens_per_gpu_per_sec": sum(v.resp) / v.rollout_time / 2,
        "perf/longest_sample_tokens_per_sec": max(v.resp) / v.rollout_time,
        "perf/effective_tokens_per_gpu_per_sec": sum(v.resp) / v.rollout_time / 2,
        "perf/longest_effective_sample_tokens_per_sec": max(v.resp) / v.rollout_time,
    }
    out: list[Line] = [
        (
            "perf-rollout",
            ray(
                ROLLOUT, logger_line(fmt, t, "INFO", "relax.distributed.ray.rollout", 3913, f"perf {s}: {rollout_perf}")
            ),
        )
    ]
    rollout = {
        "rollout/response_lengths": _mean(v.resp),
        "rollout/total_lengths": _mean(v.total),
        # A reward that rises as the policy learns, with a little noise a step: runs of one arm agree
        # within a few hundredths, as learning runs do (the quality half has something to measure).
        "rollout/raw_reward": round(0.2 + 0.4 * (1 - math.exp(-s / 30)) + rng.uniform(-0.03, 0.03), 6),
        "rollout/rewards": round(rng.uniform(-0.2, 0.2), 6),
        "rollout/advantages": round(rng.uniform(-0.01, 0.01), 6),
        "rollout/log_probs": round(-rng.uniform(0.1, 0.4), 6),
        "rollout/ref_log_probs": round(-rng.uniform(0.1, 0.4), 6),
        "rollout/total_lengths/max": max(v.total),
        "rollout/total_lengths/min": min(v.total),
    }
    out.append(
        (
            "rollout",
            ray(ACTOR, logger_line(fmt, t, "INFO", "relax.backends.megatron.data", 618, f"rollout {s}: {rollout}")),
        )
    )
    if multi_turn:
        mt = {
            "multi_turn/raw_response_length/response_length_mean": _mean(v.resp),
            "multi_turn/raw_response_length/response_length_max": float(max(v.resp)),
            "multi_turn/raw_response_length/response_length_min": float(min(v.resp)),
            "multi_turn/raw_response_length/response_length_clip_ratio": 0.0,
            "multi_turn/wo_obs_response_length/response_length_mean": _mean(v.masked),
            "multi_turn/wo_obs_response_length/response_length_max": float(max(v.masked)),
            "multi_turn/wo_obs_response_length/response_length_min": float(min(v.masked)),
        }
        # numpy values (np.mean/np.max of the round numbers) print as np.float64(x) / np.int64(x).
        text = (
            str(mt)[:-1]
            + f", 'multi_turn/multi_turn_metric/round_number_mean': np.float64({_mean(v.turns)}),"
            + f" 'multi_turn/multi_turn_metric/round_number_max': np.float64({float(max(v.turns))}),"
            + f" 'multi_turn/multi_turn_metric/round_number_min': np.float64({float(min(v.turns))})}}"
        )
        out.append(
            (
                "multi-turn",
                ray(ACTOR, logger_line(fmt, t, "INFO", "relax.backends.megatron.data", 618, f"multi_turn {s}: {text}")),
            )
        )
    if passrate:  # --log-passrate: pass@k for k = 1, 2, 4, 8 (n_samples_per_prompt), numpy values
        rates = ", ".join(f"'passrate/pass@{k}': np.float64({min(1.0, 0.2 * k):.4f})" for k in (1, 2, 4, 8))
        out.append(
            (
                "passrate",
                ray(
                    ACTOR,
                    logger_line(fmt, t, "INFO", "relax.backends.megatron.data", 618, f"passrate {s}: {{{rates}}}"),
                ),
            )
        )
    if evaluate:
        ev = {"eval/openr1mm": round(rng.uniform(0.2, 0.4), 6), "eval/openr1mm-truncated_ratio": 0.0}
        out.append(
            (
                "eval",
                ray(ROLLOUT, logger_line(fmt, t, "INFO", "relax.distributed.ray.rollout", 3889, f"eval {s}: {ev}")),
            )
        )
    # Every rank logs it; Ray's deduplicator prints the second rank's identical line once
    # more with ` [repeated 1x across cluster]` (ray-repeat).
    msg = "Inf found in gradients (step_id=0, loss_scale=65536.0), skipping parameter update (dynamic loss scaling will reduce scale)"
    skip_line = logger_line(fmt, t, "WARNING", "relax.backends.megatron.model", 879, msg)
    if fp16_skip:
        out.append(("fp16-skip", ray(ACTOR, skip_line)))
        out.append(
            ("ray-repeat", ray((ACTOR[0], ACTOR[1] + 1), skip_line) + f"{CYAN} [repeated 1x across cluster]{RESET}")
        )
    if critic:
        if critic_fp16_skip:  # the critic's train step logs the same warning, from its own workers
            out.append(("fp16-skip", ray(CRITIC, skip_line)))
            out.append(
                (
                    "ray-repeat",
                    ray((CRITIC[0], CRITIC[1] + 1), skip_line) + f"{CYAN} [repeated 1x across cluster]{RESET}",
                )
            )
        critic_text = critic_step_text(rng, s, skipped=critic_fp16_skip, diverged=critic_nan)
        out.append(
            (
                "critic-nan" if critic_nan else "critic-step",
                ray(CRITIC, logger_line(fmt, t, "INFO", "relax.backends.megatron.model", 1136, critic_text)),
            )
        )
    grad_norm: float = float("nan") if fp16_skip else round(rng.uniform(0.2, 0.5), 6)
    train = {
        "train/loss": float("nan") if nan_loss else round(rng.uniform(-0.02, 0.02), 8),
        "train/pg_loss": round(rng.uniform(-0.02, 0.02), 8),
        "train/entropy_loss": round(rng.uniform(0.3, 0.5), 6),
        "train/pg_clipfrac": round(rng.uniform(0.0, 0.01), 6),
        "train/ppo_kl": 0.0,
        "train/kl_loss": 0.0,
        "train/tis": 1.0,
        "train/grad_norm": grad_norm,
        "train/lr-pg_0": 1e-06,
        "train/step": s,
    }
    out.append(
        (
            "fp16-nan-gradnorm" if fp16_skip else "train-step",
            ray(ACTOR, logger_line(fmt, t, "INFO", "relax.backends.megatron.model", 1136, f"step {s}: {train}")),
        )
    )
    perf = {
        "perf/ref_log_probs_time": round(1.2 / speed, 6),
        "perf/log_probs_time": round(1.3 / speed, 6),
        "perf/actor_train_time": round(v.train_time - 3.0 / speed, 6),
        "perf/train_time": v.train_time,
        "perf/train_wait_time": v.wait_time,
        "perf/actor_train_tokens": sum(v.total),
        "perf/actor_train_tflops": 120.0 * speed,
        "perf/actor_train_tok_per_s": sum(v.total) / (v.train_time - 3.0 / speed),
        "perf/step_time": v.step_time,
        "perf/wait_time_ratio": v.wait_time / v.step_time,
        "perf/step_token_per_s": sum(v.total) / v.step_time,
    }
    if not hybrid:  # resp-lens: train_hybrid never hands the response counts to the timer
        perf["perf/step_resp_token_per_s"] = sum(v.masked) / v.step_time
    out.append(
        (
            "perf-actor",
            ray(ACTOR, logger_line(fmt, t, "INFO", "relax.utils.training.train_metric_utils", 86, f"perf {s}: {perf}")),
        )
    )
    return out


# The lines the actor prints while it trains a step (its data path and its train step): none in a
# critic-only step.
ACTOR_TRAIN_SOURCES = frozenset({"rollout", "multi-turn", "passrate", "train-step", "fp16-nan-gradnorm", "perf-actor"})


def critic_step_text(rng: random.Random, s: int, *, skipped: bool = False, diverged: bool = False) -> str:
    """`critic-step`: the critic's train-step message; its loss dict is the value loss's two
    metrics, each key tagged `critic-` except the step key. `skipped`: the loss scaler skipped the
    critic's update, so its grad norm is nan (fp16-nan-gradnorm). `diverged`: a bf16 critic run
    without the NaN check whose values went NaN (critic-nan): value loss and grad norm nan, the
    clip fraction finite (no NaN difference exceeds the clip)."""
    grad_norm = round(rng.uniform(2.0, 6.0), 6)  # unlike the actor's 0.2-0.5: never confused
    loss = round(rng.uniform(0.05, 0.3), 8)
    clipfrac = round(rng.uniform(0.0, 0.2), 6)
    values = {
        "train/critic-value_loss": float("nan") if diverged else loss,
        "train/critic-value_clipfrac": 0.0 if diverged else clipfrac,
        "train/critic-grad_norm": float("nan") if skipped or diverged else grad_norm,
        "train/critic-lr-pg_0": 1e-05,  # --critic-lr, no warm-up
        "train/step": s,
    }
    return f"critic-step {s}: {values}"


def start(
    *,
    steps: int,
    hybrid: bool = False,
    multi_turn: bool = False,
    offload: bool = True,
    wandb_key: str | None = None,
    critic: bool = False,
    critic_only_steps: int = 0,
    extra: dict[str, object] | None = None,
    job_id: str = JOB_ID,
    t0: int = 0,
) -> list[Line]:
    """The job's first lines: Ray's submission banner, the driver's argument dump (`parse_args`,
    relax/entrypoints/train.py:127, before `ray.init`), then its first logger line."""
    return [
        ("ray-job-submitted", "-" * 49),
        ("ray-job-submitted", f"Job '{job_id}' submitted successfully"),
        ("ray-job-submitted", "-" * 49),
        *argument_dump(
            recipe_args(
                steps=steps,
                hybrid=hybrid,
                multi_turn=multi_turn,
                offload=offload,
                wandb_key=wandb_key,
                critic=critic,
                critic_only_steps=critic_only_steps,
                extra=extra,
            )
        ),
        ("main-start", colour(ts(t0), "INFO", "relax.entrypoints.train", 93, "Ray initialized successfully")),
    ]


def shutdown(t: str, why: str) -> list[Line]:
    """The entrypoint's `_graceful_shutdown` lines: `atexit` on every exit, a signal name when stopped."""
    return [
        (
            "shutdown",
            colour(
                t,
                "INFO",
                "relax.entrypoints.train",
                60,
                f"Graceful shutdown triggered ({why}) \u2014 cleaning up SGLang engines...",
            ),
        ),
        ("ray-ok", colour(t, "INFO", "relax.entrypoints.train", 72, "Ray shutdown successfully")),
    ]


def clean_end(t: str) -> list[Line]:
    return [
        ("main-ok", colour(t, "INFO", "relax.entrypoints.train", 121, "Main func successfully")),
        *shutdown(t, "atexit"),
        ("ray-job-ok", "-" * 42),
        ("ray-job-ok", f"Job '{JOB_ID}' succeeded"),
        ("ray-job-ok", "-" * 42),
    ]


def healthy(
    steps: int = 12,
    *,
    speed: float = 1.0,
    seed: int = 1,
    hybrid: bool = False,
    multi_turn: bool = False,
    offload: bool = True,
    fmt: str = "color",
    fp16_skips: Iterable[int] = (),
    nan_loss_at: int | None = None,
    wandb_key: str | None = None,
    passrate: bool = False,
    eval_every: int = 0,
    critic: bool = False,
    critic_fp16_skips: Iterable[int] = (),
    critic_nan_at: int | None = None,
    critic_only_steps: int = 0,
) -> list[Line]:
    """A run of `steps` rollout steps that ends as Relax ends a clean run; `critic`: PPO, the
    critic's `critic-step N` line beside the actor's `step N` line in every step (its update skipped
    by the fp16 loss scaler at `critic_fp16_skips`, its values NaN from `critic_nan_at` on); in the first `critic_only_steps` only the
    critic trains (critic-step: the actor prints none of its lines)."""
    rng = random.Random(seed)
    skips = set(fp16_skips)
    critic_skips = set(critic_fp16_skips)
    out = start(
        steps=steps,
        hybrid=hybrid,
        multi_turn=multi_turn,
        offload=offload,
        wandb_key=wandb_key,
        critic=critic,
        critic_only_steps=critic_only_steps,
    )
    for s in range(steps):
        lines = step_lines(
            rng,
            s,
            speed=speed,
            hybrid=hybrid,
            multi_turn=multi_turn,
            fmt=fmt,
            fp16_skip=s in skips,
            nan_loss=s == nan_loss_at,
            passrate=passrate,
            evaluate=bool(eval_every) and s % eval_every == 0,
            critic=critic,
            critic_fp16_skip=s in critic_skips,
            critic_nan=critic_nan_at is not None and s >= critic_nan_at,
        )
        out += [x for x in lines if x[0] not in ACTOR_TRAIN_SOURCES] if s < critic_only_steps else lines
    return out + clean_end(ts(steps * 31))


def _job_failed_tail(job_lines: list[Line], rc: int) -> list[Line]:
    """`ray-job-failed` + `ray-job-tail`: the CLI's failure banner and the job's last 20,000
    characters printed again (the first, cut line included)."""
    body = "\n".join(text for _, text in job_lines)
    tail = body[-20000:].split("\n")
    banner = f"Job '{JOB_ID}' failed"
    return [
        ("ray-job-failed", ""),
        ("ray-job-failed", "-" * len(banner)),
        ("ray-job-failed", banner),
        ("ray-job-failed", "-" * len(banner)),
        ("ray-job-failed", ""),
        (
            "ray-job-tail",
            f"Status message: Job entrypoint command failed with exit code {rc}, last available logs (truncated to 20,000 chars):",
        ),
        *(("ray-job-tail", line) for line in tail),
    ]


TASK_ERROR_HEAD = (
    f"{CYAN}ray::MegatronTrainRayActor.train(){RESET} (pid={ACTOR[1]}, ip=10.0.0.7, "
    "actor_id=5f1e2d3c4b5a69788796a5b4c3d2e1f0, "
    "repr=<relax.backends.megatron.actor.MegatronTrainRayActor object at 0x7f3a2c1b0d90>)"
)


# The actor service's frames down to the remote call (actor-call): relax/components/actor.py:178
# (`_background_run` calls `_execute_training`) and :250 (its `ray.get` of the train group's call).
ACTOR_CALL_FRAMES = [
    '  File "/opt/relax/relax/components/actor.py", line 178, in _background_run',
    "    self._execute_training()",
    '  File "/opt/relax/relax/components/actor.py", line 250, in _execute_training',
    "    ray.get(self.actor_model.async_train(self.step))",
]


def _remote_traceback(exc_line: str, exc_source: str) -> list[Line]:
    """The remote part of a RayTaskError's text (`ray-task-error`): frames, then the cause."""
    frames = [
        '  File "/opt/relax/relax/backends/megatron/actor.py", line 799, in train',
        "    train(rollout_id, self.model, self.optimizer, self.opt_param_scheduler, data_iterator, num_microbatches)",
        '  File "/opt/relax/relax/backends/megatron/model.py", line 1012, in train',
        "    loss_dict, grad_norm = train_one_step(",
    ]
    return [("ray-task-error", ray(SERVE_ACTOR, f)) for f in frames] + [(exc_source, ray(SERVE_ACTOR, exc_line))]


def failure(
    steps_done: int,
    *,
    exc_line: str,
    exc_source: str,
    rc: int = 1,
    seed: int = 1,
    fmt: str = "color",
) -> list[Line]:
    """A run that completes `steps_done` steps, then fails in the actor's training of the next one:
    the actor's message and traceback, the controller's and the entrypoint's, the shutdown line
    with `(atexit)`, then Ray's failure summary re-printing the log's end."""
    rng = random.Random(seed)
    s = steps_done
    job = start(steps=steps_done + 5)
    for i in range(steps_done):
        job += step_lines(rng, i, speed=1.0, hybrid=False, multi_turn=False, fmt=fmt)
    job += step_lines(rng, s, speed=1.0, hybrid=False, multi_turn=False, fmt=fmt)[:2]  # rollout done, training dies
    t = ts(s * 31 + 20)
    cause = exc_line.split(":", 1)[0].rsplit(".", 1)[-1]
    first = f"Actor training failed at step {s}: RayTaskError({cause}): {TASK_ERROR_HEAD}"
    job.append(("actor-failed", ray(SERVE_ACTOR, colour(t, "ERROR", "relax.components.actor", 200, first))))
    job += _remote_traceback(exc_line, exc_source)
    local_tb = [
        "Traceback (most recent call last):",
        *ACTOR_CALL_FRAMES,
        f"ray.exceptions.RayTaskError({cause}): {TASK_ERROR_HEAD}",
    ]
    job += [("actor-failed", ray(SERVE_ACTOR, line)) for line in local_tb]
    job += _remote_traceback(exc_line, exc_source)
    service = f"Service task failed: RayTaskError({cause})"
    for source, module, lineno, msg in (
        ("controller-failed", "relax.core.controller", 579, f"Training loop failed: {service}"),
        ("loop-failed", "relax.entrypoints.train", 118, f"Training loop failed with error: {service}"),
    ):
        job.append((source, colour(t, "ERROR", module, lineno, msg)))
        job += [
            (source, "Traceback (most recent call last):"),
            (source, '  File "/opt/relax/relax/core/controller.py", line 541, in run_all_services'),
            (source, "    [await task_ref for task_ref in task_refs]"),
            (source, f"RuntimeError: {service}"),
        ]
    job += shutdown(t, "atexit")
    return job + _job_failed_tail(job[3:], rc)


def oom(steps_done: int = 9, **kw: object) -> list[Line]:
    """CUDA OOM in the actor's backward at step `steps_done` (`cuda-oom`)."""
    return failure(steps_done, exc_line=f"torch.OutOfMemoryError: {OOM_TEXT}", exc_source="cuda-oom", **kw)  # type: ignore[arg-type]


def nan_grad(steps_done: int = 5, **kw: object) -> list[Line]:
    """Megatron's NaN check raising in the actor (`nan-grad`)."""
    line = (
        "RuntimeError: Rank 0: found NaN in local grad norm for bucket #0 in backward pass before data-parallel "
        "communication collective. Device: 0, node: gpu-node-7"
    )
    return failure(steps_done, exc_line=line, exc_source="nan-grad", **kw)  # type: ignore[arg-type]


def stopped(steps_done: int = 6) -> list[Line]:
    """`ray job stop` during step `steps_done`: SIGTERM reaches the entrypoint's handler."""
    rng = random.Random(3)
    job = start(steps=20)
    for i in range(steps_done):
        job += step_lines(rng, i, speed=1.0, hybrid=False, multi_turn=False, fmt="color")
    t = ts(steps_done * 31 + 5)
    job += shutdown(t, "SIGTERM")
    job.append(("ray-job-stopped", f"Job '{JOB_ID}' was stopped"))
    return job


# -- lifecycles ----------------------------------------------------------------------------------


def steps(rng: random.Random, first: int, last: int, *, t0: int = 0, fmt: str = "color") -> list[Line]:
    """Steps `first`..`last` of the 2-GPU recipe (every line of each)."""
    out: list[Line] = []
    for s in range(first, last + 1):
        out += step_lines(rng, s, speed=1.0, hybrid=False, multi_turn=False, fmt=fmt, t0=t0)
    return out


def cut(steps_done: int = 17, *, mid_line: bool = True) -> list[Line]:
    """`sigkill-cut`: a job killed (SIGKILL, or Relax's own `os._exit(1)`) while the actor logged step
    `steps_done`: the log stops where the process was, inside its `perf N` line, with no end line.
    `text()` adds a newline after the last line: leave it out (`text(..., end="")`) for mid-line."""
    rng = random.Random(5)
    job = start(steps=30) + steps(rng, 0, steps_done)
    if mid_line:
        source, line = job[-1]
        assert source == "perf-actor"
        job[-1] = ("sigkill-cut", line[: line.index("'perf/actor_train_time'")])
    return job


def resumed(first: int = 120, last: int = 149, *, speed: float = 1.0, seed: int = 8) -> list[Line]:
    """A run launched with `--load` on the checkpoint of iteration `first - 1` (ckpt-loaded,
    actor-start-step): its steps are `first`..`last` (`--num-rollout last + 1`), then a clean end."""
    rng = random.Random(seed)
    ckpt = "/data/ckpt/offload-run"
    job = start(steps=last + 1, extra={"load": ckpt, "save": ckpt, "save_interval": 10})
    job += [
        (
            "ckpt-loaded",
            ray(ACTOR, f"  successfully loaded checkpoint from {ckpt} [ t 1/2, p 1/1 ] at iteration {first - 1}"),
        ),
        (
            "actor-start-step",
            ray(
                SERVE_ACTOR,
                colour(ts(25), "INFO", "relax.components.actor", 75, f"Actor initialized with starting step {first}"),
            ),
        ),
    ]
    for s in range(first, last + 1):
        job += step_lines(rng, s, speed=speed, hybrid=False, multi_turn=False, fmt="color", t0=60 - first * 31)
    return job + clean_end(ts(60 + (last - first + 1) * 31))


def retried(fail_at: int = 7, total: int = 30) -> list[Line]:
    """Two jobs in one file (`tee -a`): the first OOMs at step `fail_at` (its Ray failure summary
    included), the retry (a new job id) runs steps 0..`total - 1` from scratch and ends clean."""
    first = oom(fail_at)
    rng = random.Random(11)
    t0 = fail_at * 31 + 600  # the retry was submitted ten minutes later
    again = start(steps=total, job_id="raysubmit_Z8pQw3nRt5yUvWxY", t0=t0)
    again += steps(rng, 0, total - 1, t0=t0 + 30)
    end = clean_end(ts(t0 + 30 + total * 31))
    end = [(src, line.replace(JOB_ID, "raysubmit_Z8pQw3nRt5yUvWxY")) for src, line in end]
    return first + again + end


def health_restart(fail_at: int = 14, saved: int = 9, total: int = 30) -> list[Line]:
    """Relax's in-run recovery (`--use-health-check`, `--save-interval 10`): the actor OOMs at step
    `fail_at`; with the health check its service reports and does not re-raise (health-check), the
    checker restarts it: a global restart that re-initialises the controller, the actor reloads the
    checkpoint of iteration `saved` (recovery-load, ckpt-loaded, actor-start-step) and steps
    `saved + 1`.. run again; the job ends clean."""
    rng = random.Random(13)
    ckpt = "/data/ckpt/offload-run"
    job = start(
        steps=total, extra={"use_health_check": True, "max_global_restart": 3, "save": ckpt, "save_interval": 10}
    )
    job += steps(rng, 0, fail_at - 1)
    job += step_lines(rng, fail_at, speed=1.0, hybrid=False, multi_turn=False, fmt="color")[:2]
    t = fail_at * 31 + 20
    first = f"Actor training failed at step {fail_at}: RayTaskError(OutOfMemoryError): {TASK_ERROR_HEAD}"
    job.append(("actor-failed", ray(SERVE_ACTOR, colour(ts(t), "ERROR", "relax.components.actor", 200, first))))
    job += _remote_traceback(f"torch.OutOfMemoryError: {OOM_TEXT}", "cuda-oom")
    job += [
        ("actor-failed", ray(SERVE_ACTOR, line))
        for line in [
            "Traceback (most recent call last):",
            *ACTOR_CALL_FRAMES,
            f"ray.exceptions.RayTaskError(OutOfMemoryError): {TASK_ERROR_HEAD}",
        ]
    ]
    job += _remote_traceback(f"torch.OutOfMemoryError: {OOM_TEXT}", "cuda-oom")

    def driver(src: str, second: int, level: str, module: str, lineno: int, msg: str) -> Line:
        return (src, colour(ts(second), level, module, lineno, msg))

    ctrl, health = "relax.core.controller", "relax.utils.health_system"
    unhealthy = f"Service actor is unhealthy: {first.replace(TASK_ERROR_HEAD, 'ray::MegatronTrainRayActor.train()')}, triggering restart"
    job += [
        driver("health-unhealthy", t + 1, "WARNING", health, 305, unhealthy),
        driver("restart-service", t + 1, "INFO", ctrl, 638, "Restarting service 'actor'..."),
        driver("restart-service", t + 1, "INFO", ctrl, 660, "Restarting actor, restart count: 1"),
        driver("global-restart", t + 1, "WARNING", ctrl, 668, "Triggering global restart due to: actor failure"),
        driver(
            "global-restart",
            t + 1,
            "INFO",
            ctrl,
            705,
            "=== Starting GLOBAL restart #1 (max=3, full Controller re-initialization from zero) ===",
        ),
        driver("global-restart-teardown", t + 2, "INFO", ctrl, 754, "[Global Restart] Health manager stopped"),
        driver(
            "global-restart-teardown", t + 2, "INFO", ctrl, 774, "[Global Restart] Deleted Ray Serve deployment 'actor'"
        ),
        driver(
            "restart-wait",
            t + 2,
            "WARNING",
            ctrl,
            561,
            "Training loop interrupted by ongoing restart, waiting for restart to complete: Service task failed: "
            "RayTaskError(OutOfMemoryError)",
        ),
        driver("global-restart-teardown", t + 3, "INFO", ctrl, 858, "[Global Restart] Ray shutdown completed"),
        driver("global-restart-teardown", t + 8, "INFO", ctrl, 864, "[Global Restart] Waited 5s for resource release"),
        driver("global-restart-teardown", t + 9, "INFO", ctrl, 868, "[Global Restart] Ray re-initialized"),
        (
            "ckpt-loaded",
            ray(
                (ACTOR[0], 7171), f"  successfully loaded checkpoint from {ckpt} [ t 1/2, p 1/1 ] at iteration {saved}"
            ),
        ),
        (
            "actor-start-step",
            ray(
                (SERVE_ACTOR[0], 7272),
                colour(
                    ts(t + 40),
                    "INFO",
                    "relax.components.actor",
                    75,
                    f"Actor initialized with starting step {saved + 1}",
                ),
            ),
        ),
        driver(
            "global-restart-teardown",
            t + 45,
            "INFO",
            ctrl,
            894,
            "[Global Restart] Controller re-initialized from zero via __init__",
        ),
        driver("global-restart-done", t + 45, "INFO", ctrl, 577, "Global restart completed, re-running training loop"),
    ]
    job += steps(rng, saved + 1, total - 1, t0=t + 60 - (saved + 1) * 31)
    return job + clean_end(ts(t + 60 + (total - saved - 1) * 31))


def restarts_exhausted(fail_at: int = 14) -> list[Line]:
    """The same OOM with every global restart spent (global-restart-exceeded): the fourth restart
    refuses, logs why and `os._exit(1)`s; no end line follows."""
    rng = random.Random(17)
    job = start(steps=30, extra={"use_health_check": True, "max_global_restart": 3})
    job += steps(rng, 0, fail_at - 1)
    ctrl = "relax.core.controller"
    for n in range(1, 5):
        t = fail_at * 31 + 100 * n
        msg = f"Actor training failed at step {fail_at}: OutOfMemoryError: {OOM_TEXT}"
        job.append(("actor-failed", ray(SERVE_ACTOR, colour(ts(t), "ERROR", "relax.components.actor", 200, msg))))
        job += [
            ("restart-service", colour(ts(t + 1), "INFO", ctrl, 638, "Restarting service 'actor'...")),
            (
                "global-restart",
                colour(
                    ts(t + 1),
                    "INFO",
                    ctrl,
                    705,
                    f"=== Starting GLOBAL restart #{n} (max=3, full Controller re-initialization from zero) ===",
                ),
            ),
        ]
    job += [
        (
            "global-restart-exceeded",
            colour(
                ts(fail_at * 31 + 401),
                "ERROR",
                ctrl,
                715,
                "Global restart count (4) exceeded maximum allowed (3). Refusing to restart \u2014 terminating process.",
            ),
        ),
        (
            "global-restart-exceeded",
            colour(ts(fail_at * 31 + 401), "ERROR", ctrl, 726, "Calling os._exit(1) to force-terminate the process"),
        ),
    ]
    return job


def fully_async(total: int = 30, *, actor_dies_at: int | None = None, ahead: int = 2) -> list[Line]:
    """`--fully-async`: the rollout manager runs up to `ahead` steps ahead of training
    (rollout-progress), so its `perf N` lines come before the actor's; the last rollout partition is
    produced again by a backfill rollout `perf {total}` (rollout-backfill) that no actor step trains.
    `actor_dies_at`: the actor's train fails there (an OOM) while the rollout manager had logged the
    steps ahead."""
    rng = random.Random(19)
    job = start(steps=total, extra={"fully_async": True, "max_staleness": ahead})
    per_step = {s: step_lines(rng, s, speed=1.0, hybrid=False, multi_turn=False, fmt="color") for s in range(total + 1)}
    last = total if actor_dies_at is None else actor_dies_at
    for s in range(min(ahead, total)):
        job.append(per_step[s][0])  # rollouts ahead of the first training step
    for s in range(last):
        if s + ahead < total:
            job.append(per_step[s + ahead][0])
        job += per_step[s][1:]
    if actor_dies_at is not None:
        first = f"Actor training failed at step {actor_dies_at}: RayTaskError(OutOfMemoryError): {TASK_ERROR_HEAD}"
        t = ts(actor_dies_at * 31 + 20)
        job.append(("actor-failed", ray(SERVE_ACTOR, colour(t, "ERROR", "relax.components.actor", 200, first))))
        job += _remote_traceback(f"torch.OutOfMemoryError: {OOM_TEXT}", "cuda-oom")
        return job
    t = ts(total * 31)
    roll = "relax.components.rollout"
    job += [
        (
            "rollout-backfill",
            ray(
                SERVE_ROLLOUT,
                colour(
                    t,
                    "WARNING",
                    roll,
                    413,
                    f"Final rollout partition train_{total - 1} is not complete; running backfill step",
                ),
            ),
        ),
        ("rollout-progress", ray(SERVE_ROLLOUT, colour(t, "INFO", roll, 421, f"Start rollout {total}/{total}"))),
        ("perf-rollout", per_step[total][0][1]),
        ("rollout-progress", ray(SERVE_ROLLOUT, colour(t, "INFO", roll, 433, f"Finish rollout {total}/{total}"))),
        ("rollout-backfill", ray(SERVE_ROLLOUT, colour(t, "INFO", roll, 473, "All rollouts finished"))),
    ]
    return job + clean_end(ts(total * 31 + 5))


METRICS_SERVICE = ("ServeReplica:metrics:MetricsService", 3434)


def handled_tracebacks(total: int = 14, at: Sequence[int] = (5, 11)) -> list[Line]:
    """A clean run whose metrics service failed to report steps `at` to ClearML (metrics-report):
    each failure is logged with its traceback while the actor is still in that step (after its
    `step N` line, before its `perf N` line) and the run goes on."""
    rng = random.Random(29)
    job = start(steps=total)
    for s in range(total):
        lines = step_lines(rng, s, speed=1.0, hybrid=False, multi_turn=False, fmt="color")
        if s in at:
            i = next(j for j, (src, _) in enumerate(lines) if src == "train-step") + 1
            t = ts(s * 31 + 10)
            err = (
                "ConnectionError: HTTPSConnectionPool(host='api.clear.ml', port=443): Read timed out. (read timeout=30)"
            )
            report: list[Line] = [
                (
                    "metrics-report",
                    ray(
                        METRICS_SERVICE,
                        colour(t, "ERROR", "relax.utils.metrics.service", 288, f"Failed to report to ClearML: {err}"),
                    ),
                ),
                ("metrics-report", ray(METRICS_SERVICE, "Traceback (most recent call last):")),
                (
                    "metrics-report",
                    ray(
                        METRICS_SERVICE, '  File "/opt/relax/relax/utils/metrics/service.py", line 283, in report_step'
                    ),
                ),
                (
                    "metrics-report",
                    ray(METRICS_SERVICE, '    self._adapters["clearml"].log(data=metrics_dict, step=step)'),
                ),
                ("metrics-report", ray(METRICS_SERVICE, f"requests.exceptions.{err}")),
            ]
            lines = lines[:i] + report + lines[i:]
        job += lines
    return job + clean_end(ts(total * 31))


# -- pastes: a failure in whatever shape a user copies it ---------------------------------------

OOM_LINE = f"torch.OutOfMemoryError: {OOM_TEXT}"


def traceback_paste(*, exception: bool = True, quoted: bool = False) -> list[Line]:
    """Only a traceback, as pasted into an issue: no timestamp, no metric line, no Ray prefix
    (actor-call frames, the train group's remote call, then PyTorch's OOM). `exception=False`: the
    copy ends before the exception line (paste-cut). `quoted`: each line behind `> ` (paste-quote)."""
    lines: list[Line] = [("actor-failed", "Traceback (most recent call last):")]
    lines += [("actor-call", f) for f in ACTOR_CALL_FRAMES]
    lines += [
        ("ray-task-error", '  File "/opt/relax/relax/backends/megatron/actor.py", line 799, in train'),
        (
            "ray-task-error",
            "    train(rollout_id, self.model, self.optimizer, self.opt_param_scheduler, data_iterator, num_microbatches)",
        ),
    ]
    if exception:
        lines.append(("cuda-oom", OOM_LINE))
    else:
        lines = [(src if src != "actor-failed" else "paste-cut", line) for src, line in lines]
    if quoted:
        lines = [("paste-quote" if i == 0 else src, f"> {line}") for i, (src, line) in enumerate(lines)]
    return lines


def ray_banner_paste(cause: str = "OutOfMemoryError") -> list[Line]:
    """Ray's error banner alone (ray-task-error): `RayTaskError(Cause): ray::...` outside any
    `Traceback` block, the remote frames, then the cause's exception line."""
    exc = (
        OOM_LINE
        if cause == "OutOfMemoryError"
        else "RuntimeError: CUDA error: an illegal memory access was encountered"
    )
    head = f"RayTaskError({cause}): ray::MegatronTrainRayActor.train() (pid={ACTOR[1]}, ip=10.0.0.7)"
    frames = [
        '  File "/opt/relax/relax/backends/megatron/actor.py", line 799, in train',
        "    train(rollout_id, self.model, self.optimizer, self.opt_param_scheduler, data_iterator, num_microbatches)",
    ]
    return [
        ("ray-task-error", head),
        *(("ray-task-error", f) for f in frames),
        ("cuda-oom" if "OutOfMemory" in cause else "ray-task-error", exc),
    ]


def unhandled_paste() -> list[Line]:
    """Ray's report of an error no caller fetched (ray-unhandled), then the RayTaskError's text."""
    head = f"Unhandled error (suppress with 'RAY_IGNORE_UNHANDLED_ERRORS=1'): ray::MegatronTrainRayActor.train() (pid={ACTOR[1]}, ip=10.0.0.7)"
    frames = [
        '  File "/opt/relax/relax/backends/megatron/actor.py", line 799, in train',
        "    train(rollout_id, self.model, self.optimizer, self.opt_param_scheduler, data_iterator, num_microbatches)",
    ]
    return [
        ("ray-unhandled", head),
        *(("ray-task-error", f) for f in frames),
        ("ray-task-error", "RuntimeError: NCCL communicator was aborted on rank 1"),
    ]


def wrapped(lines: list[Line], width: int = 120) -> list[Line]:
    """`paste-wrap`: a terminal's copy of `lines`, each broken every `width` characters (inside a
    number too); Ray's colour codes are gone, as a copy from a terminal leaves them."""
    out: list[Line] = []
    for src, line in lines:
        plain_line = line.replace(CYAN, "").replace(RESET, "").replace(GREEN, "")
        for code in LEVEL.values():
            plain_line = plain_line.replace(code, "")
        out += [(src if i == 0 else "paste-wrap", plain_line[i : i + width]) for i in range(0, len(plain_line), width)]
    return out


def bare_steps(first: int, last: int) -> list[Line]:
    """slime's plain logger (log-plain) printing only the actor's `step N` lines (train-step), as a
    user pastes them: the step count is theirs."""
    rng = random.Random(23)
    out: list[Line] = []
    for s in range(first, last + 1):
        lines = step_lines(rng, s, speed=1.0, hybrid=False, multi_turn=False, fmt="plain")
        out += [
            (src, line.replace(CYAN, "").replace(RESET, "").split(") ", 1)[1])
            for src, line in lines
            if src == "train-step"
        ]
    return out


def text(lines: Iterable[Line], end: str = "\n") -> str:
    return "\n".join(t for _, t in lines) + end


def sources(lines: Iterable[Line]) -> set[str]:
    return {s for s, _ in lines}

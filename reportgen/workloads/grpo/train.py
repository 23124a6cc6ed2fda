"""The GRPO training loop: rollout -> reward -> log-probs -> PPO-clip update, one step per rollout.

Timing follows Relax's definitions: the training block (ref/actor log-probs, advantages, actor
train, logging) is `perf/train_time`; everything from the end of one block to the start of the
next (here: generation and reward) is `perf/train_wait_time`; their sum is `perf/step_time`.

With data parallelism (`--actor-num-gpus-per-node N`, see `distributed`) each rank rolls out and
trains on its share of every optimizer step's prompt groups; gradients are summed over ranks and
the per-step statistics gathered, so rank 0 prints the same keys with the same (global)
definitions as a single process: one set of `perf`/`rollout`/`step` lines for the whole job.
"""

from __future__ import annotations

import argparse
import logging
import math
import random
import statistics
import time
from dataclasses import dataclass
from pathlib import Path

import torch
import torch.nn.functional as F

from reportgen.workloads.grpo import VERSION, WORKLOAD, checkpoint, warm_start
from reportgen.workloads.grpo.args import format_argument_dump, parse_args
from reportgen.workloads.grpo.batching import micro_batches
from reportgen.workloads.grpo.console import MetricSink, get_logger
from reportgen.workloads.grpo.decode import RolloutBatch, StaticKVDecoder
from reportgen.workloads.grpo.device import cpu_thread_choice, resolve_device
from reportgen.workloads.grpo.distributed import (
    DistEnv,
    allreduce_grads,
    barrier,
    destroy_process_group,
    env_of,
    gather,
    init_process_group,
    parameter_checksum,
    sum_floats,
)
from reportgen.workloads.grpo.losses import group_advantages, grpo_loss, zero_advantage_groups
from reportgen.workloads.grpo.model import (
    Segment,
    build_policy,
    count_parameters,
    forward_packed,
    frozen_copy,
    plan_recompute,
)
from reportgen.workloads.grpo.optim import build_optimizer
from reportgen.workloads.grpo.profiling import MemoryHistory, StepProfiler
from reportgen.workloads.grpo.qwen3 import Qwen3ForCausalLM
from reportgen.workloads.grpo.task import Grade, PromptStream, make_dataset, score
from reportgen.workloads.grpo.threads import ThreadChoice


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


@dataclass(frozen=True)
class MicroBatch:
    """One packed row: its samples, token tensors, and where each response token's logits sit."""

    samples: list[int]
    input_ids: torch.Tensor
    position_ids: torch.Tensor
    seq_ids: torch.Tensor
    pred_rows: torch.Tensor  # rows of the logits that predict a response token
    targets: torch.Tensor  # the response tokens predicted
    local_index: torch.Tensor  # position of each response token's sample inside `samples`
    lengths: torch.Tensor  # response length of each sample in `samples`
    tokens: int


def pack(samples: list[int], prompts: list[list[int]], responses: list[list[int]], device: torch.device) -> MicroBatch:
    ids: list[int] = []
    pos: list[int] = []
    seq: list[int] = []
    rows: list[int] = []
    tgt: list[int] = []
    loc: list[int] = []
    lens: list[int] = []
    offset = 0
    for j, i in enumerate(samples):
        full = prompts[i] + responses[i]
        ids += full
        pos += range(len(full))
        seq += [j] * len(full)
        p = len(prompts[i])
        rows += range(offset + p - 1, offset + len(full) - 1)
        tgt += responses[i]
        loc += [j] * len(responses[i])
        lens.append(len(responses[i]))
        offset += len(full)

    def t(x: list[int], dtype: torch.dtype = torch.long) -> torch.Tensor:
        return torch.tensor(x, dtype=dtype, device=device)

    return MicroBatch(samples, t(ids), t(pos), t(seq), t(rows), t(tgt), t(loc), t(lens, torch.float32), offset)


def token_logprobs(
    model: Qwen3ForCausalLM, mb: MicroBatch, segments: list[Segment], selective: bool, with_entropy: bool
) -> tuple[torch.Tensor, torch.Tensor | None]:
    logits = forward_packed(model, mb.input_ids, mb.position_ids, mb.seq_ids, segments, selective)
    logp_all = F.log_softmax(logits[mb.pred_rows], dim=-1)
    logp = logp_all.gather(1, mb.targets[:, None]).squeeze(1)
    if not with_entropy:
        return logp, None
    entropy = -(logp_all.exp() * logp_all).sum(-1)
    return logp, entropy


class Trainer:
    """Holds the model, optimizer, decoder and data stream; `step(rollout_id)` runs one GRPO step."""

    def __init__(
        self,
        args: argparse.Namespace,
        log: logging.Logger | None = None,
        dist_env: DistEnv | None = None,
        thread_choice: ThreadChoice | None = None,
    ) -> None:
        t0 = time.perf_counter()
        self.args = args
        self.log = log or get_logger()
        self.log.info(f"workload: {WORKLOAD} {VERSION}")  # reportgen's ingest records it (workload_lines)
        self.dist = dist_env or DistEnv()
        self.device = resolve_device(args.device)
        choice = thread_choice or cpu_thread_choice(args, self.device, self.dist)
        torch.set_num_threads(choice.threads)
        self.cpu_threads = torch.get_num_threads()
        self.log.info(f"cpu-threads: {self.cpu_threads} ({choice.reason})")
        # The warm start first: made (once per machine) before the memory cap, whose limit is the
        # training's, and freed before the training allocates anything.
        start, self.warm_start = self._warm_start()
        capped = args.gpu_memory_fraction is not None or args.gpu_memory_cap_gib is not None
        if self.device.type == "cuda" and capped:
            total = torch.cuda.get_device_properties(self.device).total_memory
            fraction = args.gpu_memory_fraction
            if fraction is None:
                fraction = min(1.0, args.gpu_memory_cap_gib * 2**30 / total)
            torch.cuda.set_per_process_memory_fraction(fraction, self.device)
            self.log.info(
                f"gpu-memory-fraction: capping this process at {fraction:.4f} of "
                f"{total / 2**30:.1f} GiB = {fraction * total / 2**30:.2f} GiB"
            )
        elif capped:
            self.log.info("gpu-memory-fraction: no accelerator; the cap has nothing to limit")
        if self.dist.is_logger:
            print(f"> setting random seeds to {args.seed} ...", flush=True)
        random.seed(args.seed)
        torch.manual_seed(args.seed)
        use_bf16 = args.bf16 or (self.device.type == "cuda" and not args.fp32)
        self.dtype = torch.bfloat16 if use_bf16 else torch.float32
        self.model = build_policy(args, self.device, self.dtype)
        if start is not None:
            self.model.load_state_dict(start)
            del start
        self.model.train()
        self.ref = frozen_copy(self.model) if args.use_kl_loss else None
        self.log.info(
            f"model: Qwen3 {args.num_layers} layers, hidden {args.hidden_size}, "
            f"{count_parameters(self.model) / 1e6:.2f}M parameters, {str(self.dtype).removeprefix('torch.')} "
            f"on {self.device}{', frozen reference copy' if self.ref is not None else ''}"
        )
        self.optimizer = build_optimizer(self.model, args, self.device, self.log.info)
        self.segments = plan_recompute(
            args.num_layers, args.recompute_granularity, args.recompute_method, args.recompute_num_layers
        )
        self.selective = args.recompute_granularity == "selective"
        if args.recompute_granularity:
            n_ckpt = sum(s.end - s.start for s in self.segments if s.checkpointed)
            self.log.info(
                f"recompute: {args.recompute_granularity}/{args.recompute_method}, "
                f"{n_ckpt} of {args.num_layers} decoder layers recomputed in backward "
                f"({len([s for s in self.segments if s.checkpointed])} checkpointed segments)"
            )
        cuda_graph = args.rollout_cuda_graph if args.rollout_cuda_graph is not None else self.device.type == "cuda"
        # This rank's share: whole prompt groups of every optimizer step (all of it with one rank).
        world = self.dist.world_size
        self.n_samples = args.rollout_batch_size * args.n_samples_per_prompt // world
        self.step_samples = args.global_batch_size // world
        if self.dist.active:
            self.log.info(
                f"data-parallel: {world} ranks ({'nccl' if self.device.type == 'cuda' else 'gloo'}), "
                f"{self.n_samples} samples and {self.step_samples} per optimizer step on each rank"
            )
        self.decoder = StaticKVDecoder(
            self.model,
            self.n_samples,
            args.rollout_max_prompt_len + args.rollout_max_response_len,
            cuda_graph=cuda_graph,
        )
        self.log.info(f"rollout: static KV cache decode loop, CUDA graph {'on' if self.decoder.use_graph else 'off'}")
        self.stream = PromptStream(make_dataset(args.rollout_seed, args.rollout_max_prompt_len), args.rollout_seed)
        self.sink = MetricSink(args, self.log, tensorboard=self.dist.is_logger)
        self.profiler = StepProfiler(args, self.device, self.log, rank=self.dist.rank)
        self.memory = MemoryHistory(args, self.device, self.log, rank=self.dist.rank)
        self.train_step = 0
        self.first_step = 0  # the rollout id this process starts at: past 0 when resumed (--load)
        self.last_prompt_indices: list[int] = []
        _sync(self.device)
        # The actor's start-up, less the one-time making of the warm start (its own line gives its cost):
        # every run of a campaign then reports a comparable init time, whichever run made the start.
        made = self.warm_start.seconds if self.warm_start is not None and self.warm_start.made else 0.0
        self.init_time = time.perf_counter() - t0 - made
        self.last_train_end = time.perf_counter()

    def _warm_start(self) -> tuple[dict[str, torch.Tensor] | None, warm_start.Made | None]:
        """The warm start's weights (made and cached on first use; reportgen.workloads.grpo.warm_start)
        and how they were got, or (None, None) with `--warm-start-steps 0`. With data parallelism
        rank 0 obtains it first; the other ranks then read the cached file, so every replica starts
        from the same bytes."""
        a = self.args
        if a.warm_start_steps == 0:
            self.log.info("warm start: none (--warm-start-steps 0): seeded random init")
            return None, None
        if self.dist.active and not self.dist.is_logger:
            barrier(self.dist)
        state, made = warm_start.obtain(a, self.device)
        if self.dist.active and self.dist.is_logger:
            barrier(self.dist)
        self.log.info(warm_start.log_line(made))
        return state, made

    # -- rollout -------------------------------------------------------------------------------
    def rollout(self, rollout_id: int) -> tuple[list[int], RolloutBatch, list[Grade]]:
        a = self.args
        t0 = time.perf_counter()
        prompts = self._shard(self.stream.next_batch(a.rollout_batch_size))
        prompt_ids = [p.token_ids for p in prompts for _ in range(a.n_samples_per_prompt)]
        answers = [p.answer for p in prompts for _ in range(a.n_samples_per_prompt)]
        gen = torch.Generator(device=self.device)
        # Rank 0 draws as a single process does; other ranks draw from disjoint seeds.
        gen.manual_seed(a.rollout_seed * 1_000_003 + rollout_id + self.dist.rank * 2**40)
        self.model.eval()
        batch = self.decoder.generate(
            prompt_ids,
            max_new=a.rollout_max_response_len,
            temperature=a.rollout_temperature,
            generator=gen,
            ignore_eos=a.rollout_ignore_eos,
        )
        self.model.train()
        verdicts = [score(r, ans) for r, ans in zip(batch.responses, answers, strict=False)]
        _sync(self.device)
        rollout_time = time.perf_counter() - t0
        local = (
            [len(r) for r in batch.responses],
            list(batch.truncated),
            rollout_time,
            batch.decode_steps * len(batch.responses) / batch.decode_time_s,
        )
        parts = gather(self.dist, local)
        resp = [n for p in parts for n in p[0]]
        truncated = [t for p in parts for t in p[1]]
        rollout_time = max(p[2] for p in parts)  # the slowest rank gates the step
        perf = {
            "perf/rollout_time": rollout_time,
            "perf/tokens_per_gpu_per_sec": sum(resp) / rollout_time / self.dist.world_size,
            "perf/decode_tok_per_s": sum(p[3] for p in parts),
            "rollout/response_len/mean": statistics.fmean(resp),
            "rollout/response_len/median": float(statistics.median(resp)),
            "rollout/response_len/max": max(resp),
            "rollout/response_len/min": min(resp),
            "rollout/truncated_ratio": sum(truncated) / len(resp),
        }
        self.sink.emit("perf", rollout_id, perf)
        self.last_rollout_perf = perf
        return [p.index for p in prompts], batch, verdicts

    def _shard(self, items: list) -> list:
        """This rank's prompts: its equal slice of each optimizer step's prompt groups."""
        if not self.dist.active:
            return items
        per_step = self.args.global_batch_size // self.args.n_samples_per_prompt
        chunk = per_step // self.dist.world_size
        r = self.dist.rank
        return [x for s in range(0, len(items), per_step) for x in items[s + r * chunk : s + (r + 1) * chunk]]

    # -- training block ------------------------------------------------------------------------
    def _logprob_pass(self, model: Qwen3ForCausalLM, mbs: list[MicroBatch]) -> tuple[list[torch.Tensor], float]:
        t0 = time.perf_counter()
        with torch.no_grad():
            out = [token_logprobs(model, mb, self.segments, self.selective, False)[0] for mb in mbs]
        _sync(self.device)
        return out, time.perf_counter() - t0

    def train(self, rollout_id: int, batch: RolloutBatch, verdicts: list[Grade]) -> tuple[dict, dict]:
        a = self.args
        dev = self.device
        prompts, responses = batch.prompts, batch.responses
        raw = torch.tensor([v.reward for v in verdicts], dtype=torch.float32)
        adv = group_advantages(raw, a.n_samples_per_prompt)
        lengths = [len(p) + len(r) for p, r in zip(prompts, responses, strict=False)]
        # One optimizer step per global batch of whole groups; micro-batches inside each.
        steps = []
        for start in range(0, self.n_samples, self.step_samples):
            idx = list(range(start, start + self.step_samples))
            groups = micro_batches(
                [lengths[i] for i in idx],
                dynamic=a.use_dynamic_batch_size,
                max_tokens=a.max_tokens_per_gpu,
                micro_batch_size=a.micro_batch_size,
            )
            steps.append([pack([idx[j] for j in g], prompts, responses, dev) for g in groups])
        all_mbs = [mb for s in steps for mb in s]
        ref_time = 0.0
        ref_lp = None
        if self.ref is not None:
            ref_lp, ref_time = self._logprob_pass(self.ref, all_mbs)
        old_lp, lp_time = self._logprob_pass(self.model, all_mbs)
        adv_dev = adv.to(dev)

        t0 = time.perf_counter()
        opt_time = 0.0
        k = 0
        for mbs in steps:
            sums = {"loss": 0.0, "pg_loss": 0.0, "pg_clipfrac": 0.0, "ppo_kl": 0.0, "entropy_loss": 0.0, "kl_loss": 0.0}
            for mb in mbs:
                logp, ent = token_logprobs(self.model, mb, self.segments, self.selective, True)
                sample_ids = torch.tensor(mb.samples, device=dev)
                parts = grpo_loss(
                    log_probs=logp,
                    old_log_probs=old_lp[k],
                    advantages=adv_dev[sample_ids][mb.local_index],
                    entropy=ent,
                    sample_index=mb.local_index,
                    n_samples=len(mb.samples),
                    lengths=mb.lengths,
                    eps_clip=a.eps_clip,
                    eps_clip_high=a.eps_clip_high,
                    ref_log_probs=ref_lp[k] if ref_lp is not None else None,
                    kl_type=a.kl_loss_type,
                    kl_coef=a.kl_loss_coef,
                    entropy_coef=a.entropy_coef,
                )
                (parts.loss / a.global_batch_size).backward()
                for name in sums:
                    value = getattr(parts, "entropy" if name == "entropy_loss" else name)
                    sums[name] += float(value.detach()) / a.global_batch_size
                k += 1
            params = [p for p in self.model.parameters() if p.grad is not None]
            allreduce_grads(self.dist, params)
            if self.dist.active:
                sums = dict(zip(sums, sum_floats(self.dist, list(sums.values()), dev), strict=False))
            grad_norm = float(torch.nn.utils.clip_grad_norm_(params, a.clip_grad if a.clip_grad > 0 else float("inf")))
            t_opt = time.perf_counter()
            if math.isfinite(grad_norm):
                self.optimizer.step()
            else:
                self.log.info(f"Inf found in gradients (step_id={self.train_step}) skipping parameter update")
                grad_norm = float("nan")
            self.model.zero_grad(set_to_none=True)
            _sync(dev)
            opt_time += time.perf_counter() - t_opt
            metrics = {f"train/{n}": v for n, v in sums.items() if n != "kl_loss" or self.ref is not None}
            metrics["train/grad_norm"] = grad_norm
            metrics["train/lr-pg_0"] = a.lr
            metrics["train/step"] = self.train_step
            self.sink.emit("step", self.train_step, metrics)
            self.train_step += 1
        actor_time = time.perf_counter() - t0

        resp_lens = [len(r) for r in responses]
        token_lp = torch.cat(old_lp)
        token_adv = adv_dev[torch.cat([torch.tensor(mb.samples, device=dev)[mb.local_index] for mb in all_mbs])]
        ref_tok = torch.cat(ref_lp) if ref_lp is not None else None
        sampler_lp = [x for lp in batch.log_probs for x in lp]
        correct = [v.correct for v in verdicts]
        well_formed = [v.well_formed for v in verdicts]
        n_mbs = len(all_mbs)
        peak = torch.cuda.max_memory_allocated(dev) / 2**30 if dev.type == "cuda" else None
        if self.dist.active:
            # Every rank's samples, so that rank 0's figures are the job's (global) figures.
            def cpu(t):
                return None if t is None else t.detach().cpu()

            ranks = gather(
                self.dist,
                {
                    "raw": raw,
                    "adv": adv,
                    "token_adv": cpu(token_adv),
                    "token_lp": cpu(token_lp),
                    "ref_tok": cpu(ref_tok),
                    "resp_lens": resp_lens,
                    "lengths": lengths,
                    "sampler_lp": sampler_lp,
                    "correct": correct,
                    "well_formed": well_formed,
                    "n_mbs": n_mbs,
                    "peak": peak,
                },
            )
            raw, adv, token_adv, token_lp = (
                torch.cat([p[k] for p in ranks]) for k in ("raw", "adv", "token_adv", "token_lp")
            )
            if ref_tok is not None:
                ref_tok = torch.cat([p["ref_tok"] for p in ranks])
            resp_lens, lengths, sampler_lp, correct, well_formed = (
                [x for p in ranks for x in p[k]]
                for k in ("resp_lens", "lengths", "sampler_lp", "correct", "well_formed")
            )
            n_mbs = sum(p["n_mbs"] for p in ranks)
            peak = max(p["peak"] for p in ranks) if peak is not None else None
        n_resp_tokens = sum(resp_lens)
        rollout = {
            "rollout/raw_reward": float(raw.mean()),
            "rollout/rewards": float(adv.mean()),
            "rollout/advantages": float(token_adv.mean()),
            "rollout/response_lengths": statistics.fmean(resp_lens),
            "rollout/total_lengths": statistics.fmean(lengths),
            "rollout/log_probs": float(token_lp.mean()),
            "rollout/rollout_log_probs": statistics.fmean(sampler_lp),
            "rollout/correct_ratio": sum(correct) / len(correct),
            # The workload's own key: the share of prompt groups whose rewards are all equal, so that
            # every advantage is 0 and the group teaches nothing (GRPO's signal is in the others).
            "rollout/zero_advantage_groups": zero_advantage_groups(raw, a.n_samples_per_prompt),
            "rollout/format_ratio": sum(well_formed) / len(well_formed),
            "rollout/num_samples": len(resp_lens),
            "rollout/step": rollout_id,
        }
        if ref_tok is not None:
            rollout["rollout/ref_log_probs"] = float(ref_tok.mean())
        perf = {
            "perf/actor_train_time": actor_time,
            "perf/actor_train_tokens": sum(lengths),
            "perf/actor_train_tok_per_s": sum(lengths) / actor_time,
            "perf/log_probs_time": lp_time,
            "perf/optimizer_time": opt_time,
            "perf/micro_batches": n_mbs,
            "perf/response_tokens": n_resp_tokens,
        }
        if self.ref is not None:
            perf["perf/ref_log_probs_time"] = ref_time
        if peak is not None:
            perf["perf/max_memory_allocated_gib"] = peak  # the fullest device of the job
        return rollout, perf

    def step(self, rollout_id: int) -> dict:
        self.profiler.before_step(rollout_id)
        self.last_prompt_indices, batch, verdicts = self.rollout(rollout_id)
        t_train = time.perf_counter()
        wait = t_train - self.last_train_end
        rollout, perf = self.train(rollout_id, batch, verdicts)
        self.sink.emit("rollout", rollout_id, rollout)
        if self.args.inject_slowdown > 0:  # a known slowdown, counted in the step's time (testing)
            time.sleep(self.args.inject_slowdown * (time.perf_counter() - self.last_train_end))
        train_time = time.perf_counter() - t_train
        step_time = wait + train_time
        total_tokens = perf["perf/actor_train_tokens"]
        perf = {
            "perf/train_time": train_time,
            "perf/train_wait_time": wait,
            "perf/step_time": step_time,
            "perf/wait_time_ratio": wait / step_time,
            "perf/step_token_per_s": total_tokens / step_time,
            "perf/step_resp_token_per_s": perf["perf/response_tokens"] / step_time,
            **perf,
        }
        if rollout_id == self.first_step:  # the first step of a process carries its start-up
            perf["perf/init_actor_time"] = self.init_time
        self.sink.emit("perf", rollout_id, perf)
        self.last_train_end = time.perf_counter()
        self.profiler.after_step(rollout_id)
        self.memory.after_step(rollout_id)
        return {**self.last_rollout_perf, **rollout, **perf}

    def checkpoint_payload(self) -> dict:
        """What `--save` writes: the state a resumed run needs to make the steps this one would."""
        return {
            "model": self.model.state_dict(),
            "optimizer": checkpoint.optimizer_state(self.optimizer),
            "train_step": self.train_step,
            "stream": self.stream.state(),
            "torch_rng": torch.get_rng_state(),
        }

    def restore(self, payload: dict, iteration: int) -> None:
        """Resume after `iteration` (`--load`): model, optimizer, data position, step counter."""
        self.model.load_state_dict(payload["model"])
        checkpoint.load_optimizer_state(self.optimizer, payload["optimizer"])
        self.train_step = int(payload["train_step"])
        self.stream.restore(payload["stream"])
        torch.set_rng_state(payload["torch_rng"])
        # The frozen reference (--use-kl-loss) was copied from the seeded initial policy before this
        # restore, as an uninterrupted run's was.
        self.first_step = iteration + 1

    def close(self) -> None:
        self.sink.close()


def run(argv: list[str] | None = None) -> int:
    return run_args(parse_args(argv))


def _join(args: argparse.Namespace) -> DistEnv:
    """Join the process group a launcher set up (nothing to do in a single-process run)."""
    dist_env = env_of()
    if not dist_env.active:
        return dist_env
    if dist_env.world_size != args.num_gpus:
        raise SystemExit(
            f"WORLD_SIZE={dist_env.world_size} but --actor-num-gpus-per-node {args.num_gpus}; "
            f"start {args.num_gpus} workers or change the flag"
        )
    if not dist_env.is_logger:
        get_logger().setLevel(logging.WARNING)  # other ranks stay silent except warnings and errors
    if args.device != "cpu" and torch.cuda.is_available():
        if torch.cuda.device_count() <= dist_env.local_rank:
            raise SystemExit(
                f"--actor-num-gpus-per-node {args.num_gpus}: only {torch.cuda.device_count()} "
                f"CUDA device(s) visible; lower the flag or expose more devices"
            )
        torch.cuda.set_device(dist_env.local_rank)
        init_process_group(dist_env, "cuda")
    else:
        if args.device == "cuda":
            raise SystemExit("--device cuda: no CUDA device is visible to this process")
        init_process_group(dist_env, "cpu")
    return dist_env


def run_args(args: argparse.Namespace) -> int:
    """Train for `--num-rollout` steps; a CUDA OOM propagates (exit code 1, PyTorch's own text)."""
    dist_env = _join(args)
    # Resolved before the argument dump, so the dump (which ingest records) holds the value used.
    threads = cpu_thread_choice(args, resolve_device(args.device), dist_env)
    args.cpu_threads = threads.threads
    if dist_env.is_logger:
        print(format_argument_dump(args), flush=True)
    trainer = Trainer(args, dist_env=dist_env, thread_choice=threads)
    if args.load:
        got = checkpoint.load(Path(args.load), say=dist_env.is_logger)
        if got is not None:
            trainer.restore(got[1], got[0])
    # relax/components/actor.py:75: the step the actor trains first.
    trainer.log.info(f"Actor initialized with starting step {trainer.first_step}")
    try:
        for rollout_id in range(trainer.first_step, args.num_rollout):
            trainer.step(rollout_id)
            last = rollout_id + 1 == args.num_rollout
            due = bool(args.save and args.save_interval) and ((rollout_id + 1) % args.save_interval == 0 or last)
            if due and dist_env.is_logger:  # replicas are identical: rank 0 writes (Megatron's ranks write shards)
                checkpoint.save(Path(args.save), rollout_id, trainer.checkpoint_payload())
        if dist_env.active:
            sums = gather(dist_env, parameter_checksum(trainer.model))
            trainer.log.info(f"data-parallel: parameter checksum per rank: {sums}")
            if len(set(sums)) != 1:
                raise RuntimeError(f"data-parallel replicas diverged: parameter checksums {sums}")
    except torch.OutOfMemoryError:
        trainer.memory.on_oom()
        raise  # Python prints PyTorch's own "CUDA out of memory" text and exits with code 1
    finally:
        trainer.close()
    destroy_process_group(dist_env)
    trainer.log.info(f"training finished: {args.num_rollout} steps")
    # relax/entrypoints/train.py:121, logged only when the training loop returned: the end a
    # reader of the log (reportgen ingest) needs to tell a finished run from a cut log.
    trainer.log.info("Main func successfully")
    return 0

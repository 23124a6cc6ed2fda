"""The GRPO training loop: rollout -> reward -> log-probs -> PPO-clip update, one step per rollout.

Timing follows Relax's definitions: the training block (ref/actor log-probs, advantages, actor
train, logging) is `perf/train_time`; everything from the end of one block to the start of the
next (here: generation and reward) is `perf/train_wait_time`; their sum is `perf/step_time`.
"""

from __future__ import annotations

import math
import random
import statistics
import time
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from reportgen.workloads.grpo.args import format_argument_dump, parse_args
from reportgen.workloads.grpo.batching import micro_batches
from reportgen.workloads.grpo.console import MetricSink, get_logger
from reportgen.workloads.grpo.decode import StaticKVDecoder
from reportgen.workloads.grpo.losses import group_advantages, grpo_loss
from reportgen.workloads.grpo.model import (build_policy, count_parameters, forward_packed, frozen_copy,
                                            plan_recompute)
from reportgen.workloads.grpo.optim import build_optimizer
from reportgen.workloads.grpo.profiling import MemoryHistory, StepProfiler
from reportgen.workloads.grpo.task import PromptStream, make_dataset, score


def resolve_device(choice: str) -> torch.device:
    if choice == "cuda" or (choice == "auto" and torch.cuda.is_available()):
        if not torch.cuda.is_available():
            raise SystemExit("--device cuda: no CUDA device is visible to this process")
        return torch.device("cuda", torch.cuda.current_device())
    return torch.device("cpu")


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


def pack(samples: list[int], prompts: list[list[int]], responses: list[list[int]], device) -> MicroBatch:
    ids, pos, seq, rows, tgt, loc, lens = [], [], [], [], [], [], []
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

    def t(x, dtype=torch.long):
        return torch.tensor(x, dtype=dtype, device=device)

    return MicroBatch(samples, t(ids), t(pos), t(seq), t(rows), t(tgt), t(loc), t(lens, torch.float32), offset)


def token_logprobs(model, mb: MicroBatch, segments, selective: bool, with_entropy: bool):
    logits = forward_packed(model, mb.input_ids, mb.position_ids, mb.seq_ids, segments, selective)
    logp_all = F.log_softmax(logits[mb.pred_rows], dim=-1)
    logp = logp_all.gather(1, mb.targets[:, None]).squeeze(1)
    if not with_entropy:
        return logp, None
    entropy = -(logp_all.exp() * logp_all).sum(-1)
    return logp, entropy


class Trainer:
    """Holds the model, optimizer, decoder and data stream; `step(rollout_id)` runs one GRPO step."""

    def __init__(self, args, log=None) -> None:
        t0 = time.perf_counter()
        self.args = args
        self.log = log or get_logger()
        self.device = resolve_device(args.device)
        capped = args.gpu_memory_fraction is not None or args.gpu_memory_cap_gib is not None
        if self.device.type == "cuda" and capped:
            total = torch.cuda.get_device_properties(self.device).total_memory
            fraction = args.gpu_memory_fraction
            if fraction is None:
                fraction = min(1.0, args.gpu_memory_cap_gib * 2**30 / total)
            torch.cuda.set_per_process_memory_fraction(fraction, self.device)
            self.log.info(f"gpu-memory-fraction: capping this process at {fraction:.4f} of "
                          f"{total / 2**30:.1f} GiB = {fraction * total / 2**30:.2f} GiB")
        elif capped:
            self.log.info("gpu-memory-fraction: no accelerator; the cap has nothing to limit")
        threads = args.cpu_threads or (1 if self.device.type == "cpu" else None)
        if threads:
            torch.set_num_threads(threads)
        self.log.info(f"cpu-threads: {torch.get_num_threads()}")
        print(f"> setting random seeds to {args.seed} ...", flush=True)
        random.seed(args.seed)
        torch.manual_seed(args.seed)
        use_bf16 = args.bf16 or (self.device.type == "cuda" and not args.fp32)
        self.dtype = torch.bfloat16 if use_bf16 else torch.float32
        self.model = build_policy(args, self.device, self.dtype)
        self.model.train()
        self.ref = frozen_copy(self.model) if args.use_kl_loss else None
        self.log.info(f"model: Qwen3 {args.num_layers} layers, hidden {args.hidden_size}, "
                      f"{count_parameters(self.model) / 1e6:.2f}M parameters, {str(self.dtype).removeprefix('torch.')} "
                      f"on {self.device}{', frozen reference copy' if self.ref is not None else ''}")
        self.optimizer = build_optimizer(self.model, args, self.device, self.log.info)
        self.segments = plan_recompute(args.num_layers, args.recompute_granularity, args.recompute_method,
                                       args.recompute_num_layers)
        self.selective = args.recompute_granularity == "selective"
        if args.recompute_granularity:
            n_ckpt = sum(s.end - s.start for s in self.segments if s.checkpointed)
            self.log.info(f"recompute: {args.recompute_granularity}/{args.recompute_method}, "
                          f"{n_ckpt} of {args.num_layers} decoder layers recomputed in backward "
                          f"({len([s for s in self.segments if s.checkpointed])} checkpointed segments)")
        cuda_graph = args.rollout_cuda_graph if args.rollout_cuda_graph is not None else self.device.type == "cuda"
        self.n_samples = args.rollout_batch_size * args.n_samples_per_prompt
        self.decoder = StaticKVDecoder(self.model, self.n_samples,
                                       args.rollout_max_prompt_len + args.rollout_max_response_len,
                                       cuda_graph=cuda_graph)
        self.log.info(f"rollout: static KV cache decode loop, CUDA graph {'on' if self.decoder.use_graph else 'off'}")
        self.stream = PromptStream(make_dataset(args.rollout_seed, args.rollout_max_prompt_len), args.rollout_seed)
        self.sink = MetricSink(args, self.log)
        self.profiler = StepProfiler(args, self.device, self.log)
        self.memory = MemoryHistory(args, self.device, self.log)
        self.train_step = 0
        self.last_prompt_indices: list[int] = []
        _sync(self.device)
        self.init_time = time.perf_counter() - t0
        self.last_train_end = time.perf_counter()

    # -- rollout -------------------------------------------------------------------------------
    def rollout(self, rollout_id: int):
        a = self.args
        t0 = time.perf_counter()
        prompts = self.stream.next_batch(a.rollout_batch_size)
        prompt_ids = [p.token_ids for p in prompts for _ in range(a.n_samples_per_prompt)]
        answers = [p.answer for p in prompts for _ in range(a.n_samples_per_prompt)]
        gen = torch.Generator(device=self.device)
        gen.manual_seed(a.rollout_seed * 1_000_003 + rollout_id)
        self.model.eval()
        batch = self.decoder.generate(prompt_ids, max_new=a.rollout_max_response_len,
                                      temperature=a.rollout_temperature, generator=gen)
        self.model.train()
        verdicts = [score(r, ans) for r, ans in zip(batch.responses, answers)]
        _sync(self.device)
        rollout_time = time.perf_counter() - t0
        resp = [len(r) for r in batch.responses]
        perf = {
            "perf/rollout_time": rollout_time,
            "perf/tokens_per_gpu_per_sec": sum(resp) / rollout_time,
            "perf/decode_tok_per_s": batch.decode_steps * len(resp) / batch.decode_time_s,
            "rollout/response_len/mean": statistics.fmean(resp),
            "rollout/response_len/median": float(statistics.median(resp)),
            "rollout/response_len/max": max(resp),
            "rollout/response_len/min": min(resp),
            "rollout/truncated_ratio": sum(batch.truncated) / len(resp),
        }
        self.sink.emit("perf", rollout_id, perf)
        self.last_rollout_perf = perf
        return [p.index for p in prompts], batch, verdicts

    # -- training block ------------------------------------------------------------------------
    def _logprob_pass(self, model, mbs) -> tuple[list[torch.Tensor], float]:
        t0 = time.perf_counter()
        with torch.no_grad():
            out = [token_logprobs(model, mb, self.segments, self.selective, False)[0] for mb in mbs]
        _sync(self.device)
        return out, time.perf_counter() - t0

    def train(self, rollout_id: int, batch, verdicts) -> tuple[dict, dict]:
        a = self.args
        dev = self.device
        prompts, responses = batch.prompts, batch.responses
        raw = torch.tensor([v.reward for v in verdicts], dtype=torch.float32)
        adv = group_advantages(raw, a.n_samples_per_prompt)
        lengths = [len(p) + len(r) for p, r in zip(prompts, responses)]
        # One optimizer step per global batch of whole groups; micro-batches inside each.
        steps = []
        for start in range(0, self.n_samples, a.global_batch_size):
            idx = list(range(start, start + a.global_batch_size))
            groups = micro_batches([lengths[i] for i in idx], dynamic=a.use_dynamic_batch_size,
                                   max_tokens=a.max_tokens_per_gpu, micro_batch_size=a.micro_batch_size)
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
            sums = {"loss": 0.0, "pg_loss": 0.0, "pg_clipfrac": 0.0, "ppo_kl": 0.0, "entropy_loss": 0.0,
                    "kl_loss": 0.0}
            for mb in mbs:
                logp, ent = token_logprobs(self.model, mb, self.segments, self.selective, True)
                sample_ids = torch.tensor(mb.samples, device=dev)
                parts = grpo_loss(
                    log_probs=logp, old_log_probs=old_lp[k], advantages=adv_dev[sample_ids][mb.local_index],
                    entropy=ent, sample_index=mb.local_index, n_samples=len(mb.samples), lengths=mb.lengths,
                    eps_clip=a.eps_clip, eps_clip_high=a.eps_clip_high,
                    ref_log_probs=ref_lp[k] if ref_lp is not None else None, kl_type=a.kl_loss_type,
                    kl_coef=a.kl_loss_coef, entropy_coef=a.entropy_coef)
                (parts.loss / a.global_batch_size).backward()
                for name in sums:
                    value = getattr(parts, "entropy" if name == "entropy_loss" else name)
                    sums[name] += float(value.detach()) / a.global_batch_size
                k += 1
            params = [p for p in self.model.parameters() if p.grad is not None]
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
        n_resp_tokens = sum(resp_lens)
        token_lp = torch.cat(old_lp)
        rollout = {
            "rollout/raw_reward": float(raw.mean()),
            "rollout/rewards": float(adv.mean()),
            "rollout/advantages": float(adv_dev[torch.cat([torch.tensor(mb.samples, device=dev)[mb.local_index]
                                                            for mb in all_mbs])].mean()),
            "rollout/response_lengths": statistics.fmean(resp_lens),
            "rollout/total_lengths": statistics.fmean(lengths),
            "rollout/log_probs": float(token_lp.mean()),
            "rollout/rollout_log_probs": statistics.fmean(x for lp in batch.log_probs for x in lp),
            "rollout/correct_ratio": sum(v.correct for v in verdicts) / len(verdicts),
            "rollout/format_ratio": sum(v.well_formed for v in verdicts) / len(verdicts),
            "rollout/num_samples": len(responses),
            "rollout/step": rollout_id,
        }
        if ref_lp is not None:
            rollout["rollout/ref_log_probs"] = float(torch.cat(ref_lp).mean())
        perf = {
            "perf/actor_train_time": actor_time,
            "perf/actor_train_tokens": sum(lengths),
            "perf/actor_train_tok_per_s": sum(lengths) / actor_time,
            "perf/log_probs_time": lp_time,
            "perf/optimizer_time": opt_time,
            "perf/micro_batches": len(all_mbs),
            "perf/response_tokens": n_resp_tokens,
        }
        if self.ref is not None:
            perf["perf/ref_log_probs_time"] = ref_time
        if dev.type == "cuda":
            perf["perf/max_memory_allocated_gib"] = torch.cuda.max_memory_allocated(dev) / 2**30
        return rollout, perf

    def step(self, rollout_id: int) -> dict:
        self.profiler.before_step(rollout_id)
        self.last_prompt_indices, batch, verdicts = self.rollout(rollout_id)
        t_train = time.perf_counter()
        wait = t_train - self.last_train_end
        rollout, perf = self.train(rollout_id, batch, verdicts)
        self.sink.emit("rollout", rollout_id, rollout)
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
        if rollout_id == 0:
            perf["perf/init_actor_time"] = self.init_time
        self.sink.emit("perf", rollout_id, perf)
        self.last_train_end = time.perf_counter()
        self.profiler.after_step(rollout_id)
        self.memory.after_step(rollout_id)
        return {**self.last_rollout_perf, **rollout, **perf}

    def close(self) -> None:
        self.sink.close()


def run(argv: list[str] | None = None) -> int:
    return run_args(parse_args(argv))


def run_args(args) -> int:
    """Train for `--num-rollout` steps; a CUDA OOM propagates (exit code 1, PyTorch's own text)."""
    print(format_argument_dump(args), flush=True)
    trainer = Trainer(args)
    try:
        for rollout_id in range(args.num_rollout):
            trainer.step(rollout_id)
    except torch.OutOfMemoryError:
        trainer.memory.on_oom()
        raise  # Python prints PyTorch's own "CUDA out of memory" text and exits with code 1
    finally:
        trainer.close()
    trainer.log.info(f"training finished: {args.num_rollout} steps")
    return 0

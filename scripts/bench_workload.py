"""Benchmark the embedded GRPO workload: per-step time breakdown and decode tokens/s.

    python scripts/bench_workload.py                         # CPU-tiny, with and without offload
    python scripts/bench_workload.py --device cuda --preset gpu-small --response-len 48

For each configuration it runs the real trainer in-process for --steps steps, drops --warmup
steps, and prints the mean seconds per phase (rollout, log-probs, actor train without the
optimizer step, optimizer step) plus decode tokens/s of the static-KV loop, as a Markdown table
and one JSON line per configuration.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch

from reportgen.workloads.grpo.args import parse_args
from reportgen.workloads.grpo.decode import StaticKVDecoder
from reportgen.workloads.grpo.task import Prompt
from reportgen.workloads.grpo.train import Trainer

OFFLOAD = ["--optimizer-cpu-offload", "--overlap-cpu-optimizer-d2h-h2d", "--use-precision-aware-optimizer"]
RECOMPUTE = ["--recompute-granularity", "full", "--recompute-method", "uniform", "--recompute-num-layers", "1"]


def step_breakdown(argv: list[str], steps: int, warmup: int) -> dict[str, float]:
    trainer = Trainer(parse_args(argv + ["--num-rollout", str(steps)]))
    rows = [trainer.step(i) for i in range(steps)][warmup:]
    trainer.close()

    def mean(key: str) -> float:
        return statistics.fmean(r.get(key, 0.0) for r in rows)

    return {
        "step_time": mean("perf/step_time"),
        "rollout": mean("perf/rollout_time"),
        "log_probs": mean("perf/log_probs_time") + mean("perf/ref_log_probs_time"),
        "actor_train_wo_optimizer": mean("perf/actor_train_time") - mean("perf/optimizer_time"),
        "optimizer": mean("perf/optimizer_time"),
        "actor_train": mean("perf/actor_train_time"),
        "step_resp_token_per_s": mean("perf/step_resp_token_per_s"),
    }


def decode_throughput(argv: list[str], batch: int, new_tokens: int, repeats: int) -> dict[str, float]:
    """Tokens/s of the decode loop at a fixed length (EOS cannot end it: it runs all steps)."""
    args = parse_args(argv)
    trainer = Trainer(args)
    model = trainer.model.eval()
    prompts = [Prompt(i, (i % 10, (3 * i) % 10, 7)).token_ids for i in range(batch)]
    dec = StaticKVDecoder(model, batch, args.rollout_max_prompt_len + new_tokens, cuda_graph=trainer.decoder.use_graph)
    gen = torch.Generator(device=trainer.device).manual_seed(0)
    # check_every > new_tokens: never stop early, so every run decodes exactly new_tokens steps.
    dec.generate(prompts, max_new=new_tokens, temperature=1.0, generator=gen, check_every=new_tokens + 1)
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = dec.generate(prompts, max_new=new_tokens, temperature=1.0, generator=gen, check_every=new_tokens + 1)
        times.append(time.perf_counter() - t0)
    trainer.close()
    best = min(times)
    return {
        "decode_tok_per_s": out.decode_steps * batch / best,
        "decode_ms_per_step": 1e3 * best / out.decode_steps,
        "batch": batch,
        "new_tokens": new_tokens,
        "cuda_graph": dec.use_graph,
    }


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--device", default="cpu", choices=("cpu", "cuda"))
    p.add_argument("--preset", default="cpu-tiny")
    p.add_argument("--steps", type=int, default=12)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--response-len", type=int, default=16)
    p.add_argument("--max-tokens-per-gpu", type=int, default=192)
    p.add_argument("--decode-batch", type=int, default=32)
    p.add_argument("--decode-tokens", type=int, default=64)
    p.add_argument("--no-graph", action="store_true", help="also measure decode without the CUDA graph")
    opts = p.parse_args()
    base = [
        "--preset",
        opts.preset,
        "--device",
        opts.device,
        "--rollout-batch-size",
        "4",
        "--n-samples-per-prompt",
        "8",
        "--global-batch-size",
        "32",
        "--rollout-max-prompt-len",
        "8",
        "--rollout-max-response-len",
        str(opts.response_len),
        "--rollout-temperature",
        "0.8",
        "--use-kl-loss",
        "--kl-loss-coef",
        "0.01",
        "--use-dynamic-batch-size",
        "--max-tokens-per-gpu",
        str(opts.max_tokens_per_gpu),
    ]
    results = []
    for name, extra in (
        ("baseline (offload trio + recompute)", OFFLOAD + RECOMPUTE),
        ("A1 (no offload, recompute)", RECOMPUTE),
    ):
        r = step_breakdown(base + extra, opts.steps, opts.warmup)
        results.append({"config": name, **r})
    dec_argv = base[:]
    dec_argv[dec_argv.index("--rollout-max-response-len") + 1] = str(opts.decode_tokens)
    dec = [decode_throughput(dec_argv, opts.decode_batch, opts.decode_tokens, 3)]
    if opts.no_graph and opts.device == "cuda":
        dec.append(decode_throughput(dec_argv + ["--no-rollout-cuda-graph"], opts.decode_batch, opts.decode_tokens, 3))
    print(f"\nper-step breakdown, mean s over steps {opts.warmup}-{opts.steps - 1} ({opts.device}, {opts.preset})\n")
    print("| config | step | rollout | log-probs | actor train (fwd+bwd) | optimizer | resp tok/s |")
    print("|---|---|---|---|---|---|---|")
    for r in results:
        print(
            f"| {r['config']} | {r['step_time']:.3f} | {r['rollout']:.3f} | {r['log_probs']:.3f} | "
            f"{r['actor_train_wo_optimizer']:.3f} | {r['optimizer']:.3f} | {r['step_resp_token_per_s']:.1f} |"
        )
    for d in dec:
        print(
            f"\ndecode: {d['decode_tok_per_s']:.0f} tok/s ({d['decode_ms_per_step']:.2f} ms/step, batch {d['batch']}, "
            f"{d['new_tokens']} new tokens, CUDA graph {'on' if d['cuda_graph'] else 'off'})"
        )
    for r in results + dec:
        print(json.dumps(r))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Command-line flags of the embedded GRPO workload (Relax's flag names, argparse, dashes).

Sits at the workload's edge: `parse_args(argv)` turns argv into a validated namespace that
the trainer reads. Model-size flags left unset are filled from the chosen preset.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass

from reportgen.workloads.grpo.task import MIN_DIGITS, PROMPT_OVERHEAD, VOCAB_SIZE


@dataclass(frozen=True)
class Preset:
    """A model size and its sensible default context for one kind of machine."""

    hidden_size: int
    num_layers: int
    num_attention_heads: int
    num_key_value_heads: int
    head_dim: int
    ffn_hidden_size: int


PRESETS: dict[str, Preset] = {
    # Fast on 2 CPU cores: one GRPO step of 64 short samples in well under a second.
    "cpu-tiny": Preset(
        hidden_size=128, num_layers=4, num_attention_heads=4, num_key_value_heads=2, head_dim=32, ffn_hidden_size=384
    ),
    # About 200M parameters: large enough that optimizer offload costs real time on one GPU.
    "gpu-small": Preset(
        hidden_size=1024,
        num_layers=16,
        num_attention_heads=16,
        num_key_value_heads=8,
        head_dim=64,
        ffn_hidden_size=3072,
    ),
}

_SIZE_FLAGS = ("hidden_size", "num_layers", "num_attention_heads", "num_key_value_heads", "head_dim", "ffn_hidden_size")


class WorkloadArgError(ValueError):
    """An inconsistent flag combination; the message names the flags and the fix."""


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m reportgen.workloads.grpo",
        description="Small real GRPO trainer (Qwen3 decoder, synthetic task) speaking Relax's flags and metrics.",
    )
    g = p.add_argument_group("model")
    g.add_argument("--preset", choices=sorted(PRESETS), default="cpu-tiny", help="model size preset")
    g.add_argument("--hidden-size", type=int, default=None)
    g.add_argument("--num-layers", type=int, default=None)
    g.add_argument("--num-attention-heads", type=int, default=None)
    g.add_argument("--num-key-value-heads", "--num-query-groups", dest="num_key_value_heads", type=int, default=None)
    g.add_argument("--head-dim", "--kv-channels", dest="head_dim", type=int, default=None)
    g.add_argument("--ffn-hidden-size", type=int, default=None)
    g.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto")
    g.add_argument("--bf16", action="store_true", help="bf16 weights/compute (default on CUDA)")
    g.add_argument("--fp32", action="store_true", help="force fp32 on CUDA")
    g.add_argument(
        "--cpu-threads",
        type=int,
        default=None,
        help="torch CPU threads of each rank (default: OMP_NUM_THREADS if set; else 1 on a CPU device, where "
        "spinning OpenMP threads on a busy 2-core machine make step times erratic; else the cores available "
        "to the process divided by the ranks on this host)",
    )
    g.add_argument(
        "--gpu-memory-fraction",
        type=float,
        default=None,
        help="cap this process's CUDA memory (emulate a smaller card); workload-only flag",
    )
    g.add_argument(
        "--gpu-memory-cap-gib",
        type=float,
        default=None,
        help="the same cap in GiB, whatever the card (converted to a fraction of its total); workload-only flag",
    )

    g = p.add_argument_group("warm start (workload-only flags; Relax starts from --hf-checkpoint)")
    g.add_argument(
        "--warm-start-steps",
        type=int,
        default=400,
        help="start the policy from a warm start made by a short supervised pass on the task, cached by content "
        "(reportgen.workloads.grpo.warm_start): right answers until the answer sampled at --rollout-temperature is "
        "right 97%% of the time (at most N steps), then the answer's distribution softened to "
        "--warm-start-accuracy; 0: seeded random init (the v1 workload)",
    )
    g.add_argument(
        "--warm-start-accuracy",
        type=float,
        default=0.35,
        help="the sampled accuracy the warm start starts GRPO from (the answer's distribution over the digits "
        "tempered, its order kept)",
    )
    g.add_argument(
        "--warm-start-seed",
        type=int,
        default=0,
        help="the warm start's own seed (not --seed: a campaign varies that per block, the start stays the same)",
    )
    g.add_argument(
        "--warm-start-cache",
        default=None,
        metavar="DIR",
        help="where warm starts are kept (default: reportgen's cache folder: $REPORTGEN_CACHE, else "
        "$XDG_CACHE_HOME/reportgen, else ~/.cache/reportgen)",
    )

    g = p.add_argument_group("parallel")
    g.add_argument(
        "--actor-num-gpus-per-node",
        "--num-gpus",
        dest="num_gpus",
        type=int,
        default=1,
        help="data-parallel processes, one per device (colocated rollout and training); "
        "N > 1 starts N workers from this one command (NCCL on CUDA, gloo on the CPU)",
    )

    g = p.add_argument_group("rollout")
    g.add_argument("--num-rollout", type=int, default=20, help="number of rollout/train steps")
    g.add_argument("--rollout-batch-size", type=int, default=8, help="prompts per rollout")
    g.add_argument("--n-samples-per-prompt", type=int, default=8)
    g.add_argument("--rollout-max-response-len", type=int, default=16)
    g.add_argument("--rollout-max-prompt-len", type=int, default=16)
    g.add_argument("--rollout-temperature", type=float, default=1.0)
    g.add_argument("--rollout-seed", type=int, default=42)
    g.add_argument(
        "--rollout-ignore-eos",
        action="store_true",
        help="keep sampling past <eos> so every response has exactly --rollout-max-response-len tokens "
        "(SGLang's ignore_eos, as serving benchmarks use it): the generated work no longer depends on what "
        "the policy learnt, so arms compare like with like; workload-only flag",
    )
    g.add_argument(
        "--rollout-cuda-graph",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="capture the decode step in a CUDA graph (default: on with CUDA)",
    )

    g = p.add_argument_group("grpo")
    g.add_argument("--advantage-estimator", choices=("grpo",), default="grpo")
    g.add_argument(
        "--global-batch-size",
        type=int,
        default=None,
        help="samples per optimizer step; must divide rollout-batch-size x n-samples-per-prompt",
    )
    g.add_argument("--eps-clip", type=float, default=0.2)
    g.add_argument("--eps-clip-high", type=float, default=None)
    g.add_argument("--use-kl-loss", action="store_true")
    g.add_argument("--kl-loss-coef", type=float, default=0.0)
    g.add_argument("--kl-loss-type", choices=("low_var_kl", "k1", "k2"), default="low_var_kl")
    g.add_argument("--entropy-coef", type=float, default=0.0)

    g = p.add_argument_group("optimizer")
    g.add_argument("--optimizer", choices=("adam",), default="adam")
    g.add_argument("--lr", type=float, default=1e-3)
    g.add_argument("--weight-decay", type=float, default=0.0)
    g.add_argument("--adam-beta1", type=float, default=0.9)
    g.add_argument("--adam-beta2", type=float, default=0.98)
    g.add_argument("--adam-eps", type=float, default=1e-8)
    g.add_argument("--clip-grad", type=float, default=1.0)
    g.add_argument("--optimizer-cpu-offload", action="store_true")
    g.add_argument("--overlap-cpu-optimizer-d2h-h2d", action="store_true")
    g.add_argument("--use-precision-aware-optimizer", action="store_true")
    g.add_argument("--optimizer-offload-fraction", type=float, default=1.0)

    g = p.add_argument_group("performance")
    g.add_argument("--use-dynamic-batch-size", action="store_true")
    g.add_argument("--max-tokens-per-gpu", type=int, default=None)
    g.add_argument("--micro-batch-size", type=int, default=1)
    g.add_argument("--recompute-granularity", choices=("full", "selective"), default=None)
    g.add_argument("--recompute-method", choices=("uniform", "block"), default=None)
    g.add_argument("--recompute-num-layers", type=int, default=None)

    g = p.add_argument_group("logging")
    g.add_argument("--seed", type=int, default=1234)
    g.add_argument("--use-tensorboard", action="store_true")
    g.add_argument("--tb-project-name", default="reportgen")
    g.add_argument("--tb-experiment-name", default="grpo")
    g.add_argument(
        "--save",
        default=None,
        help="checkpoint folder (Megatron's layout: iter_NNNNNNN/, latest_checkpointed_iteration.txt); also the "
        "TensorBoard fallback folder's parent",
    )
    g.add_argument(
        "--save-interval",
        type=int,
        default=None,
        help="with --save: save after every N-th step (iteration = the step) and after the last one",
    )
    g.add_argument(
        "--load",
        default=None,
        help="resume from the latest checkpoint in this folder (the step after its iteration); a folder with "
        "no checkpoint starts from scratch, as Relax does",
    )
    g.add_argument("--use-pytorch-profiler", action="store_true")
    g.add_argument("--profile-step-start", type=int, default=None)
    g.add_argument("--profile-step-end", type=int, default=None)
    g.add_argument("--profile-target", default="train_actor")
    g.add_argument("--record-memory-history", action="store_true")
    g.add_argument("--memory-snapshot-num-steps", type=int, default=None)

    g = p.add_argument_group("testing")
    g.add_argument(
        "--inject-slowdown",
        type=float,
        default=0.0,
        metavar="F",
        help="make every step take (1 + F) times as long by sleeping F times its own time before it ends "
        "(a known slowdown for testing performance history; 0 = off)",
    )
    return p


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """Parse and validate; bad combinations exit through argparse's error (exit code 2)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        finalize(args)
    except WorkloadArgError as exc:
        parser.error(str(exc))
    return args


def finalize(args: argparse.Namespace) -> argparse.Namespace:
    """Fill preset sizes and check every cross-flag rule (raises `WorkloadArgError`)."""
    preset = PRESETS[args.preset]
    for name in _SIZE_FLAGS:
        if getattr(args, name) is None:
            setattr(args, name, getattr(preset, name))
    args.vocab_size = VOCAB_SIZE
    if args.num_attention_heads % args.num_key_value_heads:
        raise WorkloadArgError("--num-attention-heads must be a multiple of --num-key-value-heads")
    samples = args.rollout_batch_size * args.n_samples_per_prompt
    if args.global_batch_size is None:
        args.global_batch_size = samples
    if args.global_batch_size <= 0 or samples % args.global_batch_size:
        raise WorkloadArgError(
            f"--global-batch-size {args.global_batch_size} must divide --rollout-batch-size x "
            f"--n-samples-per-prompt = {samples}; set it to {samples} or a divisor of it"
        )
    if args.global_batch_size % args.n_samples_per_prompt:
        raise WorkloadArgError("--global-batch-size must be a multiple of --n-samples-per-prompt (whole groups)")
    if args.num_gpus <= 0:
        raise WorkloadArgError("--actor-num-gpus-per-node must be positive")
    if args.rollout_batch_size % args.num_gpus:
        raise WorkloadArgError(
            f"--rollout-batch-size {args.rollout_batch_size} must be a multiple of "
            f"--actor-num-gpus-per-node {args.num_gpus} (each rank rolls out whole prompts)"
        )
    if args.global_batch_size % (args.num_gpus * args.n_samples_per_prompt):
        raise WorkloadArgError(
            f"--global-batch-size {args.global_batch_size} must be a multiple of --actor-num-gpus-per-node x "
            f"--n-samples-per-prompt = {args.num_gpus * args.n_samples_per_prompt} (each rank's share of "
            f"an optimizer step is whole prompt groups)"
        )
    if args.eps_clip_high is None:
        args.eps_clip_high = args.eps_clip
    if args.use_dynamic_batch_size:
        if args.max_tokens_per_gpu is None:
            raise WorkloadArgError("--use-dynamic-batch-size needs --max-tokens-per-gpu N")
        longest = args.rollout_max_prompt_len + args.rollout_max_response_len
        if args.max_tokens_per_gpu < longest:
            raise WorkloadArgError(
                f"--max-tokens-per-gpu {args.max_tokens_per_gpu} is below the longest possible sample "
                f"({longest} tokens); raise it to at least {longest}"
            )
    if args.cpu_threads is not None and args.cpu_threads <= 0:
        raise WorkloadArgError("--cpu-threads must be positive")
    if args.inject_slowdown < 0:
        raise WorkloadArgError("--inject-slowdown must be 0 or more (a fraction of each step's time)")
    if args.micro_batch_size <= 0:
        raise WorkloadArgError("--micro-batch-size must be positive")
    if args.recompute_granularity is not None:
        if args.recompute_granularity == "full" and args.recompute_method is None:
            raise WorkloadArgError("--recompute-granularity full needs --recompute-method uniform|block")
        if args.recompute_num_layers is None:
            args.recompute_num_layers = 1
        if args.recompute_num_layers <= 0:
            raise WorkloadArgError("--recompute-num-layers must be positive")
    if args.use_pytorch_profiler:
        if args.profile_step_start is None or args.profile_step_end is None:
            raise WorkloadArgError("--use-pytorch-profiler needs --profile-step-start S --profile-step-end E")
        if args.profile_step_end < args.profile_step_start:
            raise WorkloadArgError("--profile-step-end is before --profile-step-start")
    if args.gpu_memory_fraction is not None and not 0 < args.gpu_memory_fraction <= 1:
        raise WorkloadArgError("--gpu-memory-fraction must be in (0, 1]")
    if args.gpu_memory_cap_gib is not None:
        if args.gpu_memory_fraction is not None:
            raise WorkloadArgError("give --gpu-memory-fraction or --gpu-memory-cap-gib, not both")
        if not args.gpu_memory_cap_gib > 0:
            raise WorkloadArgError("--gpu-memory-cap-gib must be positive")
    if args.warm_start_steps < 0:
        raise WorkloadArgError("--warm-start-steps must be 0 or more")
    if not 0 < args.warm_start_accuracy <= 1:
        raise WorkloadArgError("--warm-start-accuracy must be in (0, 1]")
    if args.num_rollout <= 0:
        raise WorkloadArgError("--num-rollout must be positive")
    if args.save_interval is not None and args.save_interval <= 0:
        raise WorkloadArgError("--save-interval must be positive")
    if args.save_interval is not None and args.save is None:
        raise WorkloadArgError("--save-interval needs --save DIR (where to write the checkpoints)")
    shortest = MIN_DIGITS + PROMPT_OVERHEAD
    if args.rollout_max_prompt_len < shortest:
        raise WorkloadArgError(f"--rollout-max-prompt-len must be at least {shortest} (the shortest prompt)")
    if args.rollout_max_response_len < 2:
        raise WorkloadArgError("--rollout-max-response-len must be at least 2")
    return args


def format_argument_dump(args: argparse.Namespace) -> str:
    """Megatron's argument dump: sorted names, dots to column 48, framed by two rule lines."""
    lines = ["------------------------ arguments ------------------------"]
    for name in sorted(vars(args)):
        value = getattr(args, name)
        dots = "." * (48 - len(name))
        lines.append(f"  {name} {dots} {value}")
    lines.append("-------------------- end of arguments ---------------------")
    return "\n".join(lines)

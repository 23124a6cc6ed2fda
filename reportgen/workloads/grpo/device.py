"""Where a rank of the workload computes: its device (`--device`) and how many CPU threads it
gives torch (threads.py's rule with this rank's facts).

The training loop (train.py) and the warm start's own command (`python -m
reportgen.workloads.grpo.warm_start`, which must make the start as a run would) both settle these
first; they live here, below both, so that neither imports the other for them.
"""

from __future__ import annotations

import argparse

import torch

from reportgen.workloads.grpo.distributed import DistEnv
from reportgen.workloads.grpo.threads import ThreadChoice, available_cores, choose_cpu_threads


def resolve_device(choice: str) -> torch.device:
    if choice == "cuda" or (choice == "auto" and torch.cuda.is_available()):
        if not torch.cuda.is_available():
            raise SystemExit("--device cuda: no CUDA device is visible to this process")
        return torch.device("cuda", torch.cuda.current_device())
    return torch.device("cpu")


def cpu_thread_choice(args: argparse.Namespace, device: torch.device, dist_env: DistEnv) -> ThreadChoice:
    """This rank's torch CPU threads (reportgen.workloads.grpo.threads): `run_args` resolves it before
    the argument dump and hands it to the Trainer; a Trainer built directly resolves it itself."""
    return choose_cpu_threads(
        args.cpu_threads, device_type=device.type, cores=available_cores(), local_ranks=dist_env.local_world_size
    )

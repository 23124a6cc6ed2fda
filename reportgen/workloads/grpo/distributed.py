"""Data parallelism of the embedded GRPO workload: one process per device, launched by the workload.

`--actor-num-gpus-per-node N` (alias `--num-gpus`) with N > 1 turns the entry process into a small
launcher: it starts N copies of `python -m reportgen.workloads.grpo` with the same flags and the
torch.distributed environment (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR=127.0.0.1, a free
MASTER_PORT), waits, and ends the whole job when any rank fails. A process that finds RANK and
WORLD_SIZE in its environment is a worker (so `torchrun` can start the workers too). Workers use
NCCL on CUDA (NVLink multicast off: NCCL_NVLS_ENABLE=0 unless already set) and gloo on the CPU.

The collectives here are the only cross-rank traffic: gradients are summed in place, tensor by
tensor (every rank then takes the same optimizer step, so parameters stay identical), and small
per-step statistics are gathered so that rank 0 alone prints one set of metric lines for the job.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:  # the launcher imports no torch
    import torch

T = TypeVar("T")

WORKER_ENV = ("RANK", "WORLD_SIZE")


@dataclass(frozen=True)
class DistEnv:
    """This process's place in the job; `world_size == 1` is the plain single-process run."""

    rank: int = 0
    world_size: int = 1
    local_rank: int = 0
    local_world_size: int = 1  # ranks on this host: they share its CPU cores

    @property
    def active(self) -> bool:
        return self.world_size > 1

    @property
    def is_logger(self) -> bool:
        return self.rank == 0


def env_of(environ: Mapping[str, str] | None = None) -> DistEnv:
    """The DistEnv a launcher (ours or torchrun) put in the environment, else the single-process one."""
    environ = os.environ if environ is None else environ
    if not all(k in environ for k in WORKER_ENV):
        return DistEnv()
    rank, world = int(environ["RANK"]), int(environ["WORLD_SIZE"])
    return DistEnv(
        rank=rank,
        world_size=world,
        local_rank=int(environ.get("LOCAL_RANK", rank)),
        local_world_size=int(environ.get("LOCAL_WORLD_SIZE", world)),
    )


def is_worker(environ: Mapping[str, str] | None = None) -> bool:
    environ = os.environ if environ is None else environ
    return all(k in environ for k in WORKER_ENV)


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def worker_env(base: Mapping[str, str], rank: int, world: int, port: int) -> dict[str, str]:
    env = dict(base)
    env.update(
        RANK=str(rank),
        WORLD_SIZE=str(world),
        LOCAL_RANK=str(rank),
        LOCAL_WORLD_SIZE=str(world),
        MASTER_ADDR="127.0.0.1",
        MASTER_PORT=str(port),
    )
    # NVLink SHARP/multicast stays off (it needs fabric-manager state these hosts do not promise).
    env.setdefault("NCCL_NVLS_ENABLE", "0")
    return env


def launch(argv: list[str], world: int, *, module: str = "reportgen.workloads.grpo", poll_s: float = 0.2) -> int:
    """Run `world` worker processes with `argv`; the job's exit code (first failing rank's, else 0).

    Workers inherit stdout/stderr, so rank 0's metric lines and any rank's traceback (a CUDA OOM's
    own text included) reach the console unchanged. When one rank fails, the others would wait in a
    collective forever, so they are stopped (SIGTERM, then SIGKILL after 10 s).
    """
    port = free_port()
    cmd = [sys.executable, "-m", module, *argv]
    procs = [subprocess.Popen(cmd, env=worker_env(os.environ, r, world, port)) for r in range(world)]

    def stop_all(sig: int = signal.SIGTERM) -> None:
        for p in procs:
            if p.poll() is None:
                p.send_signal(sig)
        deadline = time.monotonic() + 10
        for p in procs:
            try:
                p.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()

    def on_signal(signum, _frame):
        stop_all()
        sys.exit(128 + signum)

    previous = {s: signal.signal(s, on_signal) for s in (signal.SIGTERM, signal.SIGINT)}
    try:
        while True:
            codes = [p.poll() for p in procs]
            failed = [(r, c) for r, c in enumerate(codes) if c not in (None, 0)]
            if failed:
                rank, code = failed[0]
                print(
                    f"data-parallel: rank {rank} exited with code {code}; stopping the other {world - 1} rank(s)",
                    file=sys.stderr,
                    flush=True,
                )
                stop_all()
                return 1 if code < 0 else code
            if all(c == 0 for c in codes):
                return 0
            time.sleep(poll_s)
    finally:
        for s, h in previous.items():
            signal.signal(s, h)


# -- inside a worker (torch imported from here on) -----------------------------------------------


def init_process_group(dist_env: DistEnv, device_type: str) -> None:
    import torch.distributed as dist

    backend = "nccl" if device_type == "cuda" else "gloo"
    dist.init_process_group(backend=backend, rank=dist_env.rank, world_size=dist_env.world_size)


def destroy_process_group(dist_env: DistEnv) -> None:
    """Every rank done with its collectives, then the group torn down. Ranks reaching the teardown
    at different times (rank 0 still closes its TensorBoard writer) while rank 0 hosts the
    rendezvous store is a known cause of a gloo job failing at its end; a run of two CPU ranks once
    ended so on a loaded machine, exit code 1 after all its steps (its log was not kept), so the
    ranks meet at a barrier first."""
    if dist_env.active:
        import torch.distributed as dist

        if dist.is_initialized():
            dist.barrier()
            dist.destroy_process_group()


def barrier(dist_env: DistEnv) -> None:
    """Wait until every rank reaches this point (nothing without data parallelism)."""
    if not dist_env.active:
        return
    import torch.distributed as dist

    dist.barrier()


def gather(dist_env: DistEnv, obj: T) -> list[T]:
    """Every rank's `obj`, in rank order (`[obj]` without data parallelism)."""
    if not dist_env.active:
        return [obj]
    import torch.distributed as dist

    out: list[Any] = [None] * dist_env.world_size
    dist.all_gather_object(out, obj)
    return out


def sum_floats(dist_env: DistEnv, values: list[float], device: torch.device) -> list[float]:
    """Element-wise sum over ranks of a short list of floats (float64 on the wire)."""
    if not dist_env.active:
        return list(values)
    import torch
    import torch.distributed as dist

    t = torch.tensor(values, dtype=torch.float64, device=device)
    dist.all_reduce(t)
    return t.tolist()


def allreduce_grads(dist_env: DistEnv, params: Iterable[torch.Tensor]) -> None:
    """Sum the gradients of `params` over ranks, each tensor in place (one collective per tensor).

    Each rank's loss is already divided by the GLOBAL batch size, so the sum is the gradient of the
    whole batch: the same as one process training on all of it. In place and in the gradient's own
    dtype, so no rank holds a second copy of its gradients: one flat fp32 buffer (the first version)
    cost two fp32 copies of every gradient at the peak, 1.6 GB for the 201M-parameter model, and
    made A1 run out of its 5 GiB cap on two H200s. With two ranks a bf16 sum rounds once, exactly
    as summing in fp32 and rounding back did.
    """
    if not dist_env.active:
        return
    import torch.distributed as dist

    for p in params:
        assert p.grad is not None  # every trained parameter has one after backward
        dist.all_reduce(p.grad)


def parameter_checksum(model: torch.nn.Module) -> str:
    """sha256 of every parameter's bytes, in order: equal across ranks iff the replicas agree."""
    import hashlib

    import torch

    h = hashlib.sha256()
    with torch.no_grad():
        for p in model.parameters():
            h.update(p.detach().float().cpu().contiguous().numpy().tobytes())
    return h.hexdigest()[:16]

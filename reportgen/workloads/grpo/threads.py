"""How many CPU threads each rank of the workload gives torch (`--cpu-threads`).

torch's default is every core of the host in every process. With data parallelism the ranks of
one host then oversubscribe its cores: on 2 x H200 (32 cores) both ranks took 32 threads and
their host-side Adam steps (the optimizer offload path) fought, 13.4 s a step against 1.2-1.4 s
with 16 threads each. So each rank defaults to its share of the cores it may run on.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class ThreadChoice:
    """The thread count a rank uses and why (the start-up log line says both)."""

    threads: int
    reason: str


def available_cores() -> int:
    """CPU cores this process may run on: its affinity mask, which a container or taskset narrows."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # a platform without the affinity call
        return os.cpu_count() or 1


def default_cpu_threads(cores: int, local_ranks: int) -> int:
    """Each rank's share of the host's cores: `cores // local_ranks`, at least 1."""
    if cores < 1 or local_ranks < 1:
        raise ValueError(f"cores ({cores}) and local ranks ({local_ranks}) must be positive")
    return max(1, cores // local_ranks)


def choose_cpu_threads(
    requested: int | None,
    *,
    device_type: str,
    cores: int,
    local_ranks: int,
    environ: Mapping[str, str] | None = None,
) -> ThreadChoice:
    """The rank's thread count: `--cpu-threads`, else OMP_NUM_THREADS, else its share of the cores.

    On a CPU device the default stays 1 thread per rank: there the model itself is the CPU work,
    and on a busy 2-core machine OpenMP's spinning threads made single steps up to 20 times
    slower at random (steady step times matter more to a benchmark than the last bit of speed).
    """
    environ = os.environ if environ is None else environ
    if requested is not None:
        if requested < 1:
            raise ValueError(f"--cpu-threads must be positive, got {requested}")
        return ThreadChoice(requested, "--cpu-threads")
    omp = environ.get("OMP_NUM_THREADS", "").strip()
    if omp.isdigit() and int(omp) > 0:
        return ThreadChoice(int(omp), "OMP_NUM_THREADS")
    if device_type == "cpu":
        return ThreadChoice(1, "default on a CPU device")
    share = default_cpu_threads(cores, local_ranks)
    return ThreadChoice(share, f"default: {cores} cores available / {local_ranks} local rank(s)")

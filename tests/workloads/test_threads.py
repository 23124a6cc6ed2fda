"""Threads per rank: each rank of a host takes its share of the cores, not all of them."""

from __future__ import annotations

import pytest

from reportgen.workloads.grpo.args import WorkloadArgError, build_parser, finalize
from reportgen.workloads.grpo.distributed import env_of, worker_env
from reportgen.workloads.grpo.threads import available_cores, choose_cpu_threads, default_cpu_threads

# The machine of the measured problem: 2 x H200, 32 cores, one rank per GPU.
H200_PAIR = {"cores": 32, "local_ranks": 2}


def test_default_is_the_cores_shared_by_the_local_ranks():
    assert default_cpu_threads(**H200_PAIR) == 16
    assert default_cpu_threads(cores=16, local_ranks=1) == 16
    assert default_cpu_threads(cores=3, local_ranks=2) == 1  # rounds down, never oversubscribes
    assert default_cpu_threads(cores=1, local_ranks=4) == 1  # but every rank keeps one thread
    with pytest.raises(ValueError, match="must be positive"):
        default_cpu_threads(cores=32, local_ranks=0)


def test_choice_on_a_two_rank_gpu_host():
    got = choose_cpu_threads(None, device_type="cuda", environ={}, **H200_PAIR)
    assert got.threads == 16
    assert got.reason == "default: 32 cores available / 2 local rank(s)"
    # What the user says wins: the flag first, then OMP_NUM_THREADS.
    assert choose_cpu_threads(8, device_type="cuda", environ={"OMP_NUM_THREADS": "4"}, **H200_PAIR).threads == 8
    omp = choose_cpu_threads(None, device_type="cuda", environ={"OMP_NUM_THREADS": "4"}, **H200_PAIR)
    assert (omp.threads, omp.reason) == (4, "OMP_NUM_THREADS")
    # An unusable OMP_NUM_THREADS is no choice: the share applies.
    assert choose_cpu_threads(None, device_type="cuda", environ={"OMP_NUM_THREADS": "0"}, **H200_PAIR).threads == 16
    # On a CPU device the model is the CPU work: one thread keeps step times steady.
    cpu = choose_cpu_threads(None, device_type="cpu", environ={}, **H200_PAIR)
    assert (cpu.threads, cpu.reason) == (1, "default on a CPU device")


def test_local_ranks_come_from_the_launcher_environment():
    env = worker_env({"PATH": "/bin"}, 1, 2, 29512)
    assert env["LOCAL_WORLD_SIZE"] == "2"
    assert env_of(env).local_world_size == 2
    # torchrun on 2 nodes of 4: 8 ranks in all, 4 on this host share its cores.
    torchrun = {"RANK": "5", "WORLD_SIZE": "8", "LOCAL_RANK": "1", "LOCAL_WORLD_SIZE": "4"}
    assert env_of(torchrun).local_world_size == 4
    assert env_of({}).local_world_size == 1


def test_available_cores_is_this_process_affinity():
    import os

    assert available_cores() == len(os.sched_getaffinity(0))


def test_cpu_threads_flag_must_be_positive():
    with pytest.raises(WorkloadArgError, match="--cpu-threads must be positive"):
        finalize(build_parser().parse_args(["--cpu-threads", "0"]))
    assert finalize(build_parser().parse_args(["--cpu-threads", "3"])).cpu_threads == 3

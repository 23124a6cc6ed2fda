"""A real `python -m reportgen.workloads.grpo` process: console lines, TensorBoard, traces, snapshot."""

from __future__ import annotations

import ast
import gzip
import json
import pickle
import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from tests.workloads.profiled import STEPS, profiled_run
from tests.workloads.profiled import env as _env

REPO = Path(__file__).resolve().parents[2]
LINE = re.compile(r"(perf|rollout|step|eval|passrate)\s+(\d+):\s+(\{.*\})")
BARE = re.compile(r"(?<![\w'])(-?inf|nan)(?![\w'])")


def _parse(line: str) -> tuple[str, int, dict]:
    m = LINE.search(re.sub(r"\x1b\[[0-9;]*m", "", line))
    assert m, line
    body = BARE.sub(lambda t: repr(str(t.group(1))), m.group(3))
    return m.group(1), int(m.group(2)), ast.literal_eval(body)


@pytest.mark.slow
def test_process_writes_relax_formats(tmp_path_factory: pytest.TempPathFactory) -> None:
    proc, run_dir = profiled_run(tmp_path_factory)  # the session's one run with every output on
    tb = run_dir / "tensorboard"
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = proc.stdout
    assert "------------------------ arguments ------------------------" in out
    assert re.search(r"^  rollout_batch_size \.+ 2$", out, re.M)
    # The thread count used is resolved before the dump, so the dump (and the run) records it.
    assert re.search(r"^  cpu_threads \.+ 1$", out, re.M)
    assert "cpu-threads: 1 (default on a CPU device)" in out
    assert "-------------------- end of arguments ---------------------" in out
    assert "> setting random seeds to 1234 ..." in out
    # the workload's version, then the warm start it made (its first run on this machine) and its hash
    assert re.search(r"^\[[^]]+\] train\.py:\d+ - workload: grpo-max v2$", out, re.M)
    made = re.search(r" - warm start: sha256 ([0-9a-f]{64}) made in [0-9.]+ s \(\d+ steps on right answers", out)
    assert made, out[:3000]
    assert "nothing to move" in out
    metric_lines = [ln for ln in out.splitlines() if LINE.search(ln)]
    assert all(re.match(r"^\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\] \w+\.py:\d+ - ", ln) for ln in metric_lines)
    parsed = [_parse(ln) for ln in metric_lines]
    for step in range(STEPS):
        perf = [d for k, s, d in parsed if k == "perf" and s == step]
        assert len(perf) == 2  # rollout manager + actor, as Relax prints
        merged = {k: v for d in perf for k, v in d.items()}
        assert merged["perf/step_time"] == pytest.approx(merged["perf/train_time"] + merged["perf/train_wait_time"])
        for key in (
            "perf/step_resp_token_per_s",
            "perf/step_token_per_s",
            "perf/actor_train_time",
            "perf/rollout_time",
            "perf/log_probs_time",
            "perf/ref_log_probs_time",
            "perf/actor_train_tokens",
            "perf/actor_train_tok_per_s",
            "perf/wait_time_ratio",
        ):
            assert key in merged, key
        assert ("perf/init_actor_time" in merged) == (step == 0)
        (roll,) = [d for k, s, d in parsed if k == "rollout" and s == step]
        assert roll["rollout/num_samples"] == 8
        assert merged["perf/step_resp_token_per_s"] == pytest.approx(
            roll["rollout/response_lengths"] * 8 / merged["perf/step_time"]
        )
        (train,) = [d for k, s, d in parsed if k == "step" and s == step]
        for key in (
            "train/loss",
            "train/pg_loss",
            "train/pg_clipfrac",
            "train/ppo_kl",
            "train/kl_loss",
            "train/entropy_loss",
            "train/grad_norm",
        ):
            assert key in train, key

    from tbparse import SummaryReader

    scalars = SummaryReader(str(tb)).scalars
    assert set(scalars[scalars.tag == "perf/step_time"].step) == set(range(STEPS))
    assert "rollout/raw_reward" in set(scalars.tag)
    traces = list(
        (run_dir / "traces" / "exp1" / "train_trace").glob("train_actor_rank0_dp0_tp0_pp0.*.pt.trace.json.gz")
    )
    assert len(traces) == 1
    assert "traceEvents" in json.loads(gzip.decompress(traces[0].read_bytes()))
    snaps = list((run_dir / "traces" / "exp1" / "memory_snapshot").glob("memory_snapshot_time*_snapshot.pickle"))
    assert len(snaps) == 1
    assert pickle.loads(snaps[0].read_bytes())["segments"] == []


def test_help_lists_relax_flags():
    proc = subprocess.run(
        [sys.executable, "-m", "reportgen.workloads.grpo", "--help"],
        env=_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0
    for flag in (
        "--optimizer-cpu-offload",
        "--recompute-granularity",
        "--max-tokens-per-gpu",
        "--gpu-memory-fraction",
        "--n-samples-per-prompt",
        "--eps-clip-high",
    ):
        assert flag in proc.stdout


@pytest.mark.skipif(not torch.cuda.is_available(), reason="CUDA OOM needs a CUDA device; none on this machine")
def test_cuda_oom_exits_1_with_pytorch_text(tmp_path):
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "reportgen.workloads.grpo",
            "--preset",
            "gpu-small",
            "--device",
            "cuda",
            "--gpu-memory-fraction",
            "0.002",
            "--num-rollout",
            "2",
        ],
        cwd=tmp_path,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 1
    assert "CUDA out of memory" in proc.stderr


@pytest.mark.skipif(not torch.cuda.is_available(), reason="CUDA graphs need a CUDA device; none on this machine")
def test_cuda_graph_decode_matches_eager():
    from reportgen.workloads.grpo.args import parse_args
    from reportgen.workloads.grpo.decode import StaticKVDecoder
    from reportgen.workloads.grpo.model import build_policy
    from reportgen.workloads.grpo.task import Prompt

    args = parse_args(["--device", "cuda", "--fp32"])
    torch.manual_seed(0)
    model = build_policy(args, torch.device("cuda"), torch.float32).eval()
    prompts = [Prompt(i, (i % 10, 3, 7)).token_ids for i in range(4)]
    outs = []
    for graph in (False, True):
        dec = StaticKVDecoder(model, 4, 24, cuda_graph=graph)
        gen = torch.Generator(device="cuda").manual_seed(3)
        outs.append(dec.generate(prompts, max_new=12, temperature=1.0, generator=gen))
    assert outs[0].responses == outs[1].responses

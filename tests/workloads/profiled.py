"""One real `python -m reportgen.workloads.grpo` process with every output on (console lines,
TensorBoard, a profiler trace of steps 1-2, a memory snapshot, a checkpoint of iteration 3 in
`ck/`), made once per test session and read by the tests of what it writes:
tests/workloads/test_console_outputs.py (the formats), tests/traces/test_workload_trace.py (its
trace, summarised) and tests/execute/test_run_lifecycles.py (runs resumed from its checkpoint). Each real run costs ~5 CPU-s of
start-up (importing torch), whatever its steps: one run, not one per test."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import built_once
from tests.workloads.conftest import TINY

REPO = Path(__file__).resolve().parents[2]
STEPS = 4
ARGV = [*TINY, "--num-rollout", str(STEPS), "--rollout-batch-size", "2", "--n-samples-per-prompt", "4",
        "--global-batch-size", "8", "--use-dynamic-batch-size", "--max-tokens-per-gpu", "64",
        "--use-kl-loss", "--kl-loss-coef", "0.01", "--use-tensorboard", "--tb-experiment-name", "exp1",
        "--use-pytorch-profiler", "--profile-step-start", "1", "--profile-step-end", "2",
        "--record-memory-history", "--optimizer-cpu-offload"]  # fmt: skip


def env(**extra: str) -> dict[str, str]:
    out = dict(os.environ)
    out.pop("OMP_NUM_THREADS", None)  # the thread count's default is what is checked
    out["PYTHONPATH"] = os.pathsep.join([str(REPO), out.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    out.update(extra)
    return out


def _build(folder: Path) -> None:
    run_dir = folder / "run"
    save = ["--save", str(run_dir / "ck"), "--save-interval", str(STEPS)]  # iteration STEPS - 1
    proc = subprocess.run(
        [sys.executable, "-m", "reportgen.workloads.grpo", *ARGV, *save],
        cwd=folder,
        # its own cache folder: the run makes its warm start, and says so
        env=env(
            TENSORBOARD_DIR=str(run_dir / "tensorboard"),
            REPORTGEN_RUN_DIR=str(run_dir),
            REPORTGEN_CACHE=str(folder / "cache"),
        ),
        capture_output=True,
        text=True,
        timeout=300,
    )
    (folder / "stdout.log").write_text(proc.stdout)
    (folder / "stderr.log").write_text(proc.stderr)
    (folder / "returncode").write_text(str(proc.returncode))


def profiled_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[subprocess.CompletedProcess[str], Path]:
    """(the finished process's return code and output, its REPORTGEN_RUN_DIR), read-only: a test
    that writes into the run folder copies it first."""
    folder = built_once(tmp_path_factory, "grpo-profiled-run", _build)
    proc = subprocess.CompletedProcess(
        ARGV,
        int((folder / "returncode").read_text()),
        (folder / "stdout.log").read_text(),
        (folder / "stderr.log").read_text(),
    )
    return proc, folder / "run"

"""A throw-away git repository holding a copy of the embedded CPU workload, whose commits change the
workload's code, one of them slowing every training step: for the bisection and paired-history
real-run test (tests/history/test_real_bisect.py) and the cost measurement (scripts/bisect_cost.py).
Plain functions."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import reportgen

PACKAGE = Path(reportgen.__file__).resolve().parent
RECIPE = PACKAGE.parent / "scripts" / "recipes" / "grpo-recipe.sh"
ARGS = Path("reportgen/workloads/grpo/args.py")
TRAIN = Path("reportgen/workloads/grpo/train.py")
STEP_LINE = "        rollout, perf = self.train(rollout_id, batch, verdicts)\n"  # inside Trainer.step's timed block
STEPS = 6
SPEC = """\
schema_version = 1
name = "bisect-demo"
title = "The embedded workload at revisions of its own repository"

[recipe]
script = "recipe.sh"
workdir = "."
entrypoint = "reportgen.workloads.grpo"
env = {{ NUM_ROLLOUT = "{steps}", ROLLOUT_BATCH_SIZE = "2", GLOBAL_BATCH_SIZE = "16", PRESET = "cpu-tiny", DEVICE = "cpu" }}

[workload]
steps = {steps}
flags = ["--num-rollout", "--rollout-batch-size", "--n-samples-per-prompt", "--global-batch-size", "--seed", "--rollout-seed", "--preset", "--device"]

[run]
timeout_s = 240

[analysis]
warmup_steps = 2
windows = [{{ name = "W1", start = 2, end = {last} }}]

[[candidates]]
id = "A1"
title = "Remove the optimizer offload trio (never run here: revisions only)"
remove = ["--optimizer-cpu-offload", "--overlap-cpu-optimizer-d2h-h2d", "--use-precision-aware-optimizer"]
"""
GIT_ENV = {
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@example.invalid",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@example.invalid",
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_CONFIG_NOSYSTEM": "1",
}


def _git(repo: Path, *args: str) -> str:
    res = subprocess.run(
        ["git", "-C", str(repo), *args], check=True, capture_output=True, text=True, env={**os.environ, **GIT_ENV}
    )
    return res.stdout.strip()


def _commit(repo: Path, message: str) -> str:
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "--allow-empty", "-m", message)
    return _git(repo, "rev-parse", "HEAD")


def make_repo(repo: Path, *, commits: int, slow_at: int, sleep_s: float) -> tuple[str, list[str]]:
    """GOOD (the workload, its recipe and spec.toml) and `commits` commits that change the workload's
    code, the one at `slow_at` (0-based) sleeping `sleep_s` in every training step inside its timed
    block. Returns GOOD and the commits' SHAs."""
    repo.mkdir(parents=True)
    _git(repo, "init", "-q", "-b", "main")
    for rel in ("__init__.py", "workloads/__init__.py"):
        (repo / "reportgen" / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(PACKAGE / rel, repo / "reportgen" / rel)
    shutil.copytree(
        PACKAGE / "workloads" / "grpo",
        repo / "reportgen" / "workloads" / "grpo",
        ignore=shutil.ignore_patterns("__pycache__"),
    )
    shutil.copyfile(RECIPE, repo / "recipe.sh")
    (repo / "spec.toml").write_text(SPEC.format(steps=STEPS, last=STEPS - 1), encoding="utf-8")
    good = _commit(repo, "the embedded workload")
    shas = []
    for i in range(commits):
        path = repo / (TRAIN if i == slow_at else ARGS)
        text = path.read_text(encoding="utf-8")
        if i == slow_at:
            assert STEP_LINE in text, "Trainer.step changed: update STEP_LINE"
            text = text.replace(STEP_LINE, STEP_LINE + f"        time.sleep({sleep_s})  # a slower step\n", 1)
            message = f"train: every step sleeps {sleep_s} s"
        else:
            text += f"\n# refactor {i}: no change in what runs\n"
            message = f"args: refactor {i}"
        path.write_text(text, encoding="utf-8")
        shas.append(_commit(repo, message))
    return good, shas

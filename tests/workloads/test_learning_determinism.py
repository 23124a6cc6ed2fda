"""The workload learns its task (the CPU demo's profile, in a real run of the recipe) and runs are
reproducible: the same seeds give the same data and rewards, other seeds other ones."""

from __future__ import annotations

import ast
import re
import statistics
import subprocess

import pytest
import torch

from reportgen.specfile import load_spec
from reportgen.workloads.grpo.args import parse_args
from reportgen.workloads.grpo.losses import group_advantages, zero_advantage_groups
from reportgen.workloads.grpo.train import Trainer
from tests.workloads.profiled import REPO, env

FAST = ["--use-dynamic-batch-size", "--max-tokens-per-gpu", "512"]
ROLLOUT = re.compile(r" - rollout (\d+): (\{.*\})$", re.M)


def _run(argv: list[str], steps: int) -> tuple[list[dict], list[list[int]]]:
    t = Trainer(parse_args(argv + ["--num-rollout", str(steps)]))
    seen, order = [], []
    for i in range(steps):
        seen.append(t.step(i))
        order.append(t.last_prompt_indices)
    t.close()
    return seen, order


@pytest.mark.slow
def test_the_demo_profile_learns_from_its_warm_start(tmp_path):
    """The default experiment's CPU profile, its baseline recipe as `reportgen run` runs it: from the
    warm start (made in this run), the reward rises by more than 0.05 from the first quarter to the
    last (issue 42's bar for a CPU run) and is still rising from the first declared window to the
    last, most prompt groups have an advantage.

    How far it rises between the windows depends on the CPU, not only on the seeds: another
    vector unit adds in another order, and sampling turns the last bits into other answers. The
    demo's runs on the VMs of earlier sessions went 0.42-0.47 -> 0.53-0.56 (W1 -> W2); the recipe's
    seeds on a 2-core EPYC with AVX2 and no AVX-512 0.546 -> 0.588 (most of its rise inside the
    warm-up), six other seeds there +0.06 to +0.18 (docs/workload.md)."""
    spec = load_spec(REPO / "scripts" / "recipes" / "default.toml")
    proc = subprocess.run(
        ["bash", str(REPO / "scripts" / "recipes" / spec.recipe.script)],
        cwd=REPO,
        env=env(
            **spec.recipe.env,
            PYTHON="python3",
            REPORTGEN_CACHE=str(tmp_path / "cache"),
            TENSORBOARD_DIR=str(tmp_path / "tb"),
            OMP_NUM_THREADS="1",
        ),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "workload: grpo-max v2" in proc.stdout and " made in " in proc.stdout
    rollouts = {int(s): ast.literal_eval(d) for s, d in ROLLOUT.findall(proc.stdout)}
    reward = [rollouts[s]["rollout/raw_reward"] for s in sorted(rollouts)]
    assert len(reward) == spec.workload.steps
    first, last = spec.analysis.windows[0], spec.analysis.windows[-1]
    window = [statistics.fmean(reward[w.start : w.end + 1]) for w in (first, last)]
    q = len(reward) // 4
    assert statistics.fmean(reward[-q:]) - statistics.fmean(reward[:q]) >= 0.05, reward
    assert window[1] > window[0], reward  # not flat once the windows start: quality is compared there
    assert 0.15 < reward[0] < 0.6, reward  # the warm start's controlled, mid-range start (0.1 is the format credit)
    assert statistics.fmean(r["rollout/zero_advantage_groups"] for r in rollouts.values()) < 0.5


def test_equal_rewards_give_no_advantage():
    """A group's rewards all equal (all 0.1 in float32 is not 0.1 on average): advantage 0 exactly."""
    rewards = torch.tensor([0.1] * 8 + [1.0] * 8 + [0.1] * 7 + [0.0])
    adv = group_advantages(rewards, 8)
    assert torch.equal(adv[:16], torch.zeros(16)) and adv[16:].sum().abs() < 1e-6
    assert zero_advantage_groups(rewards, 8) == pytest.approx(2 / 3)


@pytest.mark.slow
def test_same_seeds_same_data_and_rewards(tiny_argv, tmp_path):
    argv = tiny_argv + FAST + ["--rollout-batch-size", "4", "--n-samples-per-prompt", "4",
                               "--warm-start-cache", str(tmp_path)]  # fmt: skip
    a, order_a = _run(argv, 3)
    b, order_b = _run(argv, 3)
    keys = ["rollout/raw_reward", "rollout/response_lengths", "rollout/log_probs"]
    assert [[s[k] for k in keys] for s in a] == [[s[k] for k in keys] for s in b]
    assert order_a == order_b
    c, order_c = _run(argv[:] + ["--rollout-seed", "7"], 3)
    assert order_c != order_a
    assert [s["rollout/log_probs"] for s in c] != [s["rollout/log_probs"] for s in a]

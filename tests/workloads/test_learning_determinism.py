"""The GRPO math is real (a tiny random-init model learns the task) and runs are reproducible."""

from __future__ import annotations

import statistics

import pytest

from reportgen.workloads.grpo.args import parse_args
from reportgen.workloads.grpo.train import Trainer

FAST = ["--use-dynamic-batch-size", "--max-tokens-per-gpu", "512"]


def _run(argv: list[str], steps: int) -> tuple[list[dict], list[list[int]]]:
    t = Trainer(parse_args(argv + ["--num-rollout", str(steps)]))
    seen, order = [], []
    for i in range(steps):
        seen.append(t.step(i))
        order.append(t.last_prompt_indices)
    t.close()
    return seen, order


@pytest.mark.slow
def test_mean_reward_rises_on_cpu(tiny_argv):
    steps, _ = _run(tiny_argv + FAST + ["--lr", "3e-3", "--seed", "1234", "--rollout-seed", "42"], 20)
    rewards = [s["rollout/raw_reward"] for s in steps]
    first, last = statistics.fmean(rewards[:5]), statistics.fmean(rewards[-5:])
    assert last > first + 0.05, rewards
    assert last > 2 * first, rewards


@pytest.mark.slow
def test_same_seeds_same_data_and_rewards(tiny_argv):
    argv = tiny_argv + FAST + ["--rollout-batch-size", "4", "--n-samples-per-prompt", "4"]
    a, order_a = _run(argv, 3)
    b, order_b = _run(argv, 3)
    keys = ["rollout/raw_reward", "rollout/response_lengths", "rollout/log_probs"]
    assert [[s[k] for k in keys] for s in a] == [[s[k] for k in keys] for s in b]
    assert order_a == order_b
    c, order_c = _run(argv[:] + ["--rollout-seed", "7"], 3)
    assert order_c != order_a
    assert [s["rollout/response_lengths"] for s in c] != [s["rollout/response_lengths"] for s in a]

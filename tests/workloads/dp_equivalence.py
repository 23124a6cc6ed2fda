"""Worker of test_data_parallel's equivalence check (run as `-m tests.workloads.dp_equivalence OUT FLAGS`).

Rank 0 holds a single-process Trainer too; it rolls out every step's full batch, all ranks train
a data-parallel Trainer on their shard of that same batch, and rank 0 writes both trajectories
and the largest parameter difference to OUT as JSON.
"""

from __future__ import annotations

import json
import logging
import sys

import torch

from reportgen.workloads.grpo.args import parse_args
from reportgen.workloads.grpo.console import get_logger
from reportgen.workloads.grpo.decode import RolloutBatch
from reportgen.workloads.grpo.distributed import DistEnv, env_of, gather, init_process_group
from reportgen.workloads.grpo.train import Trainer


def shard(items: list, step_samples: int, world: int, rank: int) -> list:
    chunk = step_samples // world
    return [x for s in range(0, len(items), step_samples) for x in items[s + rank * chunk : s + (rank + 1) * chunk]]


def recorder(trainer: Trainer) -> list:
    seen: list = []
    trainer.sink.emit = lambda kind, step, values, **_: seen.append((kind, step, dict(values)))
    return seen


def main() -> None:
    out, argv = sys.argv[1], sys.argv[2:]
    args = parse_args(argv)
    get_logger().setLevel(logging.WARNING)
    dist_env = env_of()
    init_process_group(dist_env, "cpu")
    dp = Trainer(args, dist_env=dist_env)
    dp_seen = recorder(dp)
    single = Trainer(args, dist_env=DistEnv()) if dist_env.rank == 0 else None
    single_seen = recorder(single) if single else []
    for rollout_id in range(args.num_rollout):
        full = single.rollout(rollout_id)[1:] if single else None
        batch, verdicts = gather(dist_env, full)[0]
        cut = lambda xs: shard(list(xs), args.global_batch_size, dist_env.world_size, dist_env.rank)  # noqa: E731
        mine = RolloutBatch(
            prompts=cut(batch.prompts),
            responses=cut(batch.responses),
            truncated=cut(batch.truncated),
            log_probs=cut(batch.log_probs),
            decode_steps=batch.decode_steps,
            decode_time_s=batch.decode_time_s,
        )
        dp_rollout, _ = dp.train(rollout_id, mine, cut(verdicts))
        if single:
            single_rollout, _ = single.train(rollout_id, batch, verdicts)
            dp_seen.append(("rollout", rollout_id, dp_rollout))
            single_seen.append(("rollout", rollout_id, single_rollout))
    if single:
        torch.set_grad_enabled(False)
        diff = max(
            float((a - b).abs().max()) for a, b in zip(dp.model.parameters(), single.model.parameters(), strict=False)
        )
        moved = max(
            float((a - b).abs().max())
            for a, b in zip(dp.model.parameters(), Trainer(args).model.parameters(), strict=False)
        )
        with open(out, "w") as fh:
            json.dump(
                {
                    "max_param_diff": diff,
                    "max_param_moved": moved,
                    "dp": [s for s in dp_seen if s[0] != "perf"],
                    "single": [s for s in single_seen if s[0] != "perf"],
                },
                fh,
            )
    torch.distributed.destroy_process_group()


if __name__ == "__main__":
    main()

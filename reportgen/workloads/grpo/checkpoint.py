"""Checkpoints of the embedded GRPO workload, in Megatron's layout and with Megatron's lines.

Sits at the workload's edge, beside the trainer. `--save DIR --save-interval N` saves after step
`rollout_id` when `(rollout_id + 1) % N == 0` and after the last step, as iteration `rollout_id`
(Relax: relax/backends/megatron/actor.py:855-861); `--load DIR` resumes after the iteration
`DIR/latest_checkpointed_iteration.txt` names (relax/backends/megatron/actor.py:200-204), or
starts from scratch when DIR holds no checkpoint (relax/utils/arguments.py:2543-2554). The lines
printed are Megatron's (`successfully saved checkpoint from iteration ...`, `successfully loaded
checkpoint from ... at iteration N`) and Relax's (`Actor initialized with starting step S`), so a
resumed or retried run of this workload shows the lifecycle ingest reads from Relax's logs
(tests/ingest/relax_sources.md: `ckpt-saved`, `ckpt-loaded`, `actor-start-step`).

What a checkpoint holds: the model, the optimizer (its fp32 master weights and Adam state), the
prompt stream's position and the optimizer-step counter, so steps after a resume are the steps
an uninterrupted run would have made (each step's sampling is seeded by its rollout id).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import torch

TRACKER = "latest_checkpointed_iteration.txt"  # Megatron's name for the file naming the last iteration
FILE = "model_optim_rng.pt"


def iteration_dir(root: Path, iteration: int) -> Path:
    """Megatron's `iter_{iteration:07d}` folder."""
    return root / f"iter_{iteration:07d}"


def latest(root: Path) -> int | None:
    """The iteration `root`'s tracker file names, or None when `root` holds no checkpoint."""
    try:
        return int((root / TRACKER).read_text().strip())
    except (OSError, ValueError):
        return None


def optimizer_state(optimizer: Any) -> dict[str, Any]:
    """The optimizer's state: torch's `state_dict`, plus the fp32 master weights of the built-in
    `MasterWeightOptimizer` when they are separate tensors from the model's parameters."""
    inner = getattr(optimizer, "inner", optimizer)
    state: dict[str, Any] = {"state_dict": inner.state_dict()}
    if getattr(optimizer, "alias", True) is False:
        state["masters"] = [m.detach().cpu() for m in optimizer.masters]
    return state


def load_optimizer_state(optimizer: Any, state: dict[str, Any]) -> None:
    inner = getattr(optimizer, "inner", optimizer)
    inner.load_state_dict(state["state_dict"])
    for m, saved in zip(getattr(optimizer, "masters", []), state.get("masters", []), strict=False):
        with torch.no_grad():
            m.copy_(saved)


def save(root: Path, iteration: int, payload: dict[str, Any], *, say: bool = True) -> Path:
    """Write iteration `iteration` under `root`, then the tracker (written last, by rename: a
    crash mid-save leaves the previous checkpoint the one to load), and print Megatron's line
    (`say`: on the rank that logs)."""
    folder = iteration_dir(root, iteration)
    folder.mkdir(parents=True, exist_ok=True)
    tmp = folder / (FILE + ".tmp")
    torch.save(payload, tmp)
    os.replace(tmp, folder / FILE)
    tracker_tmp = root / (TRACKER + ".tmp")
    tracker_tmp.write_text(str(iteration))
    os.replace(tracker_tmp, root / TRACKER)
    if say:
        print(f"  successfully saved checkpoint from iteration {iteration:7d} to {root} [ t 1/1, p 1/1 ]", flush=True)
    return folder / FILE


def load(root: Path, *, say: bool = True) -> tuple[int, dict[str, Any]] | None:
    """(iteration, payload) of `root`'s latest checkpoint, printing Megatron's line (`say`: on the
    rank that logs); None when `root` holds none (the run starts from scratch, as Relax's does)."""
    iteration = latest(root)
    if iteration is None:
        return None
    payload = torch.load(iteration_dir(root, iteration) / FILE, map_location="cpu", weights_only=True)
    if say:
        print(f"  successfully loaded checkpoint from {root} [ t 1/1, p 1/1 ] at iteration {iteration}", flush=True)
    return iteration, payload

"""Activation recompute (`--recompute-*`): a function's forward run again in the backward pass instead
of keeping what it saved for it.

What `torch.utils.checkpoint.checkpoint(fn, *args, use_reentrant=False)` does for these layers, with its
defaults (early stop, each recomputed tensor released as it is used), written with autograd's
saved-tensor hooks: torch's wraps itself in `torch._disable_dynamo` and reads `torch._dynamo.config`,
so its first call imports torch._dynamo, about 1.1 CPU-seconds (a third of a short CPU run's start, on
every run of a recipe that recomputes). Nothing here is compiled. The layers draw no random numbers and
run under no autocast, so there is no RNG state or autocast state to replay. Tests compare gradients,
the tensors kept and the peak memory against torch's (tests/workloads/test_recompute.py).

Used on the CPU only (`recompute`): on a GPU the workload calls torch's checkpoint, which the committed
GPU showcases ran. This one's first version kept every recompute's graph (a baseline step's peak 1.41
-> 2.14 GiB on the H100); since its fix the H100 gives the same peak allocated bytes and bf16 gradients
as torch's (the CUDA cases of the tests) and, on the one-H200 showcase's baseline and A1 recipes, the
same peak memory at every step to the byte (2026-12-06). The CPU runs (the demo, the suite's real
runs) are where the import's second is most of a run's start; a GPU run pays it once in minutes.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import Any

import torch
from torch.utils.checkpoint import checkpoint


def recompute(fn: Callable[..., torch.Tensor], *args: Any) -> torch.Tensor:
    """`fn(*args)` recomputed in the backward pass: the workload's own recompute (`recomputed`) where
    every tensor argument is on the CPU, torch's non-reentrant checkpoint where one is on another
    device (see the module's docstring for why)."""
    if all(a.device.type == "cpu" for a in args if isinstance(a, torch.Tensor)):
        return recomputed(fn, *args)
    return checkpoint(fn, *args, use_reentrant=False)


class _Holder:
    """What a saved tensor is packed as: empty until the recompute fills it, emptied when used."""

    __slots__ = ("__weakref__", "value")

    def __init__(self) -> None:
        self.value: torch.Tensor | None = None


class _Stop(Exception):
    """Raised by the recompute's hook after the last tensor the backward needs: the rest is not run."""


def recomputed(fn: Callable[..., torch.Tensor], *args: Any) -> torch.Tensor:
    """`fn(*args)`, keeping none of the tensors its backward needs: the first of them asked for runs
    `fn` again on the same inputs (under grad) and takes its saved tensors in the order they are saved."""
    holders: list[weakref.ref[_Holder]] = []
    done = False

    def pack(_: torch.Tensor) -> _Holder:
        holder = _Holder()
        holders.append(weakref.ref(holder))
        return holder

    def unpack(holder: _Holder) -> torch.Tensor:
        nonlocal done
        if not done:
            done = True
            _recompute(fn, args, holders)
        value, holder.value = holder.value, None
        if value is None:
            raise RuntimeError("recompute: a saved tensor was asked for twice or never recomputed")
        return value

    with torch.autograd.graph.saved_tensors_hooks(pack, unpack):
        return fn(*args)


def _recompute(fn: Callable[..., torch.Tensor], args: tuple[Any, ...], holders: list[weakref.ref[_Holder]]) -> None:
    """Run `fn` again and fill each holder still alive, stopping after the last one: the tensors come
    in the order the forward saved them (the same ops on the same inputs save the same tensors)."""
    count = 0

    def pack(x: torch.Tensor) -> torch.Tensor:
        nonlocal count
        if count >= len(holders):
            raise RuntimeError("recompute: the forward saved more tensors the second time")
        # Detached, also as what this throw-away graph saves: the tensor itself, packed by its own node,
        # would hold that node through its grad_fn, a cycle Python's collector cannot see (each
        # recompute's graph kept alive: on the H100, 1.41 -> 2.14 GiB peak on the baseline's step).
        x = x.detach() if x.requires_grad else x
        holder = holders[count]()
        count += 1
        if holder is not None:  # released already: its node's backward ran, or will not
            holder.value = x
        if count == len(holders):
            raise _Stop
        return x

    try:
        with torch.autograd.graph.saved_tensors_hooks(pack, lambda x: x), torch.enable_grad():
            fn(*args)
    except _Stop:
        pass
    if count != len(holders):
        raise RuntimeError(f"recompute: the forward saved {len(holders)} tensors, the recompute {count}")

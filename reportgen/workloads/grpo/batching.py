"""Micro-batching: pack samples into rows under a token budget, or by a fixed sample count.

`--use-dynamic-batch-size --max-tokens-per-gpu N` packs whole samples (prompt + response) into
micro-batches whose total length stays within N, first-fit in the given order, as Relax's
dynamic batch does; otherwise `--micro-batch-size` samples go in each micro-batch.
"""

from __future__ import annotations


def pack_by_tokens(lengths: list[int], budget: int) -> list[list[int]]:
    """Indices of samples grouped so each group's summed length is <= budget (order kept)."""
    groups: list[list[int]] = []
    current: list[int] = []
    used = 0
    for i, n in enumerate(lengths):
        if n > budget:
            raise ValueError(f"sample {i} has {n} tokens, more than the budget {budget}")
        if current and used + n > budget:
            groups.append(current)
            current, used = [], 0
        current.append(i)
        used += n
    if current:
        groups.append(current)
    return groups


def split_by_count(n: int, size: int) -> list[list[int]]:
    return [list(range(s, min(s + size, n))) for s in range(0, n, size)]


def micro_batches(
    lengths: list[int], *, dynamic: bool, max_tokens: int | None, micro_batch_size: int
) -> list[list[int]]:
    if dynamic:
        assert max_tokens is not None
        return pack_by_tokens(lengths, max_tokens)
    return split_by_count(len(lengths), micro_batch_size)

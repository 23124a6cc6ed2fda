"""Tiny workload sizes shared by the workload tests (fast on 2 CPU cores)."""

from __future__ import annotations

import pytest

TINY = [
    "--hidden-size",
    "64",
    "--num-layers",
    "2",
    "--ffn-hidden-size",
    "128",
    "--head-dim",
    "16",
    "--num-attention-heads",
    "4",
    "--num-key-value-heads",
    "2",
    "--rollout-max-response-len",
    "6",
    "--rollout-max-prompt-len",
    "8",
    "--device",
    "cpu",
]


@pytest.fixture
def tiny_argv():
    return list(TINY)

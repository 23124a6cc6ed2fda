"""The policy model: a Qwen3 decoder built from a config with seeded random init.

The modules are transformers' Qwen3 written again in qwen3.py (same parameter names and init,
without importing transformers); the forward pass over packed micro-batches is written here
(embedding -> decoder layers -> norm -> head) so that activation checkpointing can wrap exactly
the layers `--recompute-*` names, and so the pass does not depend on transformers' cache/mask API,
which changes between releases. A test checks it against transformers' own forward.
"""

from __future__ import annotations

import argparse
import copy
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, TypeVar

import torch
import torch.nn.functional as F

from reportgen.workloads.grpo.qwen3 import Qwen3Config, Qwen3ForCausalLM
from reportgen.workloads.grpo.recompute import recompute
from reportgen.workloads.grpo.task import BOS_ID, EOS_ID, NEVER_SAMPLED, PAD_ID

# One decoder layer (qwen3.DecoderLayer), as a slice of the model's nn.ModuleList hands it out: typed
# `Module` there, whose attributes torch types as `Tensor | Module`, so typed loosely here.
Layer = Any
M = TypeVar("M", bound=torch.nn.Module)

assert tuple(range(len(NEVER_SAMPLED))) == NEVER_SAMPLED, "masked ids must be the first ids"


def build_config(args: argparse.Namespace) -> Qwen3Config:
    return Qwen3Config(
        vocab_size=args.vocab_size,
        hidden_size=args.hidden_size,
        intermediate_size=args.ffn_hidden_size,
        num_hidden_layers=args.num_layers,
        num_attention_heads=args.num_attention_heads,
        num_key_value_heads=args.num_key_value_heads,
        head_dim=args.head_dim,
        max_position_embeddings=max(256, args.rollout_max_prompt_len + args.rollout_max_response_len),
        tie_word_embeddings=False,
        pad_token_id=PAD_ID,
        bos_token_id=BOS_ID,
        eos_token_id=EOS_ID,
    )


def build_policy(args: argparse.Namespace, device: torch.device, dtype: torch.dtype) -> Qwen3ForCausalLM:
    """Seeded random init (the caller seeds torch), then moved to device/dtype."""
    model = Qwen3ForCausalLM(build_config(args))
    return model.to(device=device, dtype=dtype)


def frozen_copy(model: M) -> M:
    ref = copy.deepcopy(model)
    ref.eval()
    for p in ref.parameters():
        p.requires_grad_(False)
    return ref


def count_parameters(model: torch.nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())


@dataclass(frozen=True)
class Segment:
    """Consecutive decoder layers [start, end), recomputed in backward as one unit when `checkpointed`."""

    start: int
    end: int
    checkpointed: bool


def plan_recompute(num_layers: int, granularity: str | None, method: str | None, n: int | None) -> list[Segment]:
    """Megatron's meaning: `uniform` checkpoints every chunk of N layers; `block` the first N layers."""
    if granularity is None:
        return [Segment(0, num_layers, False)]
    if granularity == "selective":
        # Selective recompute in Megatron recomputes only core attention; here each layer's
        # attention block is the part recomputed (see `_layer`).
        return [Segment(i, i + 1, False) for i in range(num_layers)]
    n = max(1, n or 1)
    if method == "uniform":
        return [Segment(s, min(s + n, num_layers), True) for s in range(0, num_layers, n)]
    segs = [Segment(i, i + 1, True) for i in range(min(n, num_layers))]
    if n < num_layers:
        segs.append(Segment(n, num_layers, False))
    return segs


def _rotate_half(x: torch.Tensor) -> torch.Tensor:
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    return x * cos + _rotate_half(x) * sin


def attention_qkv(
    layer: Layer, h: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Projected, normed and rotated q, k, v of one layer: shapes [B, heads, T, head_dim]."""
    attn = layer.self_attn
    b, t, _ = h.shape
    hd = attn.head_dim
    q = attn.q_norm(attn.q_proj(h).view(b, t, -1, hd)).transpose(1, 2)
    k = attn.k_norm(attn.k_proj(h).view(b, t, -1, hd)).transpose(1, 2)
    v = attn.v_proj(h).view(b, t, -1, hd).transpose(1, 2)
    cos, sin = cos.unsqueeze(1), sin.unsqueeze(1)
    return rope(q, cos, sin), rope(k, cos, sin), v


def _attn_block(
    layer: Layer, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, mask: torch.Tensor
) -> torch.Tensor:
    h = layer.input_layernorm(x)
    q, k, v = attention_qkv(layer, h, cos, sin)
    o = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, enable_gqa=True, scale=layer.self_attn.scaling)
    b, _, t, _ = o.shape
    return x + layer.self_attn.o_proj(o.transpose(1, 2).reshape(b, t, -1))


def _layer(
    layer: Layer, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, mask: torch.Tensor, selective: bool
) -> torch.Tensor:
    if selective and torch.is_grad_enabled():
        x = recompute(_attn_block, layer, x, cos, sin, mask)
    else:
        x = _attn_block(layer, x, cos, sin, mask)
    return x + layer.mlp(layer.post_attention_layernorm(x))


def _segment(
    layers: Iterable[Layer], x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, mask: torch.Tensor, selective: bool
) -> torch.Tensor:
    for layer in layers:
        x = _layer(layer, x, cos, sin, mask, selective)
    return x


def packed_mask(seq_ids: torch.Tensor) -> torch.Tensor:
    """Block-diagonal causal mask [1, 1, L, L] (True = may attend) for samples packed in one row."""
    same = seq_ids[:, None] == seq_ids[None, :]
    causal = torch.ones_like(same).tril_()
    return (same & causal)[None, None]


def forward_packed(
    model: Qwen3ForCausalLM,
    input_ids: torch.Tensor,
    position_ids: torch.Tensor,
    seq_ids: torch.Tensor,
    segments: list[Segment],
    selective: bool = False,
) -> torch.Tensor:
    """Logits [L, vocab] of one packed row of samples (input_ids, position_ids, seq_ids: [L])."""
    inner = model.model
    x = inner.embed_tokens(input_ids[None])
    cos, sin = inner.rotary_emb(x, position_ids[None])
    mask = packed_mask(seq_ids)
    layers = inner.layers
    for seg in segments:
        chunk = layers[seg.start : seg.end]
        if seg.checkpointed and torch.is_grad_enabled():
            x = recompute(_segment, chunk, x, cos, sin, mask, selective)
        else:
            x = _segment(chunk, x, cos, sin, mask, selective)
    return restrict_logits(model.lm_head(inner.norm(x))[0])


def forward_batch(model: Qwen3ForCausalLM, input_ids: torch.Tensor, valid: torch.Tensor) -> torch.Tensor:
    """Logits [B, T, vocab] of B right-padded sequences (input_ids, valid: [B, T]; `valid` marks
    real tokens), through the same layers as `forward_packed`: the warm start's batches of short
    sequences, where one packed row would pay attention over every pair of the batch's tokens."""
    inner = model.model
    b, t = input_ids.shape
    x = inner.embed_tokens(input_ids)
    positions = torch.arange(t, device=input_ids.device)[None].expand(b, t)
    cos, sin = inner.rotary_emb(x, positions)
    causal = torch.ones(t, t, dtype=torch.bool, device=input_ids.device).tril_()
    mask = (causal[None] & valid[:, None, :])[:, None]
    x = _segment(inner.layers, x, cos, sin, mask, False)
    return restrict_logits(model.lm_head(inner.norm(x)))


def restrict_logits(logits: torch.Tensor) -> torch.Tensor:
    """Padding and BOS are never a valid output: both the sampler and the trainer see them masked."""
    logits = logits.float()
    logits[..., : len(NEVER_SAMPLED)] = -1e9  # a slice, not an index list: safe inside a CUDA graph
    return logits

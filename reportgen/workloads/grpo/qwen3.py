"""The Qwen3 decoder's modules, written here with transformers' parameter names, shapes and init.

Why not `transformers.Qwen3ForCausalLM`: importing it pulls in transformers' whole modelling stack
(`modeling_utils`, `torch.distributed.tensor`, `torch._dynamo`, scipy through the object-detection
losses, a version check of every dependency), about 4.5 CPU-seconds of a run's 6.5 on a CPU core,
paid by every rank of every run whatever its steps. The forward passes were already written here
(model.py, decode.py); only the modules and their init came from transformers. This module holds
exactly those: the same submodules registered in the same order (so `state_dict` keys, and
checkpoints, are transformers' own), the same layer maths, and the same seeded init, drawn in the
same order, so a seed gives the same weights as transformers' model did and the workload's numbers
did not move (`grpo-max v2` unchanged). `tests/workloads/test_model_decode.py` checks weights,
keys and forward against transformers where it is installed.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn


@dataclass(frozen=True)
class Qwen3Config:
    """The sizes of a Qwen3 decoder, named as transformers' `Qwen3Config` names them; the defaults
    are its defaults for what the workload does not set."""

    vocab_size: int
    hidden_size: int
    intermediate_size: int
    num_hidden_layers: int
    num_attention_heads: int
    num_key_value_heads: int
    head_dim: int
    max_position_embeddings: int
    pad_token_id: int
    bos_token_id: int
    eos_token_id: int
    rms_norm_eps: float = 1e-6
    rope_theta: float = 10_000.0
    initializer_range: float = 0.02
    tie_word_embeddings: bool = False

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class RMSNorm(nn.Module):
    """Root-mean-square norm in float32 whatever the input's dtype (transformers' `Qwen3RMSNorm`)."""

    def __init__(self, size: int, eps: float) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(size))
        self.variance_epsilon = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        dtype = x.dtype
        h = x.to(torch.float32)
        h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.variance_epsilon)
        return self.weight * h.to(dtype)


class Attention(nn.Module):
    """Grouped-query attention's projections and per-head q/k norms (the maths is in model.py)."""

    def __init__(self, config: Qwen3Config) -> None:
        super().__init__()
        self.head_dim = config.head_dim
        self.scaling = config.head_dim**-0.5
        hd, heads, kv = config.head_dim, config.num_attention_heads, config.num_key_value_heads
        self.q_proj = nn.Linear(config.hidden_size, heads * hd, bias=False)
        self.k_proj = nn.Linear(config.hidden_size, kv * hd, bias=False)
        self.v_proj = nn.Linear(config.hidden_size, kv * hd, bias=False)
        self.o_proj = nn.Linear(heads * hd, config.hidden_size, bias=False)
        self.q_norm = RMSNorm(hd, config.rms_norm_eps)
        self.k_norm = RMSNorm(hd, config.rms_norm_eps)


class MLP(nn.Module):
    """SwiGLU feed-forward: down(silu(gate(x)) * up(x))."""

    def __init__(self, config: Qwen3Config) -> None:
        super().__init__()
        self.gate_proj = nn.Linear(config.hidden_size, config.intermediate_size, bias=False)
        self.up_proj = nn.Linear(config.hidden_size, config.intermediate_size, bias=False)
        self.down_proj = nn.Linear(config.intermediate_size, config.hidden_size, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class DecoderLayer(nn.Module):
    def __init__(self, config: Qwen3Config) -> None:
        super().__init__()
        self.self_attn = Attention(config)
        self.mlp = MLP(config)
        self.input_layernorm = RMSNorm(config.hidden_size, config.rms_norm_eps)
        self.post_attention_layernorm = RMSNorm(config.hidden_size, config.rms_norm_eps)


class RotaryEmbedding(nn.Module):
    """cos and sin of rotary positions [B, T, head_dim] in the input's dtype, computed in float32."""

    inv_freq: torch.Tensor

    def __init__(self, config: Qwen3Config) -> None:
        super().__init__()
        dim = config.head_dim
        inv_freq = 1.0 / (config.rope_theta ** (torch.arange(0, dim, 2, dtype=torch.float) / dim))
        self.register_buffer("inv_freq", inv_freq, persistent=False)

    def forward(self, x: torch.Tensor, position_ids: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        freqs = position_ids[..., None].float() * self.inv_freq.to(device=x.device, dtype=torch.float)
        emb = torch.cat((freqs, freqs), dim=-1)
        return emb.cos().to(dtype=x.dtype), emb.sin().to(dtype=x.dtype)


class Qwen3Model(nn.Module):
    def __init__(self, config: Qwen3Config) -> None:
        super().__init__()
        self.embed_tokens = nn.Embedding(config.vocab_size, config.hidden_size, config.pad_token_id)
        self.layers = nn.ModuleList(DecoderLayer(config) for _ in range(config.num_hidden_layers))
        self.norm = RMSNorm(config.hidden_size, config.rms_norm_eps)
        self.rotary_emb = RotaryEmbedding(config)
        init_weights(self, config.initializer_range)


class Qwen3ForCausalLM(nn.Module):
    """The decoder and its untied output head; `forward_packed` and `forward_batch` (model.py) and
    the static-KV decoder (decode.py) run it."""

    def __init__(self, config: Qwen3Config) -> None:
        super().__init__()
        self.config = config
        self.model = Qwen3Model(config)
        self.lm_head = nn.Linear(config.hidden_size, config.vocab_size, bias=False)
        init_weights(self.lm_head, config.initializer_range)


@torch.no_grad()
def init_weights(module: nn.Module, std: float) -> None:
    """transformers' init, drawn in its order: each linear and the embedding from N(0, std), the
    embedding's padding row zero, norms one, children before their parent in registration order.
    transformers initialises the inner model as soon as it is built and the output head after it
    is added; each module's own default init draws first. Drawn otherwise, a seed would give other
    weights than the ones the committed runs started from."""

    def init(m: nn.Module) -> None:
        if isinstance(m, nn.Linear):
            m.weight.normal_(0.0, std)
        elif isinstance(m, nn.Embedding):
            m.weight.normal_(0.0, std)
            if m.padding_idx is not None:
                m.weight[m.padding_idx].zero_()
        elif isinstance(m, RMSNorm):
            m.weight.fill_(1.0)

    module.apply(init)

"""Rollout: KV-cached sampling over a static cache, written by hand (no `generate`).

Prompts are left-padded into one [B, P] block and prefilled in one pass; then each decode step
feeds one token per sample, writes its key/value into a preallocated cache at a fixed slot and
attends over the whole cache under a validity mask. Every tensor keeps its shape across steps,
so on CUDA the step can be captured once in a CUDA graph and replayed (`--rollout-cuda-graph`),
which removes the per-token Python and kernel-launch overhead. Sampling stays outside the graph.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F

from reportgen.workloads.grpo.model import Layer, attention_qkv, restrict_logits
from reportgen.workloads.grpo.qwen3 import Qwen3ForCausalLM
from reportgen.workloads.grpo.task import EOS_ID, PAD_ID


@dataclass(frozen=True)
class RolloutBatch:
    """Sampled responses: token lists without padding (EOS included when the sample ended)."""

    prompts: list[list[int]]
    responses: list[list[int]]
    truncated: list[bool]
    log_probs: list[list[float]]  # the sampler's log-prob of each response token (at temperature)
    decode_steps: int
    decode_time_s: float


class StaticKVDecoder:
    """Owns a static KV cache for B samples of at most `max_len` tokens for one model."""

    def __init__(self, model: Qwen3ForCausalLM, batch: int, max_len: int, *, cuda_graph: bool = False) -> None:
        cfg = model.config
        p = next(model.parameters())
        self.model = model
        self.batch, self.max_len = batch, max_len
        self.device, self.dtype = p.device, p.dtype
        kv_heads = cfg.num_key_value_heads
        assert kv_heads is not None  # build_config always sets it
        shape = (cfg.num_hidden_layers, batch, kv_heads, max_len, cfg.head_dim)
        self.k = torch.zeros(shape, device=p.device, dtype=p.dtype)
        self.v = torch.zeros(shape, device=p.device, dtype=p.dtype)
        self.valid = torch.zeros(batch, max_len, device=p.device, dtype=torch.bool)
        # Static inputs of one decode step.
        self.tok = torch.zeros(batch, 1, device=p.device, dtype=torch.long)
        self.pos = torch.zeros(batch, 1, device=p.device, dtype=torch.long)
        self.slot = torch.zeros(1, device=p.device, dtype=torch.long)
        self.logits: torch.Tensor | None = None  # the graph's output buffer
        self.use_graph = cuda_graph and p.device.type == "cuda"
        self.graph: torch.cuda.CUDAGraph | None = None

    # -- one forward over new tokens, writing the cache at slots [start, start+T) ----------------
    def _forward(self, tokens: torch.Tensor, positions: torch.Tensor, slots: torch.Tensor) -> torch.Tensor:
        inner = self.model.model
        x = inner.embed_tokens(tokens)
        cos, sin = inner.rotary_emb(x, positions)
        t = tokens.shape[1]
        if t == 1:
            self.valid.index_fill_(1, slots, True)
            mask = self.valid[:, None, None, :]
        else:  # prefill: causal within the prompt block, padding excluded
            causal = torch.ones(t, self.max_len, device=self.device, dtype=torch.bool).tril_()
            # A padding query attends to itself only, so it stays finite (and is never a key later).
            own = torch.eye(t, self.max_len, device=self.device, dtype=torch.bool)
            mask = ((self.valid[:, None, :] & causal[None]) | own[None])[:, None]
        layers: list[Layer] = list(inner.layers)
        for i, layer in enumerate(layers):
            h = layer.input_layernorm(x)
            q, k, v = attention_qkv(layer, h, cos, sin)
            self.k[i].index_copy_(2, slots, k)
            self.v[i].index_copy_(2, slots, v)
            o = F.scaled_dot_product_attention(
                q, self.k[i], self.v[i], attn_mask=mask, enable_gqa=True, scale=layer.self_attn.scaling
            )
            x = x + layer.self_attn.o_proj(o.transpose(1, 2).reshape(x.shape[0], t, -1))
            x = x + layer.mlp(layer.post_attention_layernorm(x))
        return restrict_logits(self.model.lm_head(inner.norm(x[:, -1])))

    def _step(self) -> torch.Tensor:
        return self._forward(self.tok, self.pos, self.slot)

    def _capture(self) -> None:
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(2):  # warm up kernels and allocator outside the graph
                self._step()
        torch.cuda.current_stream().wait_stream(side)
        self.graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(self.graph):
            self.logits = self._step()

    @torch.no_grad()
    def generate(
        self,
        prompts: list[list[int]],
        *,
        max_new: int,
        temperature: float,
        generator: torch.Generator,
        check_every: int = 4,
        ignore_eos: bool = False,
    ) -> RolloutBatch:
        """Sample up to `max_new` tokens per prompt; with `ignore_eos`, exactly `max_new`.

        `ignore_eos` is SGLang's sampling parameter of that name, as serving benchmarks use it:
        an `<eos>` is kept as a token and sampling goes on, so every response has the same length
        whatever the policy has learnt, and arms compared do the same work by construction.
        """
        import time

        b = len(prompts)
        if b != self.batch:
            raise ValueError(f"decoder built for {self.batch} samples, got {b}")
        plen = max(len(p) for p in prompts)
        if plen + max_new > self.max_len:
            raise ValueError(f"prompt {plen} + response {max_new} exceeds the cache ({self.max_len})")
        t0 = time.perf_counter()
        dev = self.device
        tokens = torch.full((b, plen), PAD_ID, dtype=torch.long)
        pad = torch.zeros(b, dtype=torch.long)
        for i, p in enumerate(prompts):
            tokens[i, plen - len(p) :] = torch.tensor(p)
            pad[i] = plen - len(p)
        tokens, pad = tokens.to(dev), pad.to(dev)
        positions = (torch.arange(plen, device=dev)[None] - pad[:, None]).clamp_(min=0)
        # Left padding is never a key: only each prompt's own tokens are valid.
        self.valid.zero_()
        self.valid[:, :plen] = torch.arange(plen, device=dev)[None] >= pad[:, None]
        logits = self._forward(tokens, positions, torch.arange(plen, device=dev))
        out = torch.full((b, max_new), PAD_ID, dtype=torch.long, device=dev)
        out_lp = torch.zeros((b, max_new), dtype=torch.float32, device=dev)
        done = torch.zeros(b, dtype=torch.bool, device=dev)
        next_pos = positions[:, -1] + 1
        steps = 0
        for t in range(max_new):
            logp = torch.log_softmax(logits.float() / temperature, dim=-1)
            nxt = torch.multinomial(logp.exp(), 1, generator=generator).squeeze(1)
            out_lp[:, t] = logp.gather(1, nxt[:, None]).squeeze(1)
            nxt = torch.where(done, torch.full_like(nxt, PAD_ID), nxt)
            out[:, t] = nxt
            if not ignore_eos:
                done |= nxt == EOS_ID
            steps = t + 1
            if t == max_new - 1 or (not ignore_eos and (t + 1) % check_every == 0 and bool(done.all())):
                break
            self.tok[:, 0] = nxt
            self.pos[:, 0] = next_pos + t
            self.slot.fill_(plen + t)
            if self.use_graph:
                if self.graph is None:
                    self._capture()
                assert self.graph is not None and self.logits is not None
                self.graph.replay()
                logits = self.logits
            else:
                logits = self._step()
        rows = out[:, :steps].tolist()
        lps = out_lp[:, :steps].tolist()
        responses, truncated, log_probs = [], [], []
        for row, lp in zip(rows, lps, strict=False):
            ended = EOS_ID in row and not ignore_eos
            n = row.index(EOS_ID) + 1 if ended else len(row)
            responses.append(row[:n])
            log_probs.append(lp[:n])
            truncated.append(not ended)
        return RolloutBatch(
            prompts=[list(p) for p in prompts],
            responses=responses,
            truncated=truncated,
            log_probs=log_probs,
            decode_steps=steps,
            decode_time_s=time.perf_counter() - t0,
        )

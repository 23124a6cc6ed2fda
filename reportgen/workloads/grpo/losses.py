"""GRPO math: group-normalised advantages, PPO-clip policy loss, KL penalties, entropy.

Pure tensor functions; the trainer feeds them per-token log-probs of one micro-batch.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch


def group_advantages(rewards: torch.Tensor, group_size: int, eps: float = 1e-6) -> torch.Tensor:
    """(r - mean of its prompt's group) / (std of the group + eps); rewards are ordered by group.

    A group whose rewards are all equal has advantage 0 exactly: in float32 the mean of eight
    rewards of 0.1 is not 0.1, and dividing that rounding error by eps gave every sample of an
    all-wrong group an advantage of -0.0075 (a push away from well-formed answers, and a policy loss
    that was not the zero a group's advantages sum to)."""
    g = rewards.view(-1, group_size).double()
    mean = g.mean(dim=1, keepdim=True)
    std = g.std(dim=1, keepdim=True, unbiased=True) if group_size > 1 else torch.zeros_like(mean)
    same = (g.amax(dim=1, keepdim=True) == g.amin(dim=1, keepdim=True)).expand_as(g)
    adv = torch.where(same, torch.zeros_like(g), (g - mean) / (std + eps))
    return adv.to(rewards.dtype).view(-1)


def zero_advantage_groups(rewards: torch.Tensor, group_size: int) -> float:
    """The share of prompt groups whose rewards are all equal (every advantage 0: nothing to learn)."""
    g = rewards.view(-1, group_size)
    return float((g.amax(dim=1) == g.amin(dim=1)).float().mean())


def kl_penalty(log_probs: torch.Tensor, ref_log_probs: torch.Tensor, kind: str) -> torch.Tensor:
    """Per-token KL estimate of policy vs reference (k1, k2, or the low-variance k3 estimator)."""
    diff = log_probs - ref_log_probs
    if kind == "k1":
        return diff
    if kind == "k2":
        return 0.5 * diff.square()
    if kind == "low_var_kl":
        neg = -diff
        return (neg.exp() - neg - 1).clamp(min=-10, max=10)
    raise ValueError(f"unknown KL type {kind!r}")


@dataclass(frozen=True)
class LossParts:
    loss: torch.Tensor
    pg_loss: torch.Tensor
    pg_clipfrac: torch.Tensor
    ppo_kl: torch.Tensor
    entropy: torch.Tensor
    kl_loss: torch.Tensor


def per_sample_mean(x: torch.Tensor, sample_index: torch.Tensor, n: int, lengths: torch.Tensor) -> torch.Tensor:
    """Mean over each sample's response tokens, [n]; tokens are flat and tagged by sample index."""
    sums = torch.zeros(n, dtype=x.dtype, device=x.device).index_add_(0, sample_index, x)
    return sums / lengths


def grpo_loss(
    *,
    log_probs: torch.Tensor,
    old_log_probs: torch.Tensor,
    advantages: torch.Tensor,
    entropy: torch.Tensor | None,
    sample_index: torch.Tensor,
    n_samples: int,
    lengths: torch.Tensor,
    eps_clip: float,
    eps_clip_high: float,
    ref_log_probs: torch.Tensor | None = None,
    kl_type: str = "low_var_kl",
    kl_coef: float = 0.0,
    entropy_coef: float = 0.0,
) -> LossParts:
    """Token-level PPO-clip loss, averaged per sample then summed over the micro-batch's samples.

    The caller divides by the global batch size, so that every sample weighs the same whatever
    the micro-batch split (the token budget must not change the gradient).
    """
    ratio = (log_probs - old_log_probs).exp()
    pg1 = -advantages * ratio
    pg2 = -advantages * ratio.clamp(1 - eps_clip, 1 + eps_clip_high)
    pg = torch.maximum(pg1, pg2)
    clipped = (pg2 > pg1).float()
    ppo_kl = old_log_probs - log_probs

    def agg(x):
        return per_sample_mean(x, sample_index, n_samples, lengths).sum()

    pg_loss, clipfrac, kl_est, ent = agg(pg), agg(clipped), agg(ppo_kl), agg(entropy)
    loss = pg_loss - entropy_coef * ent
    kl_loss = torch.zeros((), device=log_probs.device)
    if ref_log_probs is not None:
        kl_loss = agg(kl_penalty(log_probs, ref_log_probs, kl_type))
        loss = loss + kl_coef * kl_loss
    return LossParts(loss, pg_loss, clipfrac, kl_est, ent, kl_loss)

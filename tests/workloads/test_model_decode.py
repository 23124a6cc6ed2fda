"""The hand-written forward and the static-KV decode loop agree with transformers' Qwen3."""

from __future__ import annotations

import torch

from reportgen.workloads.grpo.args import parse_args
from reportgen.workloads.grpo.decode import StaticKVDecoder
from reportgen.workloads.grpo.model import build_policy, forward_packed, plan_recompute, restrict_logits
from reportgen.workloads.grpo.task import EOS_ID, Prompt
from reportgen.workloads.grpo.train import pack, token_logprobs


def _model(tiny_argv):
    args = parse_args(tiny_argv)
    torch.manual_seed(0)
    return args, build_policy(args, torch.device("cpu"), torch.float32)


def test_packed_forward_matches_transformers(tiny_argv):
    args, model = _model(tiny_argv)
    a = torch.tensor([1, 5, 7, 9, 3, 12])
    b = torch.tensor([1, 5, 8, 3, 10])
    segs = plan_recompute(args.num_layers, None, None, None)
    packed = forward_packed(
        model, torch.cat([a, b]), torch.cat([torch.arange(6), torch.arange(5)]), torch.tensor([0] * 6 + [1] * 5), segs
    )
    with torch.no_grad():
        ref_a = restrict_logits(model(input_ids=a[None]).logits[0])
        ref_b = restrict_logits(model(input_ids=b[None]).logits[0])
    torch.testing.assert_close(packed[:6], ref_a, atol=1e-4, rtol=1e-4)
    torch.testing.assert_close(packed[6:], ref_b, atol=1e-4, rtol=1e-4)


def test_decode_log_probs_match_training_forward(tiny_argv):
    """Left padding, cache slots, positions and masks are right iff the sampler's log-probs
    equal a fresh full forward over prompt + response."""
    args, model = _model(tiny_argv)
    model.eval()
    prompts = [Prompt(0, (3, 9)).token_ids, Prompt(1, (1, 2, 3, 4, 5)).token_ids, Prompt(2, (7, 0, 4)).token_ids]
    dec = StaticKVDecoder(model, 3, 16)
    gen = torch.Generator().manual_seed(1)
    out = dec.generate(prompts, max_new=8, temperature=1.0, generator=gen)
    assert [len(r) for r in out.responses] == [len(lp) for lp in out.log_probs]
    segs = plan_recompute(args.num_layers, None, None, None)
    mb = pack([0, 1, 2], out.prompts, out.responses, torch.device("cpu"))
    with torch.no_grad():
        logp, _ = token_logprobs(model, mb, segs, False, False)
    flat = torch.tensor([x for lp in out.log_probs for x in lp])
    torch.testing.assert_close(logp, flat, atol=1e-4, rtol=1e-4)
    for r, trunc in zip(out.responses, out.truncated, strict=False):
        assert (r[-1] == EOS_ID) != trunc
        assert EOS_ID not in r[:-1]

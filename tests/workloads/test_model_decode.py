"""The workload's Qwen3 (qwen3.py), its hand-written forward and the static-KV decode loop agree
with transformers' Qwen3: the same weights from a seed, the same state_dict keys, the same logits."""

from __future__ import annotations

import pytest
import torch

from reportgen.workloads.grpo.args import parse_args
from reportgen.workloads.grpo.decode import StaticKVDecoder
from reportgen.workloads.grpo.model import build_config, build_policy, forward_packed, plan_recompute, restrict_logits
from reportgen.workloads.grpo.task import EOS_ID, Prompt
from reportgen.workloads.grpo.train import pack, token_logprobs


def _model(tiny_argv):
    args = parse_args(tiny_argv)
    torch.manual_seed(0)
    return args, build_policy(args, torch.device("cpu"), torch.float32)


def _transformers_model(args):
    """transformers' own Qwen3ForCausalLM of the same sizes, drawn from the same seed as `_model`."""
    transformers = pytest.importorskip("transformers")
    c = build_config(args)
    hf_config = transformers.Qwen3Config(
        vocab_size=c.vocab_size,
        hidden_size=c.hidden_size,
        intermediate_size=c.intermediate_size,
        num_hidden_layers=c.num_hidden_layers,
        num_attention_heads=c.num_attention_heads,
        num_key_value_heads=c.num_key_value_heads,
        head_dim=c.head_dim,
        max_position_embeddings=c.max_position_embeddings,
        rms_norm_eps=c.rms_norm_eps,
        tie_word_embeddings=c.tie_word_embeddings,
        pad_token_id=c.pad_token_id,
        bos_token_id=c.bos_token_id,
        eos_token_id=c.eos_token_id,
        attn_implementation="sdpa",
    )
    assert hf_config.initializer_range == c.initializer_range and hf_config.hidden_act == "silu"
    assert hf_config.rope_parameters["rope_theta"] == c.rope_theta
    torch.manual_seed(0)
    return transformers.Qwen3ForCausalLM(hf_config)


@pytest.mark.parametrize("preset", [None, "cpu-tiny"])
def test_a_seed_gives_transformers_weights(tiny_argv, preset):
    """Same keys, bit-equal weights and the same random state after: the workload's runs start where
    they started when the model was transformers' (workload v2)."""
    argv = tiny_argv if preset is None else ["--preset", preset, "--device", "cpu"]
    args, model = _model(argv)
    after_ours = torch.rand(4)
    hf = _transformers_model(args)
    after_hf = torch.rand(4)
    ours, theirs = model.state_dict(), hf.state_dict()
    assert list(ours) == list(theirs)
    assert all(torch.equal(ours[k], theirs[k]) for k in ours), [k for k in ours if not torch.equal(ours[k], theirs[k])]
    assert torch.equal(after_ours, after_hf)


def test_packed_forward_matches_transformers(tiny_argv):
    args, model = _model(tiny_argv)
    hf = _transformers_model(args)
    a = torch.tensor([1, 5, 7, 9, 3, 12])
    b = torch.tensor([1, 5, 8, 3, 10])
    segs = plan_recompute(args.num_layers, None, None, None)
    packed = forward_packed(
        model, torch.cat([a, b]), torch.cat([torch.arange(6), torch.arange(5)]), torch.tensor([0] * 6 + [1] * 5), segs
    )
    with torch.no_grad():
        ref_a = restrict_logits(hf(input_ids=a[None]).logits[0])
        ref_b = restrict_logits(hf(input_ids=b[None]).logits[0])
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

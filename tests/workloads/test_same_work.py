"""Same work in every arm: --rollout-ignore-eos makes every response exactly the maximum length."""

from __future__ import annotations

import torch

from reportgen.specfile import load_spec
from reportgen.workloads.grpo.args import parse_args
from reportgen.workloads.grpo.decode import StaticKVDecoder
from reportgen.workloads.grpo.model import build_policy, plan_recompute
from reportgen.workloads.grpo.task import EOS_ID, Prompt
from reportgen.workloads.grpo.train import Trainer, pack, token_logprobs
from tests.workloads.test_recipe_spec import REPO, SPEC


def _decode(tiny_argv, ignore_eos: bool):
    args = parse_args(tiny_argv)
    torch.manual_seed(0)
    model = build_policy(args, torch.device("cpu"), torch.float32).eval()
    prompts = [Prompt(i, (i % 10, (3 * i) % 10, 7)).token_ids for i in range(16)]
    dec = StaticKVDecoder(model, len(prompts), 40)
    gen = torch.Generator().manual_seed(3)
    return args, model, dec.generate(prompts, max_new=30, temperature=1.0, generator=gen, ignore_eos=ignore_eos)


def test_ignore_eos_samples_every_response_to_the_maximum(tiny_argv):
    _, _, free = _decode(tiny_argv, ignore_eos=False)
    assert min(len(r) for r in free.responses) < 30  # without the switch some samples do end early ...
    args, model, fixed = _decode(tiny_argv, ignore_eos=True)
    assert [len(r) for r in fixed.responses] == [30] * 16  # ... with it, none does
    assert fixed.decode_steps == 30 and all(fixed.truncated)
    assert any(EOS_ID in r for r in fixed.responses)  # an <eos> is kept as a token and sampling goes on
    # Up to its first <eos> each response is the one sampled without the switch (same draws).
    for a, b in zip(free.responses, fixed.responses, strict=True):
        assert b[: len(a)] == a
    # The log-probs stay those of the training forward, <eos> tokens inside the response included.
    mb = pack(list(range(16)), fixed.prompts, fixed.responses, torch.device("cpu"))
    with torch.no_grad():
        logp, _ = token_logprobs(model, mb, plan_recompute(args.num_layers, None, None, None), False, False)
    torch.testing.assert_close(logp, torch.tensor([x for lp in fixed.log_probs for x in lp]), atol=1e-4, rtol=1e-4)


def test_two_arms_with_different_learning_generate_the_same_tokens(tiny_argv):
    """The point of the switch: arms whose policies learn differently still do identical work."""
    base = tiny_argv + ["--num-rollout", "3", "--rollout-batch-size", "2", "--n-samples-per-prompt", "4"]
    base += ["--rollout-ignore-eos"]
    lengths = []
    for lr in ("1e-3", "3e-2"):
        t = Trainer(parse_args(base + ["--lr", lr]))
        steps = [t.step(i) for i in range(3)]
        lengths.append([(s["perf/response_tokens"], s["perf/actor_train_tokens"]) for s in steps])
        for s in steps:
            assert s["rollout/response_len/min"] == s["rollout/response_len/max"] == 6
            assert s["rollout/truncated_ratio"] == 1.0
        t.close()
    assert lengths[0] == lengths[1]


def test_gpu_profiles_hold_the_work_fixed_and_run_in_interleaved_pairs():
    recipe = (REPO / "scripts" / "recipes" / "grpo-recipe.sh").read_text()
    assert "--rollout-ignore-eos" in recipe
    for profile in ("gpu", "gpu2"):
        spec = load_spec(SPEC, profile=profile)
        assert spec.recipe.env["IGNORE_EOS"] == "1"
        assert "--rollout-ignore-eos" in spec.workload.flags  # no candidate may change it
        assert (spec.run.until, spec.run.order) == ("decided", "interleaved")
        assert spec.profiler is not None and spec.profiler.env["IGNORE_EOS"] == "1"
    cpu = load_spec(SPEC)
    assert "IGNORE_EOS" not in cpu.recipe.env  # the CPU demo keeps free-length responses

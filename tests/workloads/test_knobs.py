"""Each knob changes what it claims: recompute, precision-aware state, offload path, token budget."""

from __future__ import annotations

import pytest
import torch

from reportgen.workloads.grpo.args import WorkloadArgError, build_parser, finalize, parse_args
from reportgen.workloads.grpo.batching import pack_by_tokens
from reportgen.workloads.grpo.model import build_policy, count_parameters, forward_packed, plan_recompute
from reportgen.workloads.grpo.optim import AdamW, MasterWeightOptimizer, build_optimizer
from reportgen.workloads.grpo.train import Trainer


def _count_mlp_calls(tiny_argv, extra):
    args = parse_args(tiny_argv + extra)
    torch.manual_seed(0)
    model = build_policy(args, torch.device("cpu"), torch.float32)
    calls = [0] * args.num_layers
    for i, layer in enumerate(model.model.layers):
        # A pre-hook: checkpoint recompute stops early, before the MLP forward returns.
        layer.mlp.register_forward_pre_hook(lambda *_a, i=i: calls.__setitem__(i, calls[i] + 1))
    segs = plan_recompute(args.num_layers, args.recompute_granularity, args.recompute_method, args.recompute_num_layers)
    ids = torch.tensor([1, 5, 3, 4, 3])
    logits = forward_packed(model, ids, torch.arange(5), torch.zeros(5, dtype=torch.long), segs)
    logits.sum().backward()
    return calls


def test_full_recompute_runs_every_layer_forward_twice(tiny_argv):
    assert _count_mlp_calls(tiny_argv, []) == [1, 1]
    full = ["--recompute-granularity", "full", "--recompute-method", "uniform", "--recompute-num-layers", "1"]
    assert _count_mlp_calls(tiny_argv, full) == [2, 2]
    block = ["--recompute-granularity", "full", "--recompute-method", "block", "--recompute-num-layers", "1"]
    assert _count_mlp_calls(tiny_argv, block) == [2, 1]


def _one_step_optimizer(tiny_argv, extra, logs):
    args = parse_args(tiny_argv + extra)
    torch.manual_seed(0)
    model = build_policy(args, torch.device("cpu"), torch.float32)
    opt = build_optimizer(model, args, torch.device("cpu"), logs.append)
    for p in model.parameters():
        p.grad = torch.randn_like(p)
    opt.step()
    return opt


def test_precision_aware_optimizer_keeps_bf16_state(tiny_argv):
    logs: list[str] = []
    plain = _one_step_optimizer(tiny_argv, [], logs)
    assert {t.dtype for t in plain.state_tensors()} == {torch.float32}
    aware = _one_step_optimizer(tiny_argv, ["--use-precision-aware-optimizer"], logs)
    assert {t.dtype for t in aware.state_tensors()} == {torch.bfloat16}
    assert any("moments stored in bf16" in line for line in logs)


def test_offload_flags_on_cpu_say_nothing_moves(tiny_argv):
    logs: list[str] = []
    opt = _one_step_optimizer(tiny_argv, ["--optimizer-cpu-offload", "--overlap-cpu-optimizer-d2h-h2d"], logs)
    assert any("no accelerator, optimizer state already on the CPU; nothing to move" in line for line in logs)
    assert any("overlap-cpu-optimizer-d2h-h2d: no accelerator" in line for line in logs)
    assert all(t.device.type == "cpu" for t in opt.state_tensors())


def test_master_weight_optimizer_matches_torch_adamw_with_low_precision_params():
    """The offload path's copy logic (bf16 params, separate fp32 masters) with torch's AdamW as oracle."""
    torch.manual_seed(0)
    w = torch.nn.Parameter(torch.randn(32, 16).to(torch.bfloat16))
    oracle = torch.nn.Parameter(w.detach().float().clone())
    ours = MasterWeightOptimizer(
        [w],
        master_device=torch.device("cpu"),
        overlap=False,
        state_dtype=torch.float32,
        lr=1e-2,
        betas=(0.9, 0.98),
        eps=1e-8,
        weight_decay=0.1,
    )
    ref = torch.optim.AdamW([oracle], lr=1e-2, betas=(0.9, 0.98), eps=1e-8, weight_decay=0.1)
    assert not ours.alias and ours.masters[0] is not w and ours.masters[0].dtype == torch.float32
    for _ in range(3):
        g = torch.randn(32, 16)
        w.grad = g.to(torch.bfloat16)
        oracle.grad = g.to(torch.bfloat16).float()
        ours.step()
        ref.step()
    torch.testing.assert_close(ours.masters[0], oracle.detach(), atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(w.detach().float(), oracle.detach().to(torch.bfloat16).float())
    assert ours.inner.state[ours.masters[0]]["exp_avg"].device.type == "cpu"


def test_own_adamw_matches_torch_adamw():
    torch.manual_seed(1)
    a = torch.nn.Parameter(torch.randn(8, 8))
    b = torch.nn.Parameter(a.detach().clone())
    oa, ob = AdamW([a], lr=1e-2, weight_decay=0.01), torch.optim.AdamW([b], lr=1e-2, weight_decay=0.01)
    for _ in range(4):
        g = torch.randn(8, 8)
        a.grad, b.grad = g.clone(), g.clone()
        oa.step()
        ob.step()
    torch.testing.assert_close(a, b)


def test_token_budget_packing():
    lengths = [10, 7, 3, 12, 1, 9, 9]
    groups = pack_by_tokens(lengths, 16)
    assert sorted(i for g in groups for i in g) == list(range(len(lengths)))
    assert all(sum(lengths[i] for i in g) <= 16 for g in groups)
    assert len(pack_by_tokens(lengths, 13)) > len(pack_by_tokens(lengths, 40))
    with pytest.raises(ValueError):
        pack_by_tokens([20], 16)


def test_smaller_token_budget_means_more_micro_batches_same_loss(tiny_argv):
    base = tiny_argv + [
        "--num-rollout",
        "1",
        "--rollout-batch-size",
        "2",
        "--n-samples-per-prompt",
        "4",
        "--use-dynamic-batch-size",
    ]
    out = {}
    for budget in ("64", "16"):
        t = Trainer(parse_args(base + ["--max-tokens-per-gpu", budget]))
        out[budget] = t.step(0)
        t.close()
    assert out["16"]["perf/micro_batches"] > out["64"]["perf/micro_batches"]
    assert out["16"]["rollout/raw_reward"] == out["64"]["rollout/raw_reward"]


def test_global_batch_must_divide_rollout_samples(tiny_argv, capsys):
    args = build_parser().parse_args(
        tiny_argv + ["--rollout-batch-size", "2", "--n-samples-per-prompt", "4", "--global-batch-size", "6"]
    )
    with pytest.raises(WorkloadArgError, match="--global-batch-size 6 must divide"):
        finalize(args)
    with pytest.raises(SystemExit) as exc:
        parse_args(tiny_argv + ["--global-batch-size", "6"])
    assert exc.value.code == 2
    assert "--global-batch-size" in capsys.readouterr().err


def test_dynamic_batch_needs_a_budget_that_fits_a_sample(tiny_argv):
    with pytest.raises(SystemExit):
        parse_args(tiny_argv + ["--use-dynamic-batch-size"])
    with pytest.raises(SystemExit):
        parse_args(tiny_argv + ["--use-dynamic-batch-size", "--max-tokens-per-gpu", "8"])


def test_the_vocabulary_states_each_presets_parameter_count():
    # reports name the model by these (reportgen/analysis/workload.py): they must be the model's own
    from reportgen.vocab import WORKLOADS
    from reportgen.workloads.grpo.args import PRESETS
    from reportgen.workloads.grpo.model import build_config
    from reportgen.workloads.grpo.qwen3 import Qwen3ForCausalLM

    known = WORKLOADS["reportgen.workloads.grpo"]
    assert set(known.presets) == set(PRESETS)
    for preset, (shape, params) in known.presets.items():
        args = parse_args(["--preset", preset, "--device", "cpu"])
        with torch.device("meta"):  # shapes only: no memory for 200M parameters
            model = Qwen3ForCausalLM(build_config(args))
        assert count_parameters(model) == params, preset
        assert f"{args.num_layers} layers, hidden {args.hidden_size}" in shape

"""The workload's activation recompute (recompute.py) against torch's non-reentrant checkpoint: the
same gradients bit for bit under every `--recompute-*` plan, the same peak device memory (where a GPU
is), a run's process without torch._dynamo, and the rule that picks one: the workload's own on the
CPU, torch's on a GPU (what the committed GPU showcases ran). The peak-memory cases need CUDA: on the
H100 (2026-12-06) all 13 tests passed."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import weakref

import pytest
import torch
from torch.utils.checkpoint import checkpoint

from reportgen.workloads.grpo import model as model_mod
from reportgen.workloads.grpo import recompute as recompute_mod
from reportgen.workloads.grpo.args import parse_args
from reportgen.workloads.grpo.model import build_policy, forward_packed, plan_recompute
from reportgen.workloads.grpo.recompute import recompute, recomputed

PLANS = [
    ("full", "uniform", 1),
    ("full", "uniform", 2),
    ("full", "block", 1),  # one layer recomputed, three not
    ("full", "block", 4),
    ("selective", None, None),
]


def _torch_checkpoint(fn, *args):
    return checkpoint(fn, *args, use_reentrant=False)


def _packed_batch(device: torch.device) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(3)
    lengths = [7, 5, 9, 4]
    ids = torch.randint(3, 16, (sum(lengths),), generator=g)
    positions = torch.cat([torch.arange(n) for n in lengths])
    seq_ids = torch.cat([torch.full((n,), i) for i, n in enumerate(lengths)])
    return ids.to(device), positions.to(device), seq_ids.to(device)


def _grads(
    plan: tuple,
    device: torch.device,
    dtype: torch.dtype,
    argv: list[str],
    monkeypatch: pytest.MonkeyPatch,
    torch_s: bool,
) -> tuple[dict[str, torch.Tensor], torch.Tensor]:
    """Gradients of two micro-batches' summed loss (gradients accumulate, as a step's do)."""
    granularity, method, n = plan
    with monkeypatch.context() as m:
        # Either implementation on any device, not the one `recompute` would pick there.
        m.setattr(model_mod, "recompute", _torch_checkpoint if torch_s else recomputed)
        args = parse_args(argv)
        torch.manual_seed(0)
        model = build_policy(args, device, dtype)
        segs = plan_recompute(args.num_layers, granularity, method, n)
        weights = torch.randn(25, 16, generator=torch.Generator().manual_seed(5)).to(device)
        for shift in (0, 1):
            ids, pos, seq = _packed_batch(device)
            logits = forward_packed(model, (ids + shift) % 16, pos, seq, segs, selective=granularity == "selective")
            loss = (logits.log_softmax(-1) * weights).sum()
            loss.backward()
    return {k: p.grad.clone() for k, p in model.named_parameters() if p.grad is not None}, loss.detach()


@pytest.mark.parametrize("plan", PLANS, ids=lambda p: "-".join(str(x) for x in p if x is not None))
def test_gradients_are_torchs_bit_for_bit(plan, monkeypatch):
    argv = ["--preset", "cpu-tiny", "--device", "cpu"]
    ours, loss = _grads(plan, torch.device("cpu"), torch.float32, argv, monkeypatch, torch_s=False)
    theirs, ref_loss = _grads(plan, torch.device("cpu"), torch.float32, argv, monkeypatch, torch_s=True)
    assert torch.equal(loss, ref_loss)
    assert list(ours) == list(theirs) and len(ours) > 10
    assert all(torch.equal(ours[k], theirs[k]) for k in ours), [k for k in ours if not torch.equal(ours[k], theirs[k])]


def test_the_recompute_stops_after_the_last_tensor_the_backward_needs():
    """The ops after the last saved tensor are not run again (torch's early stop), and each tensor is
    given to the backward once and then let go."""
    calls: list[str] = []

    def fn(w: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        calls.append("forward")
        y = (x * w).sin()  # saves x, w, then x * w
        calls.append("after the last save")
        return y + 1  # an add saves nothing

    w = torch.randn(5, requires_grad=True)
    x = torch.randn(5)
    recomputed(fn, w, x).sum().backward()
    assert calls == ["forward", "after the last save", "forward"]
    expected = (x * (x * w).cos()).detach()
    assert torch.equal(w.grad, expected)


def test_nothing_the_recompute_made_outlives_the_backward():
    """While the output lives on (a training loop keeps its loss until the next step), every tensor the
    recompute made is let go after the backward, as torch's are: a recompute graph kept alive cost the
    H100 0.7 GiB of peak memory on a step of the baseline (the test fails when the recompute's own
    graph saves the tensors undetached)."""
    made: list[weakref.ref[torch.Tensor]] = []

    def fn(w: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        h = (x @ w).tanh()
        made.append(weakref.ref(h))
        return (h @ w).sigmoid()

    for impl in (recomputed, _torch_checkpoint):
        made.clear()
        w = torch.randn(16, 16, requires_grad=True)
        y = impl(fn, w, torch.randn(4, 16))
        y.sum().backward()
        assert len(made) == 2, "the forward and its recompute"
        assert [r() is None for r in made] == [True, True], impl
        del y


def test_a_forward_that_saves_other_tensors_the_second_time_is_an_error():
    state = {"first": True}

    def fn(w: torch.Tensor) -> torch.Tensor:
        if state.pop("first", False):
            return w.exp()  # saves its output
        return w * 1.0  # saves nothing: the backward's tensor would never come

    w = torch.randn(3, requires_grad=True)
    y = recomputed(fn, w)
    with pytest.raises(RuntimeError, match="recompute: the forward saved 1 tensors, the recompute 0"):
        y.sum().backward()


@pytest.mark.skipif(
    not torch.cuda.is_available(), reason="peak device memory needs a CUDA device; none on this machine"
)
@pytest.mark.parametrize("plan", PLANS[:2] + PLANS[4:], ids=lambda p: "-".join(str(x) for x in p if x is not None))
def test_peak_device_memory_is_torchs(plan, monkeypatch):
    """What a run's memory figures measure: the same peak allocated bytes as torch's checkpoint, and the
    same gradients in bf16 on the device (the GPU showcases' model, smaller: four layers)."""
    argv = ["--preset", "gpu-small", "--num-layers", "4", "--device", "cuda", "--bf16"]
    device = torch.device("cuda")

    def peak(torch_s: bool) -> tuple[int, dict[str, torch.Tensor]]:
        """The peak above what was allocated before: the earlier calls' gradients are still held (the
        first version of this test counted them, and torch's side, measured last, held one set more)."""
        torch.cuda.synchronize()
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()
        before = torch.cuda.memory_allocated()
        grads, _ = _grads(plan, device, torch.bfloat16, argv, monkeypatch, torch_s=torch_s)
        torch.cuda.synchronize()
        return torch.cuda.max_memory_allocated() - before, grads

    _ = peak(True)  # kernels and workspaces allocated once, outside the comparison
    ours, ours_grads = peak(False)
    theirs, their_grads = peak(True)
    assert ours == theirs
    assert all(torch.equal(ours_grads[k], their_grads[k]) for k in ours_grads)


def test_the_cpu_runs_the_workloads_recompute_and_another_device_torchs(monkeypatch):
    """The rule: every tensor argument on the CPU -> `recomputed`; one elsewhere (here a meta tensor,
    which needs no GPU) -> torch's checkpoint, whose GPU memory the committed showcases measured."""
    calls: list[str] = []
    monkeypatch.setattr(recompute_mod, "recomputed", lambda fn, *a: calls.append("ours") or fn(*a))
    monkeypatch.setattr(recompute_mod, "checkpoint", lambda fn, *a, **kw: calls.append("torch") or fn(*a))
    layer = object()  # a non-tensor argument (the layer) does not count
    recompute(lambda _l, x: x * 2, layer, torch.ones(2))
    recompute(lambda _l, x, y: y, layer, torch.ones(2), torch.empty(2, device="meta"))
    assert calls == ["ours", "torch"]


def test_a_training_step_does_not_import_torch_dynamo():
    """The recompute and the optimizer's methods without torch._dynamo (about 1.1 CPU-seconds of every
    run's start): a fresh process builds the model, steps it with recompute and saves its optimizer."""
    code = textwrap.dedent(
        """
        import sys, torch
        from reportgen.workloads.grpo.args import parse_args
        from reportgen.workloads.grpo.model import build_policy, forward_packed, plan_recompute
        from reportgen.workloads.grpo.optim import AdamW
        args = parse_args(["--preset", "cpu-tiny", "--device", "cpu"])
        model = build_policy(args, torch.device("cpu"), torch.float32)
        opt = AdamW(model.parameters(), lr=1e-3, state_dtype=torch.bfloat16)
        for granularity, method in (("full", "uniform"), ("selective", None)):
            segs = plan_recompute(args.num_layers, granularity, method, 1)
            ids = torch.tensor([1, 5, 7, 9, 3, 12])
            out = forward_packed(model, ids, torch.arange(6), torch.zeros(6, dtype=torch.long), segs, granularity == "selective")
            out.sum().backward()
            opt.step()
            opt.zero_grad()
        opt.load_state_dict(opt.state_dict())
        assert "torch._dynamo" not in sys.modules, "torch._dynamo imported"
        print("ok")
        """
    )
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0 and res.stdout.strip() == "ok", res.stderr[-2000:]

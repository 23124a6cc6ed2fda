"""Optimizers behind `--optimizer-cpu-offload`, `--overlap-cpu-optimizer-d2h-h2d` and
`--use-precision-aware-optimizer`.

* `AdamW`: AdamW with fp32 arithmetic and its two moments stored in `state_dtype`; bf16 storage
  is what the precision-aware flag buys (half the optimizer-state memory).
* `MasterWeightOptimizer`: fp32 master weights plus AdamW state on a chosen device. With the model
  in bf16 on the GPU and the master device the CPU, each step copies gradients down, steps on the
  CPU and copies parameters up (the offload trio's cost). With overlap on, copies go through
  pinned buffers, non-blocking on a side stream, so the CPU update of one tensor overlaps the
  transfers of the others.
* On CUDA with offload, megatron-core's `HybridDeviceOptimizer` is used when it imports (the real
  implementation Relax runs); otherwise the hand-written `MasterWeightOptimizer`. The log says which.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Iterable
from typing import Any, Protocol

import torch


class Stepper(Protocol):
    """What the trainer needs of an optimizer: one update from the gradients in place."""

    def step(self) -> object: ...


def _undecorated(method: Callable[..., Any]) -> Callable[..., Any]:
    """torch's function without its `torch._disable_dynamo` wrapper (functools.wraps keeps it as
    `__wrapped__`); itself where torch wraps it no more."""
    return getattr(method, "__wrapped__", method)


class AdamW(torch.optim.Optimizer):
    """Decoupled-weight-decay Adam; moments kept in `state_dtype`, arithmetic in fp32."""

    # torch.optim.Optimizer's methods below are wrapped in `torch._disable_dynamo`, whose first call
    # imports torch._dynamo (about 1.1 CPU-seconds, a third of a short CPU run's start; the
    # constructor calls add_param_group). Nothing in the workload is compiled: the methods themselves.
    add_param_group = _undecorated(torch.optim.Optimizer.add_param_group)
    state_dict = _undecorated(torch.optim.Optimizer.state_dict)
    load_state_dict = _undecorated(torch.optim.Optimizer.load_state_dict)
    zero_grad = _undecorated(torch.optim.Optimizer.zero_grad)

    def __init__(
        self,
        params: Iterable[torch.Tensor],
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0.0,
        state_dtype: torch.dtype = torch.float32,
    ) -> None:
        super().__init__(params, {"lr": lr, "betas": tuple(betas), "eps": eps, "weight_decay": weight_decay})
        self.state_dtype = state_dtype
        self._group_of = {p: g for g in self.param_groups for p in g["params"]}

    @torch.no_grad()
    def step(self, closure: Callable[[], float] | None = None) -> None:  # type: ignore[override]
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is not None:
                    self.step_param(p, group)
        return None

    @torch.no_grad()
    def step_param(self, p: torch.Tensor, group: dict | None = None) -> None:
        group = group or self._group_of[p]
        state = self.state[p]
        if not state:
            state["step"] = 0
            state["exp_avg"] = torch.zeros_like(p, dtype=self.state_dtype)
            state["exp_avg_sq"] = torch.zeros_like(p, dtype=self.state_dtype)
        state["step"] += 1
        b1, b2 = group["betas"]
        assert p.grad is not None  # step() steps only parameters with a gradient
        g = p.grad.float()
        m = state["exp_avg"].float()  # the same tensor when stored in fp32, a copy otherwise
        v = state["exp_avg_sq"].float()
        m.mul_(b1).add_(g, alpha=1 - b1)
        v.mul_(b2).addcmul_(g, g, value=1 - b2)
        if self.state_dtype != torch.float32:
            state["exp_avg"].copy_(m)
            state["exp_avg_sq"].copy_(v)
        step = state["step"]
        denom = (v / (1 - b2**step)).sqrt_().add_(group["eps"])
        if group["weight_decay"]:
            p.mul_(1 - group["lr"] * group["weight_decay"])
        p.addcdiv_(m, denom, value=-group["lr"] / (1 - b1**step))


class BF16StateAdamW(AdamW):
    """AdamW with bf16 moments, as a class (megatron-core takes optimizer classes)."""

    def __init__(self, params: Iterable[torch.Tensor], **kw: Any) -> None:
        kw.setdefault("state_dtype", torch.bfloat16)
        super().__init__(params, **kw)


class MasterWeightOptimizer:
    """fp32 master weights + AdamW on `master_device`, stepping the model's parameters."""

    def __init__(
        self,
        params: Iterable[torch.Tensor],
        *,
        master_device: torch.device,
        overlap: bool,
        state_dtype: torch.dtype,
        lr: float,
        betas: tuple[float, float],
        eps: float,
        weight_decay: float,
    ) -> None:
        self.params = [p for p in params if p.requires_grad]
        self.master_device = torch.device(master_device)
        self.alias = all(p.device == self.master_device and p.dtype == torch.float32 for p in self.params)
        to_host = self.master_device.type == "cpu" and any(p.device.type == "cuda" for p in self.params)
        self.overlap = overlap and to_host
        pin = to_host
        if self.alias:
            self.masters = self.params
        else:
            self.masters = []
            for p in self.params:
                m = torch.empty(p.shape, dtype=torch.float32, device=self.master_device, pin_memory=pin)
                m.copy_(p.detach())
                m.grad = torch.zeros_like(m)
                self.masters.append(m)
        self.inner = AdamW(
            self.masters, lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, state_dtype=state_dtype
        )
        if self.overlap:
            self.stream = torch.cuda.Stream()
            self.grad_stage = [torch.empty(p.shape, dtype=p.dtype, pin_memory=True) for p in self.params]
            self.param_stage = [torch.empty(p.shape, dtype=p.dtype, pin_memory=True) for p in self.params]

    @property
    def param_groups(self):
        return self.inner.param_groups

    def state_tensors(self) -> list[torch.Tensor]:
        return [t for s in self.inner.state.values() for t in (s["exp_avg"], s["exp_avg_sq"])]

    @torch.no_grad()
    def step(self) -> None:
        # Named as torch.optim names its optimizers' steps, so a trace shows the host-side Adam.
        with torch.profiler.record_function("Optimizer.step#MasterWeightOptimizer.step"):
            self._step()

    def _step(self) -> None:
        if self.alias:
            self.inner.step()
            return
        if self.overlap:
            self._step_overlapped()
            return
        for p, m in zip(self.params, self.masters, strict=False):
            _grad(m).copy_(_grad(p))  # device -> host (and bf16 -> fp32)
        self.inner.step()
        for p, m in zip(self.params, self.masters, strict=False):
            p.copy_(m)  # host -> device (and fp32 -> bf16)

    def _step_overlapped(self) -> None:
        main = torch.cuda.current_stream()
        self.stream.wait_stream(main)  # gradients are complete on the main stream
        events = []
        with torch.cuda.stream(self.stream):
            for p, stage in zip(self.params, self.grad_stage, strict=False):
                stage.copy_(_grad(p), non_blocking=True)
                ev = torch.cuda.Event()
                ev.record(self.stream)
                events.append(ev)
        for i, (p, m) in enumerate(zip(self.params, self.masters, strict=False)):
            events[i].synchronize()  # only this tensor's download; later ones keep streaming
            _grad(m).copy_(self.grad_stage[i])
            self.inner.step_param(m)
            self.param_stage[i].copy_(m)
            with torch.cuda.stream(self.stream):
                p.copy_(self.param_stage[i], non_blocking=True)
        main.wait_stream(self.stream)


def _grad(t: torch.Tensor) -> torch.Tensor:
    """A parameter's gradient; every parameter stepped here has one (the backward pass ran)."""
    assert t.grad is not None
    return t.grad


def _megatron_offload(
    params: list[torch.nn.Parameter], args: argparse.Namespace, state_cls: type[torch.optim.Optimizer]
) -> tuple[Stepper | None, str]:
    """megatron-core's HybridDeviceOptimizer, or (None, reason) when it cannot be used."""
    try:
        from megatron.core.optimizer.cpu_offloading import (  # type: ignore[import-not-found]
            HybridDeviceOptimizer,
        )
    except Exception as exc:  # not installed, or its import fails on this torch
        return None, f"megatron-core not importable ({type(exc).__name__}: {exc})"
    try:
        opt = HybridDeviceOptimizer(
            params,
            offload_fraction=args.optimizer_offload_fraction,
            cpu_optimizer_cls=state_cls,
            gpu_optimizer_cls=state_cls,
            param_update_in_fp32=True,
            overlap_cpu_optimizer_d2h_h2d=args.overlap_cpu_optimizer_d2h_h2d,
            lr=args.lr,
            betas=(args.adam_beta1, args.adam_beta2),
            eps=args.adam_eps,
            weight_decay=args.weight_decay,
        )
    except Exception as exc:
        return None, f"megatron-core HybridDeviceOptimizer failed to build ({type(exc).__name__}: {exc})"
    return opt, "megatron-core HybridDeviceOptimizer"


def build_optimizer(
    model: torch.nn.Module, args: argparse.Namespace, device: torch.device, log: Callable[[str], None]
) -> Stepper:
    """The optimizer the flags ask for on this device; every choice is logged in one line."""
    params = [p for p in model.parameters() if p.requires_grad]
    state_dtype = torch.bfloat16 if args.use_precision_aware_optimizer else torch.float32
    hyper = {
        "lr": args.lr,
        "betas": (args.adam_beta1, args.adam_beta2),
        "eps": args.adam_eps,
        "weight_decay": args.weight_decay,
    }
    if args.use_precision_aware_optimizer:
        log("use-precision-aware-optimizer: Adam moments stored in bf16 (fp32 arithmetic and master weights)")
    if device.type != "cuda":
        if args.optimizer_cpu_offload:
            log("optimizer-cpu-offload: no accelerator, optimizer state already on the CPU; nothing to move")
        if args.overlap_cpu_optimizer_d2h_h2d:
            log("overlap-cpu-optimizer-d2h-h2d: no accelerator, no device-host copies to overlap")
        opt = MasterWeightOptimizer(
            params, master_device=torch.device("cpu"), overlap=False, state_dtype=state_dtype, **hyper
        )
        log(f"optimizer: AdamW on the CPU, state {str(state_dtype).removeprefix('torch.')}")
        return opt
    if args.optimizer_cpu_offload:
        state_cls = BF16StateAdamW if args.use_precision_aware_optimizer else torch.optim.AdamW
        offload, why = _megatron_offload(params, args, state_cls)
        if offload is not None:
            log(
                f"optimizer-cpu-offload: using {why} (offload fraction {args.optimizer_offload_fraction}, "
                f"overlap {'on' if args.overlap_cpu_optimizer_d2h_h2d else 'off'})"
            )
            return offload
        log(
            f"optimizer-cpu-offload: {why}; using the built-in MasterWeightOptimizer "
            f"(fp32 master weights and Adam state on the CPU, overlap "
            f"{'on' if args.overlap_cpu_optimizer_d2h_h2d else 'off'})"
        )
        return MasterWeightOptimizer(
            params,
            master_device=torch.device("cpu"),
            overlap=args.overlap_cpu_optimizer_d2h_h2d,
            state_dtype=state_dtype,
            **hyper,
        )
    if args.overlap_cpu_optimizer_d2h_h2d:
        log("overlap-cpu-optimizer-d2h-h2d: ignored without --optimizer-cpu-offload (nothing is copied)")
    log(f"optimizer: AdamW on {device}, fp32 master weights, state {str(state_dtype).removeprefix('torch.')}")
    return MasterWeightOptimizer(params, master_device=device, overlap=False, state_dtype=state_dtype, **hyper)

"""Synthetic torch.profiler (Kineto) Chrome traces for the trace tests.

Layout and fields follow what Kineto writes (pytorch/kineto libkineto/src/output_json.cpp,
`ChromeTraceLogger`; activity args in libkineto/src/CuptiActivity.cpp):
* the file is `{"schemaVersion": 1, "deviceProperties": [...], ..., "traceEvents": [` then one
  event per block, each starting on its own line `  {` (two-space indent), then `]` and a
  `"traceName"`; the events of a real CPU trace from `export_chrome_trace` look the same
  (tests/traces/test_real_trace.py records one with torch itself);
* complete events: `ph` "X", `cat`, `name`, `pid`, `tid`, `ts`, `dur` in microseconds;
* `cpu_op` / `user_annotation` (`ProfilerStep#N` from the profiler's schedule, and
  `Optimizer.step#<Class>.step` from torch.optim's step hook) on the host thread;
* `cuda_runtime` (`cudaLaunchKernel`, `cudaMemcpyAsync`) with args `cbid`, `correlation`;
* `kernel` on pid = device, tid = stream with args `queued`, `device`, `context`, `stream`,
  `correlation`, `registers per thread`, `grid`, `block`, ...;
* `gpu_memcpy` named `Memcpy HtoD (Pinned -> Device)` etc. with args `device`, `context`,
  `stream`, `correlation`, `bytes`, `memory bandwidth (GB/s)`;
* `ac2g` flow events (`ph` "s"/"f") join a runtime call to its GPU work; the reader ignores
  them, they are here so the decoder meets them.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

PID, TID = 4242, 4242


class GpuTraceBuilder:
    """Builds one rank's trace: host ops, steps, launches and their GPU work."""

    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = [
            {"ph": "M", "name": "process_name", "pid": PID, "tid": 0, "args": {"name": "python"}},
            {"ph": "M", "name": "process_name", "pid": 0, "tid": 0, "args": {"name": "python"}},
            {"ph": "M", "name": "process_labels", "pid": 0, "tid": 0, "args": {"labels": "GPU 0"}},
        ]
        self.corr = 100

    def span(self, cat: str, name: str, ts: float, dur: float, tid: int = TID, **args: Any) -> None:
        ev = {"ph": "X", "cat": cat, "name": name, "pid": PID, "tid": tid, "ts": ts, "dur": dur}
        ev["args"] = {"External id": len(self.events), **args}
        self.events.append(ev)

    def step(self, n: int, ts: float, dur: float) -> None:
        self.span("user_annotation", f"ProfilerStep#{n}", ts, dur)
        self.events.append(
            {"ph": "X", "cat": "gpu_user_annotation", "name": f"ProfilerStep#{n}", "pid": 0, "tid": 7,
             "ts": ts, "dur": dur, "args": {"External id": 1}}
        )  # fmt: skip

    def launch(self, ts: float, gpu_ts: float, gpu_dur: float, name: str, *, memcpy: int | None = None,
               stream: int = 7) -> None:  # fmt: skip
        """A runtime call at `ts` (2 us) whose GPU work runs [gpu_ts, gpu_ts + gpu_dur)."""
        self.corr += 1
        rt = "cudaMemcpyAsync" if memcpy is not None else "cudaLaunchKernel"
        self.span("cuda_runtime", rt, ts, 2.0, cbid=211 if rt == "cudaLaunchKernel" else 41, correlation=self.corr)
        args: dict[str, Any] = {"device": 0, "context": 1, "stream": stream, "correlation": self.corr}
        if memcpy is None:
            cat = "kernel"
            args.update({"queued": 0, "registers per thread": 32, "shared memory": 0, "blocks per SM": 1.5,
                         "warps per SM": 6.0, "grid": [64, 1, 1], "block": [128, 1, 1],
                         "est. achieved occupancy %": 12})  # fmt: skip
        else:
            cat = "gpu_memcpy"
            args.update({"bytes": memcpy, "memory bandwidth (GB/s)": memcpy / gpu_dur / 1000 if gpu_dur else "N/A"})
        self.events.append(
            {"ph": "X", "cat": cat, "name": name, "pid": 0, "tid": stream, "ts": gpu_ts, "dur": gpu_dur, "args": args}
        )
        self.events.append(
            {"ph": "s", "id": self.corr, "pid": PID, "tid": TID, "ts": ts, "cat": "ac2g", "name": "ac2g"}
        )
        self.events.append(
            {
                "ph": "f",
                "id": self.corr,
                "pid": 0,
                "tid": stream,
                "ts": gpu_ts,
                "cat": "ac2g",
                "name": "ac2g",
                "bp": "e",
            }
        )

    def write(self, path: Path, *, compact: bool = False, array: bool = False) -> Path:
        path.parent.mkdir(parents=True, exist_ok=True)
        text = kineto_text(self.events, compact=compact, array=array)
        if path.name.endswith(".gz"):
            with gzip.open(path, "wt", encoding="utf-8") as fh:
                fh.write(text)
        else:
            path.write_text(text, encoding="utf-8")
        return path


def kineto_text(events: list[dict[str, Any]], *, compact: bool = False, array: bool = False) -> str:
    """Events in Kineto's layout (or minified, or as a bare JSON array)."""
    if compact:
        return json.dumps(events if array else {"schemaVersion": 1, "traceEvents": events}, separators=(",", ":"))
    blocks = []
    for ev in events:
        body = ",\n".join(f'    "{k}": {json.dumps(v)}' for k, v in ev.items() if k != "args")
        if "args" in ev:
            inner = ", ".join(f'"{k}": {json.dumps(v)}' for k, v in ev["args"].items())
            body += ',\n    "args": {\n      ' + inner + "\n    }"
        blocks.append("  {\n" + body + "\n  }")
    joined = ",\n".join(blocks)
    if array:
        return "[\n" + joined + "\n]\n"
    head = '{\n  "schemaVersion": 1,\n  "deviceProperties": [\n    {"id": 0, "name": "NVIDIA H200"}\n  ],\n'
    return head + '  "displayTimeUnit": "ms",\n  "traceEvents": [\n' + joined + '\n  ],\n  "traceName": "t.json"\n}\n'


def offload_step(b: GpuTraceBuilder, n: int, t0: float, *, offload: bool) -> None:
    """One step of 10 ms: forward/backward kernels, then (offload) a D2H copy of the gradients,
    a host-side Adam span with no GPU work, and an H2D copy of the parameters."""
    b.step(n, t0, 10_000.0)
    b.span("cpu_op", "aten::mm", t0 + 10, 100)
    b.launch(t0 + 20, t0 + 50, 2_000.0, "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64")
    b.span("cpu_op", "aten::_flash_attention_forward", t0 + 200, 50)
    b.launch(t0 + 210, t0 + 2_100, 1_000.0, "flash_fwd_kernel")
    b.span("cpu_op", "aten::mul", t0 + 300, 20)
    b.launch(t0 + 305, t0 + 3_200, 500.0, "void at::native::vectorized_elementwise_kernel<4, mul>")
    b.launch(t0 + 310, t0 + 3_800, 200.0, "ncclDevKernel_AllReduce_Sum_bf16_RING_LL")
    if offload:
        b.span("cpu_op", "aten::copy_", t0 + 4_000, 1_000)
        b.launch(t0 + 4_010, t0 + 4_100, 800.0, "Memcpy DtoH (Device -> Pinned)", memcpy=64 << 20)
        b.span("user_annotation", "Optimizer.step#MasterWeightOptimizer.step", t0 + 5_000, 3_000)
        b.span("cpu_op", "aten::addcdiv_", t0 + 5_100, 2_500)
        b.span("cpu_op", "aten::copy_", t0 + 8_000, 900)
        b.launch(t0 + 8_010, t0 + 8_050, 800.0, "Memcpy HtoD (Pinned -> Device)", memcpy=32 << 20)
    else:
        b.span("user_annotation", "Optimizer.step#AdamW.step", t0 + 4_000, 300)
        b.span("cpu_op", "aten::_foreach_addcdiv_", t0 + 4_010, 200)
        b.launch(t0 + 4_020, t0 + 4_050, 400.0, "void multi_tensor_apply_kernel<AdamFunctor>")
        # launched inside the step, runs after its CPU span ended: still this step's work
        b.launch(t0 + 9_990, t0 + 9_995, 10.0, "void at::native::vectorized_elementwise_kernel<4, fill>")


def offload_trace(path: Path, *, offload: bool, steps: tuple[int, ...] = (3, 4), **kw: Any) -> Path:
    b = GpuTraceBuilder()
    for i, n in enumerate(steps):
        offload_step(b, n, 1_000_000.0 + i * 10_000.0, offload=offload)
    return b.write(path, **kw)

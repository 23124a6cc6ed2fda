"""Benchmark the trace summary on a generated torch.profiler trace (>= 200 MB uncompressed).

    PYTHONPATH=. python scripts/bench_traces.py [--mb 220] [--keep DIR] [--trace FILE] [--hta]

The generated trace is one rank of a GPU training run in Kineto's layout (the file
`export_chrome_trace` / `tensorboard_trace_handler` write): per step a `ProfilerStep#N` span,
CPU operators with record_shapes arguments, `cudaLaunchKernel` / `cudaMemcpyAsync` runtime calls,
kernels and copies on two streams with their Kineto arguments, `ac2g` flow events and
`[memory]` instant events (profile_memory), in the proportions of a real trace. `--trace FILE`
measures an existing trace instead (e.g. one from a profiler run).

Each measurement runs in a fresh child process; peak memory is the child's peak resident set
(ru_maxrss), reported whole and above the same child's footprint after its imports. `--hta`
also times HolisticTraceAnalysis (`hta` on PYTHONPATH) on the same file.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

KERNELS = (
    ("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off", 180),
    ("void flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4, false, false, cutlass::bfloat16_t>>", 120),
    ("void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<c10::BFloat16>>", 15),
    ("void at::native::(anonymous namespace)::rms_norm_kernel<c10::BFloat16, float>", 12),
    ("void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::func_wrapper_t>>", 10),
    ("ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)", 60),
    ("void multi_tensor_apply_kernel<TensorListMetadata<4>, AdamFunctor<float, float>>", 40),
)
OPS = ("aten::mm", "aten::_flash_attention_forward", "aten::add", "aten::rms_norm", "aten::sum", "c10d::allreduce_")


def _event(fields: dict, args: str) -> str:
    """One event in Kineto's layout: `  {` on its own line, fields at 4 spaces, args inline."""
    body = ",\n".join(f'    "{k}": {json.dumps(v)}' for k, v in fields.items())
    return "  {\n" + body + (',\n    "args": {\n      ' + args + "\n    }" if args else "") + "\n  }"


def generate(path: Path, target_mb: float, seed: int = 0) -> tuple[int, int]:
    """Write a gzipped trace of at least `target_mb` MB of JSON text; return (bytes, events)."""
    rng = random.Random(seed)
    pid, tid = 3812, 3812
    head = (
        '{\n  "schemaVersion": 1,\n  "deviceProperties": [\n    {"id": 0, "name": "NVIDIA H200", '
        '"totalGlobalMem": 150754820096, "computeMajor": 9, "computeMinor": 0}\n  ],\n'
        '  "distributedInfo": {"backend": "nccl", "rank": 0, "world_size": 1},\n'
        '  "record_shapes": 1,\n  "traceEvents": [\n'
    )
    written, events, corr, ext, step = 0, 0, 1000, 1, 0
    t = 1_000_000.0
    with gzip.open(path, "wt", encoding="utf-8", compresslevel=1) as fh:
        fh.write(head)
        written += len(head)
        first = True
        while written < target_mb * 1e6:
            step_start, blocks = t, []
            t += 50
            gpu_t = t + 200
            for i in range(4000):
                op = i % len(OPS)
                name, kdur = KERNELS[op] if op < 5 else KERNELS[5 if i % 3 else 6]
                dur = 20 + rng.random() * 30
                ext += 1
                corr += 1
                shapes = f"[[{rng.randrange(1, 64)}, 4096], [4096, 4096]]"
                blocks.append(
                    _event(
                        {"ph": "X", "cat": "cpu_op", "name": OPS[op], "pid": pid, "tid": tid, "ts": round(t, 3),
                         "dur": round(dur, 3)},
                        f'"External id": {ext},"Record function id": 0, "Concrete Inputs": ["", ""], '
                        f'"Input type": ["c10::BFloat16", "c10::BFloat16"], "Input Strides": [[4096, 1], [4096, 1]], '
                        f'"Input Dims": {shapes}, "Ev Idx": {ext}',
                    )
                )  # fmt: skip
                blocks.append(
                    _event(
                        {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": pid, "tid": tid,
                         "ts": round(t + 5, 3), "dur": 4.0},
                        f'"External id": {ext}, "cbid": 211, "correlation": {corr}',
                    )
                )  # fmt: skip
                k = kdur * (0.5 + rng.random())
                gpu_t = max(gpu_t, t + 10)
                blocks.append(
                    _event(
                        {"ph": "X", "cat": "kernel", "name": name, "pid": 0, "tid": 7, "ts": round(gpu_t, 3),
                         "dur": round(k, 3)},
                        f'"External id": {ext}, "queued": 0, "device": 0, "context": 1, "stream": 7, '
                        f'"correlation": {corr}, "registers per thread": 168, "shared memory": 65536, '
                        f'"blocks per SM": 1.0, "warps per SM": 8.0, "grid": [132, 1, 1], "block": [384, 1, 1], '
                        f'"est. achieved occupancy %": 12',
                    )
                )  # fmt: skip
                blocks.append(
                    f'  {{\n    "ph": "s", "id": {corr}, "pid": {pid}, "tid": {tid}, "ts": {round(t + 5, 3)}, '
                    f'"cat": "ac2g", "name": "ac2g"\n  }}'
                )
                blocks.append(
                    f'  {{\n    "ph": "f", "id": {corr}, "pid": 0, "tid": 7, "ts": {round(gpu_t, 3)}, '
                    f'"cat": "ac2g", "name": "ac2g", "bp": "e"\n  }}'
                )
                for _ in range(2):
                    blocks.append(
                        _event(
                            {"ph": "i", "cat": "cpu_instant_event", "s": "t", "name": "[memory]", "pid": pid,
                             "tid": tid, "ts": round(t + 1, 3)},
                            f'"Total Reserved": 8589934592, "Total Allocated": {rng.randrange(1 << 30, 1 << 32)}, '
                            f'"Bytes": {rng.choice((-1, 1)) * rng.randrange(1 << 10, 1 << 24)}, "Device Id": 0, '
                            f'"Device Type": 1, "Addr": {rng.randrange(1 << 40)}, "Ev Idx": {ext}',
                        )
                    )  # fmt: skip
                if i % 500 == 499:  # the offloaded optimizer's copies
                    corr += 1
                    direction = (
                        "Memcpy DtoH (Device -> Pinned)" if i % 1000 == 499 else "Memcpy HtoD (Pinned -> Device)"
                    )
                    blocks.append(
                        _event(
                            {"ph": "X", "cat": "cuda_runtime", "name": "cudaMemcpyAsync", "pid": pid, "tid": tid,
                             "ts": round(t + 8, 3), "dur": 6.0},
                            f'"External id": {ext}, "cbid": 41, "correlation": {corr}',
                        )
                    )  # fmt: skip
                    blocks.append(
                        _event(
                            {"ph": "X", "cat": "gpu_memcpy", "name": direction, "pid": 0, "tid": 13,
                             "ts": round(gpu_t, 3), "dur": 300.0},
                            f'"device": 0, "context": 1, "stream": 13, "correlation": {corr}, "bytes": 16777216, '
                            f'"memory bandwidth (GB/s)": 55.9',
                        )
                    )  # fmt: skip
                gpu_t += k + rng.random() * 5
                t += dur + rng.random() * 10
            t = max(t, gpu_t) + 100
            blocks.insert(
                0,
                _event(
                    {"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{step}", "pid": pid, "tid": tid,
                     "ts": round(step_start, 3), "dur": round(t - step_start, 3)},
                    f'"External id": {ext}, "Record function id": 0, "Ev Idx": {ext}',
                ),
            )  # fmt: skip
            text = ("" if first else ",\n") + ",\n".join(blocks)
            first = False
            fh.write(text)
            written += len(text)
            events += len(blocks)
            step += 1
        tail = '\n  ],\n  "traceName": "bench.pt.trace.json"\n}\n'
        fh.write(tail)
        written += len(tail)
    return written, events


CHILD = """
import resource, sys, time
from reportgen.traces.breakdown import summarize_trace
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
t, c = time.perf_counter(), time.process_time()
rows = summarize_trace(sys.argv[1], source="train", file="bench", rank=0)
dt, cpu = time.perf_counter() - t, time.process_time() - c
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(dt, base, peak, len(rows), cpu)
"""

HTA_CHILD = """
import resource, sys, time, shutil, tempfile, os, logging
logging.disable(logging.WARNING)
from hta.trace_analysis import TraceAnalysis
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
t, c = time.perf_counter(), time.process_time()
a = TraceAnalysis(trace_dir=sys.argv[1])
parsed = time.perf_counter() - t
tb = a.get_temporal_breakdown(visualize=False)
kb = a.get_gpu_kernel_breakdown(visualize=False)
dt, cpu = time.perf_counter() - t, time.process_time() - c
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(dt, base, peak, parsed, cpu)
print(tb.to_string())
print(kb[0].to_string())
"""


def measure(code: str, arg: str) -> tuple[list[str], float]:
    env = dict(os.environ)
    t = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", code, arg], capture_output=True, text=True, env=env, check=False)
    wall = time.perf_counter() - t
    if out.returncode != 0:
        raise SystemExit(f"child failed:\n{out.stderr[-3000:]}")
    return out.stdout.splitlines(), wall


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mb", type=float, default=220.0, help="uncompressed size of the generated trace (MB)")
    ap.add_argument("--trace", type=Path, help="measure this trace instead of generating one")
    ap.add_argument("--keep", type=Path, help="write the generated trace here and keep it")
    ap.add_argument("--hta", action="store_true", help="also time HolisticTraceAnalysis (hta importable)")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="bench-traces-"))
    try:
        if args.trace is not None:
            path = args.trace
            with gzip.open(path, "rb") as fh:
                size = sum(len(b) for b in iter(lambda: fh.read(1 << 24), b""))
            print(f"trace {path}: {size / 1e6:.1f} MB uncompressed, {path.stat().st_size / 1e6:.1f} MB gzipped")
        else:
            folder = args.keep or tmp
            folder.mkdir(parents=True, exist_ok=True)
            path = folder / "train_overall_rank0_dp0_tp0_pp0.1.pt.trace.json.gz"
            t = time.perf_counter()
            size, n = generate(path, args.mb)
            print(
                f"generated {path.name}: {size / 1e6:.1f} MB uncompressed ({n} events), "
                f"{path.stat().st_size / 1e6:.1f} MB gzipped, in {time.perf_counter() - t:.1f} s"
            )
        lines, _ = measure(CHILD, str(path))
        dt, base, peak, rows, cpu = lines[-1].split()
        dt_f, base_mib, peak_mib, cpu_f = float(dt), int(base) / 1024, int(peak) / 1024, float(cpu)
        print(
            f"reportgen.traces: {dt_f:.2f} s wall, {size / 1e6 / dt_f:.1f} MB/s; {cpu_f:.2f} s CPU, "
            f"{size / 1e6 / cpu_f:.1f} MB/s per core-second (uncompressed JSON); peak RSS "
            f"{peak_mib:.0f} MiB ({peak_mib * 2**20 / size:.2f}x the uncompressed size; "
            f"{(peak_mib - base_mib):.0f} MiB above the {base_mib:.0f} MiB after imports); {rows} summary rows"
        )
        if args.hta:
            hta_dir = tmp / "hta"
            hta_dir.mkdir()
            try:  # HTA reads a folder: the trace alone in one, linked where the file system allows
                os.link(path, hta_dir / path.name)
            except OSError:
                shutil.copyfile(path, hta_dir / path.name)
            lines, _ = measure(HTA_CHILD, str(hta_dir))
            dt, base, peak, parsed, cpu = lines[0].split()
            dt_f, base_mib, peak_mib, cpu_f = float(dt), int(base) / 1024, int(peak) / 1024, float(cpu)
            print(
                f"HolisticTraceAnalysis: {dt_f:.2f} s wall ({float(parsed):.2f} s parsing), {size / 1e6 / dt_f:.1f} MB/s; "
                f"{cpu_f:.2f} s CPU, {size / 1e6 / cpu_f:.1f} MB/s per core-second; "
                f"peak RSS {peak_mib:.0f} MiB ({peak_mib * 2**20 / size:.2f}x); "
                f"{(peak_mib - base_mib):.0f} MiB above the {base_mib:.0f} MiB after imports"
            )
            print("\n".join(lines[1:]))
    finally:
        shutil.rmtree(tmp)  # a trace kept with --keep lies in that folder, not here


if __name__ == "__main__":
    main()

"""Benchmark: CPU cost of the GPU sampler thread (target: under 0.5% of one core at 1 Hz).

Runs GpuSampler for --seconds at --interval with a reader that returns NVML-shaped rows for
--gpus simulated GPUs (exercises the thread, JSON, write, flush and fsync path on any machine;
each row lists one GPU process, the run's), first alone, then with the host load sampler
(reportgen.capture.host: this machine's /proc, this process as the run), and once with the real
NVML reader and the host sampler when NVML is present. Reports the sampler thread's own CPU time
(time.thread_time inside the thread) and, as a cross-check, the whole process's CPU time
(getrusage) while the main thread sleeps, both as % of one core; and what one full read of the
process table costs here (the host sampler does one every 10 s, or while load beside the run is high).

    PYTHONPATH=. python scripts/bench_sampler.py --seconds 60
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import sys
import tempfile
import time
from pathlib import Path

from reportgen.capture.gpu import GpuSampler, compact
from reportgen.capture.host import HostLoad
from reportgen.capture.nvml import nvml_available


def simulated_reader(n: int):
    calls = [0]

    def read():
        calls[0] += 1
        return [
            {
                "index": i,
                "uuid": f"GPU-{i:08x}-1111-2222-3333-444444444444",
                "name": "NVIDIA H200",
                "util_gpu": (calls[0] + i) % 101,
                "util_mem": 12,
                "mem_used_mib": 70000.0 + i,
                "mem_total_mib": 143771.0,
                "power_w": 412.5,
                "sm_clock_mhz": 1980,
                "temp_c": 45,
                "throttle": 0,
                "procs": [(os.getpid(), 70000.0)],
            }
            for i in range(n)
        ]

    return read


def _process_cpu() -> float:
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime


def measure(label: str, reader, seconds: float, interval: float, folder: Path, *, host: bool = False) -> dict:
    jsonl = folder / f"{label}.jsonl"
    cpu0, wall0 = _process_cpu(), time.monotonic()
    sampler = GpuSampler(
        jsonl, interval_s=interval, reader=reader, host_jsonl=folder / f"{label}.host.jsonl" if host else None
    )
    sampler.start()
    time.sleep(seconds)
    status = sampler.stop()
    cpu1, wall1 = _process_cpu(), time.monotonic()
    wall = wall1 - wall0
    rows = compact(jsonl, folder / f"{label}.parquet")
    return {
        "label": label,
        "available": status.available,
        "host_rows": status.host_samples,
        "gpus": len(status.gpus),
        "interval_s": interval,
        "wall_s": round(wall, 2),
        "ticks": status.ticks,
        "rows": rows,
        "errors": status.errors,
        "thread_cpu_s": round(status.cpu_s, 4),
        "thread_pct_one_core": round(100 * status.cpu_s / status.wall_s, 4) if status.wall_s else None,
        "per_tick_ms": round(1000 * status.cpu_s / status.ticks, 3) if status.ticks else None,
        "process_cpu_s": round(cpu1 - cpu0, 4),
        "process_pct_one_core": round(100 * (cpu1 - cpu0) / wall, 4),
        "jsonl_bytes": jsonl.stat().st_size,
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=60.0)
    ap.add_argument("--interval", type=float, default=1.0)
    ap.add_argument("--gpus", type=int, default=8, help="simulated GPUs for the simulated reader")
    ap.add_argument("--skip-sim", action="store_true")
    ap.add_argument("--skip-nvml", action="store_true")
    args = ap.parse_args()

    print(f"python {platform.python_version()} on {platform.node()} ({platform.machine()})", flush=True)
    results = []
    with tempfile.TemporaryDirectory(prefix="bench-sampler-") as tmp:
        folder = Path(tmp)
        idle0, t0 = _process_cpu(), time.monotonic()
        time.sleep(min(5.0, args.seconds))
        idle_pct = 100 * (_process_cpu() - idle0) / (time.monotonic() - t0)
        print(f"idle process (main thread asleep): {idle_pct:.4f}% of one core", flush=True)
        load = HostLoad(root_pid=os.getpid())
        t0 = time.thread_time()
        table = load._scan()
        scan_ms = 1000 * (time.thread_time() - t0)
        print(f"full process-table read: {len(table)} processes, {scan_ms:.2f} ms of CPU", flush=True)
        if not args.skip_sim:
            for host in (False, True):
                label = f"simulated-{args.gpus}gpu" + ("+host" if host else "")
                results.append(
                    measure(label, simulated_reader(args.gpus), args.seconds, args.interval, folder, host=host)
                )
                print(json.dumps(results[-1]), flush=True)
        ok, reason = nvml_available()
        if args.skip_nvml:
            pass
        elif ok:
            results.append(measure("nvml+host", None, args.seconds, args.interval, folder, host=True))
            print(json.dumps(results[-1]), flush=True)
        else:
            print(f"nvml: not measured ({reason})", flush=True)
    for r in results:
        print(
            f"{r['label']:>16}: {r['thread_pct_one_core']:.4f}% of one core (thread), "
            f"{r['process_pct_one_core']:.4f}% (process), {r['per_tick_ms']} ms/tick, "
            f"{r['gpus']} GPUs, {r['ticks']} ticks"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""GPU sampler: the no-NVML path for real, the sampling thread through its reader seam,
a SIGKILLed sampler process, and compaction to Parquet."""

from __future__ import annotations

import itertools
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pandas as pd
import pytest

from reportgen.capture.gpu import COLUMNS, GpuSampler, compact, nvml_available, read_samples, visible_filter

REPO = Path(__file__).resolve().parents[2]
HAS_NVML = nvml_available()[0]


class EightGpus:
    """Reader returning NVML-shaped rows for 8 GPUs; counts its calls."""

    def __init__(self, n: int = 8) -> None:
        self.n = n
        self.calls = 0

    def __call__(self):
        self.calls += 1
        return [
            {
                "index": i,
                "uuid": f"GPU-{i:08d}-aaaa-bbbb-cccc-dddddddddddd",
                "name": "NVIDIA H200",
                "util_gpu": (self.calls * 7 + i) % 101,
                "util_mem": 3,
                "mem_used_mib": 1024.0 + i,
                "mem_total_mib": 143771.0,
                "power_w": None if i == 3 else 123.4,
                "sm_clock_mhz": 1980,
                "temp_c": 41,
            }
            for i in range(self.n)
        ]


@pytest.mark.skipif(HAS_NVML, reason="NVML present: the no-GPU path cannot be exercised on this machine")
def test_without_nvml_records_once_and_compacts_to_empty_table(tmp_path):
    ok, reason = nvml_available()
    assert not ok and reason
    jsonl = tmp_path / "gpu.jsonl"
    with GpuSampler(jsonl, interval_s=0.05) as sampler:
        time.sleep(0.2)
    status = sampler.status
    assert status.available is False and status.reason == reason
    assert status.samples == 0 and status.ticks == 0
    lines = jsonl.read_text().splitlines()
    assert len(lines) == 1
    header = json.loads(lines[0])
    assert header["kind"] == "reportgen.gpu" and header["available"] is False and header["reason"] == reason
    assert compact(jsonl, tmp_path / "gpu.parquet") == 0
    frame = pd.read_parquet(tmp_path / "gpu.parquet")
    assert list(frame.columns) == list(COLUMNS) and len(frame) == 0


@pytest.mark.skipif(not HAS_NVML, reason="no GPU / NVML on this machine")
def test_real_nvml_sampling(tmp_path):
    jsonl = tmp_path / "gpu.jsonl"
    with GpuSampler(jsonl, interval_s=0.25) as sampler:
        time.sleep(1.1)
    status = sampler.status
    assert status.available and status.gpus and status.errors == 0
    rows = compact(jsonl, tmp_path / "gpu.parquet")
    frame = pd.read_parquet(tmp_path / "gpu.parquet")
    assert rows == len(frame) == status.samples >= 4 * len(status.gpus)
    assert frame["mem_total_mib"].gt(0).all() and frame["uuid"].str.startswith("GPU-").all()


def test_thread_samples_on_a_grid_and_compacts(tmp_path):
    jsonl = tmp_path / "gpu.jsonl"
    reader = EightGpus()
    sampler = GpuSampler(jsonl, interval_s=0.1, reader=reader, env={"CUDA_VISIBLE_DEVICES": "2,GPU-00000005"})
    sampler.start()
    assert sampler.status.ticks >= 1  # start() returns after the first tick is on disk
    time.sleep(1.0)
    status = sampler.stop()
    assert status.available and status.reason is None and status.errors == 0
    # ~11 at 10 Hz over 1 s (tick 0 included); a loaded CI core may skip a grid point, but the
    # grid never yields extra ticks.
    assert 6 <= status.ticks <= 12, status.ticks
    assert status.samples == 8 * status.ticks == 8 * reader.calls
    assert [g["visible"] for g in status.gpus] == [i in (2, 5) for i in range(8)]
    assert status.cpu_s > 0 and status.wall_s >= 1.0

    headers, samples = read_samples(jsonl)
    assert len(headers) == 1 and headers[0]["gpus"] == status.gpus
    ts = sorted({s["t"] for s in samples})
    gaps = [b - a for a, b in itertools.pairwise(ts)]
    assert all(g > 0.05 for g in gaps), gaps  # no bunching after a slow tick

    assert compact(jsonl, tmp_path / "gpu.parquet") == status.samples
    frame = pd.read_parquet(tmp_path / "gpu.parquet")
    assert list(frame.columns) == list(COLUMNS)
    assert frame["power_w"].isna().sum() == status.ticks  # GPU 3 reports no power
    assert frame.groupby("t")["index"].apply(sorted).map(lambda ix: ix == list(range(8))).all()


def test_clock_is_injected(tmp_path):
    ticks = iter(range(1000, 2000))
    with GpuSampler(tmp_path / "g.jsonl", interval_s=0.05, reader=EightGpus(2), clock=lambda: float(next(ticks))):
        time.sleep(0.2)
    _, samples = read_samples(tmp_path / "g.jsonl")
    assert samples and all(float(s["t"]).is_integer() and s["t"] >= 1000 for s in samples)


def test_reader_failures_are_counted_and_sampling_continues(tmp_path):
    reader = EightGpus(1)

    def flaky():
        rows = reader()
        if reader.calls in (3, 4):
            raise RuntimeError("GPU is lost")
        return rows

    with GpuSampler(tmp_path / "g.jsonl", interval_s=0.05, reader=flaky) as sampler:
        time.sleep(0.5)
    status = sampler.status
    assert status.errors == 2 and "GPU is lost" in status.last_error
    assert status.ticks == reader.calls - 2 >= 5


def test_compact_tolerates_torn_last_line_and_missing_file(tmp_path):
    jsonl = tmp_path / "gpu.jsonl"
    with GpuSampler(jsonl, interval_s=0.05, reader=EightGpus(2)) as s:
        time.sleep(0.15)
    with open(jsonl, "a") as fh:
        fh.write('{"t": 1.0, "index": 0, "uuid": "GPU-')  # a crash mid-write
    assert compact(jsonl, tmp_path / "gpu.parquet") == s.status.samples
    assert compact(tmp_path / "absent.jsonl", tmp_path / "empty.parquet") == 0
    assert list(pd.read_parquet(tmp_path / "empty.parquet").columns) == list(COLUMNS)


def test_sigkilled_sampler_process_leaves_readable_samples(tmp_path):
    jsonl = tmp_path / "gpu.jsonl"
    script = tmp_path / "sampler_child.py"
    script.write_text(
        textwrap.dedent(f"""
        import sys, time
        from reportgen.capture.gpu import GpuSampler
        def reader():
            return [{{"index": i, "uuid": f"GPU-{{i}}", "name": "sim", "util_gpu": 50, "util_mem": 5,
                      "mem_used_mib": 10.0, "mem_total_mib": 80.0, "power_w": 100.0,
                      "sm_clock_mhz": 1400, "temp_c": 40}} for i in range(2)]
        GpuSampler({str(jsonl)!r}, interval_s=0.5, reader=reader, fsync_every_s=60).start()
        print("started", flush=True)
        time.sleep(600)
    """)
    )
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, env=env, text=True)
    try:
        assert proc.stdout.readline().strip() == "started"
        time.sleep(2.5)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
    assert proc.returncode == -signal.SIGKILL
    headers, samples = read_samples(jsonl)
    ticks = len({s["t"] for s in samples})
    assert len(headers) == 1 and ticks >= 4  # ~6 ticks in 2.5 s at 2 Hz; none lost to buffering
    assert compact(jsonl, tmp_path / "gpu.parquet") == len(samples) == 2 * ticks


@pytest.mark.parametrize(
    "value, visible",
    [
        (None, [0, 1, 2, 3]),
        ("", []),
        ("1,3", [1, 3]),
        ("GPU-cc", [2]),
        ("0,-1,2", [0]),  # CUDA stops at the first invalid entry
    ],
)
def test_visible_filter(value, visible):
    uuids = ["GPU-aa11", "GPU-bb22", "GPU-cc33", "GPU-dd44"]
    pred = visible_filter(value)
    assert [i for i in range(4) if pred(i, uuids[i])] == visible

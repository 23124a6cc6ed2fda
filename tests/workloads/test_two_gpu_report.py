"""A two-GPU run's report: analysis.json and the GPU charts carry both GPUs (1 Hz gpu.parquet of 2 GPUs)."""

from __future__ import annotations

import json

import pytest

from reportgen.analyze import analyze_experiment
from reportgen.render import machine_charts
from reportgen.render.load import load_experiment
from tests.analysis.builder import FakeArm, make_experiment


def test_analysis_and_charts_hold_both_gpus(tmp_path):
    # The builder writes gpu.parquet with GPUs 0 and 1: util 50 x speed + index %, memory 70000 + 10 x index MiB.
    exp = make_experiment(tmp_path / "runs", {"baseline": FakeArm(), "A1": FakeArm(speed=1.2)}, steps=40, warmup=4)
    doc = json.loads(analyze_experiment(exp).read_text())
    for arm, speed in zip(doc["arms"], (1.0, 1.2), strict=False):
        per = arm["gpu"]["per_gpu"]
        assert [g["index"] for g in per] == [0, 1]
        assert [g["uuid"] for g in per] == ["GPU-0", "GPU-1"]
        assert [g["util_mean"] for g in per] == pytest.approx([50.0 * speed, 50.0 * speed + 1])
        assert [g["mem_peak_mib"] for g in per] == [70000.0, 70010.0]
        assert arm["gpu"]["util_mean"] == pytest.approx(50.0 * speed + 0.5)
    head = {h["metric"]: h for h in doc["comparisons"][0]["headline"]}
    for i in (0, 1):
        assert head[f"gpu/{i}/util_mean"]["baseline"] == pytest.approx(50.0 + i)
        assert head[f"gpu/{i}/util_mean"]["candidate"] == pytest.approx(60.0 + i)
        assert head[f"gpu/{i}/mem_peak_mib"]["baseline"] == 70000.0 + 10 * i
    data = load_experiment(exp)
    for column in ("util_gpu", "mem_used_mib"):
        spec = machine_charts.gpu_metric(data, column, title=column, unit="")
        text = json.dumps(spec)
        assert "GPU 0" in text and "GPU 1" in text, column  # one panel (facet row) per GPU

"""scripts/showcase_table.py: the plan's table beside showcases, from analysis.json as analyze writes it."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from types import ModuleType

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "scripts" / "showcase_table.py"


def _module() -> ModuleType:
    spec = importlib.util.spec_from_file_location("showcase_table", SCRIPT)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _row(metric: str, label: str, unit: str, b: float, c: float) -> dict:
    return {"metric": metric, "label": label, "unit": unit, "baseline": b, "candidate": c, "change": c / b - 1}


def _analysis(gpus: int) -> dict:
    head = [
        _row("perf/step_resp_token_per_s", "response tokens/s", "tok/s", 1000.0, 1770.0),
        _row("perf/step_token_per_s", "total tokens/s", "tok/s", 1200.0, 2100.0),
        _row("perf/step_time", "step time mean", "s", 1.07, 0.6),
        _row("perf/step_time:p95", "step time p95", "s", 1.3, 0.7),
        _row("perf/actor_train_time", "actor train time", "s", 0.82, 0.4),
        _row("gpu/util_mean", "GPU utilization mean", "%", 16.0, 24.0),
        _row("steps_completed", "completed steps", "steps", 48, 48),
    ]
    for i in range(gpus):
        head.append(_row(f"gpu/{i}/util_mean", f"GPU {i} utilization mean", "%", 15.0 + i, 23.0 + i))
        head.append(_row(f"gpu/{i}/mem_peak_mib", f"peak memory GPU {i}", "MiB", 3000.0 + i, 6000.0 + i))
    iv = {"estimate": 1.77, "low": 1.68, "high": 1.87, "confidence": 0.95}
    return {
        "comparisons": [
            {"candidate": "A1", "headline": head, "interval": iv, "verdict": {"status": "accepted", "cause": None}},
            {
                "candidate": "A2",
                "headline": [],
                "interval": {},
                "verdict": {"status": "failed", "cause": "OOM at step 1"},
            },
            {"candidate": "A3", "headline": [], "interval": iv, "verdict": {"status": "accepted", "cause": None}},
        ]
    }


def test_one_and_two_gpu_showcases_beside_the_plan(tmp_path: Path) -> None:
    one, two = tmp_path / "showcase-1xh200", tmp_path / "showcase-2xh200"
    for folder, gpus in ((one, 1), (two, 2)):
        folder.mkdir()
        (folder / "analysis.json").write_text(json.dumps(_analysis(gpus)))
    proc = subprocess.run([sys.executable, str(SCRIPT), str(one), str(two)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == (
        "| metric | plan: baseline -> optimized | showcase-1xh200: baseline -> A1 | showcase-2xh200: baseline -> A1 |"
    )
    rows = {ln.split(" | ")[0].removeprefix("| "): ln for ln in lines[2:]}
    assert "250.177 -> 301.918 (+20.68 %)" in rows["response tokens/s"]
    assert "1 000.0 -> 1 770.0 (+77.00 %)" in rows["response tokens/s"]
    assert rows["step time mean"].endswith("| 1.070 s -> 0.600 s (-43.93 %) | 1.070 s -> 0.600 s (-43.93 %) |")
    # Every GPU of the pair has its rows; the one-GPU showcase has none for GPU 1.
    assert rows["peak memory GPU 1"].endswith("| n/a | 3 001 MiB -> 6 001 MiB (+99.97 %) |")
    assert "accepted (+77.0 %, 95 % interval +68.0 % to +87.0 %)" in rows["A1 verdict"]
    assert rows["A2 (A1 without recompute)"].endswith("| failed: OOM at step 1 | failed: OOM at step 1 |")
    assert "OOM at step 9" in rows["A2 (A1 without recompute)"]


def test_a_missing_analysis_is_one_clear_line(tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, str(SCRIPT), str(tmp_path)], capture_output=True, text=True)
    assert proc.returncode == 2 and "run `reportgen analyze" in proc.stderr and proc.stdout == ""
    assert _module().PLAN["step time p95"][2] == "-15.75 %"  # 31.136 / 36.958 - 1

"""Builds a realistic runs/ tree for site tests and the site benchmark.

Writes what the earlier stages write (manifest.json, metrics.parquet, gpu.parquet,
events.json, provenance/, recipe.patch, command.json, analysis.json matching
docs/formats/analysis.md): baseline + A1 accepted + A2 failed (OOM at step 9) + A3 rejected.
The OOM excerpt carries planted markup (`<script>`, a backtick fence) that must stay text.
Numbers are simulated with a fixed seed; the analysis figures are computed from them.
"""

from __future__ import annotations

import difflib
import gzip
import hashlib
import json
import time
from pathlib import Path

import numpy as np
import pandas as pd

from reportgen.analysis import memory, quality, workload
from reportgen.analysis.calibration import fixed_design
from reportgen.analysis.check import tally
from reportgen.analysis.document import (
    AnalysisDocument,
    CandidateSummary,
    EvidenceLink,
    FlagChange,
    GuardrailResult,
    GuardrailTally,
    Interval,
    MathsChange,
    MetricChange,
    NextStep,
    QualityHalf,
    SameWork,
    SameWorkWindow,
)
from reportgen.analysis.guardrails import describe_failure
from reportgen.analysis.run_figures import run_figures
from reportgen.analysis.tables import flag_changes_of, maths_changes, step_parts
from reportgen.rounding import fmt_change_supported, fmt_difference_interval
from reportgen.store.atomic import write_bytes, write_json, write_text
from reportgen.store.run import LogEvent, StoredRun
from tests.helpers import write_run_folder

PLANTED = "<script>alert(1)</script>"
COMMIT = "d52cd0aca9b347a57fb435bda3ae2db8fc6706a4"  # the commit every run names (provenance/git.json)
RECIPE = """#!/bin/bash
set -ex
MODEL_ARGS=(--num-layers 36 --hidden-size 2560)
PERF_ARGS=(
   --tensor-model-parallel-size 2
   --recompute-granularity full
   --recompute-method uniform
   --recompute-num-layers 1
   --use-dynamic-batch-size
   --max-tokens-per-gpu 9216
)
OPTIMIZER_ARGS=(
   --optimizer adam
   --lr 1e-6
   --optimizer-cpu-offload
   --overlap-cpu-optimizer-d2h-h2d
   --use-precision-aware-optimizer
)
ROLLOUT_ARGS=(
   --num-rollout 200
   --rollout-batch-size 2
   --n-samples-per-prompt 8
   --global-batch-size 16
)
ray job submit --address=http://127.0.0.1:8265 -- python3 -m relax.entrypoints.train \\
   ${MODEL_ARGS[@]} ${PERF_ARGS[@]} ${OPTIMIZER_ARGS[@]} ${ROLLOUT_ARGS[@]}
"""

OFFLOAD = ["--optimizer-cpu-offload", "--overlap-cpu-optimizer-d2h-h2d", "--use-precision-aware-optimizer"]
RECOMPUTE = ["--recompute-granularity full", "--recompute-method uniform", "--recompute-num-layers 1"]

# arm -> (title, rationale, base, speed factor on response tokens/s, memory peak MiB, util %)
ARMS = {
    "baseline": ("Recipe as committed", "", None, 1.0, 73152, 50.7),
    "A1": (
        "Keep the optimizer on the GPU",
        "The Adam state fits in 80 GB; offloading it costs host-device copies every step.",
        "baseline",
        1.2068,
        72766,
        66.0,
    ),
    "A2": (
        "A1 without activation recompute",
        "Recompute re-runs the forward pass; without it backward is cheaper if activations fit.",
        "A1",
        1.30,
        81000,
        70.0,
    ),
    "A3": (
        "A1 with a smaller token budget per GPU",
        "A smaller micro-batch may lower the memory peak.",
        "A1",
        0.9425,
        72350,
        63.0,
    ),
}


def _recipe_for(arm: str) -> str:
    text = RECIPE
    if arm in ("A1", "A2", "A3"):
        for flag in OFFLOAD:
            text = text.replace(f"   {flag}\n", "")
    if arm == "A2":
        for flag in RECOMPUTE:
            text = text.replace(f"   {flag}\n", "")
    if arm == "A3":
        text = text.replace("--max-tokens-per-gpu 9216", "--max-tokens-per-gpu 8192")
    return text


def _effective_argv(arm: str) -> dict[str, str | bool]:
    """The flag -> value mapping ingest reads from the trainer's command line (a switch is True):
    here the recipe's one-flag-per-line arrays."""
    out: dict[str, str | bool] = {}
    for line in _recipe_for(arm).splitlines():
        words = line.split()
        if words and words[0].startswith("--"):
            out[words[0]] = words[1] if len(words) > 1 else True
    return out


def _diff(arm: str) -> str:
    if arm == "baseline":
        return ""
    return "".join(
        difflib.unified_diff(
            RECIPE.splitlines(True),
            _recipe_for(arm).splitlines(True),
            "a/scripts/training/run-qwen3-4B.sh",
            "b/scripts/training/run-qwen3-4B.sh",
        )
    )


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def build_experiment(
    root: Path,
    name: str = "grpo-offload",
    *,
    steps: int = 40,
    gpus: int = 2,
    seed: int = 0,
    home: str = "/home/alice",
    fail_step: int = 9,
    with_profile: bool = True,
    t0: float = 1_764_403_200.0,
    cap_gib: float | None = None,
    memory_scale: float = 1.0,
) -> Path:
    """Write runs/<name>/ for four arms x one repeat; returns the experiment folder. `cap_gib`: every arm
    caps its own memory (--gpu-memory-cap-gib); `memory_scale` scales the GPU memory samples (a small
    workload on a big card)."""
    rng = np.random.default_rng(seed)
    exp = Path(root) / name
    warmup = max(1, steps // 10)
    span = (steps - warmup) // 3
    windows = [
        {"name": f"W{i + 1}", "start": warmup + i * span, "end": (warmup + (i + 1) * span - 1) if i < 2 else steps - 1}
        for i in range(3)
    ]
    write_text(
        exp / "experiment.toml",
        f'name = "{name}"\ntitle = "Drop optimizer CPU offload"\n'
        f'hypothesis = "The optimizer state fits on the GPU."\n[recipe]\nscript = "{home}/relax/scripts/training/run-qwen3-4B.sh"\n',
    )
    write_json(
        exp / "campaign.json",
        {
            "schema_version": 1,
            "kind": "reportgen.campaign",
            "campaign_id": "20261129T071500Z",
            "fingerprint_id": "5f1c9a",
        },
    )
    fixed = [
        ("--global-batch-size", "16"),
        ("--rollout-batch-size", "2"),
        ("--n-samples-per-prompt", "8"),
        ("--rollout-max-response-len", "1024"),
        ("--rollout-max-prompt-len", "2048"),
        ("--num-rollout", str(steps)),
    ]
    analysis_arms, series = [], {}
    run_data: dict[str, StoredRun] = {}
    clock = t0
    for arm, (title, why, base, speed, mem_peak, util) in ARMS.items():
        run = exp / arm / "1"
        n_steps = fail_step if arm == "A2" else steps
        resp_rate = 250.0 * speed * (1 + 0.04 * rng.standard_normal(n_steps))
        resp_rate[:warmup] *= 0.6
        resp_tokens = 8000 + 300 * rng.standard_normal(n_steps)
        step_time = resp_tokens / resp_rate
        train_time = step_time * (0.33 / speed)
        rollout_time = (step_time - train_time) * 0.85
        rows = []
        lengths = []
        for s in range(n_steps):
            vals = {
                "perf/step_resp_token_per_s": resp_rate[s],
                "perf/step_token_per_s": resp_rate[s] * 1.72,
                "perf/step_time": step_time[s],
                "perf/train_time": train_time[s],
                "perf/train_wait_time": step_time[s] - train_time[s],
                "perf/actor_train_time": train_time[s] * 0.8,
                "perf/rollout_time": rollout_time[s],
                # A1 trains differently (fp32 Adam moments): its loss runs a fifth lower (a quality warning)
                "train/loss": (0.8 if arm == "A1" else 1.0) * 0.5 * np.exp(-s / steps) + 0.02 * rng.standard_normal(),
                "rollout/raw_reward": 0.3 + 0.3 * s / steps + 0.03 * rng.standard_normal(),
                "rollout/response_len/mean": 500 + 40 * rng.standard_normal(),
                "train/ppo_kl": 0.001 * (1 + 0.02 * rng.standard_normal()),
                "train/pg_clipfrac": abs(0.02 + 0.005 * rng.standard_normal()),
                "train/grad_norm": float("nan")
                if (arm == "baseline" and s == 3)
                else abs(1 + 0.2 * rng.standard_normal()),
                # PyTorch's own peak allocation (GiB): a little under nvidia-smi's figure
                "perf/max_memory_allocated_gib": (mem_peak * memory_scale * 0.85) / 1024 * min(1.0, 0.6 + s / 10),
            }
            rows += [(s, k, float(v), "console") for k, v in vals.items()]
            lengths.append(vals["rollout/response_len/mean"])
        frame = pd.DataFrame(rows, columns=["step", "key", "value", "source"])
        duration = float(step_time.sum())
        n_samples = int(duration)
        t = clock + np.arange(n_samples, dtype=float)
        grow = np.minimum(1.0, np.arange(n_samples) / max(1, n_samples * 0.2))
        gpu_rows = []
        for g in range(gpus):
            used = (mem_peak * (0.55 + 0.45 * grow) - 200 * g - 150 * rng.random(n_samples)) * memory_scale
            used[:2] = 615.0  # in use before the workload allocated (the driver, another process)
            gpu_rows.append(
                pd.DataFrame(
                    {
                        "t": t,
                        "index": g,
                        "uuid": f"GPU-{g:08d}-aaaa",
                        "name": "NVIDIA A100-SXM4-80GB",
                        "util_gpu": np.clip(util + 20 * rng.standard_normal(n_samples), 0, 100),
                        "util_mem": np.clip(util / 2 + 5 * rng.standard_normal(n_samples), 0, 100),
                        "mem_used_mib": used,
                        "mem_total_mib": 81920.0,
                        "power_w": 300.0,
                        "sm_clock_mhz": 1410.0,
                        "temp_c": 60.0,
                    }
                )
            )
        gpu = pd.concat(gpu_rows, ignore_index=True)
        failed = arm == "A2"
        events = []
        if failed:
            excerpt = [
                f"[2026-11-29 07:41:02] train.py:300 - step {fail_step - 1}: {{'train/loss': 0.41}}",
                "Traceback (most recent call last):",
                f'  File "{home}/relax/relax/backends/megatron/actor.py", line 512, in train',
                "    loss.backward()",
                f"  planted markup: {PLANTED} ``` `` [link](javascript:alert(2)) {{: onclick=x}}",
                "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.46 GiB. GPU 0 has a total capacity of 79.25 GiB of which 1.91 GiB is free.",
                f"Actor training failed at step {fail_step}: OutOfMemoryError",
            ]
            events = [
                {
                    "kind": "oom",
                    "step": fail_step,
                    "stream": "stderr",
                    "line": 812,
                    "message": f"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.46 GiB {PLANTED}",
                    "excerpt": excerpt,
                    "details": {"tried_to_allocate_gib": 2.46},
                },
                {
                    "kind": "abnormal_exit",
                    "step": fail_step,
                    "stream": "stderr",
                    "line": 830,
                    "message": "exit code 1",
                    "excerpt": [],
                    "details": {"exit_code": 1},
                },
            ]
        diff = _diff(arm)
        write_text(run / "recipe.sh", _recipe_for(arm))
        write_json(
            run / "command.json",
            {
                "argv": ["bash", f"{home}/relax/scripts/training/run-qwen3-4B.sh"],
                "cwd": f"{home}/relax",
                # as a run recorded before the allow-list: the machine's whole environment
                "env": {
                    "RAY_ADDRESS": "http://127.0.0.1:8265",
                    "WANDB_API_KEY": "<redacted>",
                    "OLDPWD": f"{home}/lent-machine",
                    "NV_LIBCUBLAS_VERSION": "13.1.0.3-1",
                    "NVIDIA_REQUIRE_CUDA": "cuda>=13.0 brand=tesla,driver>=535",
                },
            },
        )
        prov = run / "provenance"
        write_json(
            prov / "git.json",
            {
                "commit": COMMIT,
                "branch": "perf/offload",
                "dirty": False,
                "remote": "https://github.com/redai-infra/Relax",
            },
        )
        write_text(prov / "git-status.txt", "")
        write_text(prov / "python.txt", "Python 3.12.3\n")
        write_text(
            prov / "pip-freeze.txt", "ray==2.56.1\nsglang==0.5.12.post1\ntorch==2.11.0+cu129\ntransformers==5.6.0\n"
        )
        write_text(
            prov / "nvidia-smi.txt",
            f"==============NVSMI LOG==============\nDriver Version : 580.95.05\nCUDA Version : 12.9\nAttached GPUs : {gpus}\nGPU 00000000:07:00.0\n    Product Name : NVIDIA A100-SXM4-80GB\n    Log path : {home}/nvsmi.log\n",
        )
        write_json(
            prov / "model-manifest.json",
            {
                "root": f"{home}/models/Qwen3-VL-4B-Instruct",
                "files": [
                    {"path": "config.json", "size": 1412, "sha256": _sha(b"config")},
                    {"path": "model-00001-of-00002.safetensors", "size": 4967215360, "sha256": _sha(b"w1")},
                ],
            },
        )
        write_json(prov / "data-hashes.json", {f"{home}/data/open-r1-8k.parquet": _sha(b"data")})
        manifest = write_run_folder(
            run,
            {
                "experiment": name,
                "arm": arm,
                "repeat": 1,
                "role": "formal",
                "status": "failed" if failed else "complete",
                "started_utc": _utc(clock),
                "ended_utc": _utc(clock + duration),
                "duration_s": duration,
                "exit_code": 1 if failed else 0,
                "signal": None,
                "timed_out": False,
                "command": ["bash", f"{home}/relax/scripts/training/run-qwen3-4B.sh"],
                "cwd": f"{home}/relax",
                "effective_argv": {
                    **_effective_argv(arm),
                    **({"--gpu-memory-cap-gib": f"{cap_gib:g}"} if cap_gib is not None else {}),
                },
                "hashes": {"model_manifest_sha256": _sha(b"manifest"), "data": {"open-r1-8k.parquet": _sha(b"data")}},
                "gpu": {"available": True},
                # The machine, whose class the history keys its series on (a run without one is of no
                # known class and compared with nothing). No fingerprint_id: the fixture's experiments
                # are not placed on one machine, so none overlaps another.
                "fingerprint": {
                    "hostname": "gpu-node-7",
                    "cpu_model": "AMD EPYC 7513 32-Core",
                    "cpu_count": 64,
                    "mem_total_bytes": 1081 * 2**30,
                    "gpus": [
                        {"index": g, "name": "NVIDIA A100-SXM4-80GB", "uuid": f"GPU-{g:08d}-aaaa"} for g in range(gpus)
                    ],
                    "driver": "580.95.05",
                    "cuda": "12.9",
                },
            },
            metrics=frame,
            events=events,
            gpu=gpu,
            patch=diff,
        )
        run_data[arm] = StoredRun(
            arm=arm,
            repeat=1,
            manifest=manifest,
            metrics=frame,
            events=tuple(map(LogEvent.model_validate, events)),
            gpu=gpu,
        )
        series[arm] = {
            "resp": resp_rate,
            "tok": resp_rate * 1.72,
            "step": step_time,
            "train": train_time * 0.8,
            "n": n_steps,
            "mem": mem_peak,
            "util": util,
            "len": np.array(lengths),
            "tokens": resp_tokens * 1.72,
        }
        clock += duration + 30
        analysis_arms.append(
            _arm_entry(
                arm,
                title,
                why,
                base,
                diff,
                n_steps,
                steps,
                failed,
                duration,
                events,
                windows,
                resp_rate,
                step_time,
                train_time * 0.8,
                mem_peak,
                util,
                gpus,
                fixed,
                run_data[arm],
            )
        )
    profiler_runs = []
    if with_profile:
        prun = exp / "profile-baseline" / "1"
        trace = gzip.compress(json.dumps({"traceEvents": [{"name": "step", "ph": "X", "ts": 0, "dur": 10}]}).encode())
        snap = b"\x80\x04K\x01." * 100
        write_bytes(prun / "traces" / "train_trace" / "actor_rank0_dp0_tp0_pp0.1.pt.trace.json.gz", trace)
        write_bytes(prun / "traces" / "memory_snapshot" / "memory_snapshot_time1_rank0_snapshot.pickle", snap)
        write_run_folder(
            prun,
            {
                "experiment": name,
                "arm": "profile-baseline",
                "repeat": 1,
                "role": "profile",
                "status": "complete",
            },
        )
        profiler_runs.append(
            {
                "arm": "baseline",
                "path": "profile-baseline/1",
                "status": "complete",
                "artifacts": [
                    {
                        "path": "traces/train_trace/actor_rank0_dp0_tp0_pp0.1.pt.trace.json.gz",
                        "bytes": len(trace),
                        "sha256": _sha(trace),
                    },
                    {
                        "path": "traces/memory_snapshot/memory_snapshot_time1_rank0_snapshot.pickle",
                        "bytes": len(snap),
                        "sha256": _sha(snap),
                    },
                ],
            }
        )
    comparisons = [_comparison(c, series, windows, steps, fail_step, run_data) for c in ("A1", "A2", "A3")]
    analysis = {
        "generated_utc": _utc(clock),
        "reportgen_version": "0.1.0",
        "inputs_sha256": None,  # filled in below, once every input file is written
        "experiment": {
            "name": name,
            "title": "Drop optimizer CPU offload",
            "hypothesis": "The optimizer state fits in GPU memory, so offloading it to the CPU only adds copies. <b>not bold</b>",
            "issue": "https://github.com/redai-infra/Relax/issues/123",
            "pr": None,
            "spec_sha256": _sha(b"spec"),
            "profile": None,
            "created_utc": _utc(t0),
            "baseline_commit": "d52cd0aca9b347a57fb435bda3ae2db8fc6706a4",
            "dirty": False,
        },
        "settings": {
            "primary": {"key": "perf/step_resp_token_per_s", "direction": "higher"},
            "secondary": ["perf/step_token_per_s", "perf/step_time", "perf/actor_train_time"],
            "warmup_steps": warmup,
            "steps_expected": steps,
            "windows": windows,
            "min_effect": 0.05,
            "confidence": 0.95,
            "method": "block-bootstrap",
            "seed": 20260805,
            "site_url": None,
            "pr_candidate": "A1",
            "same_work_tolerance": 0.05,
            "design": fixed_design(1, min_pairs=1).model_dump(mode="json"),
        },
        "machine": {
            "fingerprint_id": "5f1c9a",
            "hostname": "gpu-node-7",
            "cpu_model": "AMD EPYC 7513 32-Core",
            "cpu_count": 64,
            "gpus": [{"index": g, "name": "NVIDIA A100-SXM4-80GB", "memory_total_mib": 81920} for g in range(gpus)],
            "driver": "580.95.05",
            "cuda": "12.9",
        },
        "workload": workload.describe(
            "relax.entrypoints.train", [run_data["baseline"]], steps=steps, batch_flag="--global-batch-size"
        ).model_dump(mode="json"),
        "fixed_workload": [{"flag": f, "value": v} for f, v in fixed],
        "arms": analysis_arms,
        "comparisons": comparisons,
        "profiler_runs": profiler_runs,
    }
    from reportgen.store.freshness import inputs_sha256

    analysis["inputs_sha256"] = inputs_sha256(exp)
    # Through the model: the fixture is a valid analysis.json of the current schema by construction.
    write_json(exp / "analysis.json", AnalysisDocument.model_validate(analysis).to_json())
    return exp


def _utc(t: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))


def _stats(x: np.ndarray) -> dict:
    if len(x) == 0:
        return {"n": 0, "mean": None, "std": None, "median": None, "p95": None, "min": None, "max": None}
    return {
        "n": len(x),
        "mean": float(np.mean(x)),
        "std": float(np.std(x, ddof=1)) if len(x) > 1 else 0.0,
        "median": float(np.median(x)),
        "p95": float(np.percentile(x, 95)),
        "min": float(np.min(x)),
        "max": float(np.max(x)),
    }


def _windows_of(x: np.ndarray, windows: list[dict]) -> list[dict]:
    out = []
    for w in windows:
        part = x[w["start"] : w["end"] + 1]
        out.append({"window": w["name"], "start": w["start"], "end": w["end"], **_stats(part)})
    pooled = np.concatenate([x[w["start"] : w["end"] + 1] for w in windows])
    out.append({"window": "all", "start": windows[0]["start"], "end": windows[-1]["end"], **_stats(pooled)})
    return out


def _overall(rows: list[dict]) -> float | None:
    means = [r["mean"] for r in rows if r["window"] != "all" and r["mean"] is not None]
    return float(np.mean(means)) if len(means) == len(rows) - 1 else None


def _arm_entry(
    arm,
    title,
    why,
    base,
    diff,
    n_steps,
    steps,
    failed,
    duration,
    events,
    windows,
    resp,
    step_time,
    actor,
    mem_peak,
    util,
    gpus,
    fixed,
    data: StoredRun,
) -> dict:
    win = {
        "perf/step_resp_token_per_s": _windows_of(resp, windows),
        "perf/step_time": _windows_of(step_time, windows),
        "perf/actor_train_time": _windows_of(actor, windows),
    }
    return {
        "id": arm,
        "title": title,
        "rationale": why,
        "base": base,
        "diff": diff,
        "runs": [
            {
                "repeat": 1,
                "role": "formal",
                "status": "failed" if failed else "complete",
                "path": f"{arm}/1",
                "started_utc": "2026-11-29T07:15:00Z",
                "duration_s": duration,
                "exit_code": 1 if failed else 0,
                "steps_completed": n_steps,
                "events": events,
                "gpu_available": True,
                "failure": describe_failure(data),
                "failure_sentence": memory.oom_sentence(data.events[0], memory.declared_cap_mib([data]))
                if events
                else None,
                "commit": COMMIT,
                "dirty": False,
                "machine_class": data.machine_class,
                "figures": [
                    f.model_dump(mode="json")
                    for f in run_figures(
                        data,
                        "perf/step_resp_token_per_s",
                        _overall(win["perf/step_resp_token_per_s"]),
                        [(w["name"], w["start"], w["end"]) for w in windows],
                    )
                ],
            }
        ],
        "memory": memory.use([data]).model_dump(mode="json"),
        "step_parts": step_parts([data], [(w["name"], w["start"], w["end"]) for w in windows]),
        "windows": win,
        "overall": {k: _overall(v) for k, v in win.items()},
        "gpu": {
            "available": True,
            "util_mean": util,
            "per_gpu": [
                {
                    "index": g,
                    "uuid": f"GPU-{g:08d}-aaaa",
                    "name": "NVIDIA A100-SXM4-80GB",
                    "util_mean": util,
                    "mem_peak_mib": mem_peak - 200 * g,
                    "mem_total_mib": 81920,
                }
                for g in range(gpus)
            ],
        },
        "workload": dict(fixed),
    }


def _mean_post(x: np.ndarray, windows: list[dict]) -> float | None:
    parts = [x[w["start"] : w["end"] + 1] for w in windows]
    parts = [p for p in parts if len(p)]
    return float(np.mean([np.mean(p) for p in parts])) if len(parts) == len(windows) else None


def _comparison(
    cand: str, series: dict, windows: list[dict], steps: int, fail_step: int, data: dict[str, StoredRun]
) -> dict:
    b, c = series["baseline"], series[cand]
    failed = c["n"] < steps

    def row(metric, label, unit, better, bv, cv):
        ch = None if (bv is None or cv is None or isinstance(bv, str)) else cv / bv - 1
        return {
            "metric": metric,
            "label": label,
            "unit": unit,
            "better": better,
            "baseline": bv,
            "candidate": cv,
            "change": ch,
        }

    def p95(s):
        return float(np.percentile(s["step"][windows[0]["start"] :], 95)) if s["n"] > windows[0]["start"] else None

    headline = [
        row(
            "perf/step_resp_token_per_s",
            "response tokens/s",
            "tok/s",
            "higher",
            _mean_post(b["resp"], windows),
            _mean_post(c["resp"], windows),
        ),
        row(
            "perf/step_token_per_s",
            "total tokens/s",
            "tok/s",
            "higher",
            _mean_post(b["tok"], windows),
            _mean_post(c["tok"], windows),
        ),
        row(
            "perf/step_time",
            "step time mean",
            "s",
            "lower",
            _mean_post(b["step"], windows),
            _mean_post(c["step"], windows),
        ),
        row("perf/step_time:p95", "step time p95", "s", "lower", p95(b), p95(c)),
        row(
            "perf/actor_train_time",
            "actor train time",
            "s",
            "lower",
            _mean_post(b["train"], windows),
            _mean_post(c["train"], windows),
        ),
        row("gpu/util_mean", "GPU utilization mean", "%", "higher", b["util"], c["util"]),
        row("gpu/mem_peak_mib", "peak memory per GPU", "MiB", "lower", float(b["mem"]), float(c["mem"])),
        {
            "metric": "steps_completed",
            "label": "completed steps",
            "unit": "",
            "better": "higher",
            "baseline": b["n"],
            "candidate": c["n"],
            "change": float(c["n"] - b["n"]),
        },
        {
            "metric": "workload",
            "label": "effective batch / length limits",
            "unit": "",
            "better": None,
            "baseline": "16 / 2048 / 1024",
            "candidate": "16 / 2048 / 1024",
            "change": None,
        },
    ]
    wins = []
    for w in windows:
        bw = float(np.mean(b["resp"][w["start"] : w["end"] + 1]))
        part = c["resp"][w["start"] : w["end"] + 1]
        cw = float(np.mean(part)) if len(part) else None
        wins.append(
            {
                "window": w["name"],
                "start": w["start"],
                "end": w["end"],
                "baseline": bw,
                "candidate": cw,
                "change": None if cw is None else cw / bw - 1,
            }
        )
    if failed:  # no interval: the candidate has no complete run
        interval = Interval(confidence=0.95, method="block-bootstrap", n_baseline=steps - windows[0]["start"])
        verdict = {
            "status": "failed",
            "summary": f"Failed at step {fail_step}: CUDA out of memory; no measurement.",
            "cause": f"OOM at step {fail_step}, tried to allocate 2.46 GiB",
        }
    else:
        est = headline[0]["candidate"] / headline[0]["baseline"]
        half = 0.025
        interval = {
            "estimate": est,
            "low": est - half,
            "high": est + half,
            "confidence": 0.95,
            "method": "block-bootstrap",
            "n_baseline": steps - windows[0]["start"],
            "n_candidate": steps - windows[0]["start"],
            "block_length": 4,
            "significant": not (est - half <= 1 <= est + half),
            "warnings": ["only one repeat per arm"],
        }
        if est > 1.05:
            verdict = {
                "status": "accepted",
                # worded as the analysis words it: the change rounded to its interval (reportgen/rounding.py);
                # what else it says (the guardrails' count, warnings, maths changes) is added below
                "summary": f"Accepted: better by {fmt_change_supported(est - 1, est - half - 1, est + half - 1)} "
                f"(95% CI {fmt_change_supported(est - half - 1, est - half - 1, est + half - 1)} to "
                f"{fmt_change_supported(est + half - 1, est - half - 1, est + half - 1)}, 1 pair of runs), in every window",
                "cause": None,
            }
        else:
            verdict = {
                "status": "rejected",
                "summary": f"Response tokens/s {fmt_change_supported(est - 1, est - half - 1, est + half - 1)}: "
                "slower than the baseline.",
                "cause": None,
            }
    guard = [
        {
            "id": "steps_completed",
            "title": "All declared steps completed",
            "passed": not failed,
            "reason": f"{c['n']}/{steps} steps",
            "evidence": f"{cand}/1/stdout.log:812",
        },
        {
            "id": "no_oom",
            "title": "No OOM, NaN/Inf or unexplained exception",
            "passed": not failed,
            "reason": "OOM at step 9 <script>x</script>" if failed else "none found",
            "evidence": f"{cand}/1/stderr.log:812" if failed else None,
        },
        {
            "id": "workload_fixed",
            "title": "Fixed workload unchanged",
            "passed": True,
            "reason": "6/6 flags equal",
            "evidence": None,
        },
    ]
    for g in guard:
        g["status"] = "pass" if g["passed"] else "fail"
    work = _same_work(b, c, windows)
    guard.append(
        {
            "id": "same_work",
            "title": "Same generated work (response length, tokens per step)",
            "status": work.status,
            "passed": work.status == "pass",
            "reason": work.reason,
            "evidence": None,
        }
    )
    iv = Interval.model_validate(interval) if isinstance(interval, dict) else interval
    summary = _summary(cand, headline, verdict, iv, b, c, fail_step)
    verdict = {**verdict, "basis": "failed" if failed else "interval", "pairs": 0 if failed else 1}
    pairs = (
        []
        if failed
        else [
            {
                "repeat": 1,
                "reference_run": "baseline/1",
                "candidate_run": f"{cand}/1",
                "reference": headline[0]["baseline"],
                "candidate": headline[0]["candidate"],
                "ratio": headline[0]["candidate"] / headline[0]["baseline"],
            }
        ]
    )
    span = [(w["name"], w["start"], w["end"]) for w in windows]
    trains = _quality([data["baseline"]], [data[cand]], span, failed=failed)
    counted = tally([GuardrailResult.model_validate(g) for g in guard])
    flags = _flag_changes(cand)
    maths = maths_changes(flags)
    if verdict["status"] == "accepted":
        verdict = {**verdict, "summary": f"{verdict['summary']}; {_caveats(counted, guard, maths)}."}
        # the next step names what makes it train differently, as analysis/next_step.py does
        text = summary.next_step.text
        if maths:
            text += f" It changes the maths (it {'; it '.join(m.text() for m in maths)}) and {trains.summary}."
        summary = summary.model_copy(update={"next_step": NextStep(action="merge", text=text)})
        verdict = {
            **verdict,
            "summary": verdict["summary"].replace("in every window;", f"in every window; {trains.summary};"),
        }
    run_level = {
        "reference": "baseline",
        "metric": "perf/step_resp_token_per_s",
        "pairs": pairs,
        "interval": iv.model_dump(mode="json"),
        "variance": "none",
        "looks": [{"pairs": 1, "estimate": iv.estimate, "low": iv.low, "high": iv.high, "outcome": verdict["status"]}]
        if pairs
        else [],
        "window_changes": [w["change"] for w in wins],
        "outcome": "too_few_pairs" if failed else verdict["status"],
    }
    return {
        "candidate": cand,
        "baseline": "baseline",
        "headline": headline,
        "windows": wins,
        "interval": interval,
        "within_run": interval,
        "run_level": run_level,
        "consistent_direction": all((w["change"] or 0) > 0 for w in wins) or all((w["change"] or 0) < 0 for w in wins),
        "guardrails": guard,
        "guardrail_tally": counted.model_dump(mode="json"),
        "maths_changes": [m.model_dump(mode="json") for m in maths],
        "changed_flags": [f.model_dump(mode="json") for f in flags],
        "verdict": verdict,
        "summary": summary,
        "same_work": work,
        "quality": trains.model_dump(mode="json"),
        "base": None if ARMS[cand][2] == "baseline" else ARMS[cand][2],
        "depends_on": [] if ARMS[cand][2] == "baseline" else [ARMS[cand][2]],
    }


def _flag_changes(cand: str) -> list[FlagChange]:
    """The flags whose effective value differs between the baseline, the candidate's base and the
    candidate, as the analysis finds them (analysis/tables.flag_changes) from each arm's command line."""
    base = ARMS[cand][2] or "baseline"
    return flag_changes_of(_effective_argv("baseline"), _effective_argv(base), _effective_argv(cand))


def _caveats(counted: GuardrailTally, guard: list[dict], maths: list[MathsChange]) -> str:
    """What an accepted verdict's sentence says besides speed, worded as analysis/decision.py words it:
    the guardrails' one count, each warning, and the edits that change the maths (never "all
    guardrails passed" for a candidate that trains differently)."""
    said = [counted.text()]
    said += [f"warning: {g['reason'].split('; ')[0]}" for g in guard if g["status"] == "warn"]
    if maths:
        said.append("it changes the maths: " + "; ".join(m.text() for m in maths))
    return "; ".join(said)


def _same_work(b: dict, c: dict, windows: list[dict]) -> SameWork:
    rows = []
    for w in windows:
        s, e = w["start"], w["end"] + 1
        lb, lc = float(np.mean(b["len"][s:e])), (float(np.mean(c["len"][s:e])) if len(c["len"][s:e]) else None)
        tb, tc = float(np.mean(b["tokens"][s:e])), (float(np.mean(c["tokens"][s:e])) if len(c["tokens"][s:e]) else None)
        lch = None if lc is None else lc / lb - 1
        tch = None if tc is None else tc / tb - 1
        within = None if lch is None or tch is None else abs(lch) <= 0.05 and abs(tch) <= 0.05
        rows.append(
            SameWorkWindow(
                window=w["name"],
                response_length_baseline=lb,
                response_length_candidate=lc,
                response_length_change=lch,
                tokens_per_step_baseline=tb,
                tokens_per_step_candidate=tc,
                tokens_per_step_change=tch,
                within=within,
            )
        )
    if any(r.within is None for r in rows):
        status, reason = "not_applicable", "not checkable: the candidate stopped before every window"
    else:
        status, reason = "pass", "within 5% in every window"
    return SameWork(
        status=status,
        applies=True,
        tolerance=0.05,
        tokens_metric="reportgen/tokens_per_step",
        windows=rows,
        reason=reason,
    )


def _quality(
    baseline: list[StoredRun], candidate: list[StoredRun], span: list[tuple[str, int, int]], *, failed: bool
) -> QualityHalf:
    """The training-quality half from the fixture's runs (analysis/quality.py: every metric's pair), with
    the reward's interval made by hand as the fixture's throughput interval is (one pair gives none): the
    difference ± 0.02, within the 0.05 margin; a failed candidate has no complete run, so no pair."""
    half = quality.compare(baseline, candidate, span, design=fixed_design(1, min_pairs=1), settings=quality.Settings())
    reward = half.metrics[0]
    if failed or reward.estimate is None:
        return half
    lo, hi = reward.estimate - 0.02, reward.estimate + 0.02
    figure = fmt_difference_interval(reward.estimate, lo, hi, confidence=0.95)
    reward = reward.model_copy(
        update={
            "low": lo,
            "high": hi,
            "outcome": "not_worse",
            "reason": f"reward {figure}, 1 pair: within the 0.05 margin",
        }
    )
    said = f"trains as well: reward {figure}, within the 0.05 margin, 1 pair"
    return half.model_copy(update={"status": "not_worse", "summary": said, "metrics": [reward, *half.metrics[1:]]})


def _summary(
    cand: str, headline: list[dict], verdict: dict, interval: Interval, b: dict, c: dict, fail_step: int
) -> CandidateSummary:
    def metric(i: int, key: str, label: str, unit: str, better: str) -> MetricChange:
        row = headline[i]
        return MetricChange(
            metric=key,
            label=label,
            unit=unit,
            better=better,
            reference=row["baseline"],
            candidate=row["candidate"],
            change=row["change"],
        )

    status = verdict["status"]
    if status == "accepted":
        step = NextStep(action="merge", text=f"Merge {cand}.")
        cause, evidence = None, []
    elif status == "failed":
        step = NextStep(
            action="fix_oom",
            text=f"Fix the out-of-memory failure of {cand}, then re-run it.",
            command=f"reportgen run scripts/recipes/grpo.toml --name grpo-offload --rerun {cand}",
        )
        cause = verdict["cause"]
        evidence = [
            EvidenceLink(label=f"{cand}'s write-up", id="candidate_page", arm=cand),
            EvidenceLink(label="memory up to the failure", id="memory_chart", arm=cand),
        ]
    else:
        step = NextStep(action="reject", text=f"Do not merge {cand}; keep the baseline's flags.")
        cause, evidence = None, []
    speed = ""
    if interval.estimate is not None and interval.low is not None and interval.high is not None:
        lo, hi = interval.low - 1, interval.high - 1
        word = "faster" if status == "accepted" else "slower"
        speed = (
            f"{word}: response tokens/s {fmt_change_supported(interval.estimate - 1, lo, hi)} (95% CI "
            f"{fmt_change_supported(lo, lo, hi)} to {fmt_change_supported(hi, lo, hi)}, 1 pair)"
        )
    return CandidateSummary(
        is_pr=cand == "A1",
        speed=speed,
        primary=metric(0, "perf/step_resp_token_per_s", "response tokens/s", "tok/s", "higher").model_copy(
            update={"interval": interval}
        ),
        step_time=metric(2, "perf/step_time", "step time", "s", "lower"),
        peak_memory=metric(6, "gpu/mem_peak_mib", "peak GPU memory", "MiB", "lower"),
        verdict=status,
        cause=cause,
        evidence=evidence,
        next_step=step,
    )


def restat_traces(exp: Path) -> None:
    """Fill the fixture's analysis.json `traces` from the stored summaries written since (as `reportgen
    analyze` does) and stamp its inputs again."""
    from reportgen.analyze import _summaries
    from reportgen.store.freshness import inputs_sha256
    from reportgen.store.run_folder import read_experiment
    from reportgen.traces.stats import experiment_stats

    data = json.loads((exp / "analysis.json").read_text())
    found = experiment_stats(_summaries(read_experiment(exp)))
    data["traces"] = found.model_dump(mode="json") if found is not None else None
    data["inputs_sha256"] = inputs_sha256(exp)
    write_json(exp / "analysis.json", AnalysisDocument.model_validate(data).to_json())

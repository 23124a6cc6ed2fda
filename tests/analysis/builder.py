"""Builds runs/<experiment>/ trees by hand for the analysis tests: real files, real Parquet."""

from __future__ import annotations

import zlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from reportgen.analysis.document import AnalysisDocument, Comparison
from tests.helpers import write_run_folder, write_spec

# The candidate's edit when a test names none: the offload flag removed.
DEFAULT_EDIT = {"remove": ["--optimizer-cpu-offload"]}

BASE_ARGV = {
    "--global-batch-size": "16",
    "--rollout-max-response-len": "1024",
    "--rollout-max-prompt-len": "2048",
    "--num-rollout": "60",
}


@dataclass
class FakeArm:
    """How to generate one arm's runs."""

    speed: float = 1.0  # multiplies throughput, divides step time
    fail_at: int | None = None  # OOM at this step: the run stops there
    argv: dict = field(default_factory=dict)  # overrides of the effective argv
    fingerprint: str = "fp-1"
    model_hash: str = "m-1"
    nan_at: int | None = None  # train/grad_norm = nan at this step
    samples: int = 16
    violations: list = field(default_factory=list)
    resp_len: float | None = None  # mean response length per step (default: write_run's)
    cv: float = 0.05  # step-to-step noise (AR(1), rho 0.5)
    tok_scale: float = 1.0  # breaks response-token accounting when != 1
    drop_keys: tuple = ()  # metric keys this arm does not log
    resp_len_from: tuple | None = None  # (step, length): the policy's response length changes from that step on
    extra: dict = field(default_factory=dict)  # more per-step keys, e.g. {"perf/optimizer_time": 0.5}
    trend: float = 0.0  # throughput drifts by this fraction from the first step to the last
    ramp_steps: int = 0  # warm-up: throughput rises linearly from half its level to it over these first steps
    base: str = "baseline"  # the candidate's base in the spec
    edit: dict = field(default_factory=lambda: dict(DEFAULT_EDIT))  # the candidate's edit keys in the spec
    interrupt_at: int | None = None  # stopped by a signal at this step (status interrupted)
    interrupt_repeat: int | None = None  # only this repeat is interrupted (None: every repeat)
    critic_nan_at: int | None = None  # train/critic-value_loss = nan at this step (a PPO critic's keys are logged)
    run_cv: float = 0.01  # run-to-run noise: each run's throughput is offset by this fraction (sd)
    # Training quality: the run's mean reward (0-1), its run-to-run spread (sd) and its step-to-step noise,
    # drawn from a generator of the run's own (arm, repeat), so throughput's draws stay as they were.
    reward: float = 0.5
    reward_run_sd: float = 0.004
    reward_step_sd: float = 0.02
    # Quality drawn from the block alone (the same draw for every arm of a block, as runs of one seed on
    # a deterministic CPU): arms whose reward level is the same give identical figures in each pair.
    quality_by_block: bool = False
    loss: float = 0.1  # the run's mean train/loss, and its run-to-run spread (0: the same in every run)
    loss_run_sd: float = 0.0

    # What else loaded the machine (host.parquet, gpu.parquet): "cpu", "gpu_process" or "throttle",
    # or several joined by "+", over this share of the run from its start; the sampler's figures
    # otherwise say quiet.
    disturb: str | None = None
    disturb_share: float = 1.0
    disturb_repeats: tuple[int, ...] | None = None  # only these repeats are disturbed (None: every repeat)


def ar1(rng, n, rho=0.5, cv=0.05):
    e = np.empty(n)
    z = rng.standard_normal(n)
    e[0] = z[0]
    for t in range(1, n):
        e[t] = rho * e[t - 1] + np.sqrt(1 - rho * rho) * z[t]
    return 1.0 + cv * e


def write_run(
    run_dir: Path,
    *,
    arm: str,
    repeat: int,
    spec: FakeArm,
    steps: int,
    rng,
    role="formal",
    t0: float = 1_764_000_000.0,
    with_gpu: bool = True,
    resp_len: float = 512.0,
) -> float:
    run_dir.mkdir(parents=True, exist_ok=True)
    stopped = spec.interrupt_at is not None and spec.interrupt_repeat in (None, repeat)
    last = steps if spec.fail_at is None else spec.fail_at
    if stopped and spec.interrupt_at is not None:
        last = spec.interrupt_at
    noise = ar1(rng, steps, cv=spec.cv) * (1.0 + spec.run_cv * rng.standard_normal())
    resp_len = spec.resp_len or resp_len
    qrng = np.random.default_rng(
        zlib.crc32((f"block {repeat}" if spec.quality_by_block else f"{arm}/{repeat}").encode())
    )
    reward = (
        spec.reward + spec.reward_run_sd * qrng.standard_normal() + spec.reward_step_sd * qrng.standard_normal(steps)
    )
    loss = spec.loss + spec.loss_run_sd * qrng.standard_normal()
    rows = []
    step_times = []
    for s in range(last):
        length = spec.resp_len_from[1] if spec.resp_len_from and s >= spec.resp_len_from[0] else resp_len
        # Step time grows with the work (generated tokens) above a fixed part, as in RL training.
        st = 30.0 / spec.speed / noise[s] * (0.5 + 0.5 * length / resp_len) / (1.0 + spec.trend * s / steps)
        if s < spec.ramp_steps:
            st /= 0.5 + 0.5 * s / spec.ramp_steps
        step_times.append(st)
        tokens = length * spec.samples
        vals = {
            "perf/step_time": st,
            "perf/step_resp_token_per_s": spec.tok_scale * tokens / st,
            "perf/step_token_per_s": tokens * 1.7 / st,
            "perf/actor_train_time": 10.0 / spec.speed,
            "train/loss": loss,
            "rollout/raw_reward": float(reward[s]),
            "rollout/response_lengths": length,
            **spec.extra,
            "train/ppo_kl": 0.001,
            "train/pg_clipfrac": 0.01,
            "train/grad_norm": float("nan") if spec.nan_at == s else 1.0,
            "rollout/num_samples": float(spec.samples),
        }
        if spec.critic_nan_at is not None:
            vals["train/critic-value_loss"] = float("nan") if spec.critic_nan_at == s else 0.2
            vals["train/critic-grad_norm"] = 0.7
        rows.extend(
            {"step": s, "key": k, "value": v, "source": "console"} for k, v in vals.items() if k not in spec.drop_keys
        )
    metrics = pd.DataFrame(rows, columns=["step", "key", "value", "source"])
    end = t0 + sum(step_times) + 5
    events = []
    status, code = "complete", 0
    if spec.fail_at is not None:
        status, code = "failed", 1
        events.append(
            {
                "kind": "oom",
                "step": spec.fail_at,
                "stream": "stderr",
                "line": 812,
                "message": "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.46 GiB",
                "excerpt": [],
                "details": {"tried_to_allocate_gib": 2.46},
            }
        )
    if stopped:
        # As the runner writes it (a campaign stopped by SIGINT, runs/*/A3/1 of a device run)
        status, code = "interrupted", None
        events.append(
            {
                "kind": "interrupted",
                "step": None,
                "stream": "process",
                "line": None,
                "message": "the run was interrupted",
                "excerpt": [],
                "details": {"step_source": "end-of-run", "signal": "SIGINT"},
            }
        )
    if spec.nan_at is not None:
        events.append(
            {
                "kind": "nan",
                "step": spec.nan_at,
                "stream": "stdout",
                "line": 40,
                "message": "found NaN in local grad norm",
                "excerpt": [],
                "details": {},
            }
        )
    argv = {**BASE_ARGV, **spec.argv}
    manifest = {
        "experiment": run_dir.parent.parent.name,
        "arm": arm,
        "repeat": repeat,
        "role": role,
        "status": status,
        "exit_code": code,
        **({"signal": "SIGINT", "status_reason": "the run was interrupted before it finished"} if stopped else {}),
        "started_utc": _iso(t0),
        "ended_utc": _iso(end),
        "duration_s": end - t0,
        "fingerprint_id": spec.fingerprint,
        "hashes": {"model_manifest_sha256": spec.model_hash, "data": {"train.parquet": "d-1"}},
        "effective_argv": argv,
        "invariants": {"checked": list(BASE_ARGV), "values": {}, "violations": spec.violations},
    }
    gpu = host = None
    if with_gpu:
        ts = np.arange(t0, end, 1.0)
        hit = ts < t0 + spec.disturb_share * (end - t0)  # the disturbed ticks
        if spec.disturb_repeats is not None and repeat not in spec.disturb_repeats:
            hit = np.zeros_like(hit)
        kinds = set((spec.disturb or "").split("+"))
        intruder = "gpu_process" in kinds
        # Two GPUs a tick, built column by column (a list of a dict per sample was most of a build's time).
        both = np.repeat(hit, 2)
        index = np.tile([0, 1], len(ts))
        other = intruder & both & (index == 0)
        gpu = pd.DataFrame(
            {
                "t": np.repeat(ts, 2),
                "index": index,
                "uuid": [f"GPU-{i}" for i in index],
                "name": "H200",
                "util_gpu": 50.0 * spec.speed + index,
                "util_mem": 10.0,
                "mem_used_mib": 70000.0 + 10 * index,
                "mem_total_mib": 81920.0,
                "power_w": 300.0,
                "sm_clock_mhz": 1980.0,
                "temp_c": 50.0,
                "throttle": np.where(("throttle" in kinds) & both, 0x40, 0),
                "other_procs": np.where(other, 1, 0),
                "other_mem_mib": np.where(other, 2048.0, 0.0),
                "other_desc": ["pid 999 python 2048 MiB" if o else None for o in other],
            }
        )
        cpu = "cpu" in set((spec.disturb or "").split("+"))
        host = pd.DataFrame(
            {
                "t": ts,
                "cpu_count": 16,
                "cpu_busy": 2.0,
                "cpu_run": 1.9,
                "cpu_other": np.where(hit & cpu, 2.5, 0.1),
                "top_other": np.where(hit & cpu, "pid 4242 stress 2.50 cores", None),
            }
        )
    patch = "" if arm == "baseline" else "-  --optimizer-cpu-offload\n"
    write_run_folder(run_dir, manifest, metrics=metrics, events=events, gpu=gpu, host=host, patch=patch)
    return end


def _iso(t: float) -> str:
    from datetime import datetime

    return datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def make_experiment(
    root: Path,
    arms: dict[str, FakeArm],
    *,
    name: str = "exp",
    steps: int = 60,
    warmup: int = 6,
    repeats: int = 3,
    order: str = "interleaved",
    method: str = "block-bootstrap",
    seed: int = 1,
    windows: int = 3,
    gpu: bool = True,
    analysis: Mapping[str, Any] | None = None,
    t0: float = 1_764_000_000.0,
    run: Mapping[str, Any] | None = None,
) -> Path:
    """A runs/<name>/ tree with a spec, and one folder per arm and repeat: by default three
    interleaved blocks, the fewest pairs a verdict may rest on. Runs follow one another from `t0`
    (experiments sharing a runs folder and a machine must not overlap: analysis/overlap). `analysis`:
    more keys of the spec's [analysis] table; `run`, of its [run] table."""
    exp = root / name
    exp.mkdir(parents=True)
    edges = np.linspace(warmup, steps, windows + 1).astype(int)
    write_spec(
        exp / "experiment.toml",
        name=name,
        title="Offload test",
        hypothesis="Removing optimizer offload speeds up training",
        recipe={"script": "recipe.sh"},
        workload={"flags": ["--global-batch-size", "--rollout-max-response-len"], "steps": steps},
        run={"repeats": repeats, "order": order, **(run or {})},
        analysis={
            "warmup_steps": warmup,
            "min_effect": 0.05,
            "method": method,
            "seed": 7,
            "site_url": "https://example.org/report",
            "windows": [
                {"name": f"W{i + 1}", "start": int(edges[i]), "end": int(edges[i + 1] - 1)} for i in range(windows)
            ],
            **(analysis or {}),
        },
        candidates=[
            {"id": a, "title": f"Candidate {a}", "base": s.base, **s.edit} for a, s in arms.items() if a != "baseline"
        ],
    )
    rng = np.random.default_rng(seed)
    ids = list(arms)
    for rep in range(1, repeats + 1):
        # Each run in its own 4000 s slot, the slots in the design's order (interleaved: reversed in
        # even blocks, as the runner makes them); the arms drawn in the dict's order all the same.
        slots = ids if order_of(order, rep) else ids[::-1]
        start = t0
        for arm, spec in arms.items():
            at = start + SLOT_S * slots.index(arm)
            end = write_run(
                exp / arm / str(rep), arm=arm, repeat=rep, spec=spec, steps=steps, rng=rng, t0=at, with_gpu=gpu
            )
            assert end + 60 <= start + SLOT_S * (slots.index(arm) + 1), "a run longer than its slot"
        t0 = start + SLOT_S * len(ids)
    return exp


SLOT_S = 4000.0  # seconds between two runs' starts in a built experiment


def order_of(order: str, rep: int) -> bool:
    """True when block `rep` runs the arms in the spec's order (always, unless interleaved and even)."""
    return order != "interleaved" or rep % 2 == 1


def analyse(tmp_path: Path, arms: dict[str, FakeArm], **kw: object) -> AnalysisDocument:
    """Write an experiment under tmp_path/runs, analyse it, and read analysis.json back typed."""
    from reportgen.analyze import analyze_experiment
    from reportgen.render.load import load_analysis

    exp = make_experiment(tmp_path / "runs", arms, **kw)  # type: ignore[arg-type]
    analyze_experiment(exp)
    return load_analysis(exp)


def comparison(doc: AnalysisDocument, cand: str) -> Comparison:
    """The comparison of candidate `cand` (fails the test when there is none)."""
    comp = doc.comparison(cand)
    assert comp is not None
    return comp

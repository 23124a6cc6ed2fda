"""Guardrails: checks that must pass before a speed-up counts, each with its reason and evidence.

Part of reportgen.analysis (pure). A guardrail is `pass`, `fail` or `not_applicable` (the data
needed to check it is not there, e.g. a metric key the workload does not log); the reason says
which. Two guardrails make a comparison invalid rather than failed: different machine, and
different model or data (`INVALIDATING`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from reportgen.analysis.inputs import RunData, argv_value
from reportgen.vocab import (
    FAILURE_KINDS,
    GRAD_NORM,
    KL_LOSS,
    LOSS,
    NUM_SAMPLES,
    PG_CLIPFRAC,
    PPO_KL,
    PROFILER_FLAGS,
    RAW_REWARD,
    RESPONSE_LENGTHS,
    STEP_RESP_TOKEN_PER_S,
    STEP_TIME,
)

PASS, FAIL, NA = "pass", "fail", "not_applicable"
INVALIDATING = ("same_machine", "same_inputs")
FINITE_KEYS = (
    ("loss", (LOSS,)),
    ("reward", (RAW_REWARD,)),
    ("response length", (RESPONSE_LENGTHS,)),
    ("KL", (PPO_KL, KL_LOSS)),
    ("clip fraction", (PG_CLIPFRAC,)),
    ("grad norm", (GRAD_NORM,)),
)
TOKEN_TOLERANCE = 0.02  # relative; the two sides round and time differently


@dataclass(frozen=True)
class Guardrail:
    id: str
    title: str
    status: str  # pass | fail | not_applicable
    reason: str
    evidence: str | None = None

    @property
    def passed(self) -> bool | None:
        return None if self.status == NA else self.status == PASS

    def as_dict(self) -> dict:
        return {
            "id": self.id,
            "title": self.title,
            "status": self.status,
            "passed": self.passed,
            "reason": self.reason,
            "evidence": self.evidence,
        }


def _ev(run: RunData, event: dict[str, Any] | None = None) -> str:
    if event and event.get("line") is not None:
        return f"{run.path}/{event.get('stream', 'stdout')}.log:{event['line']}"
    return f"{run.path}/manifest.json"


def _size(gib: float) -> str:
    return f"{gib * 1024:.2f} MiB" if gib < 1 else f"{gib:.2f} GiB"


def describe_failure(run: RunData) -> str | None:
    """One line for why a run failed, e.g. "OOM at step 9, tried to allocate 2.46 GiB"."""
    for kind in FAILURE_KINDS:
        for e in run.events:
            if e.get("kind") != kind:
                continue
            at = f" at step {e['step']}" if e.get("step") is not None else ""
            details = e.get("details") or {}
            if kind == "oom":
                said = details.get("tried_to_allocate")
                gib = details.get("tried_to_allocate_gib")
                if said:
                    tail = f", tried to allocate {said}"
                else:
                    tail = f", tried to allocate {_size(gib)}" if isinstance(gib, (int, float)) else ""
                return f"OOM{at}{tail}"
            label = {
                "nan": "NaN/Inf",
                "traceback": "exception",
                "fatal": "fatal error",
                "abnormal_exit": "abnormal exit",
                "timeout": "timeout",
                "interrupted": "interrupted",
            }[kind]
            msg = str(e.get("message") or "").strip()
            return f"{label}{at}" + (f": {msg[:160]}" if msg else "")
    m = run.manifest
    if m.get("timed_out"):
        return "timed out"
    if m.get("signal"):
        return f"killed by {m['signal']}"
    if m.get("exit_code") not in (0, None):
        return f"exit code {m['exit_code']}"
    if run.status == "unknown":
        return "manifest.json missing or unreadable"
    if run.status != "complete":
        return f"run status is {run.status}"
    return None


def which_runs(runs: Sequence[RunData]) -> str:
    """The runs a passing check covered, by arm: "baseline and A1" with one run per arm,
    "baseline (3 runs) and A1 (3 runs)" with repeats; reads better than a bare count."""
    arms: dict[str, int] = {}
    for r in runs:
        arms[r.arm] = arms.get(r.arm, 0) + 1
    names = [a if n == 1 else f"{a} ({n} runs)" for a, n in arms.items()]
    if not names:
        return "no run"
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def steps_completed(runs: Sequence[RunData], expected: int | None) -> Guardrail:
    title = "All declared steps completed"
    if not runs:
        return Guardrail("steps_completed", title, FAIL, "no formal run")
    if expected is None:
        return Guardrail("steps_completed", title, NA, "no step count declared ([workload].steps or the steps flag)")
    short = [(r, r.steps_completed) for r in runs if r.steps_completed < expected]
    if short:
        r, n = short[0]
        return Guardrail("steps_completed", title, FAIL, f"{r.path}: {n}/{expected} steps", _ev(r))
    return Guardrail("steps_completed", title, PASS, f"{which_runs(runs)}: {expected}/{expected} steps")


def no_failures(runs: Sequence[RunData]) -> Guardrail:
    title = "No OOM, NaN/Inf, traceback or abnormal exit"
    for r in runs:
        cause = describe_failure(r)
        if cause:
            event = next((e for e in r.events if e.get("kind") in FAILURE_KINDS), None)
            return Guardrail("no_failures", title, FAIL, f"{r.path}: {cause}", _ev(r, event))
    if not runs:
        return Guardrail("no_failures", title, FAIL, "no formal run")
    return Guardrail("no_failures", title, PASS, f"{which_runs(runs)}: exited 0 with no failure event")


def samples_per_step(runs: Sequence[RunData], batch_flag: str) -> Guardrail:
    title = "Samples per step equal the global batch"
    checked: list[RunData] = []
    for r in runs:
        batch = argv_value(r.argv, batch_flag)
        if batch is None or NUM_SAMPLES not in r.steps.columns:
            continue
        try:
            want = float(batch)
        except ValueError:
            continue
        col = r.steps[NUM_SAMPLES].dropna()
        bad = col[col != want]
        checked.append(r)
        if len(bad):
            return Guardrail(
                "samples_per_step",
                title,
                FAIL,
                f"{r.path}: step {int(bad.index[0])} had {bad.iloc[0]:g} samples, global batch {batch}",
                f"{r.path}/metrics.parquet",
            )
    if not checked:
        return Guardrail("samples_per_step", title, NA, f"not checkable: {NUM_SAMPLES} or {batch_flag} missing")
    return Guardrail("samples_per_step", title, PASS, f"{which_runs(checked)}: every step matched the global batch")


def token_accounting(runs: Sequence[RunData], batch_flag: str) -> Guardrail:
    """response tokens/s x step time = mean response length x samples, step by step."""
    title = "Response-token accounting consistent"
    need = (STEP_RESP_TOKEN_PER_S, STEP_TIME, RESPONSE_LENGTHS)
    checked: list[RunData] = []
    for r in runs:
        df = r.steps
        if any(k not in df.columns for k in need):
            continue
        if NUM_SAMPLES in df.columns:
            samples = df[NUM_SAMPLES]
        else:
            batch = argv_value(r.argv, batch_flag)
            try:
                samples = float(batch) if batch is not None else None
            except ValueError:
                samples = None
            if samples is None:
                continue
        lhs = df[STEP_RESP_TOKEN_PER_S] * df[STEP_TIME]
        rhs = df[RESPONSE_LENGTHS] * samples
        ok = lhs.notna() & rhs.notna() & np.isfinite(lhs) & np.isfinite(rhs) & (rhs != 0)
        if not ok.any():
            continue
        checked.append(r)
        rel = (lhs[ok] - rhs[ok]).abs() / rhs[ok].abs()
        bad = rel[rel > TOKEN_TOLERANCE]
        if len(bad):
            s = int(bad.index[0])
            return Guardrail(
                "token_accounting",
                title,
                FAIL,
                f"{r.path}: step {s}: {lhs[s]:.1f} tokens from throughput x time vs "
                f"{rhs[s]:.1f} from lengths x samples ({bad.iloc[0]:.1%} apart)",
                f"{r.path}/metrics.parquet",
            )
    if not checked:
        return Guardrail("token_accounting", title, NA, "not checkable: key missing (" + ", ".join(need) + ")")
    return Guardrail(
        "token_accounting", title, PASS, f"{which_runs(checked)}: agree within {TOKEN_TOLERANCE:.0%} on every step"
    )


def finite_training(runs: Sequence[RunData]) -> Guardrail:
    title = "Loss, reward, response length, KL, clip fraction, grad norm finite"
    absent, seen = [], 0
    for label, keys in FINITE_KEYS:
        present = False
        for r in runs:
            for key in keys:
                if key not in r.steps.columns:
                    continue
                present = True
                bad = sorted((step, value) for k, step, value in r.nonfinite if k == key)
                if bad:
                    step, value = bad[0]
                    return Guardrail(
                        "finite_training",
                        title,
                        FAIL,
                        f"{r.path}: {key} = {value} at step {step}",
                        f"{r.path}/metrics.parquet",
                    )
        if present:
            seen += 1
        else:
            absent.append(label)
    if not seen:
        return Guardrail("finite_training", title, NA, "not checkable: none of the keys was logged")
    tail = f" (not logged: {', '.join(absent)})" if absent else ""
    return Guardrail("finite_training", title, PASS, f"{seen} quantities finite on every step{tail}")


def fixed_workload(baseline: Sequence[RunData], candidate: Sequence[RunData], flags: Sequence[str]) -> Guardrail:
    title = "Fixed-workload flags unchanged from the baseline"
    for r in candidate:
        for v in (r.manifest.get("invariants") or {}).get("violations") or []:
            return Guardrail(
                "fixed_workload",
                title,
                FAIL,
                f"{r.path}: {v.get('flag')} is {v.get('actual')!r}, expected {v.get('expected')!r}",
                f"{r.path}/manifest.json",
            )
    if not flags:
        return Guardrail("fixed_workload", title, NA, "no fixed-workload flags declared ([workload].flags)")
    if not baseline or not candidate:
        return Guardrail("fixed_workload", title, NA, "an arm has no formal run")
    ref = baseline[0]
    unknown = []
    for flag in flags:
        want = argv_value(ref.argv, flag)
        for r in candidate:
            got = argv_value(r.argv, flag)
            if want is None and got is None:
                unknown.append(flag)
                continue
            if got != want:
                return Guardrail(
                    "fixed_workload",
                    title,
                    FAIL,
                    f"{r.path}: {flag} = {got!r}, baseline {want!r}",
                    f"{r.path}/manifest.json",
                )
    if len(set(unknown)) == len(flags):
        return Guardrail("fixed_workload", title, NA, "not checkable: no effective argv recorded")
    tail = f" ({', '.join(sorted(set(unknown)))} not recorded)" if unknown else ""
    return Guardrail("fixed_workload", title, PASS, f"{len(flags)} flag(s) equal to the baseline{tail}")


def _hashes(r: RunData) -> tuple[Any, Any]:
    h = r.manifest.get("hashes") or {}
    return h.get("model_manifest_sha256"), dict(h.get("data") or {})


def same_inputs(baseline: Sequence[RunData], candidate: Sequence[RunData]) -> Guardrail:
    title = "Identical model manifest and data hashes"
    # A run that recorded no hashes (e.g. an unreadable manifest) is unknown, not different:
    # its own failure is reported by the other guardrails.
    runs = [r for r in (*baseline, *candidate) if _hashes(r) != (None, {})]
    if not runs:
        return Guardrail("same_inputs", title, NA, "not checkable: no hashes recorded")
    ref = _hashes(runs[0])
    for r in runs[1:]:
        model, data = _hashes(r)
        if model != ref[0]:
            return Guardrail(
                "same_inputs",
                title,
                FAIL,
                f"{r.path}: model manifest hash differs from {runs[0].path}",
                f"{r.path}/manifest.json",
            )
        if data != ref[1]:
            return Guardrail(
                "same_inputs",
                title,
                FAIL,
                f"{r.path}: data hashes differ from {runs[0].path}",
                f"{r.path}/manifest.json",
            )
    return Guardrail("same_inputs", title, PASS, f"{which_runs(runs)}: same hashes")


def same_machine(baseline: Sequence[RunData], candidate: Sequence[RunData]) -> Guardrail:
    title = "Same machine fingerprint"
    runs = [r for r in (*baseline, *candidate) if r.manifest.get("fingerprint_id") is not None]
    if not runs:
        return Guardrail("same_machine", title, NA, "not checkable: no fingerprint recorded")
    ref = runs[0].manifest["fingerprint_id"]
    for r in runs[1:]:
        fp = r.manifest["fingerprint_id"]
        if fp != ref:
            return Guardrail(
                "same_machine",
                title,
                FAIL,
                f"{r.path}: fingerprint {fp} differs from {runs[0].path}'s {ref}",
                f"{r.path}/manifest.json",
            )
    return Guardrail("same_machine", title, PASS, f"{which_runs(runs)}: fingerprint {str(ref)[:12]}")


def no_profiler(runs: Sequence[RunData]) -> Guardrail:
    title = "No profiler or memory recorder in formal runs"
    for r in runs:
        on = [f for f in PROFILER_FLAGS if f in r.argv]
        if on:
            return Guardrail(
                "no_profiler", title, FAIL, f"{r.path}: {', '.join(on)} in a formal run", f"{r.path}/manifest.json"
            )
    if runs and all(not r.argv for r in runs):
        return Guardrail("no_profiler", title, NA, "not checkable: no effective argv recorded")
    return Guardrail("no_profiler", title, PASS, "no profiler flag in the effective argv")


def check_all(
    baseline: Sequence[RunData],
    candidate: Sequence[RunData],
    *,
    expected_steps: int | None,
    batch_flag: str,
    fixed_flags: Sequence[str],
) -> list[Guardrail]:
    both = [*baseline, *candidate]
    return [
        steps_completed(both, expected_steps),
        no_failures(both),
        samples_per_step(both, batch_flag),
        token_accounting(both, batch_flag),
        finite_training(both),
        fixed_workload(baseline, candidate, fixed_flags),
        same_inputs(baseline, candidate),
        same_machine(baseline, candidate),
        no_profiler(both),
    ]

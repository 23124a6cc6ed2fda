"""The descriptive parts of analysis.json: each arm's windows, runs and GPU figures, the headline
rows of a comparison, the flags that differ, and the baseline's drift (pure).

Part of reportgen.analysis. Nothing here decides anything: these are the tables a reader checks
the decision against (decision.py decides, evidence.py gathers what it decides on).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from reportgen.analysis import document as doc
from reportgen.analysis import guardrails as gr
from reportgen.analysis import memory, quiet
from reportgen.analysis.check import Span
from reportgen.analysis.evidence import UNFINISHED, Windows, segments, stats_runs
from reportgen.analysis.gpu import summarize_gpu
from reportgen.analysis.inputs import argv_value, run_notes
from reportgen.analysis.interval import arm_statistic
from reportgen.analysis.lifecycle import run_attempts
from reportgen.analysis.run_figures import run_figures
from reportgen.analysis.stats import change, overall, summarize
from reportgen.specfile.model import Spec
from reportgen.store.run import StoredRun
from reportgen.vocab import (
    ACTOR_TRAIN_TIME,
    ALLOCATED_PEAK,
    BASELINE,
    FORMAL,
    HIGHER,
    LOWER,
    MATHS_FLAGS,
    STEP_PARTS,
    STEP_RESP_TOKEN_PER_S,
    STEP_TIME,
    STEP_TOKEN_PER_S,
)

LIMIT_FLAGS = ("--rollout-max-prompt-len", "--rollout-max-response-len")
HEADLINE = (
    (STEP_RESP_TOKEN_PER_S, "response tokens/s", "tok/s", HIGHER),
    (STEP_TOKEN_PER_S, "total tokens/s", "tok/s", HIGHER),
    (STEP_TIME, "step time mean", "s", LOWER),
    (f"{STEP_TIME}:p95", "step time p95", "s", LOWER),
    (ACTOR_TRAIN_TIME, "actor train time", "s", LOWER),
)


def arm_block(
    arm_id: str,
    spec: Spec,
    runs: Sequence[StoredRun],
    windows: Windows,
    metrics: Sequence[str],
    diffs: Mapping[str, str],
    *,
    experiment: str = "",
    spans: Sequence[Span] = (),
) -> doc.ArmResult:
    cand = None if arm_id == BASELINE else spec.candidate(arm_id) if arm_id in spec.arm_ids() else None
    used = stats_runs(runs)
    win_block: dict[str, list[doc.WindowStats]] = {}
    overall_block: dict[str, float | None] = {}
    for key in metrics:
        per_window = {
            name: (s, e, np.concatenate([np.asarray(r.series(key, s, e)) for r in used]) if used else np.array([]))
            for name, s, e in windows
        }
        rows = summarize(per_window)
        win_block[key] = rows
        overall_block[key] = overall(rows)
    first, last = windows[0][1], windows[-1][2]
    fixed = {
        f: argv_value(runs[0].argv, f) if runs else None
        for f in (*spec.workload.flags, spec.workload.batch_flag, *LIMIT_FLAGS)
    }
    return doc.ArmResult(
        id=arm_id,
        title="Baseline" if arm_id == BASELINE else (cand.title if cand else arm_id),
        rationale=cand.rationale if cand else "",
        base=cand.base if cand else None,
        diff=diffs.get(arm_id, ""),
        runs=[_run_block(r, spec, windows, experiment, spans) for r in runs],
        windows=win_block,
        overall=overall_block,
        gpu=doc.GpuSummary.model_validate(summarize_gpu(used, first, last)),
        workload=fixed,
        memory=memory.use(runs),
        step_parts=step_parts(runs, windows),
    )


def step_parts(runs: Sequence[StoredRun], windows: Windows) -> dict[str, float | None]:
    """Each timer of a step (vocab.STEP_PARTS) as its mean seconds per window step over `runs`: what
    the site stacks as "where a step's time goes"."""
    out: dict[str, float | None] = {}
    for key in STEP_PARTS:
        parts = [np.asarray(r.series(key, s, e), dtype=float) for r in runs for _, s, e in windows]
        values = np.concatenate(parts) if parts else np.array([])
        out[key] = float(values.mean()) if values.size else None
    return out


def _failure_sentence(r: StoredRun) -> str | None:
    e = gr.failure_event(r)
    return memory.oom_sentence(e, memory.declared_cap_mib([r])) if e is not None else None


def _run_block(r: StoredRun, spec: Spec, windows: Windows, experiment: str, spans: Sequence[Span]) -> doc.RunSummary:
    m = r.manifest
    disturbances, load = quiet.disturbances(r, experiment, spans, windows[0][1], windows[-1][2])
    primary = arm_statistic(segments([r], spec.analysis.primary, windows))
    return doc.RunSummary(
        repeat=r.repeat,
        role=r.role,
        status=r.status,
        path=r.rel,
        started_utc=m.started_utc,
        duration_s=m.duration_s,
        exit_code=m.exit_code,
        steps_completed=r.steps_completed,
        events=[doc.RunEvent.model_validate(e.to_dict()) for e in r.events],
        gpu_available=not r.gpu.empty,
        overall=primary,
        failure=gr.describe_failure(r),
        failure_sentence=_failure_sentence(r),
        notes=run_notes(r),
        lifecycle=run_attempts(m),
        disturbances=disturbances,
        load=load,
        commit=r.git.commit_id if r.git is not None else None,
        dirty=r.git.dirty if r.git is not None else None,
        machine_class=r.machine_class,
        figures=run_figures(r, spec.analysis.primary, primary, windows),
    )


def _row(
    metric: str,
    label: str,
    unit: str,
    better: doc.Direction | None,
    b: doc.Number | str | None,
    c: doc.Number | str | None,
) -> doc.HeadlineRow:
    ch = change(b, c) if not isinstance(b, str) and not isinstance(c, str) else None
    return doc.HeadlineRow(metric=metric, label=label, unit=unit, better=better, baseline=b, candidate=c, change=ch)


def _p95(arm: doc.ArmResult, key: str) -> float | None:
    return next((w.p95 for w in arm.windows.get(key, []) if w.window == "all"), None)


def headline(spec: Spec, base: doc.ArmResult, cand: doc.ArmResult) -> list[doc.HeadlineRow]:
    rows = []
    primary = spec.analysis.primary
    if primary not in [h[0] for h in HEADLINE]:
        rows.append(
            _row(primary, primary, "", spec.analysis.direction, base.overall.get(primary), cand.overall.get(primary))
        )
    for key, label, unit, better in HEADLINE:
        if key.endswith(":p95"):
            k = key[:-4]
            rows.append(_row(key, label, unit, better, _p95(base, k), _p95(cand, k)))  # type: ignore[arg-type]
        else:
            rows.append(_row(key, label, unit, better, base.overall.get(key), cand.overall.get(key)))  # type: ignore[arg-type]
    bg, cg = base.gpu, cand.gpu
    rows.append(_row("gpu/util_mean", "GPU utilization mean", "%", HIGHER, bg.util_mean, cg.util_mean))
    # What PyTorch allocated at its peak, beside nvidia-smi's peak below: the figure a memory cap bounds
    # and the answer's "4.41 of 5.00 GiB" reads (analysis/memory.py), before the device's larger one.
    ba, ca = base.memory.allocated_peak_mib, cand.memory.allocated_peak_mib
    if ba is not None or ca is not None:
        rows.append(_row(ALLOCATED_PEAK, "peak memory allocated", "MiB", LOWER, ba, ca))
    cg_by = {g.index: g for g in cg.per_gpu}
    for g in bg.per_gpu:
        c = cg_by.get(g.index)
        rows.append(
            _row(
                f"gpu/{g.index}/util_mean",
                f"GPU {g.index} utilization mean",
                "%",
                HIGHER,
                g.util_mean,
                c.util_mean if c else None,
            )
        )
        rows.append(
            _row(
                f"gpu/{g.index}/mem_peak_mib",
                f"peak memory GPU {g.index}",
                "MiB",
                LOWER,
                g.mem_peak_mib,
                c.mem_peak_mib if c else None,
            )
        )

    def steps(arm: doc.ArmResult) -> int | None:
        # Unfinished runs are redone on resume: their partial count is not the arm's result.
        formal = [r for r in arm.runs if r.role == FORMAL]
        finished = [r for r in formal if r.status not in UNFINISHED] or formal
        return min((r.steps_completed for r in finished), default=None)

    sb, sc = steps(base), steps(cand)
    row = _row("steps_completed", "completed steps", "steps", HIGHER, sb, sc)
    # a count: show the difference
    rows.append(row.model_copy(update={"change": (sc - sb) if sb is not None and sc is not None else None}))

    def lim(arm: doc.ArmResult) -> str:
        return " / ".join(str(arm.workload.get(f) or "?") for f in (spec.workload.batch_flag, *LIMIT_FLAGS))

    lb, lc = lim(base), lim(cand)
    rows.append(
        doc.HeadlineRow(
            metric="workload/limits",
            label="effective batch / length limits",
            unit="",
            better=None,
            baseline=lb,
            candidate=lc,
            change=None,
            text="unchanged" if lb == lc else "changed",
        )
    )
    return rows


def flag_changes(spec: Spec, cand_id: str, formal: Mapping[str, Sequence[StoredRun]]) -> list[doc.FlagChange]:
    """Flags whose effective value differs between the baseline, the base and the candidate."""

    def argv(arm: str) -> dict[str, Any]:
        runs = formal.get(arm, [])
        return runs[0].argv if runs else {}

    base_id = spec.candidate(cand_id).base
    if not argv(cand_id):
        return []
    return flag_changes_of(argv(BASELINE), argv(base_id), argv(cand_id))


def flag_changes_of(baseline: dict[str, Any], base: dict[str, Any], candidate: dict[str, Any]) -> list[doc.FlagChange]:
    """The flags whose value differs between three effective command lines, in the order they first
    appear (the test fixtures build their documents with it too)."""
    cols = [baseline, base, candidate]
    order: list[str] = []
    for col in cols:
        order += [f for f in col if f not in order]
    out = []
    for flag in order:
        vals = [argv_value(col, flag) for col in cols]
        if len(set(vals)) > 1:
            out.append(doc.FlagChange(flag=flag, baseline=vals[0], base=vals[1], candidate=vals[2]))
    return out


def maths_changes(changes: Sequence[doc.FlagChange]) -> list[doc.MathsChange]:
    """The flag edits against the baseline that change the training's maths (`vocab.MATHS_FLAGS`)."""
    return [
        doc.MathsChange(flag=c.flag, baseline=c.baseline, candidate=c.candidate, changes=MATHS_FLAGS[c.flag])
        for c in changes
        if c.flag in MATHS_FLAGS and c.baseline != c.candidate
    ]


def drift(spec: Spec, base: doc.ArmResult) -> doc.BaselineDrift | None:
    """The baseline's primary metric, first window against last: a machine that warms up or
    throttles moves every arm measured at that time, so a large drift weakens the comparison."""
    rows = [w for w in base.windows.get(spec.analysis.primary, []) if w.window != "all"]
    if len(rows) < 2:
        return None
    first, last = rows[0], rows[-1]
    ch = change(first.mean, last.mean)
    return doc.BaselineDrift(
        metric=spec.analysis.primary,
        first_window=first.window,
        last_window=last.window,
        first=first.mean,
        last=last.mean,
        change=ch,
        flagged=ch is not None and abs(ch) > spec.analysis.min_effect,
    )

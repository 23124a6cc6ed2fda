"""Assemble the whole analysis of one experiment into the analysis.json document.

Part of reportgen.analysis (pure): takes the spec, the runs' data and a `Context` of facts the
I/O edge gathered (hashes, diffs, machine, profiler artifacts); returns an `AnalysisDocument`
(reportgen.analysis.document, documented in docs/formats/analysis.md). Never raises on failed or
partial runs: a failure becomes data (a guardrail, a verdict), not an exception.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from reportgen import __version__, vocab
from reportgen.analysis import document as doc
from reportgen.analysis import guardrails as gr
from reportgen.analysis import next_step, overlap, quiet, same_work
from reportgen.analysis.gpu import summarize_gpu
from reportgen.analysis.inputs import RunData, argv_value
from reportgen.analysis.interval import arm_statistic, ratio_interval
from reportgen.analysis.next_step import Rerun
from reportgen.analysis.stats import change, overall, summarize
from reportgen.analysis.verdict import Verdict, against_base, decide, incomplete, missing_metric_cause
from reportgen.spec.model import Spec
from reportgen.vocab import (
    ACTOR_TRAIN_TIME,
    BASELINE,
    FORMAL,
    METRICS,
    STEP_RESP_TOKEN_PER_S,
    STEP_TIME,
    STEP_TOKEN_PER_S,
    Status,
)

SCHEMA_VERSION = doc.SCHEMA_VERSION
LIMIT_FLAGS = ("--rollout-max-prompt-len", "--rollout-max-response-len")
HEADLINE = (
    (STEP_RESP_TOKEN_PER_S, "response tokens/s", "tok/s", "higher"),
    (STEP_TOKEN_PER_S, "total tokens/s", "tok/s", "higher"),
    (STEP_TIME, "step time mean", "s", "lower"),
    (f"{STEP_TIME}:p95", "step time p95", "s", "lower"),
    (ACTOR_TRAIN_TIME, "actor train time", "s", "lower"),
)
Windows = list[tuple[str, int, int]]


@dataclass(frozen=True)
class Context:
    """Facts read by the I/O edge, passed in so this module stays pure."""

    experiment: str
    spec_sha256: str = ""
    generated_utc: str = ""
    inputs_sha256: str | None = None
    diffs: dict[str, str] = field(default_factory=dict)  # arm -> recipe.patch text
    machine: dict[str, Any] = field(default_factory=dict)
    baseline_commit: str | None = None
    dirty: bool | None = None
    profiler_runs: list[dict[str, Any]] = field(default_factory=list)
    spec_source: str | None = None  # the spec file `reportgen run` was given (experiment.json)
    run_name: str | None = None  # --name, when the folder is not the spec's name
    # Every run recorded under the runs folder on the machines of this experiment's runs (overlap checks).
    spans: tuple[overlap.Span, ...] = ()


def _windows(spec: Spec, expected: int | None, runs: Sequence[RunData]) -> Windows:
    a = spec.analysis
    if a.windows:
        return [(w.name, w.start, w.end) for w in a.windows]
    last = (
        (expected - 1)
        if expected
        else max((int(r.steps.index.max()) for r in runs if not r.steps.empty), default=a.warmup_steps)
    )
    return [("W1", a.warmup_steps, max(a.warmup_steps, last))]


def _expected_steps(spec: Spec, runs: Sequence[RunData]) -> int | None:
    if spec.workload.steps:
        return int(spec.workload.steps)
    for r in runs:
        v = argv_value(r.argv, spec.workload.steps_flag)
        if v is not None:
            try:
                return int(float(v))
            except ValueError:
                pass
    return None


UNFINISHED = (Status.INTERRUPTED, Status.RUNNING)


def _pending(runs: Sequence[RunData], expected: int | None) -> str:
    """ "A1/2 interrupted at step 12/48, baseline/2 still marked running": what resuming will redo."""

    def one(r: RunData) -> str:
        where = f" at step {r.steps_completed}/{expected}" if expected and r.steps_completed else ""
        state = "interrupted" if r.status == Status.INTERRUPTED else next_step.STILL_RUNNING
        return f"{r.path} {state}{where}"

    return ", ".join(one(r) for r in runs)


def _finished(runs: Sequence[RunData]) -> tuple[list[RunData], list[RunData]]:
    """(finished, unfinished) formal runs: a resumed campaign redoes the unfinished ones."""
    return [r for r in runs if r.status not in UNFINISHED], [r for r in runs if r.status in UNFINISHED]


def _stats_runs(runs: Sequence[RunData]) -> list[RunData]:
    """Complete formal runs; if none completed, the finished ones (a failed run's partial data,
    shown as such). Unfinished runs never: resuming redoes them, their figures are not the arm's."""
    done = [r for r in runs if r.status == Status.COMPLETE]
    return done or [r for r in runs if r.status not in UNFINISHED]


def _segments(runs: Sequence[RunData], key: str, windows: Windows) -> list[list[np.ndarray]]:
    return [[np.asarray(r.series(key, s, e), dtype=float) for _, s, e in windows] for r in runs]


def _arm_block(
    arm_id: str, spec: Spec, runs: Sequence[RunData], windows: Windows, metrics: Sequence[str], ctx: Context
) -> doc.Arm:
    cand = None if arm_id == BASELINE else spec.candidate(arm_id) if arm_id in spec.arm_ids() else None
    used = _stats_runs(runs)
    win_block: dict[str, list[doc.WindowStats]] = {}
    overall_block: dict[str, float | None] = {}
    for key in metrics:
        per_window = {
            name: (s, e, np.concatenate([np.asarray(r.series(key, s, e)) for r in used]) if used else np.array([]))
            for name, s, e in windows
        }
        rows = summarize(per_window)
        win_block[key] = [doc.WindowStats.model_validate(r.as_dict()) for r in rows]
        overall_block[key] = overall(rows)
    first, last = windows[0][1], windows[-1][2]
    fixed = {
        f: argv_value(runs[0].argv, f) if runs else None
        for f in (*spec.workload.flags, spec.workload.batch_flag, *LIMIT_FLAGS)
    }
    return doc.Arm(
        id=arm_id,
        title="Baseline" if arm_id == BASELINE else (cand.title if cand else arm_id),
        rationale=cand.rationale if cand else "",
        base=cand.base if cand else None,
        diff=ctx.diffs.get(arm_id, ""),
        runs=[_run_block(r, spec, windows, ctx) for r in runs],
        windows=win_block,
        overall=overall_block,
        gpu=doc.GpuSummary.model_validate(summarize_gpu(used, first, last)),
        workload=fixed,
    )


def _run_block(r: RunData, spec: Spec, windows: Windows, ctx: Context) -> doc.RunSummary:
    m = r.manifest
    disturbances, load = quiet.disturbances(r, ctx.experiment, ctx.spans, windows[0][1], windows[-1][2])
    return doc.RunSummary(
        repeat=r.repeat,
        role=r.role,
        status=r.status,
        path=r.path,
        started_utc=m.get("started_utc"),
        duration_s=m.get("duration_s"),
        exit_code=m.get("exit_code"),
        steps_completed=r.steps_completed,
        events=[doc.RunEvent.model_validate(e) for e in r.events],
        gpu_available=bool(r.gpu is not None and not r.gpu.empty),
        overall=arm_statistic(_segments([r], spec.analysis.primary, windows)),
        failure=gr.describe_failure(r),
        notes=list(r.notes),
        disturbances=disturbances,
        load=load,
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


def _p95(arm: doc.Arm, key: str) -> float | None:
    return next((w.p95 for w in arm.windows.get(key, []) if w.window == "all"), None)


def _headline(spec: Spec, base: doc.Arm, cand: doc.Arm) -> list[doc.HeadlineRow]:
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
    rows.append(_row("gpu/util_mean", "GPU utilization mean", "%", "higher", bg.util_mean, cg.util_mean))
    cg_by = {g.index: g for g in cg.per_gpu}
    for g in bg.per_gpu:
        c = cg_by.get(g.index)
        rows.append(
            _row(
                f"gpu/{g.index}/util_mean",
                f"GPU {g.index} utilization mean",
                "%",
                "higher",
                g.util_mean,
                c.util_mean if c else None,
            )
        )
        rows.append(
            _row(
                f"gpu/{g.index}/mem_peak_mib",
                f"peak memory GPU {g.index}",
                "MiB",
                "lower",
                g.mem_peak_mib,
                c.mem_peak_mib if c else None,
            )
        )

    def steps(arm: doc.Arm) -> int | None:
        # Unfinished runs are redone on resume: their partial count is not the arm's result.
        formal = [r for r in arm.runs if r.role == FORMAL]
        finished = [r for r in formal if r.status not in UNFINISHED] or formal
        return min((r.steps_completed for r in finished), default=None)

    sb, sc = steps(base), steps(cand)
    row = _row("steps_completed", "completed steps", "steps", "higher", sb, sc)
    # a count: show the difference
    rows.append(row.model_copy(update={"change": (sc - sb) if sb is not None and sc is not None else None}))

    def lim(arm: doc.Arm) -> str:
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


def _repeats(spec: Spec, b_runs: Sequence[RunData], c_runs: Sequence[RunData], windows: Windows) -> doc.Repeats | None:
    if len(b_runs) < 2 and len(c_runs) < 2:
        return None
    key = spec.analysis.primary
    bstat = {r.repeat: arm_statistic(_segments([r], key, windows)) for r in b_runs}
    cstat = {r.repeat: arm_statistic(_segments([r], key, windows)) for r in c_runs}
    interleaved = spec.run.order == "interleaved"
    b_all = arm_statistic(_segments(b_runs, key, windows))
    ratios = []
    for rep, c in sorted(cstat.items()):
        # Interleaved repeats are paired: baseline i ran right before candidate i.
        b = bstat.get(rep) if interleaved else b_all
        if c is not None and b:
            ratios.append(c / b)
    return doc.Repeats(
        n=min(len(b_runs), len(c_runs)),
        ratios=ratios,
        spread=(max(ratios) - min(ratios)) if ratios else None,
        interleaved=interleaved,
        paired=interleaved,
    )


PHASE_SUFFIX = "_time"
NOT_PER_STEP = (vocab.INIT_ACTOR_TIME,)  # logged once, at start-up


def _label(key: str) -> tuple[str, str, doc.Direction | None]:
    """Title, unit and better direction of a metric key, from the vocabulary when it is there."""
    if key in same_work.DERIVED:
        return same_work.DERIVED[key]  # type: ignore[return-value]
    m = METRICS.get(key)
    if m is not None:
        return m.title, m.unit, m.direction
    name = key.split("/", 1)[-1].replace("_", " ")
    return (name, "s", "lower") if key.endswith(PHASE_SUFFIX) else (name, "", None)


def _metric_change(
    spec: Spec, key: str, ref: Sequence[RunData], cand: Sequence[RunData], windows: Windows
) -> doc.MetricChange | None:
    """`key` of the candidate against a reference arm, with the spec's interval; None when either
    arm has no value of it inside the windows."""
    a = spec.analysis
    rs, cs = _segments(ref, key, windows), _segments(cand, key, windows)
    rv, cv = arm_statistic(rs), arm_statistic(cs)
    if rv is None and cv is None:
        return None
    label, unit, better = _label(key)
    iv = ratio_interval(rs, cs, method=a.method, confidence=a.confidence, seed=a.seed)
    return doc.MetricChange(
        metric=key,
        label=label,
        unit=unit,
        better=better,
        reference=rv,
        candidate=cv,
        change=change(rv, cv),
        interval=doc.Interval.model_validate(iv.as_dict()),
    )


def phase_keys(runs: Sequence[RunData]) -> list[str]:
    """Per-step phase timers logged by every one of `runs` (perf/*_time), step time first."""
    if not runs:
        return []
    common = set.intersection(*(set(map(str, r.steps.columns)) for r in runs))
    keys = sorted(
        k for k in common if k.startswith(vocab.PERF_PREFIX) and k.endswith(PHASE_SUFFIX) and k not in NOT_PER_STEP
    )
    first = [k for k in (STEP_TIME, ACTOR_TRAIN_TIME) if k in keys]
    return first + [k for k in keys if k not in first]


def _changes(
    spec: Spec, keys: Sequence[str], ref: Sequence[RunData], cand: Sequence[RunData], windows: Windows
) -> list[doc.MetricChange]:
    out = [_metric_change(spec, k, ref, cand, windows) for k in keys]
    return [m for m in out if m is not None]


def _flag_changes(spec: Spec, cand_id: str, formal: dict[str, list[RunData]]) -> list[doc.FlagChange]:
    """Flags whose effective value differs between the baseline, the base and the candidate."""

    def argv(arm: str) -> dict[str, Any]:
        runs = formal.get(arm, [])
        return runs[0].argv if runs else {}

    base_id = spec.candidate(cand_id).base
    cols = [argv(BASELINE), argv(base_id), argv(cand_id)]
    if not cols[2]:
        return []
    order: list[str] = []
    for col in cols:
        order += [f for f in col if f not in order]
    out = []
    for flag in order:
        vals = [argv_value(col, flag) for col in cols]
        if len(set(vals)) > 1:
            out.append(doc.FlagChange(flag=flag, baseline=vals[0], base=vals[1], candidate=vals[2]))
    return out


def _drift(spec: Spec, base: doc.Arm) -> doc.BaselineDrift | None:
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


def _comparison(
    spec: Spec,
    cand_id: str,
    arms: dict[str, doc.Arm],
    formal: dict[str, list[RunData]],
    windows: Windows,
    expected: int | None,
    rerun: Rerun,
    ctx: Context,
) -> doc.Comparison:
    a = spec.analysis
    base, cand = arms[BASELINE], arms[cand_id]
    # Runs a resumed campaign redoes (interrupted, or left running by a runner that died) are not
    # judged: the comparison is incomplete until they are finished, not failed.
    b_runs, b_open = _finished(formal.get(BASELINE, []))
    c_runs, c_open = _finished(formal.get(cand_id, []))
    unfinished = [*b_open, *c_open]
    pending = _pending(unfinished, expected) if unfinished else None
    if pending is not None and not c_runs and not c_open:
        pending += f"; no run of {cand_id} yet"
    guards = gr.check_all(
        b_runs,
        c_runs,
        expected_steps=expected,
        batch_flag=spec.workload.batch_flag,
        fixed_flags=spec.workload.flags,
        pending=pending,
        extra=(
            overlap.check([*b_runs, *c_runs], ctx.experiment, ctx.spans),
            quiet.check(b_runs, c_runs, windows[0][1], windows[-1][2]),
        ),
    )
    b_used, c_used = _stats_runs(b_runs), _stats_runs(c_runs)
    work = same_work.check(
        b_used, c_used, windows, primary=a.primary, tolerance=a.same_work_tolerance, candidate_id=cand_id
    )
    if pending is not None and not (b_runs and c_runs):
        guards.append(gr.Guardrail(same_work.ID, same_work.TITLE, gr.NA, f"not judged yet: {pending}"))
    else:
        guards.append(gr.Guardrail(same_work.ID, same_work.TITLE, work.status, work.reason))
    iv = ratio_interval(
        _segments(b_used, a.primary, windows),
        _segments(c_used, a.primary, windows),
        method=a.method,
        confidence=a.confidence,
        seed=a.seed,
    )
    bw = {w.window: w.mean for w in base.windows.get(a.primary, [])}
    cw = {w.window: w.mean for w in cand.windows.get(a.primary, [])}
    wrows = [
        doc.WindowChange(
            window=name,
            start=s,
            end=e,
            baseline=bw.get(name),
            candidate=cw.get(name),
            change=change(bw.get(name), cw.get(name)),
        )
        for name, s, e in windows
    ]
    changes = [w.change for w in wrows]
    improving = (lambda c: c is not None and c > 0) if a.direction == "higher" else (lambda c: c is not None and c < 0)
    consistent = bool(changes) and all(improving(c) for c in changes)
    reps = _repeats(spec, b_used, c_used, windows)
    # The first failure named, the arm it happened in and whether it was that run's OOM: the
    # next step fixes and re-runs that arm (a baseline's OOM is not the candidate's to fix).
    cause = None
    oom = False
    failed_arm = cand_id
    for arm, label, runs in ((cand_id, "", c_runs), (vocab.BASELINE, "baseline: ", b_runs)):
        why = next((w for r in runs if (w := gr.describe_failure(r))), None)
        if why:
            cause, oom, failed_arm = f"{label}{why}", why.startswith("OOM"), arm
            break
    real_failure = cause is not None
    if not c_runs and not unfinished:
        cause = "no formal run of this candidate"
    verdict = decide(
        guardrails=[g for g in guards if g.id != same_work.ID],  # decided below: it invalidates, not fails
        interval=iv,
        window_changes=changes,
        direction=a.direction,
        min_effect=a.min_effect,
        repeat_ratios=reps.ratios if reps else (),
        failure_cause=cause,
        missing_metric=(missing := missing_metric_cause(a.primary, {BASELINE: b_used, cand_id: c_used})),
    )
    invalid_by = next((g.id for g in guards if g.status == gr.FAIL and g.id in gr.INVALIDATING), None)
    if work.status == gr.FAIL and verdict.status not in ("failed", "invalid"):
        # Different work: the throughput figure cannot decide, whatever the interval says.
        verdict = Verdict("invalid", f"Invalid comparison: {same_work.TITLE.lower()} failed.", work.reason)
        invalid_by = same_work.ID
    if pending is not None:
        verdict = incomplete(verdict, pending=pending, real_failure=real_failure, finished_both=bool(b_runs and c_runs))
    phases = phase_keys([*b_used, *c_used])
    per_token = _changes(spec, [same_work.TIME_PER_RESPONSE_TOKEN], b_used, c_used, windows)
    secondary = _changes(spec, phases, b_used, c_used, windows)
    bases = spec.bases(cand_id)
    base_id = spec.candidate(cand_id).base
    # Against the base: its complete runs only (a failed or unfinished base run's partial data
    # would decide by where it stopped).
    base_done = [r for r in formal.get(base_id, []) if r.status == Status.COMPLETE]
    vs_base = (
        _changes(spec, list(dict.fromkeys([a.primary, *phases[:2]])), base_done, c_used, windows)
        if base_id != BASELINE
        else []
    )
    base_unfinished = _finished(formal.get(base_id, []))[1] if base_id != BASELINE else []
    on_base = next((m for m in vs_base if m.metric == a.primary and m.interval is not None), None)
    if base_unfinished and verdict.status == "accepted":
        # The change it adds cannot be judged before its base is finished: provisional until resumed.
        verdict = incomplete(
            verdict, pending=_pending(base_unfinished, expected), real_failure=False, finished_both=False
        )
    elif on_base is not None and on_base.interval is not None:
        verdict = against_base(
            verdict,
            base=base_id,
            estimate=on_base.interval.estimate,
            low=on_base.interval.low,
            high=on_base.interval.high,
            confidence=on_base.interval.confidence,
            direction=a.direction,
            min_effect=a.min_effect,
            label=_label(a.primary)[0],
        )
    fields: dict[str, Any] = {
        "candidate": cand_id,
        "baseline": BASELINE,
        "headline": _headline(spec, base, cand),
        "windows": wrows,
        "interval": doc.Interval.model_validate(iv.as_dict()),
        "consistent_direction": consistent,
        "repeats": reps,
        "guardrails": [doc.GuardrailResult.model_validate(g.as_dict()) for g in guards],
        "verdict": doc.Verdict.model_validate(verdict.as_dict()),
        "secondary": secondary,
        "same_work": doc.SameWork(
            status=work.status,  # type: ignore[arg-type]
            applies=work.applies,
            tolerance=a.same_work_tolerance,
            tokens_metric=work.tokens_metric,
            windows=[
                doc.SameWorkWindow(
                    window=w.window,
                    response_length_baseline=w.length_b,
                    response_length_candidate=w.length_c,
                    response_length_change=w.length_change,
                    tokens_per_step_baseline=w.tokens_b,
                    tokens_per_step_candidate=w.tokens_c,
                    tokens_per_step_change=w.tokens_change,
                    within=w.within(a.same_work_tolerance),
                )
                for w in work.windows
            ],
            reason=work.reason,
            work_independent=[*per_token, *secondary],
        ),
        "base": None if base_id == BASELINE else base_id,
        "depends_on": bases,
        "vs_base": vs_base,
        "changed_flags": _flag_changes(spec, cand_id, formal),
    }
    # The summary reads the comparison it summarises: a draft without it (not validated) first.
    draft = doc.Comparison.model_construct(**fields)
    missing_decided = verdict.status == "inconclusive" and missing is not None and verdict.cause == missing
    summary = _summary(spec, draft, base, cand, rerun, (failed_arm, oom), invalid_by, missing_metric=missing_decided)
    return doc.Comparison(**fields, summary=summary)


def _summary(
    spec: Spec,
    comp: doc.Comparison,
    base: doc.Arm,
    cand: doc.Arm,
    rerun: Rerun,
    failure: tuple[str, bool],
    invalid_by: str | None,
    *,
    missing_metric: bool,
) -> doc.CandidateSummary:
    a = spec.analysis
    label, unit, _ = _label(a.primary)
    primary = doc.MetricChange(
        metric=a.primary,
        label=label,
        unit=unit,
        better=a.direction,
        reference=base.overall.get(a.primary),
        candidate=cand.overall.get(a.primary),
        change=change(base.overall.get(a.primary), cand.overall.get(a.primary)),
        interval=comp.interval,
    )
    step = next(
        (m for m in comp.secondary if m.metric == STEP_TIME),
        doc.MetricChange(metric=STEP_TIME, label="step time", unit="s", better="lower"),
    )
    bp, cp = base.gpu.peak_mib(), cand.gpu.peak_mib()
    peak = doc.MetricChange(
        metric="gpu/mem_peak_mib",
        label="peak GPU memory",
        unit="MiB",
        better="lower",
        reference=bp,
        candidate=cp,
        change=change(bp, cp),
    )
    step_next, cause, evidence = next_step.derive(
        comp,
        direction=a.direction,
        min_effect=a.min_effect,
        metric_label=label,
        rerun=rerun,
        failed_arm=failure[0],
        failed_oom=failure[1],
        invalid_by=invalid_by,
        missing_metric=missing_metric,
    )
    return doc.CandidateSummary(
        is_pr=comp.candidate == spec.pr_candidate(),
        primary=primary,
        step_time=step,
        peak_memory=peak,
        verdict=comp.verdict.status,
        cause=cause,
        evidence=evidence,
        next_step=step_next,
    )


def build(spec: Spec, runs: Sequence[RunData], ctx: Context) -> doc.AnalysisDocument:
    """The analysis.json document for one experiment, as it reads back from the file (NaN and
    infinities are null, as JSON has them)."""
    runs = [same_work.with_derived(r) for r in runs]
    formal: dict[str, list[RunData]] = {}
    for r in runs:
        if r.role == FORMAL:
            formal.setdefault(r.arm, []).append(r)
    all_formal = [r for rs in formal.values() for r in rs]
    expected = _expected_steps(spec, all_formal)
    windows = _windows(spec, expected, all_formal)
    a = spec.analysis
    metrics = list(dict.fromkeys([a.primary, *a.secondary, *(h[0] for h in HEADLINE if ":" not in h[0])]))
    arm_ids = [*spec.arm_ids(), *sorted(set(formal) - set(spec.arm_ids()))]
    arms = {arm: _arm_block(arm, spec, formal.get(arm, []), windows, metrics, ctx) for arm in arm_ids}
    rerun = Rerun(ctx.spec_source or f"runs/{ctx.experiment}/experiment.toml", spec.profile, ctx.run_name)
    comparisons = [_comparison(spec, c.id, arms, formal, windows, expected, rerun, ctx) for c in spec.candidates]
    drift = _drift(spec, arms[BASELINE]) if BASELINE in arms else None
    warnings = []
    if drift is not None and drift.flagged and drift.change is not None:
        warnings.append(
            f"the baseline's {_label(a.primary)[0]} drifted {drift.change:+.1%} from {drift.first_window} to "
            f"{drift.last_window}: the machine or the workload changed during the campaign, so arms measured at "
            'different times are not interchangeable; interleaved repeats ([run] order = "interleaved") spread it '
            "over both arms"
        )
    warnings += quiet.warnings(all_formal, windows[0][1], windows[-1][2])
    base_runs = formal.get(BASELINE, [])
    starts = sorted(m for m in (r.manifest.get("started_utc") for r in runs) if m)
    document = doc.AnalysisDocument(
        generated_utc=ctx.generated_utc,
        reportgen_version=__version__,
        inputs_sha256=ctx.inputs_sha256,
        experiment=doc.Experiment(
            name=ctx.experiment,
            title=spec.title,
            hypothesis=spec.hypothesis,
            issue=spec.issue,
            pr=spec.pr,
            spec_sha256=ctx.spec_sha256,
            profile=spec.profile,
            created_utc=starts[0] if starts else None,
            baseline_commit=ctx.baseline_commit,
            dirty=ctx.dirty,
        ),
        settings=doc.Settings(
            primary=doc.Primary(key=a.primary, direction=a.direction),
            secondary=list(a.secondary),
            warmup_steps=a.warmup_steps,
            steps_expected=expected,
            windows=[doc.Window(name=n, start=s, end=e) for n, s, e in windows],
            min_effect=a.min_effect,
            confidence=a.confidence,
            method=a.method,
            seed=a.seed,
            site_url=a.site_url,
            pr_candidate=spec.pr_candidate(),
            same_work_tolerance=a.same_work_tolerance,
        ),
        machine=doc.Machine.model_validate(ctx.machine),
        fixed_workload=[
            doc.FixedFlag(flag=f, value=argv_value(base_runs[0].argv, f) if base_runs else None)
            for f in spec.workload.flags
        ],
        arms=list(arms.values()),
        comparisons=comparisons,
        profiler_runs=[doc.ProfilerRun.model_validate(p) for p in ctx.profiler_runs],
        baseline_drift=drift,
        warnings=warnings,
    )
    return doc.AnalysisDocument.model_validate_json(document.model_dump_json())

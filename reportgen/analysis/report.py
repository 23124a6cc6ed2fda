"""Assemble the whole analysis of one experiment into the analysis.json document.

Part of reportgen.analysis (pure): takes the spec, the runs' data and a `Context` of facts the
I/O edge gathered (hashes, diffs, machine, profiler artifacts); returns an `AnalysisDocument`
(reportgen.analysis.document, documented in docs/formats/analysis.md). Never raises on failed or
partial runs: a failure becomes data (a guardrail, a verdict), not an exception.

For each candidate, in four steps: gather the evidence (evidence.py: runs, failures, guardrails,
same work), the statistics (runlevel.py: pairs of runs and their repeated interval; quality.py:
the training-quality half over the same pairs), the decision (decision.py, the one place a verdict
is made, of both halves), then the document's parts (tables.py for the descriptive tables,
warmup_cost.py and warmup.py for the warm-up beside the steady-state verdict, next_step.py for
what to do next). Over the whole experiment: where each arm settles (warmup.py), the baseline's
drift, and what the analysis.json this one replaces said (reanalysis.py).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Final

from reportgen import __version__
from reportgen.analysis import (
    behaviour,
    check,
    coverage,
    interleaving,
    next_step,
    quality,
    quiet,
    reanalysis,
    same_work,
    set_aside,
    tables,
    warmup,
    warmup_cost,
    workload,
)
from reportgen.analysis import design as dz
from reportgen.analysis import document as doc
from reportgen.analysis import guardrails as gr
from reportgen.analysis.check import Span
from reportgen.analysis.decision import Evidence, decide, missing_metric_cause, speed_half
from reportgen.analysis.evidence import (
    Campaign,
    expected_steps,
    first_failure,
    label_of,
    metric_change_of,
    pending_text,
    phase_keys,
    role_formal,
    split_finished,
    stats_runs,
    windows_of,
)
from reportgen.analysis.inputs import argv_value
from reportgen.analysis.next_step import Rerun
from reportgen.analysis.stats import change
from reportgen.specfile.model import Spec
from reportgen.store.run import StoredRun
from reportgen.traces.stats import RunSummary, experiment_stats
from reportgen.vocab import BASELINE, HIGHER, LOWER, PEAK_GPU_MEMORY, STEP_TIME, Status, Verdicts, is_better

SCHEMA_VERSION = doc.SCHEMA_VERSION

EXPERIMENT_AS_GIVEN: Final = ("title", "hypothesis", "issue", "pr", "profile")
"""The spec's keys that analysis.json's `experiment` restates as the spec holds them (the others come
from the files: the folder's name, the spec's digest, the first run's start, the baseline's commit)."""
SETTINGS_AS_GIVEN: Final = (
    "secondary",
    "warmup_steps",
    "min_effect",
    "confidence",
    "method",
    "seed",
    "site_url",
    "same_work_tolerance",
    "quality_metric",
    "quality_margin",
    "quality_margins",
)
"""The [analysis] keys that analysis.json's `settings` restates as the spec holds them (the others are
derived: the primary metric with its direction, the steps expected, the windows as applied, the
design, the pull request's candidate). tests/analysis/test_document.py checks that each is a field
of both models."""


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
    profiler_runs: list[doc.ProfilerRun] = field(default_factory=list)
    # the stored profiler summary of every run that has one, in run order
    trace_summaries: tuple[RunSummary, ...] = ()
    spec_source: str | None = None  # the spec file `reportgen run` was given (experiment.json)
    spec_dir: str | None = None  # the folder the spec ran from, relative to the runs' working directory
    prior_looks: tuple[int, ...] = ()  # looks an earlier design of the campaign took (experiment.json)
    # Every run recorded under the runs folder on the machines of this experiment's runs (overlap checks).
    spans: tuple[Span, ...] = ()
    # Arms at git revisions (revisions.json): each candidate's code change against the baseline's commit.
    code_changes: dict[str, doc.CodeChange] = field(default_factory=dict)
    # The analysis.json this one replaces (read before it is written) and the spec's amendments in words
    # since it was made (experiment.json): what changed and why (reanalysis.py).
    previous: doc.AnalysisDocument | None = None
    amendments: tuple[str, ...] = ()


def design_of(spec: Spec, prior_looks: Sequence[int] = ()) -> doc.Design:
    """The decision design the spec's [run] and [analysis] tables ask for."""
    r, a = spec.run, spec.analysis
    return dz.make(
        sequential=r.until == "decided",
        looks=r.looks(),
        min_pairs=r.min_pairs,
        prior_looks=prior_looks,
        confidence=a.confidence,
        min_effect=a.min_effect,
        pool=a.pool,
        interleaved=r.order == "interleaved",
        budget_minutes=r.budget_minutes,
    )


def quality_settings(spec: Spec) -> quality.Settings:
    """The spec's quality keys as the quality half reads them."""
    a = spec.analysis
    return quality.Settings(metric=a.quality_metric, margin=a.quality_margin, margins=dict(a.quality_margins))


def _work_guardrail(finding: doc.SameWork) -> doc.GuardrailResult:
    return gr.guardrail(same_work.ID, same_work.TITLE, finding.status, finding.reason)


def _comparison(
    c: Campaign, cand_id: str, arms: Mapping[str, doc.ArmResult], expected: int | None, rerun: Rerun, ctx: Context
) -> doc.Comparison:
    spec, windows = c.spec, c.windows
    a = spec.analysis
    higher = a.direction == HIGHER
    base, cand = arms[BASELINE], arms[cand_id]
    # Gather: runs a resumed campaign redoes (interrupted, or left running by a runner that died)
    # are not judged; the comparison is incomplete until they are finished, not failed.
    b_runs, b_open = split_finished(c.formal.get(BASELINE, []))
    c_runs, c_open = split_finished(c.formal.get(cand_id, []))
    unfinished = [*b_open, *c_open]
    pending = pending_text(unfinished, expected) if unfinished else None
    if pending is not None and not c_runs and not c_open:
        pending += f"; no run of {cand_id} yet"
    gi = gr.GuardrailInput(
        baseline=b_runs,
        candidate=c_runs,
        expected_steps=expected,
        batch_flag=spec.workload.batch_flag,
        fixed_flags=spec.workload.flags,
        seed_flags=spec.workload.seed_flags if spec.run.seeds == "per-block" else (),
        windows=windows,
        experiment=ctx.experiment,
        spans=ctx.spans,
    )
    base_id = spec.candidate(cand_id).base
    base_done = c.complete(base_id) if base_id != BASELINE else []
    # Pairs the machine disturbed are set aside before anything is judged (set_aside.py): a
    # sequential campaign redoes them; more than its limit fail quiet_machine instead. A fixed
    # campaign, which nothing would redo them in, judges every pair as before.
    refs = [gi, *([replace(gi, baseline=base_done)] if base_done else [])]
    parted = set_aside.split(refs) if c.design.mode == "sequential" else set_aside.Split([])
    if out := parted.repeats():
        b_runs, c_runs, base_done = (set_aside.keep(x, out) for x in (b_runs, c_runs, base_done))
        gi = replace(gi, baseline=b_runs, candidate=c_runs)
        mine = {BASELINE, cand_id, base_id}
        c = replace(c, formal={arm: rs if arm not in mine else set_aside.keep(rs, out) for arm, rs in c.formal.items()})
    guards = gr.check_all(gi, pending=pending)
    if out and not (b_runs and c_runs):  # every pair set aside: nothing left to judge until a new block runs
        said = f"not judged: every pair was set aside ({', '.join(str(k) for k in sorted(out))})"
        guards = [gr.guardrail(g.id, g.title, gr.NA, said) for g in guards]
    if parted.persistent is not None:
        guards = [parted.persistent if g.id == quiet.ID else g for g in guards]
    b_used, c_used = stats_runs(b_runs), stats_runs(c_runs)
    trains = (
        quality.compare(b_runs, c_runs, windows, design=c.design, settings=quality_settings(spec))
        if b_runs and c_runs
        else None
    )
    work = same_work.check(
        b_used, c_used, windows, primary=a.primary, tolerance=a.same_work_tolerance, candidate_id=cand_id
    )
    judged = pending is None or bool(b_runs and c_runs)
    work_guard = (
        _work_guardrail(work)
        if judged
        else gr.guardrail(same_work.ID, same_work.TITLE, gr.NA, f"not judged yet: {pending}")
    )
    base_open = split_finished(c.formal.get(base_id, []))[1] if base_id != BASELINE else []
    base_work = (
        same_work.check(
            base_done, c_used, windows, primary=a.primary, tolerance=a.same_work_tolerance, candidate_id=cand_id
        )
        if base_done
        else None
    )
    # Statistics: the candidate's complete runs against the baseline's, and against its base's.
    vs_baseline = c.compare(a.primary, BASELINE, b_runs, c_runs, higher=higher)
    vs_base_rl = c.compare(a.primary, base_id, base_done, c_runs, higher=higher) if base_done else None
    missing = missing_metric_cause(a.primary, {BASELINE: b_used, cand_id: c_used})
    gap = coverage.missed_windows(coverage.spans([*b_used, *c_used], a.primary), windows, a.warmup_steps)
    maths_guard = behaviour.check(b_runs, c_runs) if judged else None
    all_guards = [*guards, work_guard, *([maths_guard] if maths_guard is not None else [])]
    tally = check.tally(all_guards)
    flags = tables.flag_changes(spec, cand_id, c.formal)
    maths = tables.maths_changes(flags)
    # Decide: once, from everything above.
    verdict = decide(
        Evidence(
            candidate=cand_id,
            guardrails=guards,
            same_work=(work_guard.status, work_guard.reason),
            vs_baseline=vs_baseline,
            design=c.design,
            direction=a.direction,
            metric_label=label_of(a.primary)[0],
            base=base_id,
            vs_base=vs_base_rl,
            base_same_work=(base_work.status, base_work.reason) if base_work is not None else None,
            failure=first_failure(cand_id, c_runs, b_runs),
            pending=pending,
            finished_both=bool(b_runs and c_runs),
            base_pending=pending_text(base_open, expected) if base_open else None,
            missing_metric=missing,
            no_runs=not c_runs and not unfinished and not out,
            windows=[name for name, _, _ in windows],
            windows_gap=gap.cause if gap is not None else None,
            tally=tally,
            maths=maths,
            set_aside=len(parted.set_aside),
            quality=trains,
        )
    )
    # Beside the steady-state verdict: the warm-up it leaves out, and a window the warm-up reaches into.
    ref_id = verdict.against if verdict.against in arms else BASELINE
    ref_runs = base_done if ref_id != BASELINE else b_runs
    done = [r for r in ref_runs if r.status == Status.COMPLETE], [r for r in c_runs if r.status == Status.COMPLETE]
    warm = warmup_cost.compare(*done, windows, reference=ref_id, confidence=a.confidence)
    inside = warmup.inside(windows, {ref_id: arms[ref_id].settled_at, cand_id: cand.settled_at})
    # The document's parts.
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
    consistent = bool(changes) and all(ch is not None and is_better(1 + ch, a.direction) for ch in changes)
    phases = phase_keys([*b_used, *c_used])
    secondary = c.changes(phases, BASELINE, b_used, c_used)
    per_token = c.changes([same_work.TIME_PER_RESPONSE_TOKEN], BASELINE, b_used, c_used)
    vs_base = (
        c.changes(list(dict.fromkeys([a.primary, *phases[:2]])), base_id, base_done, c_used)
        if base_id != BASELINE
        else []
    )
    deciding = vs_base_rl if verdict.against != BASELINE and vs_base_rl is not None else vs_baseline
    # Open: the speed half (too few pairs, too wide, windows), or faster with the quality half still open
    # (its pairs are against the baseline: those count too).
    quality_pairs = trains.pairs if trains is not None and verdict.basis == "quality_open" else 0
    needs = (
        c.design.mode == "sequential"
        and verdict.status == Verdicts.INCONCLUSIVE
        and (
            verdict.basis in ("too_few_pairs", "open", "windows", "quality_open")
            or (verdict.basis == "no_pairs" and bool(out))
        )
        and max(len(deciding.pairs), quality_pairs) < c.design.max_pairs
    )
    fields: dict[str, Any] = {
        "candidate": cand_id,
        "baseline": BASELINE,
        "headline": tables.headline(spec, base, cand),
        "windows": wrows,
        "interval": vs_baseline.interval,
        "within_run": c.within_run(a.primary, b_used, c_used),
        "run_level": vs_baseline,
        "base_run_level": vs_base_rl,
        "needs_pairs": needs,
        "set_aside": parted.set_aside,
        "suggested_windows": [doc.Window(name=n, start=st, end=en) for n, st, en in gap.suggested] if gap else [],
        "warmup_cost": warm,
        "warmup_in_windows": inside,
        "consistent_direction": consistent,
        "guardrails": all_guards,
        "guardrail_tally": tally,
        "maths_changes": maths,
        "verdict": verdict,
        "secondary": secondary,
        "same_work": work.model_copy(update={"work_independent": [*per_token, *secondary]}),
        "quality": trains,
        "base": None if base_id == BASELINE else base_id,
        "depends_on": spec.bases(cand_id),
        "vs_base": vs_base,
        "changed_flags": flags,
        "code_change": ctx.code_changes.get(cand_id),
    }
    # The summary reads the comparison it summarises: a draft without it (not validated) first.
    draft = doc.Comparison.model_construct(**fields)
    ref_arm = arms.get(verdict.against, base)
    summary = _summary(spec, draft, ref_arm, base, cand, rerun, c.design)
    return doc.Comparison(**fields, summary=summary)


def _primary(spec: Spec, ref: doc.ArmResult, cand: doc.ArmResult, rl: doc.RunLevel) -> doc.MetricChange:
    a = spec.analysis
    r, v = ref.overall.get(a.primary), cand.overall.get(a.primary)
    return metric_change_of(
        a.primary, better=a.direction, against=ref.id, reference=r, candidate=v, interval=rl.interval
    )


def _summary(
    spec: Spec,
    comp: doc.Comparison,
    ref: doc.ArmResult,
    base: doc.ArmResult,
    cand: doc.ArmResult,
    rerun: Rerun,
    design: doc.Design,
) -> doc.CandidateSummary:
    a = spec.analysis
    primary = _primary(spec, ref, cand, comp.deciding())
    # Beside the verdict, every figure is against the arm that decided it (the base for A3 on A1).
    against = comp.vs_base if ref.id != BASELINE and comp.vs_base else comp.secondary
    step = next(
        (m for m in against if m.metric == STEP_TIME),
        metric_change_of(STEP_TIME, better=LOWER, against=ref.id),  # no step time in either arm
    )
    bp, cp = base.memory.used_mib, cand.memory.used_mib
    if bp is None or cp is None:  # no figure a limit bounds: nvidia-smi's peak inside the windows
        bp, cp = base.gpu.peak_mib(), cand.gpu.peak_mib()
    peak = metric_change_of(PEAK_GPU_MEMORY, better=LOWER, against=base.id, reference=bp, candidate=cp)
    step_next, cause, evidence = next_step.derive(
        comp, metric_label=label_of(a.primary)[0], rerun=rerun, design=design, memory=cand.memory
    )
    deciding = comp.deciding()
    # The arms whose warm-up bears on the candidate's lines: itself, the arm it is decided against, the baseline.
    settled = {arm.id: arm.settled_at for arm in (ref, base, cand)}
    named = dict.fromkeys([comp.candidate, comp.verdict.against, BASELINE])
    speed = speed_half(deciding, design, direction=a.direction, metric_label=label_of(a.primary)[0])
    return doc.CandidateSummary(
        is_pr=comp.candidate == spec.pr_candidate(),
        speed=speed,
        warmup=warmup.note([(w.window, w.start, w.end) for w in comp.windows], {a: settled.get(a) for a in named}),
        primary=primary,
        primary_vs_baseline=_primary(spec, base, cand, comp.run_level) if ref.id != BASELINE else None,
        step_time=step,
        peak_memory=peak,
        verdict=comp.verdict.status,
        cause=cause,
        evidence=evidence,
        next_step=step_next,
    )


def _cost(
    spec: Spec, design: doc.Design, formal: Mapping[str, Sequence[StoredRun]], comps: Sequence[doc.Comparison]
) -> doc.CampaignCost:
    """What the formal runs took, and, for a sequential campaign, why it stopped and what the
    fixed design with the same error rates would have taken at the measured run times."""
    finished = {arm: split_finished(rs)[0] for arm, rs in formal.items()}
    seconds = {arm: [float(r.manifest.duration_s or 0.0) for r in rs] for arm, rs in finished.items()}
    minutes = sum(sum(v) for v in seconds.values()) / 60.0
    gpus = spec.run.num_gpus
    fixed = dz.fixed_equivalent(design)
    fixed_minutes = None
    if fixed is not None and all(seconds.get(arm) for arm in spec.arm_ids()):
        fixed_minutes = fixed * sum(sum(seconds[arm]) / len(seconds[arm]) for arm in spec.arm_ids()) / 60.0
    if design.mode == "fixed":
        stopped = "fixed"
    elif any(c.needs_pairs for c in comps):
        stopped = "open"
    elif any(c.verdict.basis == "max_pairs" for c in comps):
        stopped = "max_pairs"
    else:
        stopped = "decided"
    return doc.CampaignCost(
        pairs_run={arm: len(rs) for arm, rs in finished.items()},
        run_minutes=minutes,
        gpu_minutes=minutes * gpus if gpus else None,
        fixed_pairs=fixed,
        fixed_minutes=fixed_minutes * gpus if fixed_minutes is not None and gpus else fixed_minutes,
        stopped=stopped,  # type: ignore[arg-type]
    )


def build(spec: Spec, runs: Sequence[StoredRun], ctx: Context) -> doc.AnalysisDocument:
    """The analysis.json document for one experiment, as it reads back from the file (NaN and
    infinities are null, as JSON has them)."""
    runs = [same_work.with_derived(r) for r in runs]
    formal = role_formal(runs)
    all_formal = [r for rs in formal.values() for r in rs]
    expected = expected_steps(spec, all_formal)
    windows = windows_of(spec, expected, all_formal)
    a = spec.analysis
    design = design_of(spec, ctx.prior_looks)
    metrics = list(dict.fromkeys([a.primary, *a.secondary, *(h[0] for h in tables.HEADLINE if ":" not in h[0])]))
    arm_ids = [*spec.arm_ids(), *sorted(set(formal) - set(spec.arm_ids()))]
    arms = {
        arm: tables.arm_block(
            arm, spec, formal.get(arm, []), windows, metrics, ctx.diffs, experiment=ctx.experiment, spans=ctx.spans
        )
        for arm in arm_ids
    }
    for arm in arm_ids:  # the code each arm ran (arms at git revisions) and its behavioural fingerprint
        ran = formal.get(arm, [])
        revs = sorted({rev for r in ran if (rev := behaviour.revision(r)) is not None})
        arms[arm] = arms[arm].model_copy(
            update={"revision": revs[0] if len(revs) == 1 else None, "fingerprint": behaviour.fingerprint(ran)}
        )
    campaign = Campaign(spec=spec, windows=windows, design=design, formal=formal)
    rerun = Rerun(
        ctx.spec_source or f"runs/{ctx.experiment}/experiment.toml",
        spec.profile,
        ctx.experiment,  # `reportgen run --name` it: the folder is not always the spec's name
        experiment=ctx.experiment,
        spec_dir=ctx.spec_dir,
        candidates_section=spec.section("candidates"),
        run_section=spec.section("run"),
        analysis_section=spec.section("analysis"),
        fixed_flags=tuple(spec.workload.flags),
    )
    # Where each arm's warm-up ends, from its complete formal runs' steps (warmup.py).
    settled = {arm: warmup.settled_at(campaign.complete(arm), a.primary) for arm in arm_ids}
    arms = {arm: block.model_copy(update={"settled_at": settled.get(arm)}) for arm, block in arms.items()}
    comparisons = [_comparison(campaign, c.id, arms, expected, rerun, ctx) for c in spec.candidates]
    # An out-of-memory failure's fix, from what the experiment's other candidates measured (next_step.py).
    comparisons = next_step.revise_oom_steps(comparisons, arms, rerun=rerun, metric_label=label_of(a.primary)[0])
    drift = (
        warmup.steady_drift(a.primary, campaign.complete(BASELINE), windows, settled.get(BASELINE), a.min_effect)
        if BASELINE in arms
        else None
    )
    warnings = []
    if drift is not None and drift.flagged and drift.change is not None:
        # Interleaving is advised only to a campaign that did not interleave, in the section that ran.
        remedy = (
            "the campaign's interleaved blocks spread it over both arms of each pair"
            if design.interleaved
            else f'interleaved repeats (order = "interleaved" in {spec.section("run")}) spread it over both arms'
        )
        steady = f" (its steady steps, from step {drift.from_step})" if drift.from_step is not None else ""
        warnings.append(
            f"the baseline's {label_of(a.primary)[0]} drifted {drift.change:+.1%} from {drift.first_window}{steady} to "
            f"{drift.last_window}, in every one of its runs: the machine or the workload changed during the campaign, so arms measured at "
            f"different times are not interchangeable; {remedy}"
        )
    warnings += warmup.inside(windows, {arm: settled.get(arm) for arm in spec.arm_ids()})
    warnings += quiet.warnings(all_formal, windows[0][1], windows[-1][2])
    if design.interleaved:
        warnings += interleaving.warnings(spec.arm_ids(), all_formal)
    base_runs = formal.get(BASELINE, [])
    starts = sorted(m for m in (r.manifest.started_utc for r in runs) if m)
    document = doc.AnalysisDocument(
        generated_utc=ctx.generated_utc,
        reportgen_version=__version__,
        inputs_sha256=ctx.inputs_sha256,
        experiment=doc.Experiment(
            **spec.model_dump(include=set(EXPERIMENT_AS_GIVEN)),
            name=ctx.experiment,
            spec_sha256=ctx.spec_sha256,
            created_utc=starts[0] if starts else None,
            baseline_commit=ctx.baseline_commit,
            dirty=ctx.dirty,
        ),
        settings=doc.Settings(
            **a.model_dump(include=set(SETTINGS_AS_GIVEN)),
            primary=doc.Primary(key=a.primary, direction=a.direction),
            steps_expected=expected,
            windows=[doc.Window(name=n, start=s, end=e) for n, s, e in windows],
            design=design,
            pr_candidate=spec.pr_candidate(),
        ),
        machine=doc.Machine.model_validate(ctx.machine),
        workload=workload.describe(
            spec.recipe.entrypoint, formal.get(BASELINE, []), steps=expected, batch_flag=spec.workload.batch_flag
        ),
        fixed_workload=[
            doc.FixedFlag(flag=f, value=argv_value(base_runs[0].argv, f) if base_runs else None)
            for f in spec.workload.flags
        ],
        arms=list(arms.values()),
        comparisons=comparisons,
        profiler_runs=list(ctx.profiler_runs),
        traces=experiment_stats(ctx.trace_summaries),
        baseline_drift=drift,
        campaign=_cost(spec, design, formal, comparisons),
        warnings=warnings,
        reanalysis=reanalysis.record(ctx.previous, ctx.spec_sha256, ctx.amendments, comparisons),
    )
    return doc.AnalysisDocument.model_validate_json(document.model_dump_json())

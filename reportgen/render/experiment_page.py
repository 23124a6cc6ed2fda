"""The experiment page (render stage): the answer first, then the evidence.

Order: the answer (one row per candidate, the PR's first, with the next step and the cause of
any verdict that is not a plain accept or reject); hypothesis; headline tables; windows (with the
baseline's own drift); intervals and verdicts; guardrails; curves; where the time went (the
traces section); the fixed workload (unchanging flags collapsed); runs; how to reproduce.
"""

from __future__ import annotations

import json
import tomllib
from collections.abc import Sequence

from reportgen import vocab
from reportgen.analysis.document import Comparison, RunAttempt
from reportgen.analysis.memory import LOW_HEADROOM
from reportgen.render import answer as answer_block
from reportgen.render import (
    blocks,
    charts,
    decision,
    figures,
    kinds,
    machine_charts,
    memory_words,
    reproduce,
    safe,
    steady_state,
    time_section,
)
from reportgen.render.blocks import badge, table
from reportgen.render.common import (
    interval_cell,
    memory_note,
    metric_change_rows,
    metric_title,
    recipe_dir_where_it_ran,
    report_kind,
    same_work_body,
    spec_path_for_reader,
)
from reportgen.render.format import (
    fmt_change,
    fmt_count,
    fmt_difference_interval,
    fmt_gib,
    fmt_mib,
    fmt_num,
    fmt_share,
    fmt_value,
)
from reportgen.render.load import PublishedExperiment
from reportgen.render.machines_table import machines_section
from reportgen.render.page import Page, candidate_slug, experiment_base
from reportgen.vocab import (
    ACTOR_TRAIN_TIME,
    ROLLOUT_TIME,
    STEP_TIME,
    verdict_label,
)


def answer(exp: PublishedExperiment, context: str = "") -> str:
    """The answer block: one line per candidate with both halves, then `context` (what ran), one row per
    candidate (the PR's first), next steps, causes, evidence."""
    href = {c.candidate: f"{candidate_slug(c.candidate)}/index.md" for c in exp.analysis.comparisons}
    rows = decision.answers(exp.analysis, href_of=href, spec_path=lambda w: spec_path_for_reader(exp, w))
    return answer_block.block(rows, docs_prefix="../../", context=context)


def standard_error(exp: PublishedExperiment, arm_id: str, key: str, window: str) -> float | None:
    """The standard error of one window's mean (std / sqrt(n)): the precision its mean is shown at."""
    return figures.standard_error(exp.analysis, arm_id, key, window)


def windows_table(exp: PublishedExperiment, key: str) -> str:
    """Per arm (one content tab each): W1/W2/W3 and pooled rows, then the mean of window means.
    A window mean is rounded to its standard error; spread statistics keep three digits."""
    unit = vocab.metric(key).unit
    out = []
    empty = []
    for arm in exp.analysis.arms:
        if not any(w.n for w in arm.windows.get(key, [])):
            empty.append(arm.id)  # a table of n/a says less than one line
            continue
        rows = []
        for w in arm.windows.get(key, []):
            name = "all windows pooled" if w.window == "all" else w.window
            se = standard_error(exp, arm.id, key, w.window)
            rows.append(
                [
                    safe.text(name),
                    f"{w.start}-{w.end}",
                    fmt_num(w.n, 0),
                    fmt_value(w.mean, halfwidth=se),
                    *(fmt_value(x) for x in (w.std, w.median, w.p95)),
                ]
            )
        overall = arm.overall.get(key)
        pooled_se = standard_error(exp, arm.id, key, "all")
        rows.append(["**mean of window means**", "", "", f"**{fmt_value(overall, halfwidth=pooled_se)}**", "", "", ""])
        out.append(f'=== "{safe.text(arm.id)}"\n')
        head = ["window", "steps", "n", f"mean ({unit})" if unit else "mean", "std", "median", "p95"]
        tbl = table(head, rows, html=False)  # indented into a tab
        out.append("\n".join("    " + line for line in tbl.split("\n")) + "\n")
    if empty:
        out.append(safe.text(f"No step of {', '.join(empty)} fell inside a window (see the runs below).") + "\n")
    return "\n".join(out)


def warmup_line(exp: PublishedExperiment) -> str:
    """Where each arm's warm-up ends, found from its steps (arms[].settled_at), against the first
    window's start: a window that starts earlier averages warm-up steps in."""
    found = [(a.id, a.settled_at) for a in exp.analysis.arms if a.settled_at is not None]
    if not found:
        return ""
    first = exp.analysis.settings.windows[0].start if exp.analysis.settings.windows else None
    steps = ", ".join(f"{arm} at step {s}" for arm, s in found)
    inside = [arm for arm, s in found if first is not None and first < s]
    said = safe.text(f"{steps}.")
    if inside:
        said += " " + safe.text(f"The first window starts at step {first}, inside the warm-up of {', '.join(inside)}.")
    how = "[how it is found](../../analysis.md#warm-up)"
    return f"Warm-up ends (the steady state found from each arm's steps, {how}): {said}\n"


def window_change_table(exp: PublishedExperiment) -> str:
    """Each window's mean against the baseline's, the change rounded as its candidate's interval allows;
    a candidate that reached no window gets one "not reached" cell, not one per window."""
    comps = exp.analysis.comparisons
    key = exp.analysis.primary.key
    names = [w.name for w in exp.analysis.settings.windows]
    reached = [c for c in comps if any(w.candidate is not None for w in c.windows)]
    header = ["window", "baseline", *[f"{safe.text(c.candidate)} (change)" for c in reached]]
    rows = []
    for name in names:
        base = next((w.baseline for c in comps for w in c.windows if w.window == name), None)
        row = [safe.text(name), fmt_value(base, halfwidth=standard_error(exp, vocab.BASELINE, key, name))]
        for c in reached:
            w = next((w for w in c.windows if w.window == name), None)
            iv = c.interval
            d = blocks.interval_decimals(iv)
            row.append(
                f"{fmt_value(w.candidate, halfwidth=standard_error(exp, c.candidate, key, name))} "
                f"({fmt_change(w.change, digits=d)})"
                if w is not None and w.candidate is not None
                else "not reached"
            )
        rows.append(row)
    out = table(header, rows)
    missing = [c.candidate for c in comps if c not in reached]
    if missing:
        out += "\n\n" + safe.text(f"Not in the table: {', '.join(missing)} reached no window (see its write-up).")
    return out


def warnings_block(exp: PublishedExperiment) -> str:
    """Findings about the whole experiment (analysis.json `warnings`, e.g. the baseline drifting
    between its first and last window), one admonition each."""
    out = []
    drift = exp.analysis.baseline_drift
    for w in exp.analysis.warnings:
        title = "Baseline drift" if drift is not None and drift.flagged and "drift" in w else "Warning"
        if title == "Baseline drift" and drift is not None and drift.change is not None:
            unit = vocab.metric(drift.metric).unit
            title = (
                f"The baseline itself moved {fmt_change(drift.change, digits=1)} from {drift.first_window} to "
                f"{drift.last_window} ({figures.arm_value(exp.analysis, vocab.BASELINE, drift.metric, drift.first, unit=unit, window=drift.first_window)} to "
                f"{figures.arm_value(exp.analysis, vocab.BASELINE, drift.metric, drift.last, unit=unit, window=drift.last_window)})"
            )
        out.append(f'!!! warning "{safe.text(title)}"\n    {safe.text(w)}\n')
    return "\n".join(out)


def indented(text: str) -> str:
    return "\n".join(("    " + line) if line else "" for line in text.split("\n"))


def secondary_tabs(exp: PublishedExperiment) -> list[str]:
    """Step time, actor train time and every per-phase time, with intervals, one tab per candidate,
    collapsed under one line (the answer shows step time; each write-up shows its own in full)."""
    comps = [c for c in exp.analysis.comparisons if any(m.candidate is not None for m in c.secondary)]
    if not comps:
        return []
    n = max(len(c.secondary) for c in comps)
    md = [f'??? info "Step time and {fmt_count(n - 1, "other phase")} per candidate, with intervals"\n']
    for c in comps:
        md.append(indented(f'=== "{safe.text(c.candidate)}"\n'))
        tbl = table(
            ["metric", "baseline", safe.text(c.candidate), "change"],
            metric_change_rows(exp.analysis, c.candidate, c.secondary),
            html=False,
        )
        md.append(indented(indented(tbl)) + "\n")
    return md


def same_work_section(exp: PublishedExperiment) -> list[str]:
    """Did the arms generate comparable work? Per candidate (a tab each): the finding, the windows,
    and the figures that do not depend on how much was generated (so a reader sees what did change)."""
    comps = [c for c in exp.analysis.comparisons if c.same_work.applies]
    if not comps:
        return []
    tol = comps[0].same_work.tolerance
    md = [
        "## Same generated work {#same-work}\n",
        "A throughput metric compares speed only when both arms generated comparable work: the candidate's "
        f"mean response length and tokens per step must stay within {fmt_change(tol, digits=0).lstrip('+')} of "
        "the baseline's in every window, or the verdict is invalid.\n",
    ]
    for c in comps:
        mark = {"pass": "✓", "fail": "✗", "not_applicable": "–"}[c.same_work.status]
        md.append(f'=== "{safe.text(c.candidate)} {mark}"\n')
        md += [indented(part) for part in same_work_body(exp.analysis, c)]
    return md


def warning_notes(comparisons: list[Comparison]) -> tuple[dict[str, list[int]], list[tuple[str, list[str]]]]:
    """Interval warnings as numbered footnotes (benchstat style): the same warning text gets one
    number shared by every candidate it applies to. Returns candidate -> footnote numbers, and
    the notes in order as (text, candidates)."""
    notes: list[tuple[str, list[str]]] = []
    marks: dict[str, list[int]] = {}
    for c in comparisons:
        cand = c.candidate
        for w in c.deciding().interval.warnings:
            num = next((i for i, (t, _) in enumerate(notes) if t == w), None)
            if num is None:
                notes.append((str(w), []))
                num = len(notes) - 1
            notes[num][1].append(cand)
            marks.setdefault(cand, []).append(num + 1)
    return marks, notes


def design_text(exp: PublishedExperiment, metric_label: str) -> str:
    """What the intervals are and how the campaign was designed to decide, in two sentences."""
    settings = exp.analysis.settings
    d = settings.design
    conf = fmt_num(d.confidence * 100, 0)
    effect = fmt_change(settings.min_effect, digits=0).lstrip("+")
    if d.mode == "sequential":
        plan = (
            f"A sequential campaign: a pair of runs at a time, looking after every pair from {d.min_pairs} to "
            f"{d.max_pairs}; each look's interval is at {fmt_num(d.look_confidence * 100, 1)}% so that all "
            f"looks together hold {conf}% (a repeated interval), and a comparison stops when it is decided or "
            f"neither a gain nor a loss of the {effect} minimum effect is within reach."
        )
    else:
        plan = (
            f"A fixed campaign of {fmt_count(d.looks[-1], 'pair')} of runs, looked at once, "
            f"at {fmt_num(d.look_confidence * 100, 1)}%."
        )
    return (
        f"Interval of the ratio candidate/reference of {safe.text(metric_label)} over pairs of runs (each run's "
        f"figure is the mean of its window means), at {conf}% confidence; no verdict on fewer than "
        f"{fmt_count(d.min_pairs, 'pair')}. {plan} The smallest change that counts, better or worse, is {effect}. "
        '"~" means the interval includes no change. '
        "[How verdicts are reached](../../analysis.md#verdicts)."
    )


def looks_note(exp: PublishedExperiment) -> str:
    """What the chart of the interval after each pair draws: the first decisive look, and which
    candidates are drawn against their base."""
    d = exp.analysis.settings.design
    on_base = [
        f"{c.candidate} against {c.verdict.against}"
        for c in exp.analysis.comparisons
        if c.verdict.against != c.baseline and c.base_run_level is not None
    ]
    note = (
        f"Intervals are drawn from the {fmt_count(d.min_pairs, 'pair')} a verdict needs; before, the estimate alone."
        if d.min_pairs > 1
        else ""
    )
    if on_base:
        note += " Drawn against the arm each verdict was decided against: " + ", ".join(on_base) + "."
    return safe.text(note.strip()) + "\n" if note else ""


def campaign_text(exp: PublishedExperiment) -> str:
    """What the formal runs cost, why the campaign stopped, and what the fixed design would have cost."""
    c = exp.analysis.campaign
    d = exp.analysis.settings.design
    gpu = c.gpu_minutes is not None
    spent = c.gpu_minutes if gpu else c.run_minutes
    unit = "GPU-minutes" if gpu else "minutes"
    runs = sum(c.pairs_run.values())
    if not runs:
        return ""
    parts = [f"The formal runs took {fmt_num(spent, 1)} {unit} ({fmt_count(runs, 'run')})."]
    why = {
        "decided": "The campaign stopped because every comparison was decided.",
        "max_pairs": f"The campaign stopped at its last look ({fmt_count(d.max_pairs, 'pair')}).",
        "open": "Comparisons are still open: the budget or a stop ended the last run of the campaign; the same "
        "`reportgen run` command resumes it and adds pairs.",
        "fixed": "",
    }[c.stopped]
    if why:
        parts.append(why)
    aside = [f"{x.candidate} pair {p.repeat}" for x in exp.analysis.comparisons for p in x.set_aside]
    if aside:
        redo = ", and a new block ran in its place" if d.mode == "sequential" else ""
        parts.append(
            safe.text(
                f"Set aside because the machine was not quiet while they ran (kept, not counted{redo}): "
                f"{', '.join(aside)}; each candidate's page says why."
            )
        )
    if c.fixed_pairs is not None and c.fixed_minutes is not None:
        parts.append(
            f"The fixed design with the same power and error rates ({fmt_count(c.fixed_pairs, 'pair')} of every arm, "
            f"[calibration](../../calibration.md)) would have taken about {fmt_num(c.fixed_minutes, 1)} {unit}."
        )
    return " ".join(parts)  # reportgen's own words and numbers: nothing to escape


def _pairs_cell(c: Comparison) -> str:
    """How many pairs of runs decided, and where the run-to-run variance came from."""
    rl = c.deciding()
    n = len(rl.pairs)
    if n == 0:
        return f"none ({len(c.set_aside)} set aside)" if c.set_aside else "none"
    how = {"pooled": "variance pooled over the arms", "pairs": "variance of these pairs"}.get(rl.variance, "")
    if c.set_aside:
        how = f"{len(c.set_aside)} set aside" + (f", {how}" if how else "")
    return f"{n}" + (f'<br><span class="rg-ci">{safe.text(how)}</span>' if how else "")


def _direction_cell(c: Comparison) -> str:
    """Whether every window moved the same way: n/a when the candidate reached no window."""
    if not any(w.candidate is not None for w in c.windows):
        return "n/a"
    return "yes" if c.consistent_direction else "no"


def verdict_table(exp: PublishedExperiment) -> str:
    """Candidate, verdict, the run-level change that decided it with its interval (labelled with the
    arm it is against when not the baseline, the baseline's change after it as context), the pairs of
    runs it rests on, window agreement; warnings below as footnotes."""
    comps = exp.analysis.comparisons
    marks, notes = warning_notes(comps)
    rows = []
    for c in comps:
        rl = c.deciding()
        sup = blocks.footnote_refs(marks.get(c.candidate, []))
        verdict = badge(c.verdict.status)
        change = interval_cell(rl.interval) + sup
        if rl.reference != c.baseline:
            verdict += f'<br><span class="rg-ci">against {safe.text(rl.reference)}</span>'
            context = figures.interval_text(c.run_level.interval) if c.run_level.interval.estimate is not None else ""
            change += f'<br><span class="rg-ci">against {safe.text(rl.reference)}'
            change += f"; against the baseline {safe.text(context)}</span>" if context else "</span>"
        rows.append(
            [
                f"[{safe.text(c.candidate)}]({candidate_slug(c.candidate)}/index.md)",
                verdict,
                change,
                _pairs_cell(c),
                _direction_cell(c),
            ]
        )
    header = [
        "candidate",
        "verdict",
        "change of the primary metric that decided (run level)",
        "pairs of runs",
        "same direction in every window",
    ]
    out = table(header, rows, align=["l", "l", "l", "r", "c"])
    if notes:
        out += "\n\n" + blocks.footnote_list([f"{safe.text(t)} ({safe.text(', '.join(cands))})" for t, cands in notes])
    return out


def guardrail_table(exp: PublishedExperiment) -> str:
    """Guardrails with a failure or a check that could not be made, one row each; the ones every
    candidate passed collapsed under one line (they matter as a count, not as rows to read)."""
    comps = exp.analysis.comparisons
    ids: list[tuple[str, str]] = []
    for c in comps:
        for g in c.guardrails:
            if g.id not in [i for i, _ in ids]:
                ids.append((g.id, g.title or g.id))
    shown: list[list[str]] = []
    passed: list[list[str]] = []
    for gid, title in ids:
        row = [safe.text(title)]
        results = [next((g for g in c.guardrails if g.id == gid), None) for c in comps]
        for found in results:
            row.append("n/a" if found is None else f"{blocks.guardrail_mark(found)} {safe.prose(found.reason or '')}")
        (passed if all(g is not None and g.status == "pass" for g in results) else shown).append(row)
    # Each candidate's count is analysis.json's guardrail_tally, the one the verdict and its own page say.
    header = [
        "guardrail",
        *[f"{safe.text(c.candidate)} ({c.guardrail_tally.passed} of {c.guardrail_tally.total} passed)" for c in comps],
    ]
    out = []
    if shown:
        out.append(table(header, shown, align=["l"] * len(header)) + "\n")
    if passed:
        tbl = table(header, passed, align=["l"] * len(header), html=False)
        out.append(f'??? success "Passed by every candidate: {len(passed)} of the {len(ids)} guardrails"\n')
        out.append("\n".join("    " + line for line in tbl.split("\n")) + "\n")
    return "\n".join(out) if out else "No guardrail was checked.\n"


def workload_line(exp: PublishedExperiment, docs: Sequence[tuple[str, str]] = ()) -> str:
    """What ran, before any number: the trainer, its model and size, steps and batch, with links to the
    page about the trainer and to any documentation page about this experiment (`docs`: path, title)."""
    w = exp.analysis.workload
    parts = []
    if w.name:
        parts.append(safe.text(w.name))
    elif w.entrypoint:
        parts.append(safe.code(w.entrypoint))
    if w.model:
        parts.append(safe.text(w.model))
    elif not w.name:
        parts.append("model not declared in the spec")
    if w.parameters:
        parts.append(safe.text(f"{w.parameters / 1e6:.1f} M parameters"))
    run = []
    if w.steps:
        run.append(fmt_count(w.steps, "step"))
    if w.samples_per_step:
        run.append(f"{fmt_num(w.samples_per_step, 0)} samples a step")
    if w.max_response_tokens:
        run.append(
            f"responses of {'exactly' if w.fixed_length else 'at most'} {fmt_count(w.max_response_tokens, 'token')}"
        )
    if run:
        parts.append(", ".join(run))
    links = []
    if w.doc:
        links.append(f"[about this trainer](../../{w.doc})")
    links += [f"[{safe.text(title)}](../../{path})" for path, title in docs]
    text = "; ".join(parts) if parts else "not recorded"
    return (
        f'<p class="rg-workload" markdown>**What ran:** {text}.' + (f" {' · '.join(links)}" if links else "") + "</p>\n"
    )


def _with_share(peak: str, share: str) -> str:
    return f"{peak} ({share})" if share else peak


def memory_section(exp: PublishedExperiment, *, svg: bool) -> tuple[str, dict[str, dict | None]]:
    """Peak memory of every arm against the limit it ran under (analysis.json `arms[].memory`), and
    the curves: what the framework allocated against the cap, and what nvidia-smi saw."""
    arms = [a for a in exp.analysis.arms if a.memory.used_mib is not None or a.memory.device_peak_mib is not None]
    if not arms:
        return "", {}
    rows = []
    for a in arms:
        m = a.memory
        limit = memory_words.limit_text(m)
        left = (
            f"{fmt_gib(max(m.headroom_mib, 0.0))} ({fmt_share(max(m.headroom or 0.0, 0.0))})"
            if m.headroom_mib is not None
            else "n/a"
        )
        if m.headroom is not None and m.headroom < LOW_HEADROOM:
            left = f'<span class="rg-warn">{safe.text(left)}</span>'
        else:
            left = safe.text(left)
        rows.append(
            [
                safe.text(a.id),
                safe.text(fmt_gib(m.allocated_peak_mib)),
                safe.text(limit),
                left,
                safe.text(_with_share(fmt_mib(m.device_peak_mib), memory_words.gpu_share(m))),
                safe.text(fmt_mib(m.device_before_mib)),
                safe.text(fmt_mib(m.beyond_allocated_mib)),
            ]
        )
    head = [
        "arm",
        "allocated peak",
        "limit",
        "left",
        "nvidia-smi peak (of the GPU)",
        "in use before",
        "beyond allocated",
    ]
    caps = {a.memory.cap_mib for a in arms}
    cap = caps.pop() if len(caps) == 1 else None
    totals = {a.memory.device_total_mib for a in arms if a.memory.device_total_mib}
    gpu = f"the GPU's capacity, {' or '.join(fmt_gib(t) for t in sorted(totals))}" if totals else "the GPU's capacity"
    fullest = max(arms, key=lambda a: a.memory.device_peak_mib or 0.0)
    gap = memory_words.gap_sentence(fullest.id, fullest.memory)
    md = [
        "## Memory {#memory}\n",
        f"nvidia-smi's peak is shown against {gpu} (nvidia-smi's memory total). A cap the workload set itself "
        "(`--gpu-memory-cap-gib`) emulates a smaller GPU by bounding what PyTorch's allocator may take; it is a cap, "
        "not the GPU, and what is left under it is taken on the framework's own peak allocation (allocated peak). "
        "nvidia-smi's peak also counts the memory in use before the run, the CUDA context and the allocator's "
        "reserve (beyond allocated: the run's own nvidia-smi peak less the allocated peak). Without a cap the "
        f"limit is what the card had free at the start. Under {fmt_share(LOW_HEADROOM)} left is marked. "
        "[How memory is read](../../analysis.md#memory).\n",
        table(head, rows, align=["l", "r", "r", "r", "r", "r", "r"]) + "\n",
    ]
    if gap:
        md.append(safe.text(gap) + ".\n")
    specs: dict[str, dict | None] = {
        "memory-allocated": machine_charts.memory_allocated(exp, cap_mib=cap),
        "gpu-memory": machine_charts.gpu_metric(
            exp, "mem_used_mib", title="GPU memory used (nvidia-smi)", unit="MiB", show_total=True, how="max"
        ),
    }
    if specs["memory-allocated"] is not None:
        title = CHART_TITLES["memory-allocated"] if cap is not None else "Memory allocated by the framework per step"
        md += [
            f"### {safe.text(title)}\n",
            blocks.chart("memory-allocated", specs["memory-allocated"], title=title, svg=svg),
        ]
    title = CHART_TITLES["gpu-memory"]
    md += [f"### {safe.text(title)}\n", blocks.chart("gpu-memory", specs["gpu-memory"], title=title, svg=svg)]
    before = {a.memory.device_before_mib for a in arms if a.memory.device_before_mib}
    if before:
        md.append(
            safe.text(
                f"Before each run, {', '.join(fmt_mib(b) for b in sorted(before))} was already in use on the GPU "
                "(the flat start of every curve)."
            )
            + "\n"
        )
    return "\n".join(md), specs


QUALITY_MARK = {
    "not_worse": "✓",
    "identical": "=",
    "worse": "✗",
    "open": "…",
    "not_testable": "–",
    "not_judged": "·",
}
QUALITY_WORDS = {
    "not_worse": "within the margin",
    "identical": "identical",
    "worse": "worse beyond the margin",
    "open": "open",
    "not_testable": "not testable",
    "not_judged": "shown",
}


def quality_rows(c: Comparison) -> list[list[str]]:
    """Each quality metric of one candidate: both arms' figures, the difference with its interval, the margin
    and what it says (analysis.json comparisons[].quality.metrics)."""
    q = c.quality
    assert q is not None
    rows = []
    for m in q.metrics:
        diff = fmt_difference_interval(m.estimate, m.low, m.high, confidence=m.confidence)
        word = QUALITY_WORDS[m.outcome]
        if m.outcome == "not_judged" and m.significant:
            word = "differs"
        rows.append(
            [
                safe.text(m.label),
                safe.text(fmt_value(m.reference)),
                safe.text(fmt_value(m.candidate)),
                f'<span class="rg-nowrap">{safe.text(diff)}</span>' if m.estimate is not None else "n/a",
                safe.text(f"{m.margin:g}") if m.margin is not None else "none",
                safe.text(f"{word} ({len(m.pairs)} pairs)" if m.pairs else word),
            ]
        )
    return rows


def quality_section(exp: PublishedExperiment, *, svg: bool) -> tuple[str, dict[str, dict | None]]:
    """Does each candidate train as well as the baseline? The verdict's second half (analysis.json
    comparisons[].quality): per metric, the pairs' mean difference with its interval against the declared
    margin, and the quality curves."""
    comps = [c for c in exp.analysis.comparisons if c.quality is not None]
    spec = charts.quality(exp)
    md = ["## Training quality {#quality}\n"]
    if comps:
        md.append(
            "The second half of every verdict: each run's figure of a quality metric is the mean of its window means, "
            "and each pair of runs (one block) gives the difference candidate - baseline; the interval of the mean "
            "difference is made as the speed's is, at each look's level. The deciding metric must not be worse than "
            "its declared margin; the others are shown, and a difference whose interval excludes 0 is named. "
            "[How it is decided](../../analysis.md#training-quality).\n"
        )
    for c in comps:
        q = c.quality
        assert q is not None
        md.append(f'=== "{safe.text(c.candidate)} {QUALITY_MARK[q.status]}"\n')
        md.append(indented(safe.text(q.summary[:1].upper() + q.summary[1:]) + ".\n"))
        for w in q.warnings:
            md.append(indented(f"Note: {safe.text(w)}.\n"))
        rows = quality_rows(c)
        if rows:
            head = ["quantity", "baseline", safe.text(c.candidate), "difference", "margin", "says"]
            tbl = table(head, rows, align=["l", "r", "r", "r", "r", "l"], html=False)
            md.append(indented(tbl) + "\n")
        if q.missing:
            md.append(indented(safe.text(f"Not logged by every run: {', '.join(q.missing)}.") + "\n"))
    title = CHART_TITLES["quality"]
    md += [f"### {safe.text(title)}\n", blocks.chart("quality", spec, title=title, svg=svg)]
    return "\n".join(md), {"quality": spec}


def workload_table(exp: PublishedExperiment) -> str:
    """The flags that differ between arms in full; the ones every arm ran the same collapsed (a
    reviewer needs to know they were checked, not to read 19 identical rows)."""
    arms = exp.analysis.arms
    differ, same = [], []
    for item in exp.analysis.fixed_workload:
        flag, val = item.flag, item.value
        seen = {a.id: a.workload.get(flag) for a in arms}
        diff = [a for a, v in seen.items() if v is not None and str(v) != str(val)]
        if diff:
            values = ", ".join(f"{safe.text(a)}: {safe.code(seen[a])}" for a in diff)
            differ.append([safe.code(flag), safe.code(val), f"**differs:** {values}"])
        else:
            same.append([safe.code(flag), safe.code(val)])
    out = []
    if differ:
        out.append(table(["flag", "baseline value", "arms"], differ, align=["l", "l", "l"]) + "\n")
    elif same:
        out.append(f"Every arm ran with the same value of all {len(same)} fixed flags.\n")
    if same:
        tbl = table(["flag", "value"], same, align=["l", "l"], html=False)
        out.append(f'??? note "The {len(same)} flags the same in all {len(arms)} arms"\n')
        out.append("\n".join("    " + line for line in tbl.split("\n")) + "\n")
    return "\n".join(out) if out else "No fixed flags were declared (spec `workload.flags`).\n"


QUIET_INTRO = (
    "What else used the machine while each run was measured: another run on it (from the runs folder), CPU load "
    "outside the run's processes, another process on its GPUs, a GPU clock held down (thermal, power, sync boost); "
    "times in seconds since the run started, as on the GPU charts. "
    "[Thresholds](../../analysis.md#quiet-machine).\n"
)


def quiet_section(exp: PublishedExperiment, *, svg: bool = True) -> tuple[list[str], dict | None]:
    """What disturbed which run, and when: a table and the chart on the runs' time axis (only for
    experiments whose analysis has load samples or found a disturbance); returns the chart's spec too."""
    runs = [(a.id, r) for a in exp.analysis.arms for r in a.formal_runs()]
    if not any(r.load is not None or r.disturbances for _, r in runs):
        return [], None
    md = ["## What else ran on the machine {#quiet-machine}\n", QUIET_INTRO]
    rows = [
        [
            safe.text(f"{arm}/{r.repeat}"),
            safe.text(machine_charts.DISTURBANCE_KINDS[d.kind][0]),
            f"{fmt_num(d.start_s, 0)}–{fmt_num(d.end_s, 0)} s",
            "yes" if d.in_window else "no",
            safe.text(d.detail),
        ]
        for arm, r in runs
        for d in r.disturbances
    ]
    if not rows:
        md.append("Every run was measured on a quiet machine: nothing else was seen on it.\n")
        return md, None
    md.append(table(["run", "what", "when", "in the windows", "detail"], rows, ["l", "l", "r", "c", "l"]) + "\n")
    spec = machine_charts.disturbances(exp)
    md.append(blocks.chart("disturbances", spec, title="What else ran on the machine", svg=svg))
    return md, spec


def runs_table(exp: PublishedExperiment) -> str:
    rows = []
    for arm in exp.analysis.arms:
        for r in arm.runs:
            ev = ", ".join(sorted({e.kind for e in r.events})) or "none"
            rows.append(
                [
                    safe.text(f"{arm.id}/{r.repeat}"),
                    safe.text(r.role),
                    badge(r.status),
                    fmt_num(r.steps_completed, 0),
                    fmt_num(r.duration_s, 1) + " s",
                    fmt_num(r.exit_code, 0),
                    safe.text(ev),
                ]
            )
    return table(["run", "role", "status", "steps", "duration", "exit code", "events"], rows) + lifecycle_lines(exp)


def attempt_line(a: RunAttempt) -> str:
    """One attempt of a run in words: how it started, the steps it trained, how it ended."""
    how = a.started_by + (f", {a.started_utc.replace('T', ' ').rstrip('Z')}" if a.started_utc else "")
    if a.duration_s is not None:
        how += f", {fmt_num(a.duration_s / 60, 1)} min"
    steps = f"steps {a.steps[0]}-{a.steps[1]}" if a.steps else "no step trained"
    if a.resumed_from_iteration is not None:
        steps += f" (resumed from iteration {a.resumed_from_iteration})"
    if a.redone:
        steps += f", redoing {a.redone}"
    end = {"clean": "clean end", "cut": "the log ends here with no end line"}.get(a.end or "", a.end or "end unknown")
    if a.failure:
        end = f"{end}: {a.failure}" if a.end == "failed" else f"{end} ({a.failure})"
    replaced = f"; {a.replaced_values} of its values replaced by a later attempt" if a.replaced_values else ""
    return f"attempt {a.attempt}, {a.kind} ({how}): {steps}; {end}{replaced}"


def lifecycle_lines(exp: PublishedExperiment) -> str:
    """Under the runs table, one line per attempt of each run whose log shows more than one plain
    start at step 0 (a retried job, an in-run restart, a resume from a checkpoint)."""
    out = []
    for arm in exp.analysis.arms:
        for r in arm.runs:
            if r.lifecycle:
                out.append(f"\n**{safe.text(f'{arm.id}/{r.repeat}')}**, as its log shows it:\n")
                out += [f"- {safe.text(attempt_line(a))}" for a in r.lifecycle]
    return "\n\n" + "\n".join(out) + "\n" if out else ""


def reproduce_section(exp: PublishedExperiment) -> str:
    info = exp.analysis.experiment
    arms = []
    for run in exp.formal_runs():
        recipe = f"runs/{exp.name}/{run.rel}/recipe.sh"
        arms.append(reproduce.ArmCommand(run.rel, run.manifest.effective_argv, recipe))
    inp = reproduce.ReproduceInputs(
        experiment=exp.name,
        commit=info.baseline_commit,
        dirty=info.dirty,
        profile=info.profile,
        recipe_dir=recipe_dir_where_it_ran(exp),
        entrypoint=entrypoint(exp.spec_text),
        revisions=tuple((a.id, a.revision) for a in exp.analysis.arms if a.revision),
    )
    return reproduce.section(inp, arms)


def entrypoint(spec_text: str) -> str | None:
    """The trainer module the spec names (`[recipe] entrypoint`), or None."""
    try:
        doc = tomllib.loads(spec_text)
    except tomllib.TOMLDecodeError:
        return None
    value = (doc.get("recipe") or {}).get("entrypoint")
    return value if isinstance(value, str) and value else None


def experiment_charts(exp: PublishedExperiment) -> dict[str, dict | None]:
    """The Curves section's charts (memory and training quality have their own sections)."""
    primary = exp.analysis.primary.key
    t, u = metric_title(primary)
    return {
        "primary": charts.step_metric(exp, primary, title=t, unit=u),
        "step-time": charts.step_metric(exp, STEP_TIME, title="step time", unit="s"),
        "actor-train-time": charts.step_metric(exp, ACTOR_TRAIN_TIME, title="actor train time", unit="s"),
        "rollout-time": charts.step_metric(exp, ROLLOUT_TIME, title="rollout time", unit="s"),
        "breakdown": charts.breakdown(exp),
        "gpu-util": machine_charts.gpu_util(exp),
    }


CHART_TITLES = {
    "primary": "Primary metric per step (thin: raw; thick: rolling mean of 10; dashes: repeat; shaded: windows)",
    "step-time": "Step time per step (axis cut above the windows' steps: warm-up is slower)",
    "actor-train-time": "Actor train time per step",
    "rollout-time": "Rollout time per step",
    "breakdown": "Step time breakdown per arm",
    "gpu-util": "GPU utilization per arm (mean over its runs, 5-second bins)",
    "memory-allocated": "Memory allocated by the framework per step, against the cap",
    "gpu-memory": "GPU memory used, nvidia-smi (dashed: device total, when near the data)",
    "quality": "Training quality: loss, reward, response length, KL, clip fraction, grad norm",
}


def meta_line(exp: PublishedExperiment, kind: kinds.ReportKind) -> str:
    info = exp.analysis.experiment
    when = (info.created_utc or "date unknown").replace("T", " ").replace("Z", " UTC")
    commit = info.baseline_commit
    code = f"commit {safe.code(commit[:12])}" if commit else "commit not recorded"
    dirty = ' <span class="rg-badge rg-failed">uncommitted changes</span>' if info.dirty else ""
    return (
        f'<p class="rg-meta">{kinds.badge(kind)} Experiment {safe.code(exp.name)} · {safe.text(when)} · '
        f"{code}{dirty}</p>\n"
    )


def headline_tabs(exp: PublishedExperiment) -> list[str]:
    """One tab per candidate: its headline table against the baseline and, for a candidate built
    on another, its change against that base too."""
    md = []
    primary = exp.analysis.primary.key
    for c in exp.analysis.comparisons:
        cand = c.candidate
        status = c.verdict.status
        md.append(f'=== "{safe.text(cand)}: {safe.text(verdict_label(status).word)}"\n')
        tbl = blocks.headline_table(exp.analysis, c, candidate_label=cand, primary=primary, html=False)
        md.append("\n".join("    " + line for line in tbl.split("\n")) + "\n")
        note = memory_note(exp.analysis, c, memory_link="#memory")
        if note:
            md.append(indented(note) + "\n")
        vs_base = against_base(exp, cand)
        if vs_base:
            md.append(indented(vs_base) + "\n")
    return md


def against_base(exp: PublishedExperiment, cand: str) -> str:
    """A derived candidate against its base (with intervals), as a small table, else ""."""
    comp = exp.analysis.comparison(cand)
    if comp is None or not comp.base or not any(m.candidate is not None for m in comp.vs_base):
        return ""
    tbl = table(
        ["metric", safe.text(comp.base), safe.text(cand), "change"],
        metric_change_rows(exp.analysis, cand, comp.vs_base),
        html=False,
    )
    return f"**Against its base {safe.text(comp.base)}:**\n\n" + tbl


def render(
    exp: PublishedExperiment, *, svg: bool = True, history: str = "", docs: Sequence[tuple[str, str]] = ()
) -> Page:
    """The experiment page; `history` is its "this baseline vs history" line (render/history_page.py),
    `docs` lists (path, title) of documentation pages about this experiment."""
    info = exp.analysis.experiment
    settings = exp.analysis.settings
    primary = settings.primary.key
    title = info.title or exp.name
    kind = report_kind(exp)
    specs = experiment_charts(exp)
    quiet_md, quiet_chart = quiet_section(exp, svg=svg)
    md = [
        f"# {safe.text(kinds.page_title(str(title), kind))}\n",
        meta_line(exp, kind),
        "## Answer {#answer}\n",
        answer(exp, workload_line(exp, docs)),
        "Undo an accepted change: [rollback](rollback/index.md) · "
        "Machine, versions and hashes: [provenance](provenance/index.md) · "
        "Unrounded numbers: [analysis.json](analysis.json)\n",
        *([note] if (note := steady_state.reanalysis_note(exp.analysis)) else []),
        *([history] if history else []),
        "## Hypothesis\n",
        safe.prose(info.hypothesis or "No hypothesis was written in the spec.") + "\n",
    ]
    links = []
    if info.issue:
        links.append("Issue: " + blocks.link(info.issue, info.issue))
    if info.pr:
        links.append("Pull request: " + blocks.link(info.pr, info.pr))
    if links:
        md.append(" · ".join(links) + "\n")
    md.append("## Headline {#headline}\n")
    md.append(
        f"Means over the windows (steps after the {fmt_count(settings.warmup_steps, 'step')} of warm-up); "
        "changes computed from unrounded values, shown rounded to what their interval supports.\n"
    )
    md += headline_tabs(exp)
    t, _ = metric_title(primary)
    md += [
        "## Windows {#windows}\n",
        warnings_block(exp),
        *([line] if (line := warmup_line(exp)) else []),
        f"{safe.text(t)} per pre-declared window ({safe.code(primary)}):\n",
        windows_table(exp, primary) + "\n",
        "Change of each window's mean against the baseline's same window:\n",
        window_change_table(exp) + "\n",
    ]
    for key in settings.secondary:
        if any(key in a.windows for a in exp.analysis.arms):
            st, _ = metric_title(key)
            md += [
                f'??? info "{safe.text(st)} per window"\n',
                "\n".join(("    " + line) if line else "" for line in windows_table(exp, key).split("\n")) + "\n",
            ]
    secondary = secondary_tabs(exp)
    looks = charts.looks(exp)
    md += [
        "## Confidence and verdicts {#confidence-and-verdicts}\n",
        design_text(exp, t) + "\n",
        verdict_table(exp) + "\n",
        *([warm] if (warm := steady_state.page_line(exp.analysis)) else []),
        "### The interval after each pair {#looks}\n",
        "Each pair of runs (a candidate run and the run of the arm it is decided against, made one after the "
        "other) is one piece of evidence; after each pair the interval is recomputed. A verdict is reached when "
        "the interval clears the lines (no change, and the minimum effect either way) by the rules of "
        "[the verdicts](../../analysis.md#the-rules).\n",
        blocks.chart("looks", looks, title="The interval after each pair", svg=svg, empty="No pair of runs yet."),
        looks_note(exp),
        campaign_text(exp) + "\n",
        *secondary,
        "## Guardrails {#guardrails}\n",
        guardrail_table(exp) + "\n",
        *same_work_section(exp),
        *quiet_md,
    ]
    quality_md, quality_specs = quality_section(exp, svg=svg)
    memory_md, memory_specs = memory_section(exp, svg=svg)
    md += [quality_md, memory_md, "## Curves\n"]
    for name, spec in specs.items():
        md.append(f"### {safe.text(CHART_TITLES[name])}\n")
        md.append(blocks.chart(name, spec, title=CHART_TITLES[name], svg=svg))
    if quiet_chart is not None:
        specs["disturbances"] = quiet_chart
    time = time_section.experiment_section(exp, svg=svg)
    if time.markdown:
        md.append(time.markdown)
        specs.update(time.charts)
    md += [
        "## Fixed workload\n",
        "Flags no candidate may change; the value each arm ran with, read from its effective command line.\n",
        workload_table(exp) + "\n",
        "## Runs\n",
        runs_table(exp) + "\n" + machines_section(exp),
        "## Reproduce\n",
        reproduce_section(exp),
    ]
    specs["looks"] = looks
    specs.update(quality_specs)
    specs.update(memory_specs)
    # Compact: the reader's browser lays JSON out (Firefox, Chrome's "pretty-print"); indented, it was
    # 36 % of the bytes, 80 KB of every report.
    files = {"analysis.json": json.dumps(exp.analysis.to_json(), ensure_ascii=False, separators=(",", ":")).encode()}
    return Page(
        path=f"{experiment_base(exp.name)}/index.md",
        title=kinds.page_title(str(title), kind),
        nav_title=kinds.nav_title(exp.name, kind),
        markdown="\n".join(md),
        charts={k: v for k, v in specs.items() if v is not None},
        files=files,
        copies=time.copies,
    )

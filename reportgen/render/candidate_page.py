"""One write-up per candidate (render stage): what changed, why, what happened, the verdict.

A failed candidate's page leads with the cause and the log excerpt around it (from
events.json, fenced so it stays text) and its memory curve up to the failure; a rejected one
shows the measured regression in the same tables as the experiment page.
"""

from __future__ import annotations

from reportgen import vocab
from reportgen.analysis.document import Comparison, GuardrailResult, RunEvent
from reportgen.render import answer as answer_block
from reportgen.render import (
    blocks,
    charts,
    code_change,
    decision,
    figures,
    flagdiff,
    kinds,
    machine_charts,
    memory_words,
    safe,
    time_section,
)
from reportgen.render.blocks import badge, table
from reportgen.render.common import (
    answer_line,
    maths_note,
    memory_note,
    metric_change_rows,
    metric_title,
    report_kind,
    same_work_body,
    spec_path_for_reader,
)
from reportgen.render.evidence import evidence_href
from reportgen.render.format import fmt_change, fmt_count, fmt_gib, fmt_mib, fmt_num
from reportgen.render.load import PublishedExperiment
from reportgen.render.page import Page, candidate_slug, experiment_base
from reportgen.vocab import BASELINE, FAILURE_DISPLAY_ORDER, FAILURE_KINDS, Status, Verdicts, verdict_label
from reportgen.vocab import MEMORY_CAP_FLAG as CAP_FLAG


def _events(exp: PublishedExperiment, cand: str) -> list[tuple[str, RunEvent]]:
    """The candidate's formal runs' events as analysis.json holds them (its copy of each run's
    events.json), failures first."""
    out = [(f"{cand}/{r.repeat}", e) for r in exp.arm(cand).formal_runs() for e in r.events]
    out.sort(key=lambda t: FAILURE_DISPLAY_ORDER.index(t[1].kind) if t[1].kind in FAILURE_DISPLAY_ORDER else 99)
    return out


def _excerpt_of(e: RunEvent) -> tuple[str, ...]:
    return tuple(str(x) for x in e.excerpt)


def excerpt_id(rel: str, e: RunEvent) -> str:
    """The page anchor of an event's log excerpt: "log-A2-1-stderr-62"."""
    slug = "-".join(x for x in (rel.replace("/", "-"), e.stream or "log", str(e.line or "")) if x)
    return "log-" + "".join(ch if ch.isalnum() or ch == "-" else "-" for ch in slug)


def _evidence_link(rel: str, e: RunEvent, anchors: dict[str, str]) -> str:
    """Where an event is in the logs, as a link to its excerpt on this page ("A2/1/stderr.log:62")."""
    where = f"{rel}/{e.stream or 'log'}.log" + (f":{e.line}" if e.line is not None else "")
    target = anchors.get(_key(rel, e))
    code = f'<code class="rg-flag">{safe.attr(where)}</code>'  # a path: never broken inside
    return f'<a href="#{safe.attr(target)}">{code}</a>' if target else code


def _key(rel: str, e: RunEvent) -> str:
    return f"{rel}|{e.stream}|{e.line}|{e.kind}"


def excerpt_blocks(events: list[tuple[str, RunEvent]]) -> tuple[list[str], dict[str, str]]:
    """Each distinct log excerpt once, under an anchor, with the runs and lines it stands for (two
    repeats failing the same way print the same traceback: shown once); returns the blocks and, per
    event, the anchor of the excerpt that shows it."""
    shown: dict[tuple[str, ...], str] = {}
    names: dict[str, list[str]] = {}
    anchors: dict[str, str] = {}
    order: list[tuple[tuple[str, ...], str]] = []
    for rel, e in events:
        excerpt = _excerpt_of(e)
        if not excerpt:
            continue
        tail = set(excerpt[-3:])
        same = next((k for k in shown if tail <= set(k)), None)
        if same is None:
            anchor = excerpt_id(rel, e)
            shown[excerpt] = anchor
            order.append((excerpt, anchor))
            same = excerpt
        anchors[_key(rel, e)] = shown[same]
        where = f"{rel}/{e.stream or 'log'}.log" + (f" line {e.line}" if e.line is not None else "")
        names.setdefault(shown[same], [])
        if where not in names[shown[same]]:
            names[shown[same]].append(where)
    blocks_md = []
    for excerpt, anchor in order:
        blocks_md.append(
            f'<p id="{safe.attr(anchor)}" class="rg-excerpt-head">Log excerpt: {safe.text(", ".join(names[anchor]))}</p>\n'
        )
        blocks_md.append(safe.fence("\n".join(excerpt), "text") + "\n")
    return blocks_md, anchors


def failure_rows(
    exp: PublishedExperiment, cand: str, events: list[tuple[str, RunEvent]], anchors: dict[str, str]
) -> str:
    """One row per run of the candidate: steps completed, what failed (in words), where in the logs."""
    arm = exp.arm(cand)
    expected = exp.analysis.settings.steps_expected
    rows = []
    for r in arm.formal_runs():
        rel = f"{cand}/{r.repeat}"
        mine = [e for run, e in events if run == rel]
        first = next((e for e in mine if e.kind in FAILURE_KINDS), None)
        steps = f"{r.steps_completed} of {expected}" if expected else str(r.steps_completed)
        what = safe.prose(r.failure) if r.failure else ("finished" if r.status == "complete" else safe.text(r.status))
        rows.append(
            [
                safe.text(rel),
                badge(r.status),
                safe.text(steps),
                what,
                _evidence_link(rel, first, anchors) if first is not None else "–",
            ]
        )
    return table(
        ["run", "status", "steps completed", "what happened", "evidence"], rows, align=["l", "l", "r", "l", "l"]
    )


def event_blocks(events: list[tuple[str, RunEvent]]) -> list[str]:
    """Events of a run that did not fail (warnings, handled tracebacks): kind, step, where, and the
    excerpt once."""
    blocks_md, anchors = excerpt_blocks(events)
    out = []
    for rel, e in events:
        step = f" at step {fmt_num(e.step, 0)}" if e.step is not None else ""
        out.append(f"- **{safe.text(e.kind)}{step}**: {_evidence_link(rel, e, anchors)}")
    return ["\n".join(out) + "\n", *blocks_md]


def memory_text(exp: PublishedExperiment, cand: str) -> str:
    """Memory before the failure in words: what the framework held against the cap, and nvidia-smi's
    figure with what it adds (analysis.json `arms[].memory`)."""
    m = exp.arm(cand).memory
    parts = []
    if m.used_mib is not None and m.limit_mib is not None:
        limit = "emulated cap" if m.limit == "cap" else "free on the card"
        parts.append(
            f"At its peak the framework held {fmt_gib(m.used_mib)} of the {fmt_gib(m.limit_mib)} {limit} "
            f"({fmt_gib(max(m.headroom_mib or 0.0, 0.0))} left)"
        )
    gap = memory_words.gap_sentence(cand, m)
    if gap:
        share = memory_words.gpu_share(m)
        parts.append(gap + (f"; that peak is {share}, the GPU's capacity" if share else ""))
    elif m.device_peak_mib is not None:
        before = f", of which {fmt_mib(m.device_before_mib)} was in use before the run" if m.device_before_mib else ""
        parts.append(
            f"nvidia-smi showed {fmt_mib(m.device_peak_mib)} at most{before}; the rest over the framework's figure is "
            "the CUDA context (which a cap does not bound) and the allocator's reserve"
        )
    if m.cap_mib is not None:
        parts.append(f"the cap is the workload's own ({safe.code(CAP_FLAG)} in the effective command line)")
    return ("; ".join(parts) + ".\n") if parts else ""


def _flag_value(value: str | None) -> str:
    return flagdiff.value_text(None if value is None else True if value == "true" else value)


def what_changed(exp: PublishedExperiment, cand: str) -> list[str]:
    """The effective values the trainer ran with, old -> new (baseline, the base, this candidate;
    analysis.json `changed_flags`), then the recipe diff collapsed: the diff shows the script's
    text (`${MAX_TOKENS_PER_GPU}`), not values."""
    arm = exp.arm(cand)
    comp = exp.comparison(cand)
    base_word = safe.code(comp.base or vocab.BASELINE)
    out = ["## What changed\n", *code_change.section(comp, cand)]
    if comp.changed_flags:
        header = ["flag", "baseline", *([f"{safe.text(comp.base)} (its base)"] if comp.base else []), safe.text(cand)]
        rows = []
        for f in comp.changed_flags:
            values = [f.baseline, *([f.base] if comp.base else []), f.candidate]
            cells = [_flag_value(v) for v in values]
            rows.append(
                [
                    safe.code(f.flag),
                    *[
                        (safe.text(t) if t in (flagdiff.ABSENT, flagdiff.SWITCH_ON) else safe.code(t))
                        if i == 0 or t == cells[0]
                        else f"<strong>{safe.text(t) if t in (flagdiff.ABSENT, flagdiff.SWITCH_ON) else safe.code(t)}</strong>"
                        for i, t in enumerate(cells)
                    ],
                ]
            )
        out += [
            f"Built on {base_word}. The flags whose effective value differs (read from each run's command line):\n",
            table(header, rows, align=["l"] * len(header)) + "\n",
        ]
    else:
        out.append(f"Built on {base_word}; no effective flag value differs from it.\n")
    out += [
        '??? note "The recipe diff against the original (text of the script)"\n',
        safe.fence(arm.diff or "(no change)", "diff", indent="    ") + "\n",
    ]
    return out


def effective_argv(exp: PublishedExperiment, arm_id: str) -> dict:
    """The first formal run's effective flag -> value mapping ({} when ingest recorded none)."""
    return next((run.manifest.effective_argv for run in exp.formal_runs(arm_id) if run.manifest.effective_argv), {})


def against_base_table(exp: PublishedExperiment, cand: str) -> list[str]:
    """A candidate built on another one against that base, with intervals (analysis.json `vs_base`)."""
    comp = exp.comparison(cand)
    if not comp.base or not any(m.candidate is not None for m in comp.vs_base):
        return []
    return [
        f"### Against its base, {safe.text(comp.base)} {{#against-base}}\n",
        f"What {safe.text(cand)} adds on top of {safe.text(comp.base)}:\n",
        table(
            ["metric", safe.text(comp.base), safe.text(cand), "change"],
            metric_change_rows(exp.analysis, cand, comp.vs_base),
        )
        + "\n",
    ]


def plain_sentence(exp: PublishedExperiment, cand: str) -> str | None:
    """A failed candidate's failure in one plain sentence: its first failed run's (analysis.json
    `runs[].failure_sentence`), "A2 ran out of GPU memory at step 1: PyTorch already held 4.94 of the
    5.00 GiB allowed ... when it asked for 20.00 MiB more", with how far it got."""
    arm = exp.arm(cand)
    failed = [r for r in arm.formal_runs() if r.status == Status.FAILED]
    if not failed:
        return None
    first = failed[0]
    said = first.failure_sentence or (f"failed: {first.failure}" if first.failure else "failed")
    expected = exp.analysis.settings.steps_expected
    got = f"{first.steps_completed} of {expected}" if expected else str(first.steps_completed)
    runs = ", ".join(f"{cand}/{r.repeat}" for r in failed)
    same = len(failed) > 1 and len({r.failure for r in failed}) == 1
    tail = f" It completed {got} steps" + (f"; {runs} failed the same way" if same else f" ({runs})") + "."
    return f"{cand} {said}.{tail}"


def render(exp: PublishedExperiment, cand: str, *, svg: bool = True) -> Page:
    comp = exp.comparison(cand)
    arm = exp.arm(cand)
    verdict = comp.verdict
    status = verdict.status
    primary = exp.analysis.primary.key
    ptitle, punit = metric_title(primary)
    kind_of = report_kind(exp)
    title = f"{cand}: {arm.title or cand}"
    specs: dict[str, dict | None] = {}
    md = [
        f"# {safe.text(title)}\n",
        f"{kinds.badge(kind_of)} {badge(status)} Experiment {safe.code(exp.name)} · "
        "[← back to the experiment](../index.md)\n",
    ]
    kind = blocks.VERDICT_ADMONITION.get(status, "note")
    cause = decision.cause(comp)
    events = _events(exp, cand)
    failed = status == Verdicts.FAILED or any(e.kind in FAILURE_KINDS for _, e in events)
    sentence = plain_sentence(exp, cand) if failed else None
    label = verdict_label(status).word
    if sentence:
        head = f"{cand} {label}"
        lead = f"**{safe.prose(sentence)}** "
    elif cause:
        head = f"{cand} {label}" + (f" against {comp.verdict.against}" if comp.verdict.against != comp.baseline else "")
        lead = safe.prose(cause[0].upper() + cause[1:] if cause else "") + ". "
    else:
        head = answer_line(exp, comp)
        lead = safe.prose(verdict.summary or "") + " "
    nxt = comp.summary.next_step
    command = decision.tidy_command(nxt.command, lambda w: spec_path_for_reader(exp, w)) if nxt.command else None
    body = f"{lead.rstrip()}\n\n    **Next:** {answer_block.inline(nxt.text)}"
    targets = [(e.label, evidence_href(e, on=cand)) for e in comp.summary.evidence]
    targets = [(label, href) for label, href in targets if href != "index.md"]  # not this page itself
    if targets:
        body += " Evidence: " + ", ".join(f"[{safe.text(label)}]({href})" for label, href in targets) + "."
    head += maths_note(comp)
    # prose: a flag the headline names (the maths change) reads as code, never broken at its hyphens
    md.append(f'!!! {kind} "{safe.prose(head)}"\n    {body}\n')
    if command:
        md.append(safe.fence(command, "bash", title=f"next step for {cand}") + "\n")
    if failed:
        md.append("## What happened {#what-happened}\n")
        excerpts, anchors = excerpt_blocks(events)
        md.append(failure_rows(exp, cand, events, anchors) + "\n")
        if excerpts:
            md += excerpts
        elif not events:
            md.append("No failure event was recorded in events.json.\n")
        cap = exp.arm(cand).memory.cap_mib
        specs["memory-allocated"] = machine_charts.memory_allocated(exp, cap_mib=cap, arms=[BASELINE, cand])
        specs["memory"] = machine_charts.gpu_metric(
            exp,
            "mem_used_mib",
            title="GPU memory used (nvidia-smi)",
            unit="MiB",
            arms=[cand],
            show_total=True,
            how="max",
        )
        md.append("### Memory up to the failure\n")
        md.append(memory_text(exp, cand))
        if specs["memory-allocated"] is not None:
            md.append(
                blocks.chart(
                    "memory-allocated",
                    specs["memory-allocated"],
                    svg=svg,
                    title="Memory allocated by the framework per step, against the cap (the last point: what it "
                    "held when the allocation failed)",
                )
            )
        md.append(
            blocks.chart(
                "memory",
                specs["memory"],
                svg=svg,
                title="GPU memory used up to the failure, nvidia-smi (dashed: device total, when near the data)",
            )
        )
    if comp.same_work.status == "fail":
        md.append("## Same generated work\n")
        md += same_work_body(exp.analysis, comp)
    md += what_changed(exp, cand)
    md += [
        "## Why it was tried\n",
        safe.prose(arm.rationale or "No rationale was written in the spec.") + "\n",
    ]
    md += measured(exp, cand, failed=failed, primary=primary, ptitle=ptitle)
    md += against_base_table(exp, cand)
    md += guardrails(comp, failed=failed)
    md += set_aside_section(comp)
    if not failed and events:
        md += ["## Events\n", *event_blocks(events)]
    reached = any(w.candidate is not None for w in comp.windows)
    specs["primary"] = charts.step_metric(exp, primary, title=ptitle, unit=punit, arms=[BASELINE, cand])
    if reached or not failed:  # a failed candidate's curve would be the baseline's alone
        md += [
            "## Curve against the baseline\n",
            blocks.chart("primary", specs["primary"], title=f"{ptitle}: baseline vs {cand}", svg=svg),
        ]
    time = time_section.candidate_section(exp, cand, svg=svg, failed=failed)
    if time.markdown:
        md.append(time.markdown)
        specs.update(time.charts)
    return Page(
        path=f"{experiment_base(exp.name)}/{candidate_slug(cand)}/index.md",
        title=f"{title} ({kind_of.label}, {exp.name})",
        markdown="\n".join(md),
        charts={k: v for k, v in specs.items() if v is not None},
        nav_title=f"{cand}: {verdict_label(status).word}",
    )


def measured(exp: PublishedExperiment, cand: str, *, failed: bool, primary: str, ptitle: str) -> list[str]:
    """What was measured: the headline rows the candidate has values for, the windows it reached, the
    interval, step time and its phases; for a failed candidate only what it measured before failing."""
    comp = exp.comparison(cand)
    rows = blocks.headline_rows(comp)
    md = ["## What was measured\n" if not failed else "## What was measured before it failed\n"]
    if rows:
        md.append(blocks.headline_table(exp.analysis, comp, candidate_label=cand, primary=primary) + "\n")
        note = memory_note(exp.analysis, comp, memory_link="../index.md#memory")
        if note:
            md.append(note + "\n")
    wins = [w for w in comp.windows if w.candidate is not None]
    d = blocks.interval_decimals(comp.interval)
    key = exp.analysis.primary.key
    unit = metric_title(key)[1]
    if wins:
        md.append(
            table(
                ["window", "baseline", cand, "change"],
                [
                    [
                        safe.text(w.window),
                        safe.text(figures.arm_value(exp.analysis, comp.baseline, key, w.baseline, window=w.window)),
                        safe.text(figures.arm_value(exp.analysis, cand, key, w.candidate, window=w.window)),
                        fmt_change(w.change, digits=d),
                    ]
                    for w in comp.windows
                ],
            )
            + "\n"
        )
        md.append(
            f"**{safe.text(ptitle)}** ({safe.text(unit)}) against the baseline: {safe.text(blocks.interval_text(comp.interval))}.\n"
        )
        md += [f"- {safe.text(w)}" for w in comp.interval.warnings]
        md.append("")
    elif comp.windows:
        md.append(f"{safe.text(cand)} reached none of the {len(comp.windows)} windows: no interval.\n")
    md += warmup_lines(exp, cand)
    if any(m.candidate is not None for m in comp.secondary):
        md += [
            "### Step time and its phases\n",
            "Against the baseline, each with its interval (same method as the primary metric):\n",
            table(
                ["metric", "baseline", safe.text(cand), "change"],
                metric_change_rows(exp.analysis, cand, comp.secondary),
            )
            + "\n",
        ]
    return md


def warmup_lines(exp: PublishedExperiment, cand: str) -> list[str]:
    """Where the candidate's and its reference's warm-up ends (arms[].settled_at), and whether the
    first window starts before: then its window means hold warm-up steps."""
    comp = exp.comparison(cand)
    arms = [a for a in (exp.arm(comp.verdict.against), exp.arm(cand)) if a is not None and a.settled_at is not None]
    if not arms:
        return []
    wins = exp.analysis.settings.windows
    steps = ", ".join(f"{a.id} at step {a.settled_at}" for a in arms)
    late = [a.id for a in arms if wins and a.settled_at is not None and wins[0].start < a.settled_at]
    said = safe.text(f"Warm-up ends: {steps}.")
    if late:
        said += " " + safe.text(
            f"{wins[0].name} starts at step {wins[0].start}, "
            f"inside the warm-up of {', '.join(late)}: its means hold warm-up steps."
        )
    return [said + " [How it is found](../../../analysis.md#warm-up).\n"]


def _upper_first(text: str) -> str:
    return text[:1].upper() + text[1:]


def set_aside_section(comp: Comparison) -> list[str]:
    """The pairs left out because the machine was not quiet while they ran, each with the check's
    reason and its load samples (analysis/set_aside.py); nothing when none was."""
    if not comp.set_aside:
        return []
    md = [
        "## Pairs set aside {#set-aside}\n",
        f"{fmt_count(len(comp.set_aside), 'pair')} of runs failed the quiet-machine check on their own (one run "
        "disturbed far more than the other): kept on disk, left out of the comparison, and in a sequential campaign "
        "redone by a new block ([disturbed pairs](../../../analysis.md#disturbed-pairs)).\n",
    ]
    for p in comp.set_aside:
        ev = f" (evidence: {safe.code(p.evidence)})" if p.evidence else ""
        md.append(
            f"- pair {p.repeat}, {safe.code(p.reference_run)} and {safe.code(p.candidate_run)}: {safe.prose(p.reason)}{ev}"
        )
    md.append("")
    return md


def guardrails(comp: Comparison, *, failed: bool) -> list[str]:
    """The guardrails as a list; for a failed candidate the checks it passed on the little it ran
    are folded under one line (a tick beside a 1-step run reads as an endorsement)."""
    tally = _upper_first(comp.guardrail_tally.text())
    if comp.maths_changes:  # every check passed is still no licence: it trains a different model
        tally += "; but it changes the maths: " + "; ".join(m.text() for m in comp.maths_changes)
    md = ["## Guardrails\n", f"{safe.prose(tally)}.\n"]

    def line(g: GuardrailResult) -> str:
        ev = f" (evidence: {safe.code(g.evidence)})" if g.evidence else ""
        return f"- {blocks.guardrail_mark(g)} **{safe.text(g.title)}**: {safe.prose(g.reason)}{ev}"

    shown = [g for g in comp.guardrails if not failed or g.status in ("fail", "warn")]
    folded = [g for g in comp.guardrails if failed and g.status not in ("fail", "warn")]
    md += [line(g) for g in shown]
    md.append("")
    if folded:
        md.append(f'??? note "{len(folded)} more checks, on the steps it made before it failed"\n')
        md += ["    " + line(g) for g in folded]
        md.append("")
    return md

"""One write-up per candidate (render stage): what changed, why, what happened, the verdict.

A failed candidate's page leads with the cause and the log excerpt around it (from
events.json, fenced so it stays text) and its memory curve up to the failure; a rejected one
shows the measured regression in the same tables as the experiment page.
"""

from __future__ import annotations

from reportgen import vocab
from reportgen.render import answer as answer_block
from reportgen.render import blocks, charts, decision, flagdiff, safe, time_section
from reportgen.render import report_kind as kinds
from reportgen.render.blocks import badge, table
from reportgen.render.experiment_page import (
    answer_line,
    metric_change_rows,
    metric_title,
    report_kind,
    same_work_body,
    spec_path_for_reader,
)
from reportgen.render.format import fmt_change, fmt_num, fmt_value
from reportgen.render.load import ExperimentData
from reportgen.render.memory_cap import CAP_FLAG, memory_cap_mib
from reportgen.render.page import Page, candidate_slug, experiment_base
from reportgen.vocab import BASELINE, FAILURE_DISPLAY_ORDER, FAILURE_KINDS


def _events(exp: ExperimentData, cand: str) -> list[tuple[str, dict]]:
    out = []
    for run in exp.formal_runs(cand):
        for e in run.events:
            out.append((run.rel, e))
    if not out:  # fall back on the copy inside analysis.json
        for r in exp.arm(cand).runs:
            out += [(f"{cand}/{r.repeat}", e.model_dump()) for e in r.events]
    out.sort(
        key=lambda t: FAILURE_DISPLAY_ORDER.index(t[1].get("kind")) if t[1].get("kind") in FAILURE_DISPLAY_ORDER else 99
    )
    return out


def _excerpt_of(e: dict) -> tuple[str, ...]:
    return tuple(str(x) for x in e.get("excerpt") or [])


def _event_block(rel: str, e: dict, *, shown: set[tuple[str, ...]] | None = None) -> str:
    """One event: kind, step, where, message, details and its log excerpt. An excerpt already
    shown (an abnormal exit after an OOM points at the same traceback) is not printed again."""
    where = f"{rel}, {e.get('stream') or 'log'} line {fmt_num(e.get('line'), 0)}"
    step = f" at step {fmt_num(e.get('step'), 0)}" if e.get("step") is not None else ""
    out = [f"**{safe.text(e.get('kind', 'event'))}{step}** ({safe.text(where)}): {safe.code(e.get('message'))}\n"]
    details = e.get("details") or {}
    details = {k: v for k, v in details.items() if v not in (None, "")}
    if details:
        out.append(", ".join(f"{safe.text(k)} = {safe.code(v)}" for k, v in details.items()) + "\n")
    excerpt = _excerpt_of(e)
    tail = set(excerpt[-3:])
    repeated = shown is not None and any(tail <= set(seen) for seen in shown)
    if excerpt and repeated:
        out.append("The log excerpt is the one above.\n")
    elif excerpt:
        out.append(safe.fence("\n".join(excerpt), "text", title="log excerpt"))
        if shown is not None:
            shown.add(excerpt)
    return "\n".join(out) + "\n"


def event_blocks(events: list[tuple[str, dict]]) -> list[str]:
    shown: set[tuple[str, ...]] = set()
    return [_event_block(rel, e, shown=shown) for rel, e in events]


def memory_text(exp: ExperimentData, cand: str, cap: float | None) -> str:
    """Peak memory before the failure against the cap and the device total, in words."""
    peak = total = None
    for run in exp.formal_runs(cand):
        g = run.gpu
        if "mem_used_mib" in g and len(g):
            peak = max(peak or 0.0, float(g["mem_used_mib"].max()))
        if "mem_total_mib" in g and len(g):
            total = max(total or 0.0, float(g["mem_total_mib"].max()))
    parts = []
    if peak is not None:
        parts.append(
            f"Peak GPU memory used before the failure: {fmt_num(round(peak), 0)} MiB (nvidia-smi: includes the "
            "CUDA context and other memory outside PyTorch's allocator)"
        )
    if cap is not None:
        parts.append(
            f"the workload capped itself at {fmt_num(cap / 1024, 2).rstrip('0').rstrip('.')} GiB "
            f"({fmt_num(round(cap), 0)} MiB, {safe.code(CAP_FLAG)} in the effective command line; dotted orange rule)"
        )
    if total is not None:
        drawn = charts.memory_total_drawn(peak, cap, total)
        parts.append(
            f"device total {fmt_num(round(total), 0)} MiB"
            + (" (dashed red rule)" if drawn else " (far above the data: not drawn, the axis is scaled to the data)")
        )
    return ("; ".join(parts) + ".\n") if parts else ""


def _flag_value(value: str | None) -> str:
    return flagdiff.value_text(None if value is None else True if value == "true" else value)


def what_changed(exp: ExperimentData, cand: str) -> list[str]:
    """The effective values the trainer ran with, old -> new (baseline, the base, this candidate;
    analysis.json `changed_flags`), then the recipe diff collapsed: the diff shows the script's
    text (`${MAX_TOKENS_PER_GPU}`), not values."""
    arm = exp.arm(cand)
    comp = exp.comparison(cand)
    base_word = safe.code(comp.base or vocab.BASELINE)
    out = ["## What changed\n"]
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


def effective_argv(exp: ExperimentData, arm_id: str) -> dict:
    """The first formal run's effective flag -> value mapping ({} when ingest recorded none)."""
    for run in exp.formal_runs(arm_id):
        argv = run.manifest.get("effective_argv")
        if isinstance(argv, dict) and argv:
            return argv
    return {}


def against_base_table(exp: ExperimentData, cand: str) -> list[str]:
    """A candidate built on another one against that base, with intervals (analysis.json `vs_base`)."""
    comp = exp.comparison(cand)
    if not comp.base or not comp.vs_base:
        return []
    return [
        f"### Against its base, {safe.text(comp.base)} {{#against-base}}\n",
        f"What {safe.text(cand)} adds on top of {safe.text(comp.base)}:\n",
        table(["metric", safe.text(comp.base), safe.text(cand), "change"], metric_change_rows(comp.vs_base)) + "\n",
    ]


def page_link(href: str, cand: str) -> str:
    """An evidence link of the experiment page as seen from a candidate's page one folder down."""
    own = f"{candidate_slug(cand)}/index.md"
    if href.startswith(own):
        return href[len(own) :] or "index.md"
    if ".md" in href.split("#")[0]:
        return "../" + href
    return f"../index.md{href}"


def render(exp: ExperimentData, cand: str, *, svg: bool = True) -> Page:
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
        f"{kinds.badge(kind_of)} {badge(status)} [← back to the experiment](../index.md)\n",
    ]
    kind = blocks.VERDICT_ADMONITION.get(status, "note")
    cause = decision.cause(comp)
    head = f"{cand} {blocks.VERDICT_LABEL.get(status, status)}: {cause}" if cause else answer_line(exp, comp)
    nxt = comp.summary.next_step
    step = nxt.text
    command = decision.tidy_command(nxt.command, lambda w: spec_path_for_reader(exp, w)) if nxt.command else None
    # with the cause in the title, the summary ("Failed: OOM at step 1, ...") would say it twice
    summary = "" if cause else safe.text(verdict.summary or "") + " "
    body = f"{summary}**Next:** {answer_block.inline(step)}"
    if comp.summary.evidence:
        links = ", ".join(
            f"[{safe.text(e.label)}]({page_link(decision.evidence_href(e.anchor), cand)})"
            for e in comp.summary.evidence
        )
        body += f" Evidence: {links}."
    md.append(f'!!! {kind} "{safe.text(head)}"\n    {body}\n')
    if command:
        md.append(safe.fence(command, "bash", title=f"next step for {cand}") + "\n")
    events = _events(exp, cand)
    failed = status == "failed" or any(e.get("kind") in FAILURE_KINDS for _, e in events)
    if failed:
        md.append("## What happened\n")  # the cause is the admonition's title above: not repeated here
        if events:
            md += event_blocks(events)
        else:
            md.append("No failure event was recorded in events.json.\n")
        cap = memory_cap_mib(exp, cand)
        specs["memory"] = charts.gpu_metric(
            exp,
            "mem_used_mib",
            title="GPU memory used up to the failure",
            unit="MiB",
            arms=[cand],
            show_total=True,
            how="max",
            cap=cap,
        )
        md.append("### Memory up to the failure\n")
        md.append(memory_text(exp, cand, cap))
        md.append(
            blocks.chart(
                "memory",
                specs["memory"],
                svg=svg,
                title="GPU memory used up to the failure (dashed: device total"
                + (", dotted: the workload's memory cap)" if cap is not None else ")"),
            )
        )
    if comp.same_work.status == "fail":
        md.append("## Same generated work\n")
        md += same_work_body(comp)
    md += what_changed(exp, cand)
    md += [
        "## Why it was tried\n",
        safe.text(arm.rationale or "No rationale was written in the spec.") + "\n",
        "## What was measured\n" if not failed else "## What was measured before it failed\n",
        blocks.headline_table(comp, candidate_label=cand, primary=primary) + "\n",
    ]
    wins = [w for w in comp.windows if w.candidate is not None]
    iv = comp.interval
    d = blocks.interval_decimals(iv)
    if wins:
        md.append(
            table(
                ["window", "baseline", cand, "change"],
                [
                    [safe.text(w.window), fmt_value(w.baseline), fmt_value(w.candidate), fmt_change(w.change, digits=d)]
                    for w in comp.windows
                ],
            )
            + "\n"
        )
    elif comp.windows:
        md.append(f"{safe.text(cand)} reached none of the {len(comp.windows)} windows.\n")
    md.append(f"**{safe.text(ptitle)}:** {safe.text(blocks.interval_text(comp.interval))}.\n")
    md += [f"- {safe.text(w)}" for w in comp.interval.warnings]
    md.append("")
    if comp.secondary:
        md += [
            "### Step time and its phases\n",
            "Against the baseline, each with its interval (same method as the primary metric):\n",
            table(["metric", "baseline", safe.text(cand), "change"], metric_change_rows(comp.secondary)) + "\n",
        ]
    md += against_base_table(exp, cand)
    md.append("## Guardrails\n")
    for g in comp.guardrails:
        mark = blocks.guardrail_mark(g)
        ev = f" (evidence: {safe.code(g.evidence)})" if g.evidence else ""
        md.append(f"- {mark} **{safe.text(g.title)}**: {safe.text(g.reason)}{ev}")
    md.append("")
    if not failed and events:
        md += ["## Events\n", *event_blocks(events)]
    specs["primary"] = charts.step_metric(exp, primary, title=ptitle, unit=punit, arms=[BASELINE, cand])
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
        title=f"{title} ({kind_of.label})",
        markdown="\n".join(md),
        charts={k: v for k, v in specs.items() if v is not None},
    )

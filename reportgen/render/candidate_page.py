"""One write-up per candidate (render stage): what changed, why, what happened, the verdict.

A failed candidate's page leads with the cause and the log excerpt around it (from
events.json, fenced so it stays text) and its memory curve up to the failure; a rejected one
shows the measured regression in the same tables as the experiment page.
"""

from __future__ import annotations

from reportgen.render import blocks, charts, safe
from reportgen.render.blocks import badge, table
from reportgen.render.experiment_page import answer_line, metric_title
from reportgen.render.format import fmt_change, fmt_num
from reportgen.render.load import ExperimentData
from reportgen.render.page import Page, candidate_slug, experiment_base

FAILURE_KINDS = ("oom", "nan", "fatal", "traceback", "timeout", "abnormal_exit", "interrupted")


def _events(exp: ExperimentData, cand: str) -> list[tuple[str, dict]]:
    out = []
    for run in exp.formal_runs(cand):
        for e in run.events:
            out.append((run.rel, e))
    if not out:  # fall back on the copy inside analysis.json
        for r in exp.arm(cand).get("runs", []):
            out += [(f"{cand}/{r.get('repeat')}", e) for e in r.get("events", [])]
    out.sort(key=lambda t: FAILURE_KINDS.index(t[1].get("kind")) if t[1].get("kind") in FAILURE_KINDS else 99)
    return out


def _event_block(rel: str, e: dict) -> str:
    where = f"{rel}, {e.get('stream') or 'log'} line {fmt_num(e.get('line'), 0)}"
    step = f" at step {fmt_num(e.get('step'), 0)}" if e.get("step") is not None else ""
    out = [f"**{safe.text(e.get('kind', 'event'))}{step}** ({safe.text(where)}): {safe.code(e.get('message'))}\n"]
    details = e.get("details") or {}
    if details:
        out.append(", ".join(f"{safe.text(k)} = {safe.code(v)}" for k, v in details.items()) + "\n")
    excerpt = e.get("excerpt") or []
    if excerpt:
        out.append(safe.fence("\n".join(str(x) for x in excerpt), "text", title="log excerpt"))
    return "\n".join(out) + "\n"


def render(exp: ExperimentData, cand: str, *, svg: bool = True) -> Page:
    comp = exp.comparison(cand)
    arm = exp.arm(cand)
    verdict = comp.get("verdict", {})
    status = verdict.get("status", "unknown")
    primary = exp.analysis.get("settings", {}).get("primary", {}).get("key", "")
    ptitle, punit = metric_title(primary)
    title = f"{cand}: {arm.get('title') or cand}"
    specs: dict[str, dict | None] = {}
    md = [f"# {safe.text(title)}\n", f"{badge(status)} [← back to the experiment](../index.md)\n"]
    kind = blocks.VERDICT_ADMONITION.get(status, "note")
    md.append(f'!!! {kind} "{safe.text(answer_line(exp, comp))}"\n    {safe.text(verdict.get("summary") or "")}\n')
    events = _events(exp, cand)
    failed = status in ("failed", "invalid") or any(e.get("kind") in FAILURE_KINDS for _, e in events)
    if failed:
        md.append("## What happened\n")
        if verdict.get("cause"):
            md.append(f"**Cause:** {safe.text(verdict['cause'])}.\n")
        if events:
            md += [_event_block(rel, e) for rel, e in events]
        else:
            md.append("No failure event was recorded in events.json.\n")
        specs["memory"] = charts.gpu_metric(exp, "mem_used_mib", title="GPU memory used up to the failure", unit="MiB",
                                            arms=[cand], show_total=True, how="max")
        md.append("### Memory up to the failure\n")
        md.append(blocks.chart("memory", specs["memory"], title="GPU memory used up to the failure (dashed: device total)", svg=svg))
    md += ["## What changed\n", f"Based on {safe.code(arm.get('base') or 'baseline')}. The recipe diff against the original:\n",
           safe.fence(arm.get("diff") or "(no change)", "diff") + "\n",
           "## Why it was tried\n", safe.text(arm.get("rationale") or "No rationale was written in the spec.") + "\n",
           "## What was measured\n" if not failed else "## What was measured before it failed\n",
           blocks.headline_table(comp, candidate_label=cand) + "\n"]
    wins = comp.get("windows", [])
    if wins:
        md.append(table(["window", "baseline", cand, "change"],
                        [[safe.text(w.get("window")), fmt_num(w.get("baseline")), fmt_num(w.get("candidate")),
                          fmt_change(w.get("change")) if w.get("candidate") is not None else "not reached"] for w in wins]) + "\n")
    md.append(f"**{safe.text(ptitle)}:** {safe.text(blocks.interval_text(comp.get('interval')))}.\n")
    warnings = (comp.get("interval") or {}).get("warnings") or []
    md += [f"- {safe.text(w)}" for w in warnings]
    md.append("\n## Guardrails\n")
    for g in comp.get("guardrails", []):
        mark = '<span class="rg-pass">✓</span>' if g.get("passed") else '<span class="rg-fail">✗</span>'
        ev = f" (evidence: {safe.code(g['evidence'])})" if g.get("evidence") else ""
        md.append(f"- {mark} **{safe.text(g.get('title'))}**: {safe.text(g.get('reason'))}{ev}")
    md.append("")
    if not failed and events:
        md += ["## Events\n", *[_event_block(rel, e) for rel, e in events]]
    specs["primary"] = charts.step_metric(exp, primary, title=ptitle, unit=punit, arms=["baseline", cand])
    md += ["## Curve against the baseline\n", blocks.chart("primary", specs["primary"], title=f"{ptitle}: baseline vs {cand}", svg=svg)]
    return Page(path=f"{experiment_base(exp.name)}/{candidate_slug(cand)}/index.md", title=title,
                markdown="\n".join(md), charts={k: v for k, v in specs.items() if v is not None})

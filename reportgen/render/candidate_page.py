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


def _event_block(rel: str, e: dict) -> str:
    where = f"{rel}, {e.get('stream') or 'log'} line {fmt_num(e.get('line'), 0)}"
    step = f" at step {fmt_num(e.get('step'), 0)}" if e.get("step") is not None else ""
    out = [f"**{safe.text(e.get('kind', 'event'))}{step}** ({safe.text(where)}): {safe.code(e.get('message'))}\n"]
    details = e.get("details") or {}
    details = {k: v for k, v in details.items() if v not in (None, "")}
    if details:
        out.append(", ".join(f"{safe.text(k)} = {safe.code(v)}" for k, v in details.items()) + "\n")
    excerpt = e.get("excerpt") or []
    if excerpt:
        out.append(safe.fence("\n".join(str(x) for x in excerpt), "text", title="log excerpt"))
    return "\n".join(out) + "\n"


CAP_FLAG = "--gpu-memory-cap-gib"


def _flag_value(argv, flag: str):
    """A flag's value from an effective argv: a {flag: value} dict or a list of words."""
    if isinstance(argv, dict):
        return argv.get(flag)
    if isinstance(argv, list):
        for i, word in enumerate(argv):
            if word == flag and i + 1 < len(argv):
                return argv[i + 1]
            if isinstance(word, str) and word.startswith(flag + "="):
                return word.split("=", 1)[1]
    return None


def memory_cap_mib(exp: ExperimentData, cand: str) -> float | None:
    """The GPU memory cap the workload applied to itself (`--gpu-memory-cap-gib N` in the effective
    argv), in MiB; None when no run of the arm set one."""
    for run in exp.formal_runs(cand):
        for argv in (run.manifest.get("effective_argv"), run.command.get("argv"), run.manifest.get("command")):
            value = _flag_value(argv, CAP_FLAG)
            if value is None:
                continue
            try:
                return float(value) * 1024.0
            except (TypeError, ValueError):
                continue
    return None


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
        zoomed = cap is not None and total > 4 * max(cap, peak or 0.0)
        parts.append(
            f"device total {fmt_num(round(total), 0)} MiB"
            + (" (far above the cap: the chart's scale stops near the cap)" if zoomed else " (dashed red rule)")
        )
    return ("; ".join(parts) + ".\n") if parts else ""


def render(exp: ExperimentData, cand: str, *, svg: bool = True) -> Page:
    comp = exp.comparison(cand)
    arm = exp.arm(cand)
    verdict = comp.verdict
    status = verdict.status
    primary = exp.analysis.primary.key
    ptitle, punit = metric_title(primary)
    title = f"{cand}: {arm.title or cand}"
    specs: dict[str, dict | None] = {}
    md = [f"# {safe.text(title)}\n", f"{badge(status)} [← back to the experiment](../index.md)\n"]
    kind = blocks.VERDICT_ADMONITION.get(status, "note")
    md.append(f'!!! {kind} "{safe.text(answer_line(exp, comp))}"\n    {safe.text(verdict.summary or "")}\n')
    events = _events(exp, cand)
    failed = status in ("failed", "invalid") or any(e.get("kind") in FAILURE_KINDS for _, e in events)
    if failed:
        md.append("## What happened\n")
        if verdict.cause:
            md.append(f"**Cause:** {safe.text(verdict.cause)}.\n")
        if events:
            md += [_event_block(rel, e) for rel, e in events]
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
    md += [
        "## What changed\n",
        f"Based on {safe.code(arm.base or 'baseline')}. The recipe diff against the original:\n",
        safe.fence(arm.diff or "(no change)", "diff") + "\n",
        "## Why it was tried\n",
        safe.text(arm.rationale or "No rationale was written in the spec.") + "\n",
        "## What was measured\n" if not failed else "## What was measured before it failed\n",
        blocks.headline_table(comp, candidate_label=cand) + "\n",
    ]
    wins = comp.windows
    if wins:
        md.append(
            table(
                ["window", "baseline", cand, "change"],
                [
                    [
                        safe.text(w.window),
                        fmt_num(w.baseline),
                        fmt_num(w.candidate),
                        fmt_change(w.change) if w.candidate is not None else "not reached",
                    ]
                    for w in wins
                ],
            )
            + "\n"
        )
    md.append(f"**{safe.text(ptitle)}:** {safe.text(blocks.interval_text(comp.interval))}.\n")
    md += [f"- {safe.text(w)}" for w in comp.interval.warnings]
    md.append("\n## Guardrails\n")
    for g in comp.guardrails:
        mark = blocks.guardrail_mark(g)
        ev = f" (evidence: {safe.code(g.evidence)})" if g.evidence else ""
        md.append(f"- {mark} **{safe.text(g.title)}**: {safe.text(g.reason)}{ev}")
    md.append("")
    if not failed and events:
        md += ["## Events\n", *[_event_block(rel, e) for rel, e in events]]
    specs["primary"] = charts.step_metric(exp, primary, title=ptitle, unit=punit, arms=[BASELINE, cand])
    md += [
        "## Curve against the baseline\n",
        blocks.chart("primary", specs["primary"], title=f"{ptitle}: baseline vs {cand}", svg=svg),
    ]
    return Page(
        path=f"{experiment_base(exp.name)}/{candidate_slug(cand)}/index.md",
        title=title,
        markdown="\n".join(md),
        charts={k: v for k, v in specs.items() if v is not None},
    )

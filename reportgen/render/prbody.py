"""The Markdown section for a pull-request description, from analysis.json only.

Pipeline position: analysis.json -> **render** (this module) -> stdout of `reportgen pr-body`.
Pure: takes the document and returns text; never reads logs or runs/.
"""

from __future__ import annotations

from reportgen.analysis.document import AnalysisDocument, Comparison
from reportgen.render.format import fmt_change, fmt_num, fmt_ratio_interval

MARK = {"pass": "✅ pass", "fail": "❌ fail", "not_applicable": "➖ n/a"}
VERDICT = {
    "accepted": "✅ accepted",
    "rejected": "❌ rejected",
    "no_change": "➖ no significant change",
    "inconclusive": "❔ inconclusive",
    "failed": "💥 failed",
    "invalid": "⛔ invalid comparison",
}


def _table(head: list[str], rows: list[list[str]]) -> list[str]:
    out = ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
    out += ["| " + " | ".join(c.replace("|", "\\|") for c in r) + " |" for r in rows]
    return out


def _headline_rows(comp: Comparison) -> list[list[str]]:
    rows = []
    for h in comp.headline:
        if h.text is not None:
            change = h.text
        elif h.metric == "steps_completed":
            change = "–" if h.change is None else f"{int(h.change):+d}" if h.change else "0"
        else:
            change = fmt_change(h.change)
        rows.append([h.label, fmt_num(h.baseline, unit=h.unit), fmt_num(h.candidate, unit=h.unit), change])
    return rows


def render_pr_body(doc: AnalysisDocument, *, site_url: str | None = None, runs_dir: str = "runs") -> str:
    exp = doc.experiment
    settings = doc.settings
    url = site_url or settings.site_url
    primary = doc.primary.key
    lines = [f"## Performance evidence: {exp.title}", ""]
    if exp.hypothesis:
        lines += [f"> {exp.hypothesis}", ""]
    pr = doc.comparison(settings.pr_candidate)
    if pr is not None:
        s = pr.summary
        lines += [f"**The PR's change is `{pr.candidate}`: {VERDICT.get(s.verdict, s.verdict)}.**"]
        if s.cause:
            lines += [f"Why: {s.cause}."]
        lines += [f"Next step: {s.next_step.text}"]
        if s.next_step.command:
            lines += ["", "```bash", s.next_step.command, "```"]
        lines += [""]
    for note in doc.warnings:
        lines += [f"> note: {note}", ""]
    lines += ["### Verdicts", ""]
    vrows = []
    for c in doc.comparisons:
        iv = c.interval
        vrows.append(
            [
                f"`{c.candidate}`",
                VERDICT.get(c.verdict.status, c.verdict.status),
                fmt_change(
                    None if iv.estimate is None else iv.estimate - 1,
                    significant=iv.significant if iv.low is not None else None,
                ),
                fmt_ratio_interval(iv.low, iv.high),
                c.verdict.summary,
            ]
        )
    lines += _table(["candidate", "verdict", f"{primary} change", f"{settings.confidence:.0%} interval", "why"], vrows)
    for c in doc.comparisons:
        lines += ["", f"### `{c.candidate}` vs baseline", ""]
        lines += _table(["metric", "baseline", "candidate", "change"], _headline_rows(c))
        lines += ["", f"Per window ({primary}, mean):", ""]
        lines += _table(
            ["window", "steps", "baseline", "candidate", "change"],
            [
                [
                    w.window,
                    f"{w.start}–{w.end}",
                    fmt_num(w.baseline),
                    fmt_num(w.candidate),
                    fmt_change(w.change),
                ]
                for w in c.windows
            ],
        )
        iv = c.interval
        block = f", block length {iv.block_length}" if iv.block_length else ""
        lines += ["", f"Interval: {iv.method}{block}, n = {iv.n_baseline} / {iv.n_candidate} steps."]
        for note in iv.warnings:
            lines.append(f"- note: {note}")
        if c.repeats:
            r = c.repeats
            ratios = ", ".join(fmt_change(x - 1) for x in r.ratios)
            lines.append(
                f"- repeats: {r.n} per arm ({'interleaved' if r.interleaved else 'sequential'}), "
                f"run-level changes {ratios}"
            )
        lines += ["", "Guardrails:", ""]
        lines += _table(
            ["check", "result", "reason", "evidence"],
            [
                [
                    g.title,
                    MARK.get(g.status, g.status),
                    g.reason,
                    f"`{g.evidence}`" if g.evidence else "–",
                ]
                for g in c.guardrails
            ],
        )
    spec_path = f"{runs_dir}/{exp.name}/experiment.toml"
    profile = f" --profile {exp.profile}" if exp.profile else ""
    lines += [
        "",
        "### Reproduce",
        "",
        "```bash",
        f"reportgen run {spec_path}{profile}",
        f"reportgen analyze {exp.name}",
        "```",
    ]
    if exp.baseline_commit:
        lines += ["", f"Baseline commit: `{exp.baseline_commit}`" + (" (dirty)" if exp.dirty else "")]
    if url:
        lines += ["", f"Full report: {url.rstrip('/')}/{exp.name}/"]
    return "\n".join(lines) + "\n"

"""The Markdown section for a pull-request description, from analysis.json only.

Pipeline position: analysis.json -> **render** (this module) -> stdout of `reportgen pr-body`.
Pure: takes the document and returns text; never reads logs or runs/.
"""

from __future__ import annotations

from reportgen.analysis.document import AnalysisDocument, Comparison, Interval
from reportgen.render import blocks, reproduce
from reportgen.render.format import change_decimals, fmt_change, fmt_value

MARK = {"pass": "✅ pass", "fail": "❌ fail", "not_applicable": "➖ n/a"}
VERDICT = {
    "accepted": "✅ accepted",
    "rejected": "❌ rejected",
    "no_change": "➖ no significant change",
    "inconclusive": "❔ inconclusive",
    "failed": "💥 failed",
    "invalid": "⛔ invalid comparison",
    "incomplete": "⏸️ incomplete",
}


def _table(head: list[str], rows: list[list[str]]) -> list[str]:
    out = ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
    out += ["| " + " | ".join(c.replace("|", "\\|") for c in r) + " |" for r in rows]
    return out


def _headline_rows(comp: Comparison, primary: str) -> list[list[str]]:
    """The site's headline rows (`blocks.headline_cells`), in plain text for GitHub."""
    return [[*cells[:3], cells[3].replace("**", "")] for cells in blocks.headline_cells(comp, primary=primary)]


def _change_with_interval(iv: Interval) -> tuple[str, str]:
    """(change, "[low, high]") of the primary metric, rounded to what the interval supports."""
    if iv.estimate is None:
        return "n/a", "n/a"
    low = iv.low - 1 if iv.low is not None else None
    high = iv.high - 1 if iv.high is not None else None
    d = change_decimals(low, high)
    change = "~" if iv.significant is False and iv.low is not None else fmt_change(iv.estimate - 1, digits=d)
    if low is None or high is None:
        return change, "n/a"
    return change, f"[{fmt_change(low, digits=d)}, {fmt_change(high, digits=d)}]"


def render_pr_body(
    doc: AnalysisDocument, *, site_url: str | None = None, runs_dir: str = "runs", recipe_dir: str | None = None
) -> str:
    """The PR description's evidence section. `recipe_dir`: the folder the spec ran from (its recipe
    paths are relative to it), so the Reproduce commands work in a fresh checkout."""
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
    ordered = sorted(doc.comparisons, key=lambda c: not c.summary.is_pr)  # the PR's candidate first
    for c in ordered:
        change, interval = _change_with_interval(c.interval)
        vrows.append(
            [
                f"`{c.candidate}`" + (" (PR)" if c.summary.is_pr else ""),
                VERDICT.get(c.verdict.status, c.verdict.status),
                change,
                interval,
                c.summary.cause or c.verdict.summary,
            ]
        )
    lines += _table(["candidate", "verdict", f"{primary} change", f"{settings.confidence:.0%} interval", "why"], vrows)
    for c in ordered:
        lines += ["", f"### `{c.candidate}` vs baseline", ""]
        lines += _table(["metric", "baseline", "candidate", "change"], _headline_rows(c, primary))
        iv = c.interval
        d = blocks.interval_decimals(iv)
        lines += ["", f"Per window ({primary}, mean):", ""]
        lines += _table(
            ["window", "steps", "baseline", "candidate", "change"],
            [
                [
                    w.window,
                    f"{w.start}–{w.end}",
                    fmt_value(w.baseline),
                    fmt_value(w.candidate),
                    fmt_change(w.change, digits=d) if w.candidate is not None else "not reached",
                ]
                for w in c.windows
            ],
        )
        block = f", block length {iv.block_length}" if iv.block_length else ""
        n = f"{iv.pairs} pairs of runs" if iv.pairs is not None else f"n = {iv.n_baseline} / {iv.n_candidate} steps"
        lines += ["", f"Interval: {iv.method}{block}, {n}."]
        for note in iv.warnings:
            lines.append(f"- note: {note}")
        pairs = c.run_level.pairs
        ratios = ", ".join(fmt_change(p.ratio - 1, digits=1) for p in pairs)
        # A candidate with no completed run has no run-level change to list.
        lines.append(f"- pairs of runs: {len(pairs)}" + (f", each pair's change {ratios}" if ratios else ""))
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
    # The same commands as the report's Reproduce section: the stored spec's recipe paths are
    # relative to the folder it ran from, so it is copied back there before it is run.
    commands, notes = reproduce.run_commands(
        reproduce.ReproduceInputs(
            experiment=exp.name,
            runs_dir=runs_dir,
            commit=exp.baseline_commit,
            dirty=exp.dirty,
            profile=exp.profile,
            recipe_dir=recipe_dir,
        )
    )
    lines += ["", "### Reproduce", "", "```bash", *commands, "```"]
    for note in notes:
        lines += ["", note]
    if exp.baseline_commit:
        lines += ["", f"Baseline commit: `{exp.baseline_commit}`" + (" (dirty)" if exp.dirty else "")]
    if url:
        lines += ["", f"Full report: {url.rstrip('/')}/{exp.name}/"]
    return "\n".join(lines) + "\n"

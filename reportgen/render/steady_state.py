"""Words for what sits beside a steady-state verdict: the warm-up each candidate costs per launch,
and what a re-analysis changed (issue 43).

Pipeline position: analysis.json -> **render**. Pure: formats `comparisons[].warmup_cost` and
`reanalysis` as the analysis computed them (analysis/warmup_cost.py, analysis/reanalysis.py); the
experiment page and the PR body each call one function here.
"""

from __future__ import annotations

from reportgen.analysis.document import AnalysisDocument, Comparison, WarmupCost
from reportgen.render import safe
from reportgen.render.format import fmt_count
from reportgen.rounding import fmt_level, fmt_value


def _signed(x: float, half: float | None) -> str:
    text = fmt_value(abs(x), halfwidth=half)
    return ("-" if x < 0 and text.strip("0.") else "+") + text


def cost_text(c: Comparison) -> str | None:
    """ "A3 +11 s against A1 (95% CI +0.9 to +22 s, 3 pairs)"; None without a warm-up cost."""
    w: WarmupCost | None = c.warmup_cost
    if w is None:
        return None
    half = (w.high_s - w.low_s) / 2 if w.low_s is not None and w.high_s is not None else None
    pairs = fmt_count(len(w.pairs), "pair")
    ci = (
        f"{fmt_level(w.confidence)} CI {_signed(w.low_s, half)} to {_signed(w.high_s, half)} s, {pairs}"
        if w.low_s is not None and w.high_s is not None
        else pairs
    )
    return f"{c.candidate} {_signed(w.estimate_s, half)} s against {w.reference} ({ci})"


def warmup_line(doc: AnalysisDocument) -> str | None:
    """One line for every candidate's warm-up per launch, beside the steady-state verdicts."""
    said = [t for c in doc.comparisons if (t := cost_text(c)) is not None]
    if not said:
        return None
    burn = next(c.warmup_cost.burn_in for c in doc.comparisons if c.warmup_cost is not None)
    return (
        f"Warm-up per launch, beside the steady-state verdicts (steps 0-{burn - 1}, each run against its own steady "
        f"step time; + is extra time): {'; '.join(said)}."
    )


def page_line(doc: AnalysisDocument) -> str:
    """The experiment page's line (Markdown, escaped), with a link to how it is measured; "" without one."""
    line = warmup_line(doc)
    if line is None:
        return ""
    return safe.text(line) + " [How it is measured](../../analysis.md#warm-up-cost-per-launch).\n"


def pr_line(doc: AnalysisDocument) -> str | None:
    """The PR body's line."""
    return warmup_line(doc)


def reanalysis_note(doc: AnalysisDocument) -> str:
    """One compact note when the document replaced one made under other rules or windows: what
    changed and which verdicts moved (Markdown, escaped); "" otherwise."""
    r = doc.reanalysis
    if r is None:
        return ""
    parts = [f"Re-analysed (schema {r.schema_version} -> {doc.schema_version})"]
    old = ", ".join(f"{w.name} {w.start}-{w.end}" for w in r.windows)
    new = ", ".join(f"{w.name} {w.start}-{w.end}" for w in doc.settings.windows)
    if old != new:
        parts.append(f"windows {old} -> {new} (a burn-in declared from evidence; the reason is in experiment.json)")
    parts.append("verdicts moved: " + "; ".join(r.moved) if r.moved else "no verdict moved")
    return (
        safe.text(": ".join(parts[:1]) + ": " + "; ".join(parts[1:]) + ".")
        + " [What changed and why](../../calibration.md#the-committed-showcases-re-analysed).\n"
    )

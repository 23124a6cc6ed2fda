"""Markdown building blocks shared by the report pages (render stage; strings in, strings out)."""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import Any

from reportgen.analysis.document import Comparison, GuardrailResult, HeadlineRow, Interval
from reportgen.render import safe
from reportgen.render.format import fmt_change, fmt_num

# Admonition type per verdict: green accepted, orange rejected, red failed; the neutral outcomes
# use report.css's own grey types (Material's "question" is green, which read as a success).
VERDICT_ADMONITION = {
    "accepted": "success",
    "rejected": "warning",
    "no_change": "rg-neutral",
    "inconclusive": "rg-inconclusive",
    "failed": "failure",
    "invalid": "rg-invalid",
}
VERDICT_LABEL = {
    "accepted": "accepted",
    "rejected": "rejected",
    "no_change": "no significant change",
    "inconclusive": "inconclusive",
    "failed": "failed",
    "invalid": "invalid",
}
_URL = re.compile(r"^https?://[^\s<>\"']+$")


def table(
    header: Sequence[str], rows: Sequence[Sequence[str]], align: Sequence[str] | None = None, *, html: bool = True
) -> str:
    """A table; cells must already be escaped. Emitted as a raw HTML block (the same markup
    Python-Markdown's table extension writes) so Markdown does not parse every cell again: that
    parse was the largest per-experiment cost of a build. Cells holding Markdown links, and tables
    a caller indents into a tab or admonition (raw HTML is only a block at the start of a line;
    pass html=False), stay pipe tables."""
    align = align or ["l"] + ["r"] * (len(header) - 1)
    if html and not any("](" in c for row in rows for c in row):
        return _html_table(header, rows, align)
    rule = ["---:" if a == "r" else ":---:" if a == "c" else "---" for a in align]
    lines = ["| " + " | ".join(header) + " |", "| " + " | ".join(rule) + " |"]
    lines += ["| " + " | ".join(c if c != "" else " " for c in row) + " |" for row in rows]
    return "\n".join(lines)


_STYLE = {"r": ' style="text-align: right;"', "c": ' style="text-align: center;"'}


_STRONG = re.compile(r"\*\*(.+?)\*\*")  # the only Markdown the render layer writes into cells


def _strong(m: re.Match) -> str:
    return f"<strong>{m.group(1)}</strong>"


def _html_table(header: Sequence[str], rows: Sequence[Sequence[str]], align: Sequence[str]) -> str:
    """One line per row, like a pipe table, so a row can still be found by a line search."""
    styles = [_STYLE.get(a, "") for a in align]
    out = [
        "<table>",
        "<thead>",
        "<tr>" + "".join(f"<th{st}>{h}</th>" for h, st in zip(header, styles, strict=False)) + "</tr>",
        "</thead>",
        "<tbody>",
    ]
    for row in rows:
        cells = list(row) + [""] * (len(header) - len(row))
        out.append(
            "<tr>"
            + "".join(f"<td{st}>{_STRONG.sub(_strong, c)}</td>" for c, st in zip(cells, styles, strict=False))
            + "</tr>"
        )
    out += ["</tbody>", "</table>"]
    return "\n".join(out)


def badge(status: str | None) -> str:
    s = status or "unknown"
    cls = re.sub(r"[^a-z_]", "", s.lower()) or "unknown"
    return f'<span class="rg-badge rg-{cls}">{safe.text(VERDICT_LABEL.get(s, s))}</span>'


def guardrail_mark(g: GuardrailResult) -> str:
    """✓ passed, ✗ failed, a grey "– n/a" for a check that could not be made (not a failure)."""
    return {
        "pass": '<span class="rg-pass" title="passed">✓</span>',
        "fail": '<span class="rg-fail" title="failed">✗</span>',
        "not_applicable": '<span class="rg-na" title="not checkable">– n/a</span>',
    }[g.status]


def link(url: Any, label: Any) -> str:
    """An external link only for http(s) URLs; anything else is shown as text."""
    if isinstance(url, str) and _URL.match(url):
        return f'<a href="{safe.attr(url)}">{safe.text(label)}</a>'
    return safe.text(label if url is None else url)


def value(x: Any, unit: str = "", digits: int = 3) -> str:
    if isinstance(x, str):
        return safe.text(x)
    s = fmt_num(x, digits)
    return (
        f"{s} {safe.text(unit)}"
        if unit and x is not None and unit not in ("%",)
        else (s + "%" if unit == "%" and x is not None else s)
    )


def interval_text(interval: Interval) -> str:
    """'+21.44% (95% CI +18.94% to +23.94%)', or '~ no significant change (...)' when the CI spans 0."""
    if interval.estimate is None:
        return "no interval"
    est, lo, hi = interval.estimate, interval.low, interval.high
    conf = interval.confidence
    ci = f"{fmt_num(conf * 100, 0)}% CI {fmt_change(lo - 1 if lo is not None else None)} to {fmt_change(hi - 1 if hi is not None else None)}"
    if not interval.significant:
        return f"~ no significant change ({fmt_change(est - 1)}, {ci})"
    return f"{fmt_change(est - 1)} ({ci})"


def headline_change(row: HeadlineRow) -> str:
    metric, ch = row.metric, row.change
    b, c = row.baseline, row.candidate
    if isinstance(b, str) or isinstance(c, str) or (ch is None and row.label.startswith("effective")):
        return "unchanged" if b == c else "**changed**"
    if metric == "steps_completed":
        return fmt_num(ch, 0) if ch is not None else "n/a"
    return fmt_change(ch)


def headline_table(comparison: Comparison, *, candidate_label: str, html: bool = True) -> str:
    rows = []
    for r in comparison.headline:
        unit = r.unit
        digits = 0 if unit == "MiB" or r.metric == "steps_completed" else 3
        rows.append(
            [
                safe.text(r.label or r.metric),
                value(r.baseline, unit, digits),
                value(r.candidate, unit, digits),
                headline_change(r),
            ]
        )
    return table(["metric", "baseline", safe.text(candidate_label), "change"], rows, html=html)


def chart(name: str, spec: dict | None, *, title: str, svg: bool, empty: str = "") -> str:
    """A chart: its Vega-Lite spec in a data- attribute, a static SVG for readers without JavaScript."""
    if spec is None:
        return f'!!! note "{safe.text(title)}: nothing to draw"\n    {safe.text(empty or "No samples were recorded for this chart.")}\n'
    fallback = (
        f'<img src="{safe.attr(name)}.svg" alt="{safe.attr(title)}" loading="lazy">'
        if svg
        else "<p>This chart needs JavaScript.</p>"
    )
    return (
        f'<figure class="rg-chart" id="chart-{safe.attr(name)}">'
        f'<div class="rg-vega" data-chart="{safe.attr(name)}" data-spec="{safe.json_attr(spec)}"></div>'
        f"<noscript>{fallback}</noscript></figure>\n"
    )


def finite(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def footnote_refs(numbers: Sequence[int], *, prefix: str = "note") -> str:
    """Markers for notes `numbers` that cannot be misread: "[1, 2]" in superscript, each a link to
    its note (two bare superscripts side by side read as "12")."""
    if not numbers:
        return ""
    links = ", ".join(f'<a href="#{safe.attr(prefix)}-{n}">{n}</a>' for n in numbers)
    return f'<sup class="rg-fnref">[{links}]</sup>'


def footnote_list(notes: Sequence[str], *, prefix: str = "note") -> str:
    """The notes `footnote_refs` points at, numbered from 1 (`notes` must already be escaped)."""
    if not notes:
        return ""
    items = "".join(f'<li id="{safe.attr(prefix)}-{i}">{t}</li>' for i, t in enumerate(notes, start=1))
    return f'<ol class="rg-footnotes">{items}</ol>'

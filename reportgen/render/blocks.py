"""Markdown building blocks shared by the report pages (render stage; strings in, strings out)."""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import Any

from reportgen.analysis.document import Comparison, GuardrailResult, HeadlineRow, Interval
from reportgen.render import safe
from reportgen.render.format import change_decimals, fmt_change, fmt_change_interval, fmt_count, fmt_num, fmt_value

# Admonition type per verdict: green accepted, orange rejected, red failed; the neutral outcomes
# use report.css's own grey types (Material's "question" is green, which read as a success).
VERDICT_ADMONITION = {
    "accepted": "success",
    "rejected": "warning",
    "no_change": "rg-neutral",
    "inconclusive": "rg-inconclusive",
    "failed": "failure",
    "invalid": "rg-invalid",
    "incomplete": "rg-inconclusive",
}
VERDICT_LABEL = {
    "accepted": "accepted",
    "rejected": "rejected",
    "no_change": "no significant change",
    "inconclusive": "inconclusive",
    "failed": "failed",
    "invalid": "invalid",
    "incomplete": "incomplete",
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
    """'+21.4% (95% CI +18.9% to +23.9%)', rounded to what the interval supports, or
    '~ no significant change (...)' when the interval holds no change."""
    if interval.estimate is None:
        return "no interval"
    est, lo, hi = interval.estimate, interval.low, interval.high
    low, high = (lo - 1 if lo is not None else None), (hi - 1 if hi is not None else None)
    text = fmt_change_interval(est - 1, low, high, confidence=interval.confidence)
    if not interval.significant:
        head, _, ci = text.partition(" (")
        return f"~ no significant change ({head}, {ci}"
    return text


# Headline rows the table shows differently from analysis.json's label.
LIMITS_LABEL = "effective batch / length limits (global batch / max prompt / max response tokens)"
_PER_GPU = re.compile(r"^gpu/(\d+)/(util_mean|mem_peak_mib)$")


def headline_rows(comparison: Comparison) -> list[HeadlineRow]:
    """The rows worth a line: per-GPU rows only when there is more than one GPU (on one GPU the
    "GPU 0 utilization" row repeats the mean), and no row the candidate has no value for."""
    gpus = {m.group(1) for r in comparison.headline if (m := _PER_GPU.match(r.metric))}
    rows = []
    for r in comparison.headline:
        m = _PER_GPU.match(r.metric)
        if m and len(gpus) == 1 and m.group(2) == "util_mean":
            continue
        if r.candidate is None:  # a failed candidate measured little: no rows of n/a
            continue
        rows.append(r)
    return rows


def headline_label(r: HeadlineRow, *, gpus: int) -> str:
    if r.metric == "workload/limits":
        return LIMITS_LABEL
    m = _PER_GPU.match(r.metric)
    if m and m.group(2) == "mem_peak_mib" and gpus == 1:
        return "peak GPU memory"
    return r.label or r.metric


def headline_value(x: float | int | str | None, unit: str, halfwidth: float | None) -> str:
    """A headline value in plain text (callers escape it for their output): MiB and steps whole,
    others rounded to `halfwidth` when given, else to three significant digits."""
    if isinstance(x, str):
        return x
    if unit == "MiB" and x is not None:
        return fmt_num(round(x), 0, unit="MiB")
    if unit == "steps" and x is not None:
        return fmt_count(x, "step")
    return fmt_value(x, unit=unit, halfwidth=halfwidth)


def interval_decimals(interval: Interval) -> int:
    """Decimals of a percentage change that `interval` (a ratio interval) supports; 1 without one."""
    low, high = interval.low, interval.high
    return change_decimals(low - 1 if low is not None else None, high - 1 if high is not None else None)


def headline_change(row: HeadlineRow, interval: Interval | None = None) -> str:
    """The change of one row: a count as a signed number of steps, strings as unchanged/changed,
    the primary metric rounded to its interval, others to one decimal."""
    ch = row.change
    b, c = row.baseline, row.candidate
    if isinstance(b, str) or isinstance(c, str) or row.metric == "workload/limits":
        return "unchanged" if b == c else "**changed**"
    if row.metric == "steps_completed":
        return "same" if ch == 0 else fmt_count(ch, "step", signed=True)
    return fmt_change(ch, digits=interval_decimals(interval) if interval is not None else 1)


def _scaled(rel: float | None, x: float | int | str | None) -> float | None:
    return rel * abs(float(x)) if rel and isinstance(x, (int, float)) and finite(x) else None


def headline_cells(comparison: Comparison, *, primary: str | None = None) -> list[list[str]]:
    """(label, baseline, candidate, change) per headline row, in plain text: the site's table and the
    pull-request body show the same rows. The primary metric's values are rounded to what its
    interval supports (the interval's half-width applied to each mean); the others keep three
    significant digits. The change may hold `**changed**` (bold on both outputs)."""
    iv = comparison.interval
    kept = headline_rows(comparison)
    gpus = len({m.group(1) for r in kept if (m := _PER_GPU.match(r.metric))}) or 1
    half = (iv.high - iv.low) / 2 if iv.low is not None and iv.high is not None else None  # relative
    out = []
    for r in kept:
        is_primary = primary is not None and r.metric == primary
        rel = half if is_primary else None
        out.append(
            [
                headline_label(r, gpus=gpus),
                headline_value(r.baseline, r.unit, _scaled(rel, r.baseline)),
                headline_value(r.candidate, r.unit, _scaled(rel, r.candidate)),
                headline_change(r, iv if is_primary else None),
            ]
        )
    return out


def headline_table(
    comparison: Comparison, *, candidate_label: str, primary: str | None = None, html: bool = True
) -> str:
    """Baseline, candidate and change per headline row (`headline_cells`), escaped for the page."""
    rows = [
        [safe.text(label), safe.text(b), safe.text(c), change]
        for label, b, c, change in headline_cells(comparison, primary=primary)
    ]
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

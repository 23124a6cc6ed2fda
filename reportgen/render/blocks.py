"""Markdown building blocks shared by the report pages (render stage; strings in, strings out)."""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import Any

from reportgen.analysis.document import AnalysisDocument, Comparison, GuardrailResult, HeadlineRow, Interval
from reportgen.render import chart_svg, figures, safe
from reportgen.render.format import change_decimals, fmt_change, fmt_count, fmt_gib, fmt_num, fmt_value
from reportgen.vocab import ALLOCATED_PEAK, Verdicts, verdict_label

# Admonition type per verdict: green accepted, orange rejected, red failed; the neutral outcomes
# use report.css's own grey types (Material's "question" is green, which read as a success).
VERDICT_ADMONITION = {
    Verdicts.ACCEPTED: "success",
    Verdicts.REJECTED: "warning",
    Verdicts.NO_CHANGE: "rg-neutral",
    Verdicts.INCONCLUSIVE: "rg-inconclusive",
    Verdicts.FAILED: "failure",
    Verdicts.INVALID: "rg-invalid",
    Verdicts.INCOMPLETE: "rg-inconclusive",
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
    return f'<span class="rg-badge rg-{cls}">{safe.text(verdict_label(s).word)}</span>'


def guardrail_mark(g: GuardrailResult) -> str:
    """✓ passed, ✗ failed, "⚠ warning" for a finding that does not decide, a grey "– n/a" for a
    check that could not be made (not a failure)."""
    return MARKS[g.status]


# A warning is neither a pass nor a failure: it never decides the verdict, a reviewer must read it.
MARKS = {
    "pass": '<span class="rg-pass" title="passed">✓</span>',
    "fail": '<span class="rg-fail" title="failed">✗</span>',
    "warn": '<span class="rg-warn" title="warning: does not decide the verdict">⚠ warning</span>',
    "not_applicable": '<span class="rg-na" title="not checkable">– n/a</span>',
}


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
    '~ no significant change (...)' when the interval holds no change (render/figures.py)."""
    return figures.interval_text(interval)


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


def headline_label(r: HeadlineRow, *, gpus: int, cap_mib: float | None = None) -> str:
    """A row's label; the two memory rows say which of them a memory cap (`cap_mib`) bounds, so that
    nvidia-smi's peak above the cap never reads as the cap broken."""
    if r.metric == "workload/limits":
        return LIMITS_LABEL
    if r.metric == ALLOCATED_PEAK:
        return "peak memory allocated by PyTorch" + (f" (what the {fmt_gib(cap_mib)} cap bounds)" if cap_mib else "")
    m = _PER_GPU.match(r.metric)
    if m and m.group(2) == "mem_peak_mib":  # nvidia-smi's: context and cache included (see the Memory section)
        label = "GPU memory used, nvidia-smi peak" + ("" if gpus == 1 else f", GPU {m.group(1)}")
        return label + (" (with the CUDA context and cache, which no cap bounds)" if cap_mib else "")
    return r.label or r.metric


def is_memory_row(r: HeadlineRow) -> bool:
    """The framework's peak allocation or nvidia-smi's peak: shown in GiB, as the answer's memory is."""
    m = _PER_GPU.match(r.metric)
    return r.metric == ALLOCATED_PEAK or bool(m and m.group(2) == "mem_peak_mib")


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


def headline_change(doc: AnalysisDocument, comp: Comparison, row: HeadlineRow, *, primary: str | None) -> str:
    """The change of one row, as every page shows that figure: the run-level change for the primary
    metric and for a phase with an interval (rounded to it), percentage points for a quantity in %,
    a signed number of steps for a count, unchanged/changed for strings, else one decimal."""
    ch = row.change
    b, c = row.baseline, row.candidate
    if isinstance(b, str) or isinstance(c, str) or row.metric == "workload/limits":
        return "unchanged" if b == c else "**changed**"
    if row.metric == "steps_completed":
        return "same" if ch == 0 else fmt_count(ch, "step", signed=True)
    if primary is not None and row.metric == primary and comp.interval.estimate is not None:
        low, high = figures.bounds(comp.interval)
        return fmt_change(figures.interval_change(comp.interval), digits=change_decimals(low, high))
    with_interval = figures.headline_change(comp, row.metric)
    if with_interval is not None:
        return figures.change_text(with_interval)
    if row.unit == "%":
        return figures.difference_text(
            b if isinstance(b, (int, float)) else None, c if isinstance(c, (int, float)) else None, row.unit, ch
        )
    # No interval of its own: never finer than the primary metric's change of this comparison (the
    # nearest evidence of the run-to-run noise), so +149.7% total tokens/s never sits by a +150% primary.
    low, high = figures.bounds(comp.interval)
    digits = min(1, change_decimals(low, high)) if low is not None else 1
    return fmt_change(ch, digits=digits)


def _value(doc: AnalysisDocument, arm: str, r: HeadlineRow, x: float | int | str | None) -> str:
    """A headline value: memory in GiB with two decimals (the answer's unit), MiB and steps whole, a
    metric's mean rounded to its own standard error."""
    if is_memory_row(r) and isinstance(x, (int, float)):
        return fmt_gib(x)
    if isinstance(x, str) or r.unit in ("MiB", "steps") or ":" in r.metric or r.metric.startswith("gpu/"):
        return headline_value(x, r.unit, None)
    return figures.arm_value(doc, arm, r.metric, x, unit=r.unit)


def headline_cells(doc: AnalysisDocument, comparison: Comparison, *, primary: str | None = None) -> list[list[str]]:
    """(label, baseline, candidate, change) per headline row, in plain text: the site's table and the
    pull-request body show the same rows with the same figures (render/figures.py). The change may
    hold `**changed**` (bold on both outputs)."""
    kept = headline_rows(comparison)
    gpus = len({m.group(1) for r in kept if (m := _PER_GPU.match(r.metric))}) or 1
    arm = doc.arm(comparison.candidate)
    cap = arm.memory.cap_mib if arm is not None else None
    return [
        [
            headline_label(r, gpus=gpus, cap_mib=cap),
            _value(doc, comparison.baseline, r, r.baseline),
            _value(doc, comparison.candidate, r, r.candidate),
            headline_change(doc, comparison, r, primary=primary),
        ]
        for r in kept
    ]


def headline_table(
    doc: AnalysisDocument,
    comparison: Comparison,
    *,
    candidate_label: str,
    primary: str | None = None,
    html: bool = True,
) -> str:
    """Baseline, candidate and change per headline row (`headline_cells`), escaped for the page."""
    rows = [
        [safe.text(label), safe.text(b), safe.text(c), change]
        for label, b, c, change in headline_cells(doc, comparison, primary=primary)
    ]
    return table(["metric", "baseline", safe.text(candidate_label), "change"], rows, html=html)


def chart(name: str, spec: dict | None, *, title: str, svg: bool, empty: str = "") -> str:
    """A chart's figure: the arms' legend in HTML and a placeholder that the build fills with the chart
    drawn as inline SVG (render/chart_svg.py, docs/hooks/reportgen_hooks.py); `svg`: also a link to the
    chart as a standalone SVG file next to the page."""
    if spec is None:
        return f'!!! note "{safe.text(title)}: nothing to draw"\n    {safe.text(empty or "No samples were recorded for this chart.")}\n'
    download = f'<figcaption><a class="rg-meta" href="{safe.attr(name)}.svg">SVG</a></figcaption>' if svg else ""
    return (
        f'<figure class="rg-chart" id="chart-{safe.attr(name)}">{chart_svg.legend_html(chart_svg.arm_legend(spec))}'
        f'<div class="rg-svg" data-chart="{safe.attr(name)}" role="img" aria-label="{safe.attr(title)}"></div>'
        f"{download}</figure>\n"
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

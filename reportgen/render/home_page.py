"""The reports home (render stage): every experiment with its kind and machine, date, baseline
commit and each candidate's verdict and headline gain.

One block per experiment rather than one table row: a title, a badge naming the report kind and
machine (a CPU demo and a GPU showcase of the same spec share a title but not their verdicts), and
the candidates as a list, so the page reads on a 390 px phone without sideways scrolling. Each
title is a heading, so the search index and the page's table of contents list it with its kind.
"""

from __future__ import annotations

from collections.abc import Sequence

from reportgen.analysis.document import Comparison
from reportgen.render import report_kind as kinds
from reportgen.render import safe
from reportgen.render.blocks import badge, interval_text
from reportgen.render.experiment_page import report_kind
from reportgen.render.load import ExperimentData
from reportgen.render.page import Page

# Within a day, GPU evidence is listed before a CPU demo of the same spec.
KIND_ORDER = {"showcase": 0, "run": 1, "demo": 2}


def _candidate_line(c: Comparison) -> str:
    v = c.verdict
    gain = v.cause if v.status in ("failed", "invalid", "incomplete") and v.cause else interval_text(c.interval)
    return f"- {badge(v.status)} **{safe.text(c.candidate)}** {safe.text(gain)}"


def _block(exp: ExperimentData) -> str:
    info = exp.analysis.experiment
    kind = report_kind(exp)
    title = safe.text(info.title or exp.name)
    meta = " · ".join(
        [
            safe.code(exp.name),
            safe.text((info.created_utc or "")[:10]) or "date unknown",
            "baseline commit " + safe.code((info.baseline_commit or "unknown")[:12]),
        ]
    )
    cands = [_candidate_line(c) for c in exp.analysis.comparisons] or ["- no candidates"]
    return "\n".join(
        [
            '<div class="rg-report" markdown>',
            "",
            f"## [{safe.text(kind.label)}: {title}]({exp.name}/index.md)",
            "",
            f"{kinds.badge(kind)} {meta}",
            "",
            *cands,
            "",
            "</div>",
            "",
        ]
    )


def ordered(experiments: Sequence[ExperimentData]) -> list[ExperimentData]:
    """Newest day first; within a day, showcases and GPU runs before CPU demos; then by name."""

    def key(e: ExperimentData) -> tuple:
        day = (e.analysis.experiment.created_utc or "")[:10]
        return (_neg(day), KIND_ORDER.get(report_kind(e).key, 9), e.name)

    return sorted(experiments, key=key)


def _neg(text: str) -> tuple[int, ...]:
    """Sorts strings in reverse inside an ascending sort key."""
    return tuple(-ord(ch) for ch in text) + (0,)


def render(experiments: Sequence[ExperimentData], *, errors: Sequence[tuple[str, str]] = ()) -> Page:
    md = ["# Reports\n"]
    if experiments:
        md.append(
            f"{len(experiments)} experiment(s), newest first; a badge names each report's kind (CPU demo, GPU "
            "showcase, GPU run) and machine. Each candidate shows its verdict and the change of the primary "
            'metric with its confidence interval ("~" = no significant change).\n'
        )
        md += [_block(e) for e in ordered(experiments)]
    else:
        md.append(
            "No experiment with an analysis yet. Run `reportgen run <spec>` (or `reportgen ingest`), then `mkdocs build`.\n"
        )
    for name, err in errors:
        md.append(f'!!! failure "{safe.text(name)}: not rendered"\n    {safe.text(err)}\n')
    return Page(path="reports/index.md", title="Reports", markdown="\n".join(md))

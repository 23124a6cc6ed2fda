"""The answer block that opens an experiment page (render stage; plain data in, Markdown out).

A reviewer should know in 30 seconds whether to merge and what to do next, so the block is one
row per candidate, the pull request's candidate first and named as such, as benchmark
dashboards do: the primary metric, step time and peak memory, each with its change and interval,
the verdict and one next step. Under it, every verdict that is not a plain accept or reject says
its cause in words, with links to the evidence on the page. The figures are against the baseline;
a candidate built on another one is decided against that base, and its verdict cell says so.

The page builds `CandidateAnswer` values from analysis.json; this module only lays them out.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from reportgen.render import safe
from reportgen.render.blocks import VERDICT_LABEL, badge, table
from reportgen.render.format import change_decimals, fmt_change, fmt_value

VERDICTS_DOC = "analysis.md#verdicts"  # docs/analysis.md, relative to the docs root


@dataclass(frozen=True)
class Figure:
    """One measured quantity of one candidate against the baseline; `low`/`high` bound the change
    (fractions, candidate/baseline - 1) when an interval was computed."""

    label: str
    unit: str = ""
    baseline: float | None = None
    candidate: float | None = None
    change: float | None = None
    low: float | None = None
    high: float | None = None
    significant: bool | None = None
    confidence: float = 0.95


@dataclass(frozen=True)
class Evidence:
    label: str
    href: str


@dataclass(frozen=True)
class CandidateAnswer:
    candidate: str
    title: str
    status: str  # a verdict status of analysis.json
    figures: Sequence[Figure]  # the same labels, in the same order, for every candidate
    is_pr: bool = False
    base: str | None = None  # the arm this candidate is built on, when not the baseline
    decided_against: str | None = None  # the base whose comparison decided the verdict, when not the baseline
    cause: str | None = None  # why the verdict is not a plain accept/reject, in words
    next_step: str | None = None
    next_command: str | None = None
    evidence: Sequence[Evidence] = field(default_factory=tuple)
    href: str = ""  # the candidate's write-up, as a Markdown link target ("A1/index.md")


def ordered(answers: Sequence[CandidateAnswer]) -> list[CandidateAnswer]:
    """The pull request's candidate first; the others in the spec's order."""
    return [a for a in answers if a.is_pr] + [a for a in answers if not a.is_pr]


def figure_cell(f: Figure) -> str:
    """The change with its interval under it, rounded to what the interval supports; without an
    interval, the change alone (marked "no interval") so it is not read as a measured effect."""
    if f.change is None:
        return "n/a" if f.candidate is None else safe.text(fmt_value(f.candidate, unit=f.unit))
    if f.low is not None and f.high is not None:
        d = change_decimals(f.low, f.high)
        head = fmt_change(f.change, digits=d)
        if f.significant is False:
            head = "~ " + head
        ci = f"{f.confidence * 100:.0f}% CI {fmt_change(f.low, digits=d)} to {fmt_change(f.high, digits=d)}"
        return f'<span class="rg-nowrap">{safe.text(head)}</span><br><span class="rg-ci">{safe.text(ci)}</span>'
    return f'<span class="rg-nowrap">{safe.text(fmt_change(f.change, digits=1))}</span><br><span class="rg-ci">no interval</span>'


def _who(a: CandidateAnswer) -> str:
    link = f"[{safe.text(a.candidate)}]({a.href})" if a.href else safe.text(a.candidate)
    name = f"**{link}**" if a.is_pr else link
    tags = []
    if a.is_pr:
        tags.append('<span class="rg-pr">PR candidate</span>')
    if a.base:
        tags.append(f'<span class="rg-base">on {safe.text(a.base)}</span>')
    return name + (" " + " ".join(tags) if tags else "") + f'<br><span class="rg-title">{safe.text(a.title)}</span>'


def summary_table(answers: Sequence[CandidateAnswer]) -> str:
    """One row per candidate: who, verdict, then each figure's change and interval. Five columns
    at most, so it stays readable on a phone; the next steps follow as lines under it."""
    rows = ordered(answers)
    if not rows:
        return ""
    labels = [f.label for f in rows[0].figures]
    measured = {f.label for a in rows for f in a.figures if f.candidate is not None or f.change is not None}
    labels = [lbl for lbl in labels if lbl in measured]  # no column of n/a (peak GPU memory on a CPU)
    header = ["candidate", "verdict", *[safe.text(lbl) for lbl in labels]]
    body = []
    for a in rows:
        figs = {f.label: f for f in a.figures}
        cells = [figure_cell(figs[lbl]) if lbl in figs else "n/a" for lbl in labels]
        if a.status == "invalid" and cells:  # the primary figure compares different things: say so in place
            cells[0] += '<br><span class="rg-ci">not comparable: see why below</span>'
        verdict = badge(a.status)
        if a.decided_against:  # the figures are against the baseline; this verdict is not
            verdict += f'<br><span class="rg-ci">against {safe.text(a.decided_against)}</span>'
        body.append([_who(a), verdict, *cells])
    return table(header, body, align=["l", "l", *["r"] * len(labels)])


def _evidence_links(evidence: Sequence[Evidence]) -> str:
    """Markdown links, so MkDocs resolves a page path ("A2/index.md#chart-memory") and checks it."""
    return ", ".join(f"[{safe.text(e.label)}]({e.href})" for e in evidence)


def inline(text: str) -> str:
    """Escaped text where `backticked` parts become code."""
    out = []
    for i, part in enumerate(text.split("`")):
        if i % 2:
            out.append(safe.code(part))
        elif part:  # keep the spaces around a code span (safe.text trims)
            lead = " " if part[0].isspace() else ""
            trail = " " if part[-1].isspace() and part.strip() else ""
            out.append(lead + safe.text(part) + trail)
    return "".join(out)


def next_line(a: CandidateAnswer) -> str:
    """ "A1 (PR candidate, inconclusive): next: ... Why: <cause>. Evidence: <links>." on one line."""
    verdict = VERDICT_LABEL.get(a.status, a.status)
    who = f"<strong>{safe.text(a.candidate)}</strong> ({'PR candidate, ' if a.is_pr else ''}{safe.text(verdict)})"
    parts = [f"{who}: <strong>next:</strong> {inline((a.next_step or 'no next step recorded').rstrip('.'))}."]
    if a.cause:
        parts.append(f"Why {safe.text(verdict)}: {safe.text(a.cause.rstrip('.'))}.")
    if a.evidence:
        parts.append(f"Evidence: {_evidence_links(a.evidence)}.")
    return " ".join(parts)


def next_lines(answers: Sequence[CandidateAnswer]) -> str:
    """The next step of every candidate, PR candidate first, each with its cause and evidence: a
    Markdown list (its links are resolved and checked by MkDocs) in a div the stylesheet can find."""
    items = "\n".join(f"- {next_line(a)}" for a in ordered(answers))
    return f'<div class="rg-next" markdown>\n\n{items}\n\n</div>'


def next_commands(answers: Sequence[CandidateAnswer]) -> list[str]:
    """The exact command of each next step that has one (the PR candidate's first)."""
    out = []
    for a in ordered(answers):
        if a.next_command:
            out.append(safe.fence(a.next_command, "bash", title=f"next step for {a.candidate}"))
    return out


def block(answers: Sequence[CandidateAnswer], *, docs_prefix: str) -> str:
    """The whole answer block; `docs_prefix` leads from the page to the docs root ("../../")."""
    if not answers:
        return "No candidate was compared with the baseline.\n"
    parts = [summary_table(answers), next_lines(answers), *next_commands(answers)]
    parts.append(
        f"How a verdict is reached (windows, interval, guardrails): [verdicts explained]({docs_prefix}{VERDICTS_DOC})."
    )
    return "\n\n".join(parts) + "\n"

"""The answer block that opens an experiment page (render stage; plain data in, Markdown out).

A reviewer should know in 30 seconds whether to merge and what to do next, so the block opens with
one line per candidate that holds the whole verdict: both halves (faster, trains as well) with their
intervals and pairs, and a window inside a warm-up; on a phone those lines fill the first screen.
Then a table, one row per candidate, the pull request's candidate first and named as such, as benchmark
dashboards do: the primary metric and step time with their change and interval, peak memory
against the limit the run had, the verdict and one next step. Under it, every verdict that is not
a plain accept or reject says its cause in words, with links to the evidence on the page. Every
figure beside a verdict is the comparison that decided it: a candidate built on another one is
decided against that base, its figures are labelled "against A1", and the baseline figure follows
as context.

The page builds `CandidateAnswer` values from analysis.json; this module only lays them out.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from reportgen.render import safe
from reportgen.render.blocks import badge, table
from reportgen.vocab import BROKEN, Verdicts, verdict_label

VERDICTS_DOC = "analysis.md#verdicts"  # docs/analysis.md, relative to the docs root


@dataclass(frozen=True)
class Figure:
    """One cell of a candidate's row, as text already rounded by the one rule (render/figures.py):
    the figure, the line under it (its interval, or the limit it is measured against) and a note
    (the arm it is against when not the baseline, the baseline's figure as context)."""

    label: str
    head: str | None  # None: nothing measured ("n/a")
    detail: str = ""
    note: str = ""
    warn: bool = False  # drawn as a warning (little memory left)


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
    changes_maths: bool = False  # a flag edit changes the training's maths (analysis.json maths_changes)
    # The verdict's two halves in words, as the analysis wrote them (summary.speed, quality.summary), the
    # pairs the verdict rests on, and a window that starts inside a warm-up (summary.warmup).
    speed: str = ""
    quality: str | None = None
    quality_status: str | None = None
    pairs: int = 0
    warmup: str | None = None


def ordered(answers: Sequence[CandidateAnswer]) -> list[CandidateAnswer]:
    """The pull request's candidate first; the others in the spec's order."""
    return [a for a in answers if a.is_pr] + [a for a in answers if not a.is_pr]


def figure_cell(f: Figure) -> str:
    """The figure on one line, its interval or limit under it, a note under that; never wrapped
    inside a narrow column."""
    if f.head is None:
        return "n/a"
    out = f'<span class="rg-nowrap">{safe.text(f.head)}</span>'
    if f.detail:
        out += f"<br>{_detail(f.detail)}"
    if f.note:  # a warning (little memory left) reads as one
        cls = "rg-ci rg-warn" if f.warn else "rg-ci"
        out += f'<br><span class="{cls}">{safe.text(f.note)}</span>'
    return out


def _detail(text: str) -> str:
    """The line under a figure, never wrapped inside its interval or limit; a parenthesised tail ("of
    68.00 GiB emulated cap (GPU 80.00 GiB)") may go to a line of its own, so a long limit does not
    widen its column past a desktop's page (the table scrolled sideways to show the memory)."""
    head, sep, tail = text.partition(" (")
    if not sep:
        return f'<span class="rg-ci">{safe.text(text)}</span>'
    parts = (head, "(" + tail)
    return (
        '<span class="rg-ci rg-wrap">'
        + " ".join(f'<span class="rg-nowrap">{safe.text(x)}</span>' for x in parts)
        + "</span>"
    )


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
    measured = {f.label for a in rows for f in a.figures if f.head is not None}
    labels = [lbl for lbl in labels if lbl in measured]  # no column of n/a (peak GPU memory on a CPU)
    header = ["candidate", "verdict", *[safe.text(lbl) for lbl in labels]]
    body = []
    for a in rows:
        figs = {f.label: f for f in a.figures}
        cells = [figure_cell(figs[lbl]) if lbl in figs else "n/a" for lbl in labels]
        if a.status == Verdicts.INVALID and cells:  # the primary figure compares different things: say so in place
            cells[0] += '<br><span class="rg-ci">not comparable: see why below</span>'
        verdict = badge(a.status)
        if a.decided_against:  # decided against its base: so are the figures beside it
            verdict += f'<br><span class="rg-ci">against {safe.text(a.decided_against)}</span>'
        if a.changes_maths:  # faster or not, it trains a different model: said beside the verdict
            verdict += '<br><span class="rg-ci rg-warn">changes the maths</span>'
        body.append([_who(a), verdict, *cells])
    return table(header, body, align=["l", "l", *["r"] * len(labels)])


QUALITY_CLASS = {"worse": "rg-warn", "open": "rg-warn", "not_testable": "rg-warn"}


def halves(a: CandidateAnswer) -> str:
    """The verdict's two halves on one line: "faster: ... (95% CI ..., 3 pairs); trains as well: ...";
    a verdict with no speed figure (failed, invalid) says its cause's first words instead."""
    parts = [safe.text(a.speed)] if a.speed else []
    if a.quality:
        cls = QUALITY_CLASS.get(a.quality_status or "")
        said = safe.text(a.quality)
        parts.append(f'<span class="{cls}">{said}</span>' if cls else said)
    return "; ".join(parts)


def first_line(a: CandidateAnswer) -> str:
    """One candidate's answer in one line, both halves in it: who, the verdict, the pairs it rests on,
    speed and quality, and a window inside a warm-up."""
    who = f"**{safe.text(a.candidate)}**" + (" (PR candidate)" if a.is_pr else "")
    verdict = badge(a.status)
    if a.decided_against:
        verdict += f" against {safe.text(a.decided_against)}"
    said = halves(a)
    if a.status in BROKEN or not said:
        said = safe.prose((a.cause or a.next_step or "").rstrip("."))
    line = f"{who}: {verdict} · {said}"
    notes = [*(["changes the maths"] if a.changes_maths else []), *([a.warmup] if a.warmup else [])]
    if notes:
        line += f' · <span class="rg-note">{safe.text(" · ".join(notes))}</span>'
    return line


def first_lines(answers: Sequence[CandidateAnswer]) -> str:
    """Every candidate's answer in one line each, the PR's first: the first thing under the title, so a
    phone's first screen holds every verdict with both halves."""
    items = "\n".join(f"- {first_line(a)}" for a in ordered(answers))
    return f'<div class="rg-first" markdown>\n\n{items}\n\n</div>'


def _evidence_links(evidence: Sequence[Evidence]) -> str:
    """Markdown links, so MkDocs resolves a page path ("A2/index.md#chart-memory") and checks it."""
    return ", ".join(f"[{safe.text(e.label)}]({e.href})" for e in evidence)


def inline(text: str) -> str:
    """Escaped text where `backticked` parts become code, and so does each command-line flag."""
    out = []
    for i, part in enumerate(text.split("`")):
        if i % 2:
            out.append(safe.code(part))
        elif part:  # keep the spaces around a code span (safe.prose trims)
            lead = " " if part[0].isspace() else ""
            trail = " " if part[-1].isspace() and part.strip() else ""
            out.append(lead + safe.prose(part) + trail)
    return "".join(out)


def next_line(a: CandidateAnswer) -> str:
    """ "A1 (PR candidate, inconclusive): next: ... Why: <cause>. Evidence: <links>." on one line."""
    verdict = verdict_label(a.status).word
    who = f"<strong>{safe.text(a.candidate)}</strong> ({'PR candidate, ' if a.is_pr else ''}{safe.text(verdict)})"
    parts = [f"{who}: <strong>next:</strong> {inline((a.next_step or 'no next step recorded').rstrip('.'))}."]
    if a.cause:
        parts.append(f"Why {safe.text(verdict)}: {safe.prose(a.cause.rstrip('.'))}.")
    if a.evidence:
        parts.append(f"Evidence: {_evidence_links(a.evidence)}.")
    return " ".join(parts)


def next_lines(answers: Sequence[CandidateAnswer]) -> str:
    """The next step of every candidate, PR candidate first, each with its cause and evidence: a
    Markdown list (its links are resolved and checked by MkDocs) in a div the stylesheet can find."""
    items = "\n".join(f"- {next_line(a)}" for a in ordered(answers))
    return f'<div class="rg-next" markdown>\n\n{items}\n\n</div>'


def grouped_commands(answers: Sequence[CandidateAnswer]) -> list[tuple[list[str], str]]:
    """The next steps' commands, each once, with the candidates it is for (PR candidate first):
    three inconclusive candidates of one campaign share the command that adds pairs."""
    out: list[tuple[list[str], str]] = []
    for a in ordered(answers):
        if not a.next_command:
            continue
        same = next((group for group in out if group[1] == a.next_command), None)
        if same is not None:
            same[0].append(a.candidate)
        else:
            out.append(([a.candidate], a.next_command))
    return out


def next_commands(answers: Sequence[CandidateAnswer]) -> list[str]:
    """The exact command of each next step that has one (the PR candidate's first), each once."""
    return [
        safe.fence(command, "bash", title=f"next step for {', '.join(cands)}")
        for cands, command in grouped_commands(answers)
    ]


def block(answers: Sequence[CandidateAnswer], *, docs_prefix: str, context: str = "") -> str:
    """The whole answer block; `docs_prefix` leads from the page to the docs root ("../../"); `context`
    (what ran) goes between the first lines and the table."""
    if not answers:
        return "No candidate was compared with the baseline.\n" + context
    parts = [first_lines(answers), *([context.rstrip()] if context else []), summary_table(answers)]
    parts += [next_lines(answers), *next_commands(answers)]
    parts.append(
        f"How a verdict is reached (windows, interval, guardrails): [verdicts explained]({docs_prefix}{VERDICTS_DOC})."
    )
    return "\n\n".join(parts) + "\n"

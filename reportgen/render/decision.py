"""From analysis.json's decision data to the answer block's rows (render stage; typed document in,
plain data out).

The analysis decides (reportgen/analysis/next_step.py, same_work.py): which candidate is the pull
request's, the figures that matter with their intervals, the cause of a verdict in words, where
its evidence is, and the next step with its command. This module only turns that into what the
page lays out: figures as changes with their intervals, evidence anchors as links, and commands
with the spec's path as a reader's checkout has it, wrapped to the page's code column.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable

from reportgen.analysis.document import AnalysisDocument, Comparison, MetricChange
from reportgen.render.answer import CandidateAnswer, Evidence, Figure
from reportgen.render.reproduce import wrapped_words


def pr_candidate(doc: AnalysisDocument) -> str | None:
    """The candidate the pull request proposes (the spec's `pr_candidate`, default its first)."""
    return doc.settings.pr_candidate if doc.comparison(doc.settings.pr_candidate) else None


def figure(m: MetricChange) -> Figure:
    """A metric change as the answer block shows it: the change, and its interval as changes."""
    iv = m.interval
    has = iv is not None and iv.low is not None and iv.high is not None
    return Figure(
        label=m.label,
        unit=m.unit,
        baseline=m.reference,
        candidate=m.candidate,
        change=m.change,
        low=(iv.low - 1) if has and iv is not None and iv.low is not None else None,
        high=(iv.high - 1) if has and iv is not None and iv.high is not None else None,
        significant=iv.significant if has and iv is not None else None,
        confidence=iv.confidence if iv is not None else 0.95,
    )


def evidence_href(anchor: str) -> str:
    """An evidence anchor of analysis.json as a link from the experiment page: an id on the page
    ("windows") or a page path relative to it ("A2/index.md#chart-memory")."""
    return anchor if ".md" in anchor or anchor.startswith("#") else f"#{anchor}"


def tidy_command(command: str, spec_path: Callable[[str], str]) -> str:
    """The analysis's command with each word that is the spec's recorded path replaced by
    `spec_path(word)` (as a reader's checkout has it), each line wrapped to the page's code column."""
    out = []
    for line in command.splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            out.append(line)
            continue
        try:
            words = shlex.split(line)
        except ValueError:  # not shell words: show it as written
            out.append(line)
            continue
        out.append(wrapped_words([spec_path(w) for w in words]))
    return "\n".join(out)


def answers(
    doc: AnalysisDocument, *, href_of: dict[str, str], spec_path: Callable[[str], str] = lambda w: w
) -> list[CandidateAnswer]:
    """One `CandidateAnswer` per comparison, in the spec's order (the block puts the PR's first)."""
    out = []
    for comp in doc.comparisons:
        s = comp.summary
        arm = doc.arm(comp.candidate)
        out.append(
            CandidateAnswer(
                candidate=comp.candidate,
                title=arm.title if arm else comp.candidate,
                status=s.verdict,
                figures=[figure(s.primary), figure(s.step_time), figure(s.peak_memory)],
                is_pr=s.is_pr,
                base=comp.base,
                decided_against=comp.verdict.against if comp.verdict.against != comp.baseline else None,
                cause=s.cause,
                next_step=s.next_step.text,
                next_command=tidy_command(s.next_step.command, spec_path) if s.next_step.command else None,
                evidence=[Evidence(e.label, evidence_href(e.anchor)) for e in s.evidence],
                href=href_of.get(comp.candidate, ""),
            )
        )
    return out


def cause(comp: Comparison) -> str | None:
    """Why the verdict is not a plain accept or reject, in words (None for those)."""
    return comp.summary.cause

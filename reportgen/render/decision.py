"""From analysis.json's decision data to the answer block's rows (render stage; typed document in,
plain data out).

The analysis decides (reportgen/analysis/next_step.py, same_work.py): which candidate is the pull
request's, the figures that matter with their intervals, the cause of a verdict in words, where
its evidence is, and the next step with its command. This module only turns that into what the
page lays out: figures as changes with their intervals, evidence ids as links (render/evidence.py),
and commands with the spec's path as a reader's checkout has it, wrapped to the page's code column.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable

from reportgen.analysis.document import AnalysisDocument, Comparison, MemoryUse, MetricChange
from reportgen.analysis.memory import low_headroom
from reportgen.render import figures
from reportgen.render.answer import CandidateAnswer, Evidence, Figure
from reportgen.render.evidence import evidence_href
from reportgen.render.format import fmt_gib, fmt_share, fmt_value
from reportgen.render.reproduce import wrapped_words


def pr_candidate(doc: AnalysisDocument) -> str | None:
    """The candidate the pull request proposes (the spec's `pr_candidate`, default its first)."""
    return doc.settings.pr_candidate if doc.comparison(doc.settings.pr_candidate) else None


def figure(m: MetricChange, *, baseline: str = "baseline", context: MetricChange | None = None) -> Figure:
    """A metric change as the answer block shows it: the change (the interval's estimate, rounded to
    the interval), the interval under it, and the arm it is against when that is not the baseline,
    with the baseline's figure after it as context."""
    has_interval = m.interval is not None and m.interval.estimate is not None
    if not has_interval and m.change is None:
        return Figure(label=m.label, head=None if m.candidate is None else fmt_value(m.candidate, unit=m.unit))
    head = figures.change_text(m)
    if has_interval and m.interval is not None and m.interval.low is not None:
        if not m.interval.significant:
            head = "~ " + head
        detail = figures.ci_text(m.interval)
    else:
        detail = "no interval"
    note = ""
    if m.against != baseline:
        note = f"against {m.against}"
        if context is not None and (context.change is not None or context.interval is not None):
            note += f" (baseline: {figures.change_text(context)})"
    return Figure(label=m.label, head=head, detail=detail, note=note)


MEMORY_LABEL = "peak memory"


def memory_figure(mem: MemoryUse | None) -> Figure:
    """Peak memory against the limit the run had, with the headroom: "4.41 GiB", "of the 5.00 GiB cap:
    0.59 GiB (12%) left"; a warning under 15 % left (analysis/memory.py)."""
    if mem is None or mem.used_mib is None:
        return Figure(label=MEMORY_LABEL, head=None)
    head = fmt_gib(mem.used_mib)
    if mem.limit_mib is None or mem.headroom_mib is None:
        return Figure(label=MEMORY_LABEL, head=head, detail="no limit known")
    limit = f"of {fmt_gib(mem.limit_mib)} emulated cap" if mem.limit == "cap" else f"of {fmt_gib(mem.limit_mib)} free"
    if mem.limit == "cap" and mem.device_total_mib:
        limit += f" (GPU {fmt_gib(mem.device_total_mib)})"
    left = f"{fmt_share(max(mem.headroom or 0.0, 0.0))} left"
    return Figure(label=MEMORY_LABEL, head=head, detail=limit, note=left, warn=low_headroom(mem))


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
                figures=[
                    figure(s.primary, baseline=comp.baseline, context=s.primary_vs_baseline),
                    figure(s.step_time, baseline=comp.baseline),
                    memory_figure(arm.memory if arm else None),
                ],
                is_pr=s.is_pr,
                base=comp.base,
                decided_against=comp.verdict.against if comp.verdict.against != comp.baseline else None,
                cause=s.cause,
                next_step=s.next_step.text,
                next_command=tidy_command(s.next_step.command, spec_path) if s.next_step.command else None,
                evidence=[Evidence(e.label, evidence_href(e)) for e in s.evidence],
                href=href_of.get(comp.candidate, ""),
                changes_maths=bool(comp.maths_changes),
                speed=s.speed,
                quality=comp.quality.summary if comp.quality is not None else None,
                quality_status=comp.quality.status if comp.quality is not None else None,
                pairs=comp.verdict.pairs,
                warmup=s.warmup,
            )
        )
    return out


def cause(comp: Comparison) -> str | None:
    """Why the verdict is not a plain accept or reject, in words (None for those)."""
    return comp.summary.cause

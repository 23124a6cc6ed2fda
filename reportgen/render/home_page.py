"""The reports home (render stage): every experiment with its kind and machine, date, baseline
commit and each candidate's verdict and headline gain.

One block per experiment rather than one table row: a title, a badge naming the report kind and
machine (a CPU demo and a GPU showcase of the same spec share a title but not their verdicts), and
the candidates as a list, so the page reads on a 390 px phone without sideways scrolling. Each
title is a heading, so the search index and the page's table of contents list it with its kind.
Campaigns of one spec share its title (the one-H200 showcase made three times): each then carries
what differs between them (machines, design and pairs, date), and the decided GPU reports come first.
"""

from __future__ import annotations

from collections.abc import Sequence

from reportgen.analysis.document import Comparison
from reportgen.render import figures, kinds, safe
from reportgen.render.blocks import badge, interval_text
from reportgen.render.common import report_kind
from reportgen.render.format import fmt_count
from reportgen.render.load import PublishedExperiment
from reportgen.render.page import Page
from reportgen.vocab import BROKEN, DECIDED, Verdicts, metric, verdict_label

# GPU evidence before a CPU demo; among GPU reports, showcases before other GPU runs.
KIND_ORDER = {"showcase": 0, "run": 1, "demo": 2}
OPEN = (Verdicts.INCONCLUSIVE, Verdicts.INCOMPLETE)


def settled(exp: PublishedExperiment) -> bool:
    """Every candidate has a verdict that stands (accepted, rejected, no change, failed, invalid): no
    comparison is inconclusive or incomplete."""
    return bool(exp.analysis.comparisons) and all(c.verdict.status not in OPEN for c in exp.analysis.comparisons)


def _design(exp: PublishedExperiment) -> str:
    """ "sequential, decided after 3 pairs", "fixed design, 2 pairs": the campaign in a few words."""
    cost = exp.analysis.campaign
    pairs = max(cost.pairs_run.values(), default=0) if cost is not None else 0
    if exp.analysis.settings.design.mode == "sequential":
        done = cost is not None and cost.stopped == "decided"
        return f"sequential, {'decided after ' if done else ''}{fmt_count(pairs, 'pair')}"
    return f"fixed design, {fmt_count(pairs, 'pair')}"


def _machines(exp: PublishedExperiment) -> str:
    """ "one machine", "2 machines": the machines the pairs were measured on (analysis.json's pairs)."""
    ids = {p.machine for c in exp.analysis.comparisons for p in c.run_level.pairs if p.machine}
    if not ids:
        return ""
    return "one machine" if len(ids) == 1 else f"{len(ids)} machines"


def _workload(exp: PublishedExperiment) -> str:
    """ "workload v2": the version of the trainer that made the runs, when the analysis knows it."""
    version = exp.analysis.workload.version
    return f"workload {version}" if version else ""


def distinctions(experiments: Sequence[PublishedExperiment]) -> dict[str, str]:
    """For experiments that share a title (the default experiment's GPU profile, made as r2, r3, r4),
    what tells each apart, in words, from what differs between them: the fewest of the workload's
    version (a v1 showcase's verdict reads otherwise than a v2 one's), the machines its pairs
    came from, its design and pairs, and its date that tell them all apart; the folder's name when
    nothing else does. "" for a title of its own."""
    groups: dict[str, list[PublishedExperiment]] = {}
    for e in experiments:
        groups.setdefault(e.analysis.experiment.title or e.name, []).append(e)
    out: dict[str, str] = {}
    for group in groups.values():
        if len(group) < 2:
            continue
        facts = {
            e.name: {
                "workload": _workload(e),
                "machines": _machines(e),
                "design": _design(e),
                "date": (e.analysis.experiment.created_utc or "")[:10],
            }
            for e in group
        }
        keys: list[str] = []  # the fewest facts, in this order, that tell the group apart
        for k in ("workload", "machines", "design", "date"):
            if len({tuple(f[x] for x in keys) for f in facts.values()}) == len(group):
                break
            if len({f[k] for f in facts.values()}) > 1:
                keys.append(k)
        for e in group:
            words = [facts[e.name][k] for k in keys if facts[e.name][k]]
            same = [o for o in group if o is not e and all(facts[o.name][k] == facts[e.name][k] for k in keys)]
            out[e.name] = ", ".join([*words, *([e.name] if same or not words else [])])
    return out


def _title(exp: PublishedExperiment, told: dict[str, str]) -> str:
    """The title as the lists show it: with what tells it apart from reports of the same title."""
    title = exp.analysis.experiment.title or exp.name
    return f"{title} — {told[exp.name]}" if told.get(exp.name) else title


def verdict_words(c: Comparison) -> str:
    """A candidate's verdict and the figure that decided it, for a list: "+91% (95% CI +65% to +121%)";
    against its base when it was decided there, the baseline's figure after it; a failure's cause."""
    v = c.verdict
    if v.status in BROKEN and v.cause:
        return safe.prose(v.cause)
    rl = c.deciding()
    text = safe.text(interval_text(rl.interval))
    if rl.reference != c.baseline:
        context = (
            f"; against the baseline {safe.text(figures.change_text(c.summary.primary_vs_baseline))}"
            if c.summary.primary_vs_baseline is not None
            else ""
        )
        text = f"against {safe.text(rl.reference)}: {text}{context}"
    return text


def _candidate_line(c: Comparison) -> str:
    return f"- {badge(c.verdict.status)} **{safe.text(c.candidate)}** {verdict_words(c)}"


def _block(exp: PublishedExperiment, told: dict[str, str]) -> str:
    info = exp.analysis.experiment
    kind = report_kind(exp)
    title = safe.text(_title(exp, told))
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


def ordered(experiments: Sequence[PublishedExperiment]) -> list[PublishedExperiment]:
    """What a reader wants first: GPU evidence before CPU demos; among them the reports whose every
    candidate has a verdict that stands (the decided showcases) before those still open; then
    showcases before other runs, and the newest first."""

    def key(e: PublishedExperiment) -> tuple:
        when = e.analysis.experiment.created_utc or ""
        kind = KIND_ORDER.get(report_kind(e).key, 9)
        return (kind == KIND_ORDER["demo"], not settled(e), kind, _neg(when), e.name)

    return sorted(experiments, key=key)


def _neg(text: str) -> tuple[int, ...]:
    """Sorts strings in reverse inside an ascending sort key."""
    return tuple(-ord(ch) for ch in text) + (0,)


def render(experiments: Sequence[PublishedExperiment], *, errors: Sequence[tuple[str, str]] = ()) -> Page:
    md = ["# Reports\n"]
    if experiments:
        md.append(
            f"{fmt_count(len(experiments), 'experiment')}: GPU reports before CPU demos, those whose every candidate "
            "is decided first, then the newest; a badge names each report's kind (CPU "
            "demo, GPU showcase, GPU run) and machine. Each candidate shows its verdict and the change of the "
            "primary metric that decided it, with its confidence interval (against its base when it was decided "
            'there; "~" = no significant change).\n'
        )
        told = distinctions(experiments)
        md += [_block(e, told) for e in ordered(experiments)]
    else:
        md.append(
            "No experiment with an analysis yet. Run `reportgen run <spec>` (or `reportgen ingest`), then `mkdocs build`.\n"
        )
    for name, err in errors:
        md.append(f'!!! failure "{safe.text(name)}: not rendered"\n    {safe.text(err)}\n')
    return Page(path="reports/index.md", title="Reports", markdown="\n".join(md))


RESULTS_MARK = "<!-- reportgen:results -->"  # where the site's home page (docs/index.md) lists the results


def results(experiments: Sequence[PublishedExperiment]) -> str:
    """The home page's results in the reports list's order (`ordered`), one line per experiment: what
    was tried on which machine and what came of each candidate, in words and linked (paths relative to
    the home); a title several experiments share carries what tells each apart (`distinctions`)."""
    if not experiments:
        return "No results yet: run `reportgen run <spec>`, then `mkdocs build`.\n"
    lines = []
    told = distinctions(experiments)
    for exp in ordered(experiments):
        kind = report_kind(exp)
        info = exp.analysis.experiment
        words = []
        label = metric(exp.analysis.primary.key).title
        for c in exp.analysis.comparisons:
            said = verdict_label(c.verdict.status).word
            against = f" against {safe.text(c.verdict.against)}" if c.verdict.against != c.baseline else ""
            figure = ""
            if c.verdict.status in DECIDED and c.summary.primary.interval is not None:
                figure = f", {safe.text(label)} {safe.text(figures.change_text(c.summary.primary))}"
            maths = " (changes the maths)" if c.maths_changes else ""
            words.append(f"{safe.text(c.candidate)} {said}{against}{figure}{maths}")
        lines.append(
            f"- [{safe.text(_title(exp, told))}](reports/{exp.name}/index.md) "
            f"({safe.text(kind.label)}, {safe.text(kind.machine)}, {safe.text((info.created_utc or '')[:10])}, "
            f"{safe.code(exp.name)}): " + ("; ".join(words) or "no candidates") + "."
        )
    return "\n".join(lines) + "\n"


def home(index_markdown: str, experiments: Sequence[PublishedExperiment]) -> Page | None:
    """The site's home page: the hand-written docs/index.md with the results where it marks them
    (RESULTS_MARK); None when it has no mark."""
    if RESULTS_MARK not in index_markdown:
        return None
    return Page(path="index.md", title="reportgen", markdown=index_markdown.replace(RESULTS_MARK, results(experiments)))

"""The Markdown section for a pull-request description, from analysis.json only.

Pipeline position: analysis.json -> **render** (this module) -> stdout of `reportgen pr-body`.
Pure: takes the document and returns text; never reads logs or runs/.

A reviewer reads a PR description in its list of changes: the link to the full report first (the
published site's, else none and how to give one: render/site_address.py), then the machine and the
workload that were measured (the embedded stand-in trainer says so), then one line per candidate with
the whole verdict, both halves (faster, and trains as well) with their intervals and pairs, then the
answer table (the same figures, rounded the same way, as the report's answer block), one line
per candidate with its next step, and everything else folded in a `<details>` block. At most
MAX_LINES lines by default (`full=True` adds each candidate's headline table and every guardrail).
"""

from __future__ import annotations

from reportgen.analysis.document import AnalysisDocument, Comparison
from reportgen.render import blocks, code_change, decision, figures, kinds, reproduce, steady_state
from reportgen.render import machine as machine_info
from reportgen.render.answer import CandidateAnswer, Figure, grouped_commands, ordered
from reportgen.render.format import fmt_change
from reportgen.render.site_address import NO_ADDRESS
from reportgen.vocab import BROKEN, metric, verdict_label

MAX_LINES = 60
MARK = {"pass": "✅ pass", "fail": "❌ fail", "warn": "⚠️ warning", "not_applicable": "➖ n/a"}


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def _table(head: list[str], rows: list[list[str]]) -> list[str]:
    out = ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
    out += ["| " + " | ".join(_cell(c) for c in r) + " |" for r in rows]
    return out


def _figure(f: Figure) -> str:
    """A figure of the answer block in one cell: "+91% (95% CI +65% to +121%)", "-32% (...), against A1"."""
    if f.head is None:
        return "n/a"
    extra = "; ".join(x for x in (f.detail, f.note) if x and x != "no interval")
    return f"{f.head} ({extra})" if extra else f.head


def first_lines(answers: list[CandidateAnswer]) -> list[str]:
    """One line per candidate, the PR's first, with the whole verdict: both halves (faster, trains as
    well) with their intervals and pairs, and a window inside a warm-up; then a blank line."""
    out = []
    for a in answers:
        said = "; ".join(x for x in (a.speed, a.quality) if x)
        if a.status in BROKEN or not said:
            said = (a.cause or a.next_step or "").rstrip(".")
        line = f"- {_who(a)}: **{_verdict(a)}** · {said}"
        if a.changes_maths:
            line += " · changes the maths"
        if a.warmup:
            line += f" · ⚠️ {a.warmup}"
        out.append(line)
    return [*out, ""] if out else []


def _who(a: CandidateAnswer) -> str:
    return f"`{a.candidate}`" + (" (PR)" if a.is_pr else "") + (f" on `{a.base}`" if a.base else "")


def _verdict(a: CandidateAnswer) -> str:
    v = verdict_label(a.status).pr
    return v + (f" against `{a.decided_against}`" if a.decided_against else "")


def _headline_rows(doc: AnalysisDocument, comp: Comparison, primary: str) -> list[list[str]]:
    """The site's headline rows (`blocks.headline_cells`), in plain text for GitHub."""
    return [[*cells[:3], cells[3].replace("**", "")] for cells in blocks.headline_cells(doc, comp, primary=primary)]


def report_link(doc: AnalysisDocument, site_url: str | None) -> str:
    """The first line: a link to the full report on the published site (`reportgen pr-body` derives
    its address where it can be known: render/site_address.py), else no link and how to give one (a
    path into the built site/ is a 404 inside a pull request)."""
    exp = doc.experiment
    url = site_url or doc.settings.site_url
    if url:
        return (
            f"**[Full report: {exp.title}]({url.rstrip('/')}/reports/{exp.name}/)** · performance evidence for this PR"
        )
    return f"**Full report: {exp.title}** · performance evidence for this PR ({NO_ADDRESS})"


def measured_on(doc: AnalysisDocument) -> str:
    """The second line: the report's kind, the machine and the workload, before any number (a CPU
    demo of the embedded stand-in trainer must not read as a GPU measurement of Relax)."""
    gpus = [str(g.get("name") or "GPU") for g in machine_info.gpu_list(doc.machine)]
    if gpus or machine_info.cpu_text(doc.machine):
        machine = machine_info.summary(doc.machine)
        where = f"{kinds.classify(doc.experiment.name, gpus, machine).label} on {machine}"
    else:
        where = "Machine not recorded"
    w = doc.workload
    what = [w.name or (f"`{w.entrypoint}`" if w.entrypoint else "workload not recorded")]
    if w.model:
        what.append(w.model)
    if w.parameters:
        what.append(f"{w.parameters / 1e6:.1f} M parameters")
    if w.steps:
        what.append(f"{w.steps} steps a run")
    return f"{where} · workload: {'; '.join(what)}"


def render_pr_body(
    doc: AnalysisDocument,
    *,
    site_url: str | None = None,
    runs_dir: str = "runs",
    recipe_dir: str | None = None,
    full: bool = False,
) -> str:
    """The PR description's evidence section. `recipe_dir`: the folder the spec ran from (its recipe
    paths are relative to it), so the Reproduce commands work in a fresh checkout."""
    exp = doc.experiment
    primary = doc.primary.key
    answers = ordered(decision.answers(doc, href_of={}))
    lines = [report_link(doc, site_url), "", measured_on(doc), "", *first_lines(answers)]
    if answers:
        labels = [f.label for f in answers[0].figures]
        measured = [
            lbl for lbl in labels if any(f.label == lbl and f.head is not None for a in answers for f in a.figures)
        ]
        head = ["candidate", "verdict", *measured]
        rows = []
        for a in answers:
            figs = {f.label: f for f in a.figures}
            rows.append([_who(a), _verdict(a), *(_figure(figs[lbl]) for lbl in measured)])
        lines += _table(head, rows)
        lines.append("")
        for a in answers:
            why = f" Why {verdict_label(a.status).pr.split(' ', 1)[-1]}: {a.cause.rstrip('.')}." if a.cause else ""
            lines.append(f"- {_who(a)}: {(a.next_step or 'no next step recorded').rstrip('.')}.{why}")
        lines.append("")
    code_lines = [line for c in doc.comparisons if (line := code_change.pr_line(c.candidate, c)) is not None]
    if code_lines:
        lines += [*code_lines, ""]
    if (warm := steady_state.pr_line(doc)) is not None:
        lines += [warm, ""]
    for note in doc.warnings:
        lines += [f"> note: {note}", ""]
    details = _details(doc, primary, full=full)
    commands: list[str] = []
    for cands, command in grouped_commands(answers):
        commands += [f"Next step for {', '.join(f'`{c}`' for c in cands)}:", "```bash", command, "```", ""]
    # The same commands as the report's Reproduce section.
    run, notes = reproduce.run_commands(
        reproduce.ReproduceInputs(
            experiment=exp.name,
            runs_dir=runs_dir,
            commit=exp.baseline_commit,
            dirty=exp.dirty,
            profile=exp.profile,
            recipe_dir=recipe_dir,
            revisions=tuple((a.id, a.revision) for a in doc.arms if a.revision),
        )
    )
    rerun = ["Reproduce:", "```bash", *run, "```", " ".join(notes), ""]
    where = "the report's answer block" if site_url or doc.settings.site_url else "the report"
    # At most MAX_LINES by default: the longest parts give way to a pointer to the report, last first.
    for parts in (
        (commands, rerun),
        ([f"Next-step commands: in {where}.", ""], rerun),
        (
            [f"Next-step commands and how to reproduce: in {where}.", ""],
            [],
        ),
    ):
        body = [*lines, "<details><summary>Details: windows, guardrails, commands, reproduce</summary>", ""]
        body += [*details, *parts[0], *parts[1], "</details>"]
        if full or "\n".join(body).count("\n") + 1 <= MAX_LINES:  # a command holds several lines
            break
    return "\n".join(body) + "\n"


def _details(doc: AnalysisDocument, primary: str, *, full: bool) -> list[str]:
    """Per candidate: each window's change and the pairs of runs in one line, the guardrails that did
    not pass; with `full`, the headline table and every guardrail."""
    out: list[str] = []
    label = metric(primary).title
    for c in sorted(doc.comparisons, key=lambda c: not c.summary.is_pr):
        d = blocks.interval_decimals(c.interval)
        wins = ", ".join(
            f"{w.window} {fmt_change(w.change, digits=d)}" if w.candidate is not None else f"{w.window} not reached"
            for w in c.windows
        )
        rl = c.deciding()
        pairs = ", ".join(fmt_change(p.ratio - 1, digits=d) for p in rl.pairs)
        against = "" if rl.reference == c.baseline else f" against `{rl.reference}`"
        out.append(
            f"**`{c.candidate}`**: {label} per window against the baseline {wins or 'n/a'}; "
            f"pairs of runs{against}: {len(rl.pairs)}"
            + (f" ({pairs})" if pairs else "")
            + f"; {c.guardrail_tally.text()}."
        )
        for p in c.set_aside:
            out.append(
                f"- set aside (machine not quiet): pair {p.repeat}, `{p.reference_run}` and `{p.candidate_run}`: {p.reason}"
            )
        noted = [g for g in c.guardrails if full or g.status in ("fail", "warn")]
        for g in noted:
            ev = f" (`{g.evidence}`)" if g.evidence else ""
            out.append(f"- {MARK.get(g.status, g.status)} {g.title}: {g.reason}{ev}")
        if full:
            out += ["", *_table(["metric", "baseline", "candidate", "change"], _headline_rows(doc, c, primary))]
            out += [f"Interval: {figures.interval_text(c.interval)}, {c.interval.method}."]
        out.append("")
    return out

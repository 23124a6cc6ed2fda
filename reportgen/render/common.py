"""Helpers the report pages share (render stage): metric titles, the answer line, change rows and
cells, the same-work finding, the report kind, and where the spec and recipe ran. The pages
(experiment, candidate, provenance, rollback, home) and `reportgen analyze` import them from here;
each page module holds only its own page.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from reportgen import vocab
from reportgen.analysis.document import AnalysisDocument, Comparison, Interval, MetricChange
from reportgen.render import blocks, figures, kinds, memory_words, reproduce, safe
from reportgen.render import machine as machine_info
from reportgen.render.blocks import table
from reportgen.render.format import fmt_change, fmt_value
from reportgen.render.load import PublishedExperiment
from reportgen.vocab import BROKEN, verdict_label


def metric_title(key: str) -> tuple[str, str]:
    """A metric's title and unit (vocab.metric: a title that reads well for any key)."""
    m = vocab.metric(key)
    return m.title, m.unit


def interval_cell(interval: Interval) -> str:
    """The change on one line, its interval on the next, neither wrapped inside a narrow column."""
    text = blocks.interval_text(interval)
    head, sep, ci = text.partition(" (")
    if not sep:
        return safe.text(text)
    return f'<span class="rg-nowrap">{safe.text(head)}</span><br><span class="rg-nowrap">({safe.text(ci)}</span>'


def answer_line(exp: PublishedExperiment, comparison: Comparison) -> str:
    """'A1 accepted: response tokens/s +20.68% (95% CI ...)' or the failure cause."""
    label = metric_title(exp.analysis.primary.key)[0]
    verdict = comparison.verdict
    status = verdict.status
    cand = comparison.candidate
    if status in BROKEN and verdict.cause:
        return f"{cand} {verdict_label(status).word}: {verdict.cause}"
    return f"{cand} {verdict_label(status).word}: {label} {blocks.interval_text(comparison.interval)}"


def maths_note(comparison: Comparison) -> str:
    """What a candidate's headline adds when its flags change the training's maths (analysis.json
    `maths_changes`): "; changes the maths: removes --use-precision-aware-optimizer"; "" otherwise."""
    edits = [m.edit() for m in comparison.maths_changes]
    return f"; changes the maths: {', '.join(edits)}" if edits else ""


def memory_note(doc: AnalysisDocument, comparison: Comparison, *, memory_link: str) -> str:
    """The sentence under a candidate's headline table that says which memory row a cap bounds and
    what nvidia-smi's larger figure holds besides (memory_words.headline_note), linking the Memory
    section; "" without a cap or when nvidia-smi's peak is under it."""
    arm = doc.arm(comparison.candidate)
    shown = next(
        (
            r.candidate
            for r in blocks.headline_rows(comparison)
            if blocks.is_memory_row(r) and r.metric != vocab.ALLOCATED_PEAK
        ),
        None,
    )
    if arm is None or not isinstance(shown, (int, float)):
        return ""
    note = memory_words.headline_note(comparison.candidate, arm.memory, shown_peak_mib=float(shown))
    return f"{safe.prose(note)} ([memory]({memory_link}))." if note else ""


def metric_change_rows(doc: AnalysisDocument, candidate: str, changes: Sequence[MetricChange]) -> list[list[str]]:
    """metric | reference | candidate | change with its interval: each arm's value rounded to its own
    standard error, the change to its interval (render/figures.py), so a figure reads the same in
    every table it appears in."""
    rows = []
    for m in changes:
        iv = m.interval
        if iv is not None and iv.estimate is not None:
            change = interval_cell(iv)
        else:
            change = safe.text(fmt_change(m.change, digits=1) + (" (no interval)" if m.change is not None else ""))
        rows.append(
            [
                safe.text(m.label),
                safe.text(figures.arm_value(doc, m.against, m.metric, m.reference, unit=m.unit)),
                safe.text(figures.arm_value(doc, candidate, m.metric, m.candidate, unit=m.unit)),
                change,
            ]
        )
    return rows


def same_work_body(doc: AnalysisDocument, c: Comparison) -> list[str]:
    """One candidate's same-work finding: the reason, the windows, the work-independent figures."""
    sw = c.same_work
    md = [safe.text(sw.reason) + "\n"]
    if sw.status == "not_applicable":  # nothing measured to compare: the reason says so, no table of n/a
        return md
    rows = [
        [
            safe.text(w.window),
            safe.text(f"{fmt_value(w.response_length_baseline)} → {fmt_value(w.response_length_candidate)}"),
            fmt_change(w.response_length_change, digits=1),
            safe.text(f"{fmt_value(w.tokens_per_step_baseline)} → {fmt_value(w.tokens_per_step_candidate)}"),
            fmt_change(w.tokens_per_step_change, digits=1),
            "n/a" if w.within is None else ("✓" if w.within else "**✗**"),
        ]
        for w in sw.windows
    ]
    if rows:
        head = ["window", "response length (tokens)", "change", "tokens per step", "change", "within"]
        md.append(table(head, rows, html=False) + "\n")
    shown = {m.metric for m in c.secondary}  # step time and its phases have their own table
    extra = [m for m in sw.work_independent if m.metric not in shown]
    if extra:
        md.append("Figures that do not depend on how much was generated (step time and each phase per step too):\n")
        head = ["metric", "baseline", safe.text(c.candidate), "change"]
        md.append(table(head, metric_change_rows(doc, c.candidate, extra), html=False) + "\n")
    return md


def report_kind(exp: PublishedExperiment) -> kinds.ReportKind:
    """The experiment's report kind from its folder name and the GPUs its machine recorded: the
    one rule for its pages and its block on the reports home."""
    if exp.kind is not None:
        return exp.kind
    machine = exp.analysis.machine
    fp = machine_info.fingerprint(exp)
    gpus = [str(g.get("name") or "GPU") for g in machine_info.gpu_list(machine, fp)]
    return kinds.classify(exp.name, gpus, machine_info.summary(machine, fp))


def spec_where_it_ran(exp: PublishedExperiment) -> str | None:
    """The spec's path as it ran, relative to the runs' working directory (the repository root for
    the default experiment), from experiment.json; None when not recorded."""
    source = exp.record.source_path if exp.record is not None else None
    if not source:
        return None
    cwd = next((r.manifest.cwd for r in exp.formal_runs() if r.manifest.cwd), None)
    if isinstance(cwd, str) and source.startswith(cwd.rstrip("/") + "/"):
        return os.path.relpath(source, cwd)
    return reproduce.repo_relative(source)


def spec_path_for_reader(exp: PublishedExperiment, word: str) -> str:
    """A command word that is the spec's recorded path (absolute, machine-specific) as a reader's
    checkout has it; any other word unchanged."""
    if word and exp.record is not None and word == exp.record.source_path:
        return spec_where_it_ran(exp) or word
    return word


def recipe_dir_where_it_ran(exp: PublishedExperiment) -> str | None:
    spec = spec_where_it_ran(exp)
    return os.path.dirname(spec) or "." if spec else None

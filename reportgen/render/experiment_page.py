"""The experiment page (render stage): the answer first, then the evidence.

Order: verdict per candidate with the headline gain and its interval; hypothesis; headline
tables in the protocol's shape; window tables; intervals and verdicts; guardrails; curves;
fixed workload; runs; reproduction commands.
"""

from __future__ import annotations

import json
import shlex

from reportgen.analysis.document import Comparison, Interval
from reportgen.render import blocks, charts, safe
from reportgen.render import machine as machine_info
from reportgen.render.blocks import badge, table
from reportgen.render.format import fmt_change, fmt_num
from reportgen.render.load import ExperimentData
from reportgen.render.page import Page, candidate_slug, experiment_base
from reportgen.vocab import (
    ACTOR_TRAIN_TIME,
    METRICS,
    ROLLOUT_TIME,
    STEP_RESP_TOKEN_PER_S,
    STEP_TIME,
    STEP_TOKEN_PER_S,
)

METRIC_TITLES = {
    k: (METRICS[k].title, METRICS[k].unit)
    for k in (STEP_RESP_TOKEN_PER_S, STEP_TOKEN_PER_S, STEP_TIME, ACTOR_TRAIN_TIME, ROLLOUT_TIME)
}


def metric_title(key: str) -> tuple[str, str]:
    return METRIC_TITLES.get(key, (key, ""))


def answer_line(exp: ExperimentData, comparison: Comparison) -> str:
    """'A1 accepted: response tokens/s +20.68% (95% CI ...)' or the failure cause."""
    label = metric_title(exp.analysis.primary.key)[0]
    verdict = comparison.verdict
    status = verdict.status
    cand = comparison.candidate
    if status in ("failed", "invalid") and verdict.cause:
        return f"{cand} {blocks.VERDICT_LABEL.get(status, status)}: {verdict.cause}"
    return f"{cand} {blocks.VERDICT_LABEL.get(status, status)}: {label} {blocks.interval_text(comparison.interval)}"


VERDICT_ORDER = ["accepted", "rejected", "no_change", "inconclusive", "failed", "invalid"]


def answer(exp: ExperimentData, *, link_prefix: str = "") -> str:
    out = []
    comps = sorted(exp.analysis.comparisons, key=lambda c: VERDICT_ORDER.index(c.verdict.status))
    for c in comps:
        v = c.verdict
        kind = blocks.VERDICT_ADMONITION.get(v.status, "note")
        arm = exp.arm(c.candidate)
        out.append(f'!!! {kind} "{safe.text(answer_line(exp, c))}"')
        body = safe.text(v.summary or "")
        title = safe.text(arm.title or "")
        more = f"[write-up]({link_prefix}{candidate_slug(c.candidate)}/index.md)"
        out.append(f"    {title}. {body} {more}\n")
    return "\n".join(out)


def windows_table(exp: ExperimentData, key: str) -> str:
    """Per arm (one content tab each): W1/W2/W3 and pooled rows, then the mean of window means."""
    out = []
    for arm in exp.analysis.arms:
        rows = []
        for w in arm.windows.get(key, []):
            name = "all windows pooled" if w.window == "all" else w.window
            rows.append(
                [
                    safe.text(name),
                    f"{w.start}-{w.end}",
                    fmt_num(w.n, 0),
                    *(fmt_num(x) for x in (w.mean, w.std, w.median, w.p95)),
                ]
            )
        overall = arm.overall.get(key)
        rows.append(["**mean of window means**", "", "", f"**{fmt_num(overall)}**", "", "", ""])
        out.append(f'=== "{safe.text(arm.id)}"\n')
        tbl = table(["window", "steps", "n", "mean", "std", "median", "p95"], rows, html=False)  # indented into a tab
        out.append("\n".join("    " + line for line in tbl.split("\n")) + "\n")
    return "\n".join(out)


def window_change_table(exp: ExperimentData) -> str:
    comps = exp.analysis.comparisons
    names = [w.name for w in exp.analysis.settings.windows]
    header = ["window", "baseline", *[f"{safe.text(c.candidate)} (change)" for c in comps]]
    rows = []
    for name in names:
        base = next((w.baseline for c in comps for w in c.windows if w.window == name), None)
        row = [safe.text(name), fmt_num(base)]
        for c in comps:
            w = next((w for w in c.windows if w.window == name), None)
            row.append(
                f"{fmt_num(w.candidate)} ({fmt_change(w.change)})"
                if w is not None and w.candidate is not None
                else "not reached"
            )
        rows.append(row)
    return table(header, rows)


def interval_cell(interval: Interval) -> str:
    """The change on one line, its interval on the next, neither wrapped inside a narrow column."""
    text = blocks.interval_text(interval)
    head, sep, ci = text.partition(" (")
    if not sep:
        return safe.text(text)
    return f'<span class="rg-nowrap">{safe.text(head)}</span><br><span class="rg-nowrap">({safe.text(ci)}</span>'


def warning_notes(comparisons: list[Comparison]) -> tuple[dict[str, list[int]], list[tuple[str, list[str]]]]:
    """Interval warnings as numbered footnotes (benchstat style): the same warning text gets one
    number shared by every candidate it applies to. Returns candidate -> footnote numbers, and
    the notes in order as (text, candidates)."""
    notes: list[tuple[str, list[str]]] = []
    marks: dict[str, list[int]] = {}
    for c in comparisons:
        cand = c.candidate
        for w in c.interval.warnings:
            num = next((i for i, (t, _) in enumerate(notes) if t == w), None)
            if num is None:
                notes.append((str(w), []))
                num = len(notes) - 1
            notes[num][1].append(cand)
            marks.setdefault(cand, []).append(num + 1)
    return marks, notes


def verdict_table(exp: ExperimentData) -> str:
    """Candidate, verdict, change with its interval, n, window agreement, repeats; warnings below as footnotes."""
    comps = exp.analysis.comparisons
    marks, notes = warning_notes(comps)
    rows = []
    for c in comps:
        iv = c.interval
        rep = c.repeats
        sup = "".join(f"<sup>{n}</sup>" for n in marks.get(c.candidate, []))
        rows.append(
            [
                f"[{safe.text(c.candidate)}]({candidate_slug(c.candidate)}/index.md)",
                badge(c.verdict.status),
                interval_cell(iv) + sup,
                f"{fmt_num(iv.n_baseline, 0)} / {fmt_num(iv.n_candidate, 0)}" if iv.estimate is not None else "n/a",
                "yes" if c.consistent_direction else "no",
                f"{rep.n} (spread {fmt_change(rep.spread)})" if rep else "1 each",
            ]
        )
    header = [
        "candidate",
        "verdict",
        "change of the primary metric",
        "n (steps)",
        "same direction in every window",
        "runs per arm",
    ]
    align = ["l", "l", "l", "r", "c", "r"]
    if not any(c.repeats for c in comps):  # one run per arm everywhere: a column of "1 each" says little
        header, align, rows = header[:-1], align[:-1], [r[:-1] for r in rows]
    out = table(header, rows, align=align)
    if notes:
        out += (
            "\n\n"
            + '<ol class="rg-footnotes">'
            + "".join(f"<li>{safe.text(t)} ({safe.text(', '.join(cands))})</li>" for t, cands in notes)
            + "</ol>"
        )
    return out


def guardrail_table(exp: ExperimentData) -> str:
    comps = exp.analysis.comparisons
    ids: list[tuple[str, str]] = []
    for c in comps:
        for g in c.guardrails:
            if g.id not in [i for i, _ in ids]:
                ids.append((g.id, g.title or g.id))
    rows = []
    for gid, title in ids:
        row = [safe.text(title)]
        for c in comps:
            found = next((g for g in c.guardrails if g.id == gid), None)
            if found is None:
                row.append("n/a")
            else:
                row.append(f"{blocks.guardrail_mark(found)} {safe.text(found.reason or '')}")
        rows.append(row)
    return table(["guardrail", *[safe.text(c.candidate) for c in comps]], rows, align=["l"] + ["l"] * len(comps))


def workload_table(exp: ExperimentData) -> str:
    arms = exp.analysis.arms
    rows = []
    for item in exp.analysis.fixed_workload:
        flag, val = item.flag, item.value
        seen = {a.id: a.workload.get(flag) for a in arms}
        diff = [a for a, v in seen.items() if v is not None and str(v) != str(val)]
        status = (
            ("**differs in " + ", ".join(safe.text(d) for d in diff) + "**")
            if diff
            else f"same in all {len(arms)} arms"
        )
        rows.append([safe.code(flag), safe.code(val), status])
    return table(["flag", "value", "arms"], rows, align=["l", "l", "l"])


def runs_table(exp: ExperimentData) -> str:
    rows = []
    for arm in exp.analysis.arms:
        for r in arm.runs:
            ev = ", ".join(sorted({e.kind for e in r.events})) or "none"
            rows.append(
                [
                    safe.text(f"{arm.id}/{r.repeat}"),
                    safe.text(r.role),
                    badge(r.status),
                    fmt_num(r.steps_completed, 0),
                    fmt_num(r.duration_s, 1) + " s",
                    fmt_num(r.exit_code, 0),
                    safe.text(ev),
                ]
            )
    return table(["run", "role", "status", "steps", "duration", "exit code", "events"], rows)


def reproduce(exp: ExperimentData) -> str:
    commit = exp.analysis.experiment.baseline_commit
    name = exp.name
    lines = []
    if commit:
        lines.append(f"git checkout {shlex.quote(str(commit))}")
    lines += [
        f"reportgen run runs/{shlex.quote(name)}/experiment.toml",
        "mkdocs build   # analyzes runs/ when analysis.json is missing or stale",
    ]
    out = [
        "Re-run every arm from the spec as it was run, then rebuild this site:\n",
        safe.fence("\n".join(lines), "bash"),
        "\nThe exact command of each run:\n",
    ]
    for run in exp.formal_runs():
        argv = run.command.get("argv") or run.manifest.get("command")
        if not argv:
            continue
        cmd = " ".join(shlex.quote(str(a)) for a in argv) if isinstance(argv, list) else str(argv)
        cwd = run.command.get("cwd") or run.manifest.get("cwd")
        body = (f"cd {shlex.quote(str(cwd))}\n" if cwd else "") + cmd
        out.append(safe.fence(body, "bash", title=f"{run.rel}"))
        out.append("")
    return "\n".join(out)


def experiment_charts(exp: ExperimentData) -> dict[str, dict | None]:
    primary = exp.analysis.primary.key
    t, u = metric_title(primary)
    return {
        "primary": charts.step_metric(exp, primary, title=t, unit=u),
        "step-time": charts.step_metric(exp, STEP_TIME, title="step time", unit="s"),
        "actor-train-time": charts.step_metric(exp, ACTOR_TRAIN_TIME, title="actor train time", unit="s"),
        "rollout-time": charts.step_metric(exp, ROLLOUT_TIME, title="rollout time", unit="s"),
        "breakdown": charts.breakdown(exp),
        "gpu-util": charts.gpu_metric(exp, "util_gpu", title="GPU utilization", unit="%"),
        "gpu-memory": charts.gpu_metric(
            exp, "mem_used_mib", title="GPU memory used", unit="MiB", show_total=True, how="max"
        ),
        "quality": charts.quality(exp),
    }


CHART_TITLES = {
    "primary": "Primary metric per step (thin: raw; thick: rolling mean of 10; shaded: windows)",
    "step-time": "Step time per step",
    "actor-train-time": "Actor train time per step",
    "rollout-time": "Rollout time per step",
    "breakdown": "Step time breakdown per arm",
    "gpu-util": "GPU utilization, 1 Hz, per GPU",
    "gpu-memory": "GPU memory used per GPU (dashed: device total)",
    "quality": "Training quality: loss, reward, response length, KL, clip fraction, grad norm",
}


def render(exp: ExperimentData, *, svg: bool = True) -> Page:
    info = exp.analysis.experiment
    settings = exp.analysis.settings
    primary = settings.primary.key
    title = info.title or exp.name
    specs = experiment_charts(exp)
    machine = exp.analysis.machine
    md = [
        f"# {safe.text(title)}\n",
        f'<p class="rg-meta">Experiment {safe.code(exp.name)} · {safe.text(info.created_utc or "date unknown")} · '
        f"{safe.text(machine_info.summary(machine, machine_info.fingerprint(exp)))}"
        + f" · baseline commit {safe.code((info.baseline_commit or 'unknown')[:12])}"
        + (' <span class="rg-badge rg-failed">dirty</span>' if info.dirty else "")
        + "</p>\n",
        "## Answer\n",
        answer(exp),
        "\nUndo the accepted change: [rollback](rollback/index.md) · "
        "Machine, versions and hashes: [provenance](provenance/index.md) · "
        "Unrounded numbers: [analysis.json](analysis.json)\n",
        "## Hypothesis\n",
        safe.text(info.hypothesis or "No hypothesis was written in the spec.") + "\n",
    ]
    links = []
    if info.issue:
        links.append("Issue: " + blocks.link(info.issue, info.issue))
    if info.pr:
        links.append("Pull request: " + blocks.link(info.pr, info.pr))
    if links:
        md.append(" · ".join(links) + "\n")
    md.append("## Headline\n")
    md.append(
        f"Means over the windows (steps after the {fmt_num(settings.warmup_steps, 0)}-step warm-up); "
        "changes computed from unrounded values, shown rounded.\n"
    )
    for c in exp.analysis.comparisons:
        cand = c.candidate
        status = c.verdict.status
        md.append(f'=== "{safe.text(cand)}: {safe.text(blocks.VERDICT_LABEL.get(status, status))}"\n')
        md.append(
            "\n".join("    " + line for line in blocks.headline_table(c, candidate_label=cand, html=False).split("\n"))
            + "\n"
        )
    t, _ = metric_title(primary)
    md += [
        "## Windows\n",
        f"{safe.text(t)} per pre-declared window ({safe.code(primary)}):\n",
        windows_table(exp, primary) + "\n",
        "Change of each window's mean against the baseline:\n",
        window_change_table(exp) + "\n",
    ]
    for key in settings.secondary:
        if any(key in a.windows for a in exp.analysis.arms):
            st, _ = metric_title(key)
            md += [
                f'??? info "{safe.text(st)} per window"\n',
                "\n".join(("    " + line) if line else "" for line in windows_table(exp, key).split("\n")) + "\n",
            ]
    conf = settings.confidence
    md += [
        "## Confidence and verdicts\n",
        f"Interval of the ratio candidate/baseline of the mean {safe.text(t)}, at {fmt_num(conf * 100, 0)}% confidence "
        f"(method {safe.code(settings.method)}); the smallest change that counts is "
        f'{fmt_change(settings.min_effect)}. "~" means the interval includes no change.\n',
        verdict_table(exp) + "\n",
        "## Guardrails\n",
        guardrail_table(exp) + "\n",
        "## Curves\n",
    ]
    for name, spec in specs.items():
        md.append(f"### {safe.text(CHART_TITLES[name])}\n")
        md.append(blocks.chart(name, spec, title=CHART_TITLES[name], svg=svg))
    md += [
        "## Fixed workload\n",
        "Flags no candidate may change; the value each arm ran with, read from its effective command line.\n",
        workload_table(exp) + "\n",
        "## Runs\n",
        runs_table(exp) + "\n",
        "## Reproduce\n",
        reproduce(exp),
    ]
    files = {"analysis.json": json.dumps(exp.analysis.to_json(), indent=2, ensure_ascii=False).encode()}
    return Page(
        path=f"{experiment_base(exp.name)}/index.md",
        title=str(title),
        markdown="\n".join(md),
        charts={k: v for k, v in specs.items() if v is not None},
        files=files,
    )

"""The reports home (render stage): every experiment with date, machine, baseline commit and
each candidate's verdict and headline gain."""

from __future__ import annotations

from collections.abc import Sequence

from reportgen.render import machine as machine_info
from reportgen.render import safe
from reportgen.render.blocks import badge, interval_text, table
from reportgen.render.load import ExperimentData
from reportgen.render.page import Page


def render(experiments: Sequence[ExperimentData], *, errors: Sequence[tuple[str, str]] = ()) -> Page:
    rows = []
    for exp in sorted(experiments, key=lambda e: e.analysis.experiment.created_utc or "", reverse=True):
        info = exp.analysis.experiment
        machine = exp.analysis.machine
        cands = []
        for c in exp.analysis.comparisons:
            v = c.verdict
            gain = v.cause if v.status in ("failed", "invalid") and v.cause else interval_text(c.interval)
            cands.append(f"{badge(v.status)} **{safe.text(c.candidate)}** {safe.text(gain)}")
        rows.append(
            [
                f"[{safe.text(info.title or exp.name)}]({exp.name}/index.md)<br>{safe.code(exp.name)}",
                safe.text((info.created_utc or "")[:10]),
                safe.text(machine_info.summary(machine, machine_info.fingerprint(exp))),
                safe.code((info.baseline_commit or "unknown")[:12]),
                "<br>".join(cands) or "no candidates",
            ]
        )
    md = ["# Reports\n"]
    if rows:
        md.append(
            f"{len(rows)} experiment(s), newest first. Each candidate shows its verdict and the change of the "
            'primary metric with its confidence interval ("~" = no significant change).\n'
        )
        md.append(
            table(["experiment", "date", "machine", "baseline commit", "candidates"], rows, align=["l"] * 5) + "\n"
        )
    else:
        md.append(
            "No experiment with an analysis yet. Run `reportgen run <spec>` (or `reportgen ingest`), then `mkdocs build`.\n"
        )
    for name, err in errors:
        md.append(f'!!! failure "{safe.text(name)}: not rendered"\n    {safe.text(err)}\n')
    return Page(path="reports/index.md", title="Reports", markdown="\n".join(md))

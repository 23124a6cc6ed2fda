"""The report page of a bisection (render stage): the steps with their evidence, the culprit, its
diff, and where the time went before and after it. Rendered from runs/<bisection>/bisect.json
(`BisectRecord`), never from logs; `reportgen bisect` writes it beside the record as report.md, and
the site publishes it under History (history/bisect/<name>/).
"""

from __future__ import annotations

from pathlib import Path

from reportgen.history.bisect_model import FILE, BisectRecord
from reportgen.render import blocks, safe
from reportgen.render.page import Page
from reportgen.rounding import fmt_change


def _pct(x: float | None) -> str:
    return fmt_change(x - 1.0, digits=1) if x is not None else "n/a"


def report_markdown(record: BisectRecord) -> str:
    """The whole report as Markdown (a page of the site, or a file to read in a terminal)."""
    short = {s: s[:7] for s in [record.good, record.bad, *record.commits]}
    md = [f"# Bisection {record.good[:7]}..{record.bad[:7]}\n"]
    if record.culprit:
        sure = "" if record.certain else " (a step bounding it was undecided: re-measure it with more pairs)"
        md.append(
            f"**Culprit: `{record.culprit}`** {safe.text(record.culprit_subject)}: the first commit after "
            f"`{record.good[:7]}` whose {safe.code(record.metric or 'primary metric')} differs from GOOD's{sure}.\n"
        )
    else:
        md.append(f"**No culprit**: {safe.text('; '.join(record.notes) or 'BAD does not differ from GOOD')}.\n")
    md.append(
        f"{len(record.commits)} commits after GOOD, {len(record.steps)} paired campaigns (GOOD as baseline, each "
        f"commit as candidate, interleaved blocks in alternating direction, stopped when decided): "
        f"{record.runs} runs, {record.minutes:.1f} minutes. Repository `{safe.text(record.repo)}`, spec "
        f"`{safe.text(record.spec)}`.\n"
    )
    rows = []
    for i, s in enumerate(record.steps, start=1):
        interval = f"{_pct(s.low)} to {_pct(s.high)}" if s.low is not None and s.high is not None else ""
        rows.append(
            [
                str(i),
                f"{safe.code(short.get(s.sha, s.sha[:7]))} {safe.text(s.subject)}",
                _pct(s.ratio),
                interval,
                str(s.pairs),
                safe.text(s.outcome or "?") + ("" if s.decided else " (undecided: by its estimate)"),
                safe.text(s.verdict),
                f"**{s.call}**",
                safe.code(s.experiment),
            ]
        )
    md += [
        "## Steps\n",
        blocks.table(
            ["step", "commit", "vs GOOD", "interval", "pairs", "run-level outcome", "verdict", "call", "campaign"],
            rows,
            ["r", "l", "r", "l", "r", "l", "l", "l", "l"],
        )
        + "\n",
        "Each campaign is an experiment under runs/ with its own report (the evidence of its step).\n",
    ]
    if record.where_time_went:
        trows = [
            [
                safe.text(w.label),
                safe.text(f"{w.before:.4g} {w.unit}".strip()) if w.before is not None else "",
                safe.text(f"{w.after:.4g} {w.unit}".strip()) if w.after is not None else "",
                fmt_change(w.change, digits=1) if w.change is not None else "",
            ]
            for w in record.where_time_went
        ]
        md += [
            "## Where the time went\n",
            "GOOD against the culprit, from the culprit's campaign (means of window means of its formal runs):\n",
            blocks.table(["phase", "GOOD", "culprit", "change"], trows, ["l", "r", "r", "r"]) + "\n",
        ]
    if record.culprit_diff:
        md += ["## The culprit's change\n", "```diff\n" + record.culprit_diff.rstrip("\n") + "\n```\n"]
    if record.notes:
        md += ["## Notes\n", "\n".join(f"- {safe.text(n)}" for n in record.notes) + "\n"]
    return "\n".join(md)


def pages(runs_root: Path) -> list[Page]:
    """A page per bisection under a runs/ root (each folder holding a bisect.json), under History."""
    out = []
    root = Path(runs_root)
    for folder in sorted(p for p in root.iterdir() if (p / FILE).is_file()) if root.is_dir() else []:
        record = BisectRecord.read(folder / FILE)
        if record is None:
            continue
        title = f"Bisection {record.good[:7]}..{record.bad[:7]}"
        out.append(
            Page(
                path=f"history/bisect/{folder.name}/index.md",
                title=title,
                markdown=report_markdown(record),
                nav_title=title,
            )
        )
    return out

"""The rollback page (render stage): the reverse patch of each accepted change, how to apply
it, and when (a risk table derived from the measured evidence)."""

from __future__ import annotations

from reportgen.analysis.document import Arm
from reportgen.render import blocks, decision, flagdiff, safe
from reportgen.render.blocks import table
from reportgen.render.experiment_page import report_kind
from reportgen.render.format import fmt_count, fmt_num
from reportgen.render.load import ExperimentData
from reportgen.render.page import Page, candidate_slug, experiment_base
from reportgen.render.patch import reverse_patch


def _peak(arm: Arm) -> tuple[float | None, float | None]:
    return arm.gpu.peak_mib(), arm.gpu.total_mib()


def chain(exp: ExperimentData, cand: str) -> list[str]:
    """The candidates whose edits `cand`'s patch needs, nearest first (analysis.json `depends_on`)."""
    comp = exp.analysis.comparison(cand)
    return list(comp.depends_on) if comp else []


def risks(exp: ExperimentData, cand: str) -> list[list[str]]:
    """Rows (risk, evidence, when to roll back) for one accepted candidate."""
    rows = []
    peak, total = _peak(exp.arm(cand))
    if peak is not None:
        head = (
            f"peak {fmt_num(peak, 0)} MiB of {fmt_num(total, 0)} MiB per GPU"
            if total
            else f"peak {fmt_num(peak, 0)} MiB per GPU"
        )
        rows.append(
            [
                "OOM on GPUs with less memory",
                safe.text(head + " on the measured machine"),
                safe.text(
                    f"an out-of-memory error on a GPU with less than about {fmt_num(peak, 0)} MiB free: apply the rollback"
                ),
            ]
        )
    steps = exp.analysis.settings.steps_expected
    rows.append(
        [
            "Failure on a longer run",
            safe.text(f"{fmt_count(steps, 'step')} measured"),
            "a crash, NaN or a stalled step beyond the measured steps: apply the rollback and re-run the experiment",
        ]
    )
    rows.append(
        [
            "Gain does not hold on other hardware",
            "one machine, arms back to back",
            "the primary metric is not better than before on the new machine: re-run this experiment there, apply the rollback if rejected",
        ]
    )
    bases = chain(exp, cand)
    for c in exp.analysis.comparisons:
        st = c.verdict.status
        if c.candidate == cand or (st == "accepted" and c.candidate not in bases):
            continue
        cause = decision.cause(c) or c.verdict.summary or ""
        if c.candidate in bases:
            when = (
                f"part of this change: {cand} is built on {c.candidate}, so this patch undoes {c.candidate}'s edits too"
            )
        else:
            when = f"not part of this change ({cand} is not built on it): nothing of it to roll back"
        rows.append([safe.text(f"{c.candidate} ({st})"), safe.text(cause), safe.text(when)])
    return rows


def restores(exp: ExperimentData, cand: str) -> list[str]:
    """What applying the rollback changes in the trainer's effective values, now -> after
    (analysis.json `changed_flags`: the candidate's value back to the baseline's)."""
    comp = exp.analysis.comparison(cand)
    out = []
    for f in comp.changed_flags if comp else []:
        now, then = (
            flagdiff.value_text(None if v is None else True if v == "true" else v) for v in (f.candidate, f.baseline)
        )
        if now != then:
            out.append(f"{safe.code(f.flag)}: {safe.text(now)} → {safe.text(then)}")
    return out


def render(exp: ExperimentData) -> Page:
    accepted = [c.candidate for c in exp.analysis.comparisons if c.verdict.status == "accepted"]
    md = ["# Rollback\n", "[← back to the experiment](../index.md)\n"]
    files: dict[str, bytes] = {}
    if not accepted:
        md.append("No candidate was accepted, so there is nothing to roll back: the recipe stays as in the baseline.\n")
    for cand in accepted:
        arm = exp.arm(cand)
        comp = exp.comparison(cand)
        diff = arm.diff
        rev = reverse_patch(diff)
        fname = f"rollback-{cand}.patch"
        files[fname] = rev.encode()
        iv = comp.interval
        gain = blocks.interval_text(iv)
        bases = chain(exp, cand)
        built_on = (
            f" {safe.text(cand)} is built on {', '.join(safe.text(b) for b in bases)}: its patch holds "
            f"{'that change' if len(bases) == 1 else 'those changes'} too, and so does this rollback."
            if bases
            else ""
        )
        back = restores(exp, cand)
        md += [
            f"## Undo {safe.text(cand)}: {safe.text(arm.title)}\n",
            f"[{safe.text(cand)}](../{candidate_slug(cand)}/index.md) changed the primary metric by {safe.text(gain)}. "
            "Rolling back restores the recipe as it was at the baseline commit; no data, checkpoint or API "
            f"migration is involved.{built_on}\n",
        ]
        if back:
            md += ["The trainer's effective values it brings back (now → after the rollback):\n"]
            md += [f"- {line}" for line in back]
            md.append("")
        md += [
            "### The reverse patch\n",
            safe.fence(rev or "(the candidate's diff is empty)", "diff", title=fname) + "\n",
            "### How to apply it\n",
            f"Download [{fname}]({fname}) (or copy the block above into that file), then from the root of the recipe's repository:\n",
            safe.fence(
                f"# dry run: fails if the recipe has moved on\ngit apply --check {fname}\ngit apply {fname}\ngit diff --stat",
                "bash",
            )
            + "\n",
            "### When to apply it\n",
            table(["risk", "evidence", "roll back when"], risks(exp, cand), align=["l", "l", "l"]) + "\n",
        ]
    return Page(
        path=f"{experiment_base(exp.name)}/rollback/index.md",
        title=f"Rollback ({report_kind(exp).label})",
        markdown="\n".join(md),
        files=files,
    )

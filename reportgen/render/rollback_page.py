"""The rollback page (render stage): the reverse patch of each accepted change, how to apply
it, and when (a risk table derived from the measured evidence)."""

from __future__ import annotations

from reportgen.analysis.document import Arm
from reportgen.render import safe
from reportgen.render.blocks import table
from reportgen.render.format import fmt_change, fmt_num
from reportgen.render.load import ExperimentData
from reportgen.render.page import Page, candidate_slug, experiment_base
from reportgen.render.patch import reverse_patch


def _peak(arm: Arm) -> tuple[float | None, float | None]:
    return arm.gpu.peak_mib(), arm.gpu.total_mib()


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
            safe.text(f"{fmt_num(steps, 0)} steps measured"),
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
    for c in exp.analysis.comparisons:
        st = c.verdict.status
        if c.candidate == cand or st == "accepted":
            continue
        cause = c.verdict.cause or c.verdict.summary or ""
        rows.append(
            [
                safe.text(f"{c.candidate} ({st})"),
                safe.text(cause),
                "not part of this change; nothing to roll back, its flags stay as in the baseline",
            ]
        )
    return rows


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
        gain = next((r.change for r in comp.headline if r.metric == exp.analysis.primary.key), None)
        md += [
            f"## Undo {safe.text(cand)}: {safe.text(arm.title)}\n",
            f"[{safe.text(cand)}](../{candidate_slug(cand)}/index.md) changed the primary metric by {fmt_change(gain)}. "
            "Rolling back restores the recipe's flags as they were at the baseline commit; no data, checkpoint or API migration is involved.\n",
            "### The reverse patch\n",
            safe.fence(rev or "(the candidate's diff is empty)", "diff", title=fname) + "\n",
            "### How to apply it\n",
            f"Download [{fname}]({fname}) (or copy the block above into that file), then from the root of the recipe's repository:\n",
            safe.fence(
                f"git apply --check {fname}   # dry run: fails if the recipe has moved on\ngit apply {fname}\ngit diff --stat",
                "bash",
            )
            + "\n",
            "### When to apply it\n",
            table(["risk", "evidence", "roll back when"], risks(exp, cand), align=["l", "l", "l"]) + "\n",
        ]
    return Page(
        path=f"{experiment_base(exp.name)}/rollback/index.md", title="Rollback", markdown="\n".join(md), files=files
    )

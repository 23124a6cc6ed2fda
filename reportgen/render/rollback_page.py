"""The rollback page (render stage): the reverse patch of each accepted change, how to apply
it, and when (a risk table derived from the measured evidence)."""

from __future__ import annotations

from reportgen.analysis.document import ArmResult
from reportgen.render import blocks, code_change, decision, flagdiff, safe
from reportgen.render.blocks import table
from reportgen.render.common import recipe_dir_where_it_ran, report_kind
from reportgen.render.format import fmt_count, fmt_gib, fmt_mib, fmt_num, fmt_share
from reportgen.render.load import PublishedExperiment
from reportgen.render.machines_table import machines_of, where_measured
from reportgen.render.page import Page, candidate_slug, experiment_base
from reportgen.render.patch import reverse_patch, under
from reportgen.vocab import Verdicts


def _peak(arm: ArmResult) -> tuple[float | None, float | None]:
    return arm.gpu.peak_mib(), arm.gpu.total_mib()


def chain(exp: PublishedExperiment, cand: str) -> list[str]:
    """The candidates whose edits `cand`'s patch needs, nearest first (analysis.json `depends_on`)."""
    comp = exp.analysis.comparison(cand)
    return list(comp.depends_on) if comp else []


def risks(exp: PublishedExperiment, cand: str) -> list[list[str]]:
    """Rows (risk, evidence, when to roll back) for one accepted candidate."""
    rows = []
    m = exp.arm(cand).memory
    if m.used_mib is not None and m.limit_mib is not None:
        limit = f"the {fmt_gib(m.limit_mib)} cap" if m.limit == "cap" else f"{fmt_gib(m.limit_mib)} free on the card"
        left = fmt_share(max(m.headroom or 0.0, 0.0))
        what = "allocated by the framework" if m.used_source == "allocator" else "on the device, net of what was there"
        measured = "the measured machine" if len(machines_of(exp)) < 2 else "the measured machines"
        evidence = f"peak {fmt_gib(m.used_mib)} {what} of {limit} ({left} left) on {measured}"
        if m.device_peak_mib is not None:
            evidence += f"; nvidia-smi peak {fmt_gib(m.device_peak_mib)}, CUDA context and cache included"
        need = (
            f"less than {fmt_gib(m.used_mib)} for the framework (a smaller cap, or a card with less free memory)"
            if m.limit == "cap"
            else f"less than {fmt_mib(m.device_peak_net_mib)} free"
        )
        rows.append(
            [
                "OOM on GPUs with less memory",
                safe.text(evidence),
                safe.text(f"an out-of-memory error where there is {need}: apply the rollback"),
            ]
        )
    elif exp.arm(cand).gpu.peak_mib() is not None:
        peak, total = _peak(exp.arm(cand))
        rows.append(
            [
                "OOM on GPUs with less memory",
                safe.text(f"nvidia-smi peak {fmt_num(peak, 0)} MiB of {fmt_num(total, 0)} MiB per GPU"),
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
            safe.text(where_measured(machines_of(exp))),
            "the primary metric is not better than before on the new machine: re-run this experiment there, apply the rollback if rejected",
        ]
    )
    bases = chain(exp, cand)
    for c in exp.analysis.comparisons:
        st = c.verdict.status
        if c.candidate == cand or (st == Verdicts.ACCEPTED and c.candidate not in bases):
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


def restores(exp: PublishedExperiment, cand: str) -> list[str]:
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


def _where(folder: str | None) -> str:
    """Where the patch names the recipe, for the sentence saying where to apply it."""
    return (
        f" (the patch names the recipe under {safe.code(folder + '/')})" if folder and folder not in (".", "") else ""
    )


def render(exp: PublishedExperiment) -> Page:
    accepted = [c.candidate for c in exp.analysis.comparisons if c.verdict.status == Verdicts.ACCEPTED]
    md = ["# Rollback\n", "[← back to the experiment](../index.md)\n"]
    files: dict[str, bytes] = {}
    if not accepted:
        md.append("No candidate was accepted, so there is nothing to roll back: the recipe stays as in the baseline.\n")
    for cand in accepted:
        arm = exp.arm(cand)
        comp = exp.comparison(cand)
        where = recipe_dir_where_it_ran(exp)
        rev = under(reverse_patch(arm.diff), where)
        fname = f"rollback-{cand}.patch"
        files[fname] = rev.encode()
        rl = comp.deciding()
        gain = blocks.interval_text(rl.interval)
        if rl.reference != comp.baseline:
            gain += f" against {rl.reference} (against the baseline {blocks.interval_text(comp.interval)})"
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
        md += code_change.revert(comp)
        md += [
            "### The reverse patch\n",
            safe.fence(rev or "(the candidate's diff is empty)", "diff", title=fname) + "\n",
            "### How to apply it\n",
            f"Download [{fname}]({fname}) (or copy the block above into that file) to the root of the repository "
            f"that holds the recipe{_where(where)}, with {safe.text(cand)}'s change in it (the merged pull request), "
            "and there:\n",
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
        title=f"Rollback: {exp.name} ({report_kind(exp).label})",
        nav_title="Rollback",
        markdown="\n".join(md),
        files=files,
    )

"""What to do next about one candidate, and why, derived from the evidence (pure).

Part of reportgen.analysis. A verdict alone leaves the reviewer to work out the next move; the
report names it: merge (with the candidates the patch builds on), add pairs to the same campaign
(and the exact command), make the arms do the same work, fix the failure, re-run on one machine,
or reject. It reads the verdict as decision.py made it (status, basis, cause); it decides nothing.
For a verdict that is not a plain accept or reject, the cause is said in words with links to the
evidence on the page (anchors documented in docs/formats/analysis.md).
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass

from reportgen.analysis import document as doc
from reportgen.analysis.evidence import STILL_RUNNING

# Ids on the experiment page the evidence links point at (the page renders these sections).
WINDOWS = "windows"
SAME_WORK = "same-work"
GUARDRAILS = "guardrails"
VERDICTS = "confidence-and-verdicts"
QUALITY = "chart-quality"
QUIET = "quiet-machine"


@dataclass(frozen=True)
class Rerun:
    """How this experiment is run again: the spec as given to `reportgen run`, and its options."""

    spec_path: str
    profile: str | None = None
    name: str | None = None  # --name, when the folder is not the spec's name

    def command(self, *extra: str) -> str:
        words = ["reportgen", "run", self.spec_path]
        if self.profile:
            words += ["--profile", self.profile]
        if self.name:
            words += ["--name", self.name]
        return " ".join(shlex.quote(w) for w in [*words, *extra])


def _pct(x: float | None) -> str:
    return "n/a" if x is None else f"{x * 100:+.1f} %"


Step = tuple[doc.NextStep, str | None, list[doc.EvidenceLink]]


def derive(comp: doc.Comparison, *, metric_label: str, rerun: Rerun, design: doc.Design) -> Step:
    """(next step, cause in words or None, evidence links) for one comparison, from its verdict."""
    cand = comp.candidate
    v = comp.verdict
    if v.status == "incomplete":
        return _resume(v, rerun)
    if v.status == "failed":
        return _failed(comp, rerun)
    if v.status == "invalid":
        return _invalid(comp, rerun)
    if v.status == "inconclusive":
        return _inconclusive(comp, rerun=rerun, design=design, metric_label=metric_label)
    on_base = v.against != comp.baseline
    links = (
        [doc.EvidenceLink(label=f"{cand} against {v.against}", anchor=f"{cand}/index.md#against-base")]
        if on_base
        else []
    )
    if v.status == "accepted":
        together = f" together with {', '.join(comp.depends_on)}, which its patch builds on" if comp.depends_on else ""
        return doc.NextStep(action="merge", text=f"Merge {cand}{together}."), None, links
    if on_base:
        text = (
            f"Do not merge {cand}: its gain over the baseline is {v.against}'s, not its own; keep {v.against}'s flags."
        )
        return doc.NextStep(action="reject", text=text), v.cause, links
    if v.status == "rejected":
        est = comp.run_level.interval.estimate
        text = f"Do not merge {cand}: {metric_label} is worse ({_pct(None if est is None else est - 1)}); keep the baseline's flags."
        return doc.NextStep(action="reject", text=text), None, []
    # no_change
    text = f"Do not merge {cand} for speed: no change of {design.min_effect:.0%} or more in {metric_label}."
    return doc.NextStep(action="reject", text=text), None, []


def _resume(v: doc.Verdict, rerun: Rerun) -> Step:
    text = (
        "Resume the campaign with the same command: it keeps every finished run and runs the unfinished "
        "ones again; then the verdict is made."
    )
    if STILL_RUNNING in (v.cause or ""):
        # A run marked running may belong to a campaign under way elsewhere; resuming stops its process.
        text = (
            "If no reportgen run of this campaign is still under way, resume it with the same command: it "
            "keeps every finished run and runs the unfinished ones again (a run marked running whose process "
            "is alive on this machine is stopped first); otherwise wait for it to finish and analyse again."
        )
    return (
        doc.NextStep(action="resume", text=text, command=rerun.command()),
        v.cause,
        [doc.EvidenceLink(label="runs", anchor="runs")],
    )


def _failed(comp: doc.Comparison, rerun: Rerun) -> Step:
    cand, v = comp.candidate, comp.verdict
    cause = v.cause or v.summary
    arm = v.failed_arm or cand
    # A candidate's page holds its own failure write-up; the baseline's runs are on the experiment page.
    page_anchor = f"{cand}/index.md" if arm == cand else "runs"
    page = doc.EvidenceLink(label=f"{arm}'s write-up" if arm == cand else "the baseline's runs", anchor=page_anchor)
    if v.oom:
        memory = doc.EvidenceLink(label="memory up to the failure", anchor=f"{cand}/index.md#chart-memory")
        text = (
            f"Fix the out-of-memory failure of {arm} (less memory per step, e.g. a smaller "
            "--max-tokens-per-gpu, or a larger memory cap), then re-run it."
        )
        return (
            doc.NextStep(action="fix_oom", text=text, command=rerun.command("--rerun", arm)),
            cause,
            [page, memory],
        )
    text = f"Fix the failure of {arm}, then re-run it."
    return doc.NextStep(action="fix_failure", text=text, command=rerun.command("--rerun", arm)), cause, [page]


def _invalid(comp: doc.Comparison, rerun: Rerun) -> Step:
    cand, v = comp.candidate, comp.verdict
    if v.basis == "same_work":
        other = "the baseline" if v.against == comp.baseline else v.against
        text = (
            f"Make {cand} and {other} generate the same work (fixed-length decoding, e.g. "
            "--rollout-ignore-eos as the GPU profiles do, or settings under which the policies do not "
            "diverge), then run the experiment again; meanwhile read the work-independent figures."
        )
        return (
            doc.NextStep(action="equalize_work", text=text, command=rerun.command("--new-campaign")),
            v.cause,
            [
                doc.EvidenceLink(label="same-work check", anchor=SAME_WORK),
                doc.EvidenceLink(label="quality curves", anchor=QUALITY),
            ],
        )
    if v.basis == "disturbed":
        text = (
            f"Run {cand} and the baseline again alone on a quiet machine (no other measurement beside them: "
            "leave out --share-machine, stop other load), then the verdict is made."
        )
        return (
            doc.NextStep(action="rerun", text=text, command=rerun.command("--rerun", comp.baseline, "--rerun", cand)),
            v.cause or v.summary,
            [
                doc.EvidenceLink(label="what else ran", anchor=QUIET),
                doc.EvidenceLink(label="guardrails", anchor=GUARDRAILS),
            ],
        )
    text = "Run every arm again on one machine, with the same model and data files."
    return (
        doc.NextStep(action="rerun", text=text, command=rerun.command("--new-campaign")),
        v.cause or v.summary,
        [doc.EvidenceLink(label="guardrails", anchor=GUARDRAILS)],
    )


def _inconclusive(comp: doc.Comparison, *, rerun: Rerun, design: doc.Design, metric_label: str) -> Step:
    cand, v = comp.candidate, comp.verdict
    on_base = v.against != comp.baseline
    links: list[doc.EvidenceLink] = []
    if on_base:
        links.append(doc.EvidenceLink(label=f"{cand} against {v.against}", anchor=f"{cand}/index.md#against-base"))
    if v.basis == "missing_metric":  # the spec must name another primary metric
        text = "Name a metric every arm logged as [analysis] primary in the spec, then analyse again."
        command = f"reportgen analyze {shlex.quote(rerun.name)}" if rerun.name else None
        return (
            doc.NextStep(action="change_metric", text=text, command=command),
            v.cause,
            [doc.EvidenceLink(label="guardrails", anchor=GUARDRAILS)],
        )
    if v.basis == "windows_missed":  # the spec must declare windows where the runs' steps are
        wins = comp.suggested_windows
        text = "Run every arm over the same steps (the runs share none), then analyse again."
        line = None
        if wins:
            text = "Declare windows inside the steps every run has in the spec's [analysis] table, then analyse again."
            items = ", ".join(f'{{name = "{w.name}", start = {w.start}, end = {w.end}}}' for w in wins)
            line = f"windows = [{items}]"
        return (
            doc.NextStep(action="declare_windows", text=text, command=line),
            v.cause,
            [doc.EvidenceLink(label="windows", anchor=WINDOWS), doc.EvidenceLink(label="runs", anchor="runs")],
        )
    if v.basis in ("futility", "base"):
        text = (
            f"Do not merge {cand} for speed: the {design.min_effect:.0%} minimum effect in {metric_label} is out of "
            "reach; more pairs would not change that."
            if v.basis == "futility"
            else f"Do not merge {cand}: with {v.against} it is not better than the baseline."
        )
        links.append(doc.EvidenceLink(label="interval after each pair", anchor=VERDICTS))
        return doc.NextStep(action="reject", text=text), v.cause, links
    if v.basis == "windows":
        links.append(doc.EvidenceLink(label="windows", anchor=WINDOWS))
    else:
        links.append(doc.EvidenceLink(label="interval after each pair", anchor=VERDICTS))
    if any(w.within is False for w in comp.same_work.windows):  # work differed without deciding (primary not perf/*)
        links.append(doc.EvidenceLink(label="same-work check", anchor=SAME_WORK))
    if v.basis == "max_pairs":
        text = (
            f"Do not merge {cand} on this evidence: {design.max_pairs} pairs did not show the "
            f"{design.min_effect:.0%} minimum effect either way. A larger max_pairs ([run]) continues the same "
            "campaign; its interval widens to cover the extra looks."
        )
        return doc.NextStep(action="reject", text=text, command=None), v.cause, links
    return _more_pairs(comp, rerun, design), v.cause, links


def _more_pairs(comp: doc.Comparison, rerun: Rerun, design: doc.Design) -> doc.NextStep:
    """Add pairs to the same campaign: its runs are kept, and the repeated interval stays valid."""
    rl = comp.deciding()
    n = len(rl.pairs)
    more = rl.more_pairs or max(1, design.min_pairs - n)
    if design.mode == "sequential":
        text = (
            f"Resume the campaign with the same command: it keeps every run and adds pairs until the verdict is "
            f"decided (about {more} more if the spread stays as seen, at most {design.max_pairs} in all)."
        )
        return doc.NextStep(action="repeat", text=text, command=rerun.command())
    text = (
        f'Add pairs to this campaign: set [run] until = "decided" (or repeats = {n + more}) in the spec and run it '
        "again; its runs are kept and the verdict is made when the interval decides."
    )
    command = '# in the spec: [run] until = "decided"\n' + rerun.command()
    return doc.NextStep(action="repeat", text=text, command=command)

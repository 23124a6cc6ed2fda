"""What to do next about one candidate, and why, derived from the evidence (pure).

Part of reportgen.analysis. A verdict alone leaves the reviewer to work out the next move; the
report names it: merge (with the candidates the patch builds on), repeat the measurement with
interleaved repeats (and the exact command), make the arms do the same work, fix the failure,
re-run on one machine, or reject. For a verdict that is not a plain accept or reject, the cause
is said in words with links to the evidence on the page (anchors documented in
docs/formats/analysis.md).
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from dataclasses import dataclass

from reportgen.analysis import document as doc

STILL_RUNNING = "still marked running"  # how the cause names a run left `running` (report._pending)

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


def _disagreeing(windows: Sequence[doc.WindowChange], direction: str) -> list[doc.WindowChange]:
    def worse_or_flat(c: float | None) -> bool:
        return c is None or (c <= 0 if direction == "higher" else c >= 0)

    return [w for w in windows if worse_or_flat(w.change)]


def derive(
    comp: doc.Comparison,
    *,
    direction: str,
    min_effect: float,
    metric_label: str,
    rerun: Rerun,
    failed_oom: bool,
    invalid_by: str | None,
    failed_arm: str | None = None,
    missing_metric: bool = False,
) -> tuple[doc.NextStep, str | None, list[doc.EvidenceLink]]:
    """(next step, cause in words or None, evidence links) for one comparison.

    `invalid_by` is the id of the guardrail that made the verdict invalid ("same_work",
    "same_machine", "same_inputs", "no_overlap", "quiet_machine"); for a failed verdict, `failed_arm` is the arm whose run failed
    first (the candidate unless only the baseline failed) and `failed_oom` whether that run ran
    out of memory: the next step fixes and re-runs that arm. `missing_metric`: the verdict is
    inconclusive because an arm never logged the primary metric (its cause says which)."""
    cand = comp.candidate
    v = comp.verdict
    iv = comp.interval
    together = f" together with {', '.join(comp.depends_on)}, which its patch builds on" if comp.depends_on else ""
    if v.status == "incomplete":
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
    if v.against != comp.baseline and v.status in ("rejected", "no_change", "inconclusive"):
        return _on_base(comp, rerun=rerun)
    if v.status == "accepted":
        return doc.NextStep(action="merge", text=f"Merge {cand}{together}."), None, []
    if v.status == "rejected":
        text = f"Do not merge {cand}: {metric_label} is worse ({_pct(None if iv.estimate is None else iv.estimate - 1)}); keep the baseline's flags."
        return doc.NextStep(action="reject", text=text), None, []
    if v.status == "no_change":
        text = f"Do not merge {cand} for speed: no change of {min_effect:.0%} or more in {metric_label}."
        return doc.NextStep(action="reject", text=text), None, []
    if v.status == "failed":
        cause = v.cause or v.summary
        arm = failed_arm or cand
        # A candidate's page holds its own failure write-up; the baseline's runs are on the experiment page.
        page_anchor = f"{cand}/index.md" if arm == cand else "runs"
        page = doc.EvidenceLink(label=f"{arm}'s write-up" if arm == cand else "the baseline's runs", anchor=page_anchor)
        if failed_oom:
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
    if v.status == "invalid":
        if invalid_by == "same_work":
            text = (
                f"Make {cand} and the baseline generate the same work (fixed-length decoding, e.g. "
                "--rollout-ignore-eos as the GPU profiles do, or settings under which the policies do not "
                "diverge), then run the experiment again; meanwhile read the work-independent figures."
            )
            cause = comp.same_work.reason
            return (
                doc.NextStep(action="equalize_work", text=text, command=rerun.command("--new-campaign")),
                cause,
                [
                    doc.EvidenceLink(label="same-work check", anchor=SAME_WORK),
                    doc.EvidenceLink(label="quality curves", anchor=QUALITY),
                ],
            )
        if invalid_by in ("no_overlap", "quiet_machine"):
            text = (
                f"Run {cand} and the baseline again alone on a quiet machine (no other measurement beside them: "
                "leave out --share-machine, stop other load), then the verdict is made."
            )
            return (
                doc.NextStep(
                    action="rerun", text=text, command=rerun.command("--rerun", comp.baseline, "--rerun", cand)
                ),
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
    # inconclusive
    if missing_metric:  # the spec must name another primary metric
        text = "Name a metric every arm logged as [analysis] primary in the spec, then analyse again."
        command = f"reportgen analyze {shlex.quote(rerun.name)}" if rerun.name else None
        return (
            doc.NextStep(action="change_metric", text=text, command=command),
            v.cause,
            [doc.EvidenceLink(label="guardrails", anchor=GUARDRAILS)],
        )
    links: list[doc.EvidenceLink] = []
    if iv.estimate is None:
        cause = f"no interval could be computed ({iv.warnings[0] if iv.warnings else 'too few steps'})"
    else:
        off = _disagreeing(comp.windows, direction)
        if off and len(comp.windows) > 1:
            names = ", ".join(f"{w.window} ({_pct(w.change)})" for w in off)
            cause = (
                f"{len(off)} of {len(comp.windows)} windows went the other way: {names}, while the change over "
                f"all windows is {_pct(iv.estimate - 1)}"
            )
            links += [doc.EvidenceLink(label=f"window {w.window}", anchor=WINDOWS) for w in off]
        elif comp.repeats and not all((r > 1) if direction == "higher" else (r < 1) for r in comp.repeats.ratios):
            cause = "the change is not in the same direction in every repeat"
            links.append(doc.EvidenceLink(label="repeats", anchor=VERDICTS))
        else:
            lo = None if iv.low is None else iv.low - 1
            hi = None if iv.high is None else iv.high - 1
            cause = (
                f"the {iv.confidence:.0%} interval of the change ({_pct(lo)} to {_pct(hi)}) is too wide to show "
                f"the {min_effect:.0%} minimum effect"
            )
            links.append(doc.EvidenceLink(label="interval", anchor=VERDICTS))
    if any(w.within is False for w in comp.same_work.windows):  # work differed without deciding (primary not perf/*)
        links.append(doc.EvidenceLink(label="same-work check", anchor=SAME_WORK))
    return _repeat(comp, rerun), cause, links


def _repeat(comp: doc.Comparison, rerun: Rerun) -> doc.NextStep:
    """Measure again with more interleaved repeats, and the exact command."""
    n = comp.repeats.n if comp.repeats else 1
    # Never fewer repeats than already ran: twice as many when they were interleaved, else as many, interleaved.
    repeats = max(2, 2 * n) if comp.repeats and comp.repeats.interleaved else max(2, n)
    text = (
        f'Measure again with [run] repeats = {repeats}, order = "interleaved" in the spec, so run-to-run '
        "variation enters the interval and drift hits both arms alike."
    )
    command = f'# in the spec: [run] repeats = {repeats}, order = "interleaved"\n' + rerun.command("--new-campaign")
    return doc.NextStep(action="repeat", text=text, command=command)


def _on_base(comp: doc.Comparison, *, rerun: Rerun) -> tuple[doc.NextStep, str | None, list[doc.EvidenceLink]]:
    """A candidate built on another one, accepted against the baseline but not against its base:
    the gain is the base's, so what the candidate adds is not merged (or is measured again)."""
    cand, base, v = comp.candidate, comp.verdict.against, comp.verdict
    links = [doc.EvidenceLink(label=f"{cand} against {base}", anchor=f"{cand}/index.md#against-base")]
    if v.status == "inconclusive":
        return _repeat(comp, rerun), v.cause, links
    text = f"Do not merge {cand}: its gain over the baseline is {base}'s, not its own; keep {base}'s flags."
    return doc.NextStep(action="reject", text=text), v.cause, links

"""What to do next about one candidate, and why, derived from the evidence (pure).

Part of reportgen.analysis. A verdict alone leaves the reviewer to work out the next move; the
report names it: merge (with the candidates the patch builds on), add pairs to the same campaign
(and the exact command), make the arms do the same work, fix the failure, re-run on one machine,
test training quality where it could not be, or reject. It reads the verdict as decision.py made
it (status, basis, cause); it decides nothing. For a verdict that is not a plain accept or reject,
the cause is said in words with links to the evidence by stable ids (document.EvidenceId); the
render stage maps them to pages and anchors.

An out-of-memory failure's step is made from what the experiment itself measured
(`revise_oom_steps`, after every comparison is made): a smaller token budget is offered only when
another candidate that lowered it saved more memory than the failed one lacked, so a next step
never contradicts the figures on its own page.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from reportgen.analysis import design as designs
from reportgen.analysis import document as doc
from reportgen.analysis import memory as mem
from reportgen.analysis.evidence import STILL_RUNNING
from reportgen.rounding import fmt_change_interval, fmt_change_supported, fmt_gib, fmt_share
from reportgen.vocab import MEMORY_CAP_FLAG, TOKEN_BUDGET_FLAG, Verdicts


def memory_cost(cand: str, m: doc.MemoryUse) -> str:
    """The memory an accepted change costs, when little is left under the limit: "Memory: A1 needs
    4.41 of the 5.00 GiB cap (0.59 GiB, 12%, left): ..."."""
    assert m.used_mib is not None and m.limit_mib is not None and m.headroom_mib is not None
    limit = (
        f"{m.limit_mib / 1024:.2f} GiB cap" if m.limit == "cap" else f"{m.limit_mib / 1024:.2f} GiB the card had free"
    )
    return (
        f"Memory: {cand} needs {m.used_mib / 1024:.2f} of the {limit} ({m.headroom_mib / 1024:.2f} GiB, "
        f"{fmt_share(m.headroom)}, left): check that the cards it will run on have that much free, or keep the "
        "baseline's flags there."
    )


IGNORE_EOS_FLAG = "--rollout-ignore-eos"  # fixed-length decoding: every response as long as the limit
SAME_MACHINE = "# on the machine that ran the campaign (a campaign's runs stay on one machine):"


@dataclass(frozen=True)
class Rerun:
    """How this experiment is run again from a checkout of the repository that holds its runs.

    The spec is run as it ran: the copy stored in the experiment's folder, put back in the folder it
    ran from (`spec_dir`, where its recipe paths resolve), so a command works after the spec in the
    repository moved on. Without `spec_dir` the spec's recorded path is used as it is.
    """

    spec_path: str
    profile: str | None = None
    name: str | None = None  # --name, when the folder is not the spec's name
    experiment: str | None = None  # the experiment's folder under runs/
    spec_dir: str | None = None  # where the spec ran from, relative to the repository root
    # The sections of the spec that ran where an edit a step asks for goes (Spec.section): under the
    # profile when it restates them, so "[[candidates]]" is never named for a profile's own list.
    candidates_section: str = "[[candidates]]"
    run_section: str = "[run]"
    analysis_section: str = "[analysis]"
    # The spec's fixed workload ([workload] flags): a step never asks to change one of them.
    fixed_flags: tuple[str, ...] = ()

    def spec(self) -> tuple[list[str], str]:
        """(lines that put the stored spec back where it ran, the spec path to give `reportgen run`)."""
        if self.experiment and self.spec_dir is not None:
            target = (
                f"{self.spec_dir.rstrip('/')}/{self.experiment}.toml"
                if self.spec_dir not in ("", ".")
                else (f"{self.experiment}.toml")
            )
            copy = " ".join(shlex.quote(w) for w in ["cp", f"runs/{self.experiment}/experiment.toml", target])
            return [copy], target
        return [], self.spec_path

    def command(self, *extra: str, name: str | None = None, before: str | None = None, note: str | None = None) -> str:
        """The lines to paste: an optional comment (`before`), the spec put back, another (`note`),
        then `reportgen run` (into folder `name` when given, else this experiment's)."""
        lines, spec = self.spec()
        if before:
            lines.insert(0, before)
        words = ["reportgen", "run", spec]
        if self.profile:
            words += ["--profile", self.profile]
        folder = name or self.name
        if folder:
            words += ["--name", folder]
        if note:
            lines.append(note)
        return "\n".join([*lines, " ".join(shlex.quote(w) for w in [*words, *extra])])


def _pct(x: float | None, iv: doc.Interval) -> str:
    """A change with the decimals its interval supports (reportgen/rounding.py)."""
    low = iv.low - 1 if iv.low is not None else None
    high = iv.high - 1 if iv.high is not None else None
    return fmt_change_supported(x, low, high)


Step = tuple[doc.NextStep, str | None, list[doc.EvidenceLink]]


def derive(
    comp: doc.Comparison,
    *,
    metric_label: str,
    rerun: Rerun,
    design: doc.Design,
    memory: doc.MemoryUse | None = None,
) -> Step:
    """(next step, cause in words or None, evidence links) for one comparison, from its verdict.
    An accepted candidate near its memory limit (`memory.low_headroom`) has the cost named in its step."""
    cand = comp.candidate
    v = comp.verdict
    if v.status == Verdicts.INCOMPLETE:
        return _resume(v, rerun)
    if v.status == Verdicts.FAILED:
        return _failed(comp, rerun)
    if v.status == Verdicts.INVALID:
        return _invalid(comp, rerun)
    if v.status == Verdicts.INCONCLUSIVE:
        return _inconclusive(comp, rerun=rerun, design=design, metric_label=metric_label)
    on_base = v.against != comp.baseline
    links = [doc.EvidenceLink(label=f"{cand} against {v.against}", id="against_base", arm=cand)] if on_base else []
    if v.status == Verdicts.ACCEPTED:
        together = f" together with {', '.join(comp.depends_on)}, which its patch builds on" if comp.depends_on else ""
        text = f"Merge {cand}{together}."
        if memory is not None and mem.low_headroom(memory):
            text += " " + memory_cost(cand, memory)
            links = [*links, doc.EvidenceLink(label="memory against the limit", id="memory")]
        q = comp.quality
        if comp.maths_changes:
            # It trains a different model: what decides is whether it trains as well, shown with its interval.
            text += f" It changes the maths (it {'; it '.join(m.text() for m in comp.maths_changes)})"
            text += f" and {q.summary}." if q is not None and q.status in ("not_worse", "identical") else "."
        if q is not None and q.status in ("not_worse", "identical", "not_judged"):
            links = [*links, doc.EvidenceLink(label="training quality", id="quality")]
        return doc.NextStep(action="merge", text=text), None, links
    if v.basis == "quality":
        return _worse_quality(comp)
    if on_base:
        text = (
            f"Do not merge {cand}: its gain over the baseline is {v.against}'s, not its own; keep {v.against}'s flags."
        )
        return doc.NextStep(action="reject", text=text), v.cause, links
    if v.status == Verdicts.REJECTED:
        iv = comp.run_level.interval
        est = None if iv.estimate is None else iv.estimate - 1
        text = f"Do not merge {cand}: {metric_label} is worse ({_pct(est, iv)}); keep the baseline's flags."
        return doc.NextStep(action="reject", text=text), None, []
    # no_change
    text = f"Do not merge {cand} for speed: no change of {design.min_effect:.0%} or more in {metric_label}."
    return doc.NextStep(action="reject", text=text), None, []


def _worse_quality(comp: doc.Comparison) -> Step:
    """Rejected on quality: do not merge, and where the evidence shows it, what makes it train worse."""
    cand, v, q = comp.candidate, comp.verdict, comp.quality
    said = q.summary if q is not None else "it trains worse than the baseline"
    text = f"Do not merge {cand}: it {said}, whatever its speed."
    if comp.maths_changes:
        edits = "; ".join(m.text() for m in comp.maths_changes)
        text += f" Its flag edit changes the maths ({edits}): keep the baseline's setting, or measure a change that does not."
    elif comp.code_change is not None:
        text += (
            " Its code change alters what training computes (same flags): find what in it changes the maths "
            "(every step's update, the loss, the samples trained on) before measuring again."
        )
    else:
        text += " Keep the baseline's flags."
    return (
        doc.NextStep(action="reject", text=text),
        v.cause,
        [doc.EvidenceLink(label="training quality", id="quality")],
    )


def _quality_not_shown(comp: doc.Comparison, rerun: Rerun, design: doc.Design) -> Step:
    """Faster, but the quality half is open at the last look, or cannot be tested."""
    cand, v, q = comp.candidate, comp.verdict, comp.quality
    links = [doc.EvidenceLink(label="training quality", id="quality")]
    if v.basis == "quality_open":
        text = (
            f"Do not merge {cand} on this evidence: it is faster, but its training quality was not shown to be "
            f"within the margin by the design's last look ({design.max_pairs} pairs). A new campaign with a larger "
            f"max_pairs ({rerun.run_section}, `reportgen run --new-campaign`) can show it; a margin changed after "
            "seeing the pairs would not."
        )
        return doc.NextStep(action="reject", text=text), v.cause, links
    why = q.summary.removeprefix("training quality not testable: ") if q is not None else "no quality metric"
    text = (
        f"Do not merge {cand} on this evidence: it is faster, but its training quality cannot be tested ({why}). "
        "Measure it on a workload whose reward moves, with a seed of its own in every block; for a change that "
        f'cannot touch the maths, declare quality_metric = "none" in the spec\'s {rerun.analysis_section} before '
        "the campaign (a verdict on speed alone)."
    )
    return doc.NextStep(action="test_quality", text=text), v.cause, links


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
        doc.NextStep(action="resume", text=text, command=rerun.command(before=SAME_MACHINE)),
        v.cause,
        [doc.EvidenceLink(label="runs", id="runs")],
    )


def _failed(comp: doc.Comparison, rerun: Rerun) -> Step:
    cand, v = comp.candidate, comp.verdict
    cause = v.cause or v.summary
    arm = v.failed_arm or cand
    # A candidate's page holds its own failure write-up; the baseline's runs are on the experiment page.
    page = (
        doc.EvidenceLink(label=f"{arm}'s write-up", id="candidate_page", arm=cand)
        if arm == cand
        else doc.EvidenceLink(label="the baseline's runs", id="runs")
    )
    folder = f"{rerun.experiment or rerun.name or 'experiment'}-{arm}-fix"
    spec_word = rerun.spec()[1]
    if v.oom:
        memory = doc.EvidenceLink(label="memory up to the failure", id="memory_chart", arm=cand)
        where = "in the recipe" if arm == comp.baseline else f"in its {rerun.candidates_section} entry of the spec"
        table = "the recipe" if arm == comp.baseline else f"its {rerun.candidates_section} set table"
        # Only flags outside the fixed workload: a memory cap the spec fixes is the card being emulated.
        ways = [f"a smaller {TOKEN_BUDGET_FLAG} {where}"] if TOKEN_BUDGET_FLAG not in rerun.fixed_flags else []
        capped = MEMORY_CAP_FLAG in rerun.fixed_flags
        if not capped:
            ways.append(f"a larger {MEMORY_CAP_FLAG}")
        how = f" ({', or '.join(ways)})" if ways else f" {where}"
        fixed = (
            f" Its memory cap ({MEMORY_CAP_FLAG}) is part of the fixed workload: {arm} must fit under it."
            if capped
            else ""
        )
        text = (
            f"Fix the out-of-memory failure of {arm}: give it less memory per step{how}, then run the experiment "
            f"again into a new folder; run unchanged, it fails the same way.{fixed}"
        )
        give = f"# give {arm} less memory per step"
        if TOKEN_BUDGET_FLAG not in rerun.fixed_flags:
            give += f": a smaller {TOKEN_BUDGET_FLAG}\n# in {table}"
        else:
            give += f" in {table}"
        give += f", or a larger {MEMORY_CAP_FLAG}" if not capped else f" (the fixed {MEMORY_CAP_FLAG} stays)"
        note = f"# first, in {spec_word},\n{give}"
        return (
            doc.NextStep(action="fix_oom", text=text, command=rerun.command(name=folder, note=note)),
            cause,
            [page, memory],
        )
    text = f"Fix the failure of {arm}, then run the experiment again into a new folder."
    note = f"# first fix what made {arm} fail (see its write-up), then:"
    return (
        doc.NextStep(action="fix_failure", text=text, command=rerun.command(name=folder, note=note)),
        cause,
        [page],
    )


def _invalid(comp: doc.Comparison, rerun: Rerun) -> Step:
    cand, v = comp.candidate, comp.verdict
    if v.basis == "same_work":
        other = "the baseline" if v.against == comp.baseline else v.against
        # Fixed-length decoding is offered only where the spec does not fix the flag already.
        how = (
            f"fixed-length decoding, e.g. {IGNORE_EOS_FLAG} in the recipe as the GPU profiles do, or settings "
            "under which the policies do not diverge"
            if IGNORE_EOS_FLAG not in rerun.fixed_flags
            else "settings under which the policies do not diverge"
        )
        text = (
            f"Make {cand} and {other} generate the same work ({how}), then run the experiment again; meanwhile "
            "read the work-independent figures."
        )
        return (
            doc.NextStep(
                action="equalize_work", text=text, command=rerun.command(name=f"{rerun.experiment or rerun.name}-2")
            ),
            v.cause,
            [
                doc.EvidenceLink(label="same-work check", id="same_work"),
                doc.EvidenceLink(label="quality curves", id="quality"),
            ],
        )
    if v.basis == "disturbed":
        text = (
            f"Run {cand} and the baseline again alone on a quiet machine (no other measurement beside them: "
            "leave out --share-machine, stop other load), then the verdict is made."
        )
        return (
            doc.NextStep(
                action="rerun",
                text=text,
                command=rerun.command("--rerun", comp.baseline, "--rerun", cand, before=SAME_MACHINE),
            ),
            v.cause or v.summary,
            [
                doc.EvidenceLink(label="what else ran", id="quiet_machine"),
                doc.EvidenceLink(label="guardrails", id="guardrails"),
            ],
        )
    text = "Run every arm again on one machine, with the same model and data files."
    return (
        doc.NextStep(action="rerun", text=text, command=rerun.command(name=f"{rerun.experiment or rerun.name}-2")),
        v.cause or v.summary,
        [doc.EvidenceLink(label="guardrails", id="guardrails")],
    )


def _inconclusive(comp: doc.Comparison, *, rerun: Rerun, design: doc.Design, metric_label: str) -> Step:
    cand, v = comp.candidate, comp.verdict
    on_base = v.against != comp.baseline
    links: list[doc.EvidenceLink] = []
    if on_base:
        links.append(doc.EvidenceLink(label=f"{cand} against {v.against}", id="against_base", arm=cand))
    if v.basis == "missing_metric":  # the spec must name another primary metric
        text = f"Name a metric every arm logged as primary in the spec's {rerun.analysis_section}, then analyse again."
        command = f"reportgen analyze {shlex.quote(rerun.name)}" if rerun.name else None
        return (
            doc.NextStep(action="change_metric", text=text, command=command),
            v.cause,
            [doc.EvidenceLink(label="guardrails", id="guardrails")],
        )
    if v.basis == "windows_missed":  # the spec must declare windows where the runs' steps are
        wins = comp.suggested_windows
        text = "Run every arm over the same steps (the runs share none), then analyse again."
        line = None
        if wins:
            text = (
                f"Declare windows inside the steps every run has in the spec's {rerun.analysis_section}, then "
                "analyse again."
            )
            items = ", ".join(f'{{name = "{w.name}", start = {w.start}, end = {w.end}}}' for w in wins)
            line = f"windows = [{items}]"
        return (
            doc.NextStep(action="declare_windows", text=text, command=line),
            v.cause,
            [doc.EvidenceLink(label="windows", id="windows"), doc.EvidenceLink(label="runs", id="runs")],
        )
    if v.basis in ("futility", "base"):
        text = (
            f"Do not merge {cand} for speed: neither a gain nor a loss of {design.min_effect:.0%} in {metric_label} is "
            "within reach; more pairs would not change that."
            if v.basis == "futility"
            else f"Do not merge {cand}: with {v.against} it is not better than the baseline."
        )
        links.append(doc.EvidenceLink(label="interval after each pair", id="interval_by_pair"))
        return doc.NextStep(action="reject", text=text), v.cause, links
    last = designs.is_last_look(design, len(comp.deciding().pairs))
    if v.basis == "quality_untestable" or (v.basis == "quality_open" and last):
        return _quality_not_shown(comp, rerun, design)
    if v.basis == "quality_open":
        links.append(doc.EvidenceLink(label="training quality", id="quality"))
    elif v.basis == "windows":
        links.append(doc.EvidenceLink(label="windows", id="windows"))
    else:
        links.append(doc.EvidenceLink(label="interval after each pair", id="interval_by_pair"))
    if any(w.within is False for w in comp.same_work.windows):  # work differed without deciding (primary not perf/*)
        links.append(doc.EvidenceLink(label="same-work check", id="same_work"))
    if v.basis == "max_pairs":
        text = (
            f"Do not merge {cand} on this evidence: {design.max_pairs} pairs did not show the "
            f"{design.min_effect:.0%} minimum effect either way. Seeing a smaller effect takes a new campaign with "
            f"a larger max_pairs ({rerun.run_section}, `reportgen run --new-campaign`; `reportgen plan-power` says how "
            "many): this one spent its error rate on the looks it took."
        )
        return doc.NextStep(action="reject", text=text, command=None), v.cause, links
    return _more_pairs(comp, rerun, design), v.cause, links


def _more_pairs(comp: doc.Comparison, rerun: Rerun, design: doc.Design) -> doc.NextStep:
    """Add pairs to the same campaign: its runs are kept, and the repeated interval stays valid."""
    rl = comp.deciding()
    n = len(rl.pairs)
    more = rl.more_pairs or max(1, design.min_pairs - n)
    # Every inconclusive step opens with the same merge advice ("Do not merge ... yet" here, "Do not
    # merge ... for speed" after a futility stop): two comparisons on either side of a stopping bound,
    # such as two A/A candidates, differ only in whether more pairs are worth running.
    why = {
        "too_few_pairs": "too few pairs to decide",
        "windows": "its windows disagree",
        "quality_open": "it is faster, but its training quality is still open",
    }.get(comp.verdict.basis, "its interval is too wide to decide")
    hold = f"Do not merge {comp.candidate} yet: {why}."
    if design.mode == "sequential":
        text = (
            f"{hold} Resume the campaign with the same command: it keeps every run and adds pairs until the "
            f"verdict is decided (about {more} more if the spread stays as seen, at most {design.max_pairs} in all)."
        )
        return doc.NextStep(action="repeat", text=text, command=rerun.command(before=SAME_MACHINE))
    run = rerun.run_section
    if n >= max(design.min_pairs, design.looks[0]):
        # The fixed design took its one look: it spent its whole error rate there (no resize after a look).
        text = (
            f'{hold} Its one planned look is spent: a new campaign with until = "decided" in the spec\'s {run} '
            "(`reportgen run --new-campaign`) adds pairs until the interval decides; `reportgen plan-power` says "
            "how many it may take."
        )
        command = rerun.command(
            "--new-campaign", before=SAME_MACHINE, note=f'# in {rerun.spec()[1]}, set until = "decided" in {run}; then:'
        )
        return doc.NextStep(action="repeat", text=text, command=command)
    text = (
        f'{hold} Add pairs to this campaign: set until = "decided" (or repeats = {n + more}) in the spec\'s {run} and run '
        "it again; its runs are kept and the verdict is made when the interval decides (no look was taken yet)."
    )
    command = rerun.command(before=SAME_MACHINE, note=f'# in {rerun.spec()[1]}, set until = "decided" in {run}; then:')
    return doc.NextStep(action="repeat", text=text, command=command)


# ---------------------------------------------------------------- an OOM's fix, from what was measured


@dataclass(frozen=True)
class TokenBudgetEffect:
    """What lowering the token budget did in this experiment: `arm` is `base` with only
    TOKEN_BUDGET_FLAG lowered (`before` -> `after`); its memory against the limit (`used_mib` of
    each, analysis/memory.py) and its primary metric against `base` (the run-level interval)."""

    arm: str
    base: str
    before: str
    after: str
    base_mib: float
    arm_mib: float
    speed: doc.Interval

    @property
    def saved_mib(self) -> float:
        return self.base_mib - self.arm_mib


def _number(x: str | None) -> float | None:
    try:
        return float(x) if x is not None else None
    except ValueError:
        return None


def token_budget_effects(
    comparisons: Sequence[doc.Comparison], arms: Mapping[str, doc.ArmResult]
) -> list[TokenBudgetEffect]:
    """Every candidate that differs from its reference (its base, else the baseline) by a lower
    TOKEN_BUDGET_FLAG alone, with both arms' memory on one figure and a run-level interval."""
    out = []
    for c in comparisons:
        ref = c.base or c.baseline
        differ = [f for f in c.changed_flags if f.base != f.candidate]  # base: the baseline's when it has none
        if len(differ) != 1 or differ[0].flag != TOKEN_BUDGET_FLAG:
            continue
        f = differ[0]
        before, after = f.base, f.candidate
        lo, hi = _number(before), _number(after)
        m_ref, m_arm = arms.get(ref), arms.get(c.candidate)
        if lo is None or hi is None or hi >= lo or m_ref is None or m_arm is None:
            continue
        ref_mib, arm_mib = m_ref.memory.used_mib, m_arm.memory.used_mib
        rl = c.base_run_level if c.base else c.run_level
        if ref_mib is None or arm_mib is None or m_ref.memory.used_source != m_arm.memory.used_source or rl is None:
            continue
        out.append(TokenBudgetEffect(c.candidate, ref, str(before), str(after), ref_mib, arm_mib, rl.interval))
    return out


def _failed_at(arm: doc.ArmResult) -> int | None:
    """The step of the arm's first out-of-memory event."""
    steps = [e.step for r in arm.runs for e in r.events if e.kind == "oom" and e.step is not None]
    return min(steps) if steps else None


def _speed_text(iv: doc.Interval) -> str:
    if iv.estimate is None or iv.low is None or iv.high is None:
        return "with no interval yet"
    return fmt_change_interval(iv.estimate - 1, iv.low - 1, iv.high - 1, confidence=iv.confidence)


def measured_oom_step(
    comp: doc.Comparison,
    arms: Mapping[str, doc.ArmResult],
    effects: Sequence[TokenBudgetEffect],
    *,
    rerun: Rerun,
    metric_label: str,
) -> doc.NextStep | None:
    """The next step of a candidate that ran out of memory, where this experiment measured what a
    smaller token budget saves (`effects`): when the saving measured is smaller than what the failed
    candidate already held beyond its reference's peak, a smaller budget is not offered as the fix
    (the page's own figures say it would not be enough) and the step says so with them; when it is
    larger, the budget is offered with its measured saving and cost. None: nothing measured bears on
    it (the step `derive` made stands)."""
    cand, ref = comp.candidate, comp.base or comp.baseline
    if comp.verdict.failed_arm not in (None, cand) or not comp.verdict.oom:
        return None
    mine, theirs = arms.get(cand), arms.get(ref)
    others = [e for e in effects if e.arm != cand]
    if mine is None or theirs is None or not others:
        return None
    held, ref_peak, limit = mine.memory.used_mib, theirs.memory.used_mib, mine.memory.limit_mib
    if held is None or ref_peak is None or held <= ref_peak:
        return None
    best = max(others, key=lambda e: e.saved_mib)
    excess = held - ref_peak
    step = _failed_at(mine)
    at = f" when it failed at step {step}" if step is not None else " when it failed"
    fell = (
        f"fell by {fmt_gib(best.saved_mib)} ({fmt_gib(best.base_mib)} to {fmt_gib(best.arm_mib)})"
        if best.saved_mib > 0
        else f"did not fall ({fmt_gib(best.base_mib)} to {fmt_gib(best.arm_mib)})"
    )
    measured = (
        f"in this experiment {best.arm} lowered {TOKEN_BUDGET_FLAG} from {best.before} to {best.after} and its peak "
        f"{fell}, with "
        f"{metric_label} {_speed_text(best.speed)} against {best.base}; {cand} already held {fmt_gib(held)}{at}, "
        f"{fmt_gib(excess)} more than {ref}'s peak over whole runs"
    )
    limit_text = f"the {fmt_gib(limit)} cap" if limit is not None and mine.memory.limit == "cap" else "its card"
    folder = f"{rerun.experiment or rerun.name or 'experiment'}-{cand}-fix"
    spec_word = rerun.spec()[1]
    if best.saved_mib >= excess:
        text = (
            f"Fix the out-of-memory failure of {cand}: a smaller {TOKEN_BUDGET_FLAG} in its {rerun.candidates_section} "
            f"entry of the spec, then run the experiment again into a new folder: {measured}."
        )
        note = f"# first, in {spec_word},\n# give {cand} a smaller {TOKEN_BUDGET_FLAG} (as {best.arm} did)"
        return doc.NextStep(action="fix_oom", text=text, command=rerun.command(name=folder, note=note))
    changed = [f for f in comp.changed_flags if f.base != f.candidate]
    verb = "removes" if changed and all(f.candidate is None for f in changed) else "changes"
    what = f" (it {verb} {', '.join(f.flag for f in changed)})" if changed else ""
    text = (
        f"Do not merge {cand} for cards of this size: it does not fit under {limit_text}, and a smaller "
        f"{TOKEN_BUDGET_FLAG} would not make it fit: {measured}. Keep {ref}'s flags; to keep part of {cand}'s "
        f"change{what}, make it smaller and run the experiment again into a new folder."
    )
    note = (
        f"# first, in {spec_word},\n# make {cand}'s change smaller in its {rerun.candidates_section} entry\n"
        f"# ({best.arm}'s smaller {TOKEN_BUDGET_FLAG} saved {fmt_gib(best.saved_mib)}: not the way here)"
    )
    return doc.NextStep(action="fix_oom", text=text, command=rerun.command(name=folder, note=note))


def revise_oom_steps(
    comparisons: Sequence[doc.Comparison],
    arms: Mapping[str, doc.ArmResult],
    *,
    rerun: Rerun,
    metric_label: str,
) -> list[doc.Comparison]:
    """The comparisons with each out-of-memory failure's next step made from what the other
    candidates of the experiment measured (`measured_oom_step`); the others as they are."""
    effects = token_budget_effects(comparisons, arms)
    out = []
    for c in comparisons:
        step = measured_oom_step(c, arms, effects, rerun=rerun, metric_label=metric_label) if effects else None
        out.append(
            c if step is None else c.model_copy(update={"summary": c.summary.model_copy(update={"next_step": step})})
        )
    return out

"""From analysis.json to the answer block's rows (render stage; the typed document in, plain data out).

Which candidate is the pull request's, the three figures a reviewer weighs (primary metric, step
time, peak memory) with their intervals, the cause of a verdict in words with links to the
evidence on the page, and one next step with its exact command. Everything here reads the
document; nothing is measured or decided again.
"""

from __future__ import annotations

from collections.abc import Sequence

from reportgen import vocab
from reportgen.analysis.document import AnalysisDocument, Arm, Comparison, HeadlineRow
from reportgen.render.answer import CandidateAnswer, Evidence, Figure
from reportgen.render.format import fmt_change
from reportgen.render.reproduce import wrapped_words

# Anchors on the experiment page the evidence links point at (the page sets these ids).
ANCHOR_WINDOWS = "#windows"
ANCHOR_GUARDRAILS = "#guardrails"
ANCHOR_QUALITY = "#chart-quality"
REPEAT_SETTING = '[run] repeats = 2, order = "interleaved"'


def pr_candidate(doc: AnalysisDocument) -> str | None:
    """The candidate the pull request makes: the spec's choice when the document carries one, else
    the first candidate (the spec's documented default)."""
    named = getattr(doc.experiment, "pr_candidate", None)
    if isinstance(named, str) and doc.comparison(named) is not None:
        return named
    return doc.comparisons[0].candidate if doc.comparisons else None


def _row(comp: Comparison, metric: str) -> HeadlineRow | None:
    return next((r for r in comp.headline if r.metric == metric), None)


def _num(x: float | str | None) -> float | None:
    return float(x) if isinstance(x, (int, float)) and not isinstance(x, bool) else None


def primary_figure(doc: AnalysisDocument, comp: Comparison, label: str, unit: str) -> Figure:
    iv = comp.interval
    row = _row(comp, doc.primary.key)
    est = iv.estimate
    return Figure(
        label=label,
        unit=unit,
        baseline=_num(row.baseline) if row else None,
        candidate=_num(row.candidate) if row else None,
        change=(est - 1) if est is not None else (row.change if row else None),
        low=(iv.low - 1) if iv.low is not None else None,
        high=(iv.high - 1) if iv.high is not None else None,
        significant=iv.significant if est is not None else None,
        confidence=iv.confidence,
    )


def headline_figure(comp: Comparison, metric: str, label: str, unit: str) -> Figure:
    row = _row(comp, metric)
    if row is None:
        return Figure(label, unit)
    return Figure(label, unit, _num(row.baseline), _num(row.candidate), row.change)


def peak_memory_figure(comp: Comparison, label: str = "peak GPU memory") -> Figure:
    """The largest per-GPU peak of each arm (the card that runs out first)."""
    rows = [r for r in comp.headline if r.metric.startswith("gpu/") and r.metric.endswith("/mem_peak_mib")]
    base = [v for r in rows if (v := _num(r.baseline)) is not None]
    cand = [v for r in rows if (v := _num(r.candidate)) is not None]
    if not base and not cand:
        return Figure(label, "MiB")
    b, c = (max(base) if base else None), (max(cand) if cand else None)
    change = (c / b - 1) if b and c is not None else None
    return Figure(label, "MiB", b, c, change)


def figures(doc: AnalysisDocument, comp: Comparison) -> list[Figure]:
    m = vocab.metric(doc.primary.key)
    return [
        primary_figure(doc, comp, m.title, m.unit),
        headline_figure(comp, vocab.STEP_TIME, "step time", "s"),
        peak_memory_figure(comp),
    ]


def disagreeing_windows(doc: AnalysisDocument, comp: Comparison) -> list[tuple[str, float]]:
    """Windows whose change went against the overall direction: (name, change)."""
    est = comp.interval.estimate
    if est is None:
        return []
    up = est >= 1
    return [(w.window, w.change) for w in comp.windows if w.change is not None and (w.change >= 0) != up]


def cause(doc: AnalysisDocument, comp: Comparison) -> str | None:
    """Why the verdict is not a plain accept or reject, in words; None for accepted/rejected."""
    v = comp.verdict
    if v.status in ("accepted", "rejected"):
        return None
    if v.cause:
        return v.cause + memory_cap_note(doc, comp)
    parts = []
    against = disagreeing_windows(doc, comp)
    if against:
        names = ", ".join(f"{name} ({fmt_change(ch, digits=0)})" for name, ch in against)
        n = len(comp.windows)
        parts.append(
            f"{len(against)} of {n} windows went the other way: {names}; one window disagreeing is enough to "
            "withhold a verdict"
        )
    work = [w for w in comp.interval.warnings if "response length" in w]
    if work:
        parts.append(work[0].split(";")[0] + ", so throughput compared different generated work")
    if not parts and v.summary:
        parts.append(v.summary)
    return "; ".join(parts) or None


CAP_FLAG = "--gpu-memory-cap-gib"


def memory_cap_note(doc: AnalysisDocument, comp: Comparison) -> str:
    """For an out-of-memory cause: the cap the workload ran under and its peak, so "tried to
    allocate 20 MiB" is read against the wall it hit."""
    if "OOM" not in (comp.verdict.cause or ""):
        return ""
    arm = doc.arm(comp.candidate)
    cap = arm.workload.get(CAP_FLAG) if arm else None
    peak = peak_memory_figure(comp).candidate
    parts = []
    if cap:
        parts.append(f"under the workload's {cap} GiB memory cap, {CAP_FLAG}")
    if peak is not None:
        parts.append(f"{peak:.0f} MiB in use by then per nvidia-smi, CUDA context included")
    return (" (" + "; ".join(parts) + ")") if parts else ""


def evidence(doc: AnalysisDocument, comp: Comparison, write_up: str) -> list[Evidence]:
    """Links to where the cause can be checked on the page (or the candidate's write-up)."""
    v = comp.verdict
    out: list[Evidence] = []
    if v.status == "failed":
        return [Evidence("what happened", f"{write_up}#what-happened")]
    for name, _ in disagreeing_windows(doc, comp):
        out.append(Evidence(f"window {name}", ANCHOR_WINDOWS))
    if any(g.status == "fail" for g in comp.guardrails):
        out.append(Evidence("failed guardrail", ANCHOR_GUARDRAILS))
    if any("response length" in w for w in comp.interval.warnings) or any(
        g.id == "same_work" and g.status == "fail" for g in comp.guardrails
    ):
        out.append(Evidence("same-work check", ANCHOR_GUARDRAILS))
        out.append(Evidence("quality curves (response length)", ANCHOR_QUALITY))
    return out


def spec_command(doc: AnalysisDocument, spec: str | None, *extra: str) -> str:
    """The `reportgen run` command that writes into this experiment's folder: the spec where it ran
    (`spec`, relative to the runs' working directory) when known, else the stored copy; its profile
    kept; wrapped to the page's code column."""
    exp = doc.experiment
    profile = ["--profile", exp.profile] if exp.profile else []
    path = spec or f"runs/{exp.name}/experiment.toml"
    return wrapped_words(["reportgen", "run", path, *profile, "--name", exp.name, *extra])


def next_step(doc: AnalysisDocument, comp: Comparison, *, pr: str | None, spec: str | None) -> tuple[str, str | None]:
    """(one line, the exact command or None) from the verdict and its evidence. Text between
    backticks is shown as code."""
    status = comp.verdict.status
    if status == "accepted":
        if comp.candidate == pr or pr is None:
            return ("merge this pull request", None)
        return (f"a better variant than the PR's {pr}: consider adding {comp.candidate}'s change", None)
    if status == "rejected":
        return (f"reject: {comp.candidate} makes the primary metric worse", None)
    if status == "no_change":
        return ("no measurable gain: merge only for reasons other than speed", None)
    if status == "inconclusive":
        text = f"set `{REPEAT_SETTING}` in the spec, then re-run every arm"
        return (text, f"# first set in the spec: {REPEAT_SETTING}\n{spec_command(doc, spec, '--new-campaign')}")
    if status == "failed":
        kind = "fix the out-of-memory failure" if "OOM" in (comp.verdict.cause or "") else "fix the failure"
        return (f"{kind}, then re-run {comp.candidate}", spec_command(doc, spec, "--rerun", comp.candidate))
    return ("make the arms do the same work, then re-run every arm", spec_command(doc, spec, "--new-campaign"))


def answers(doc: AnalysisDocument, *, href_of: dict[str, str], spec: str | None = None) -> list[CandidateAnswer]:
    """One `CandidateAnswer` per comparison, in the spec's order (the block puts the PR's first)."""
    pr = pr_candidate(doc)
    out = []
    for comp in doc.comparisons:
        arm: Arm | None = doc.arm(comp.candidate)
        base = arm.base if arm and arm.base and arm.base != vocab.BASELINE else None
        step, command = next_step(doc, comp, pr=pr, spec=spec)
        href = href_of.get(comp.candidate, "")
        out.append(
            CandidateAnswer(
                candidate=comp.candidate,
                title=arm.title if arm else comp.candidate,
                status=comp.verdict.status,
                figures=figures(doc, comp),
                is_pr=comp.candidate == pr,
                base=base,
                cause=cause(doc, comp),
                next_step=step,
                next_command=command,
                evidence=evidence(doc, comp, href.replace("index.md", "")),
                href=href,
            )
        )
    return out


def base_figures(doc: AnalysisDocument, cand: str) -> Sequence[tuple[str, float | None]]:
    """A derived candidate against its base (overall means; no interval): (metric label, change)."""
    arm = doc.arm(cand)
    if arm is None or not arm.base or arm.base == vocab.BASELINE:
        return []
    base = doc.arm(arm.base)
    if base is None:
        return []
    out = []
    for key in (doc.primary.key, *doc.settings.secondary):
        b, c = base.overall.get(key), arm.overall.get(key)
        out.append((vocab.metric(key).title, (c / b - 1) if b and c is not None else None))
    return out

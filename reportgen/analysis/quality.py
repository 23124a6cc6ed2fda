"""Training quality, the second half of every verdict: does the candidate train as well as the baseline?

Part of reportgen.analysis (pure). An RL performance change makes two claims, "faster" and "trains as
well"; a change that is faster because it trains less (a backward pass skipped on every other step)
passes every speed check. So quality is measured the way throughput is (runlevel.py):

- a run's figure of a quality metric is the mean of its window means over the declared windows;
- a pair is the candidate's run and the baseline's run of one block (matched by block, as
  throughput's pairs), and its *difference* candidate - baseline in the metric's own units (a reward
  may be 0 or negative, so no ratio);
- the interval is the paired t interval over the pairs' differences, made by
  `runlevel.paired_look` at the design's per-look level, so that a repeated interval covers every
  look of a sequential campaign;
- the verdict's half is decided on one metric, `[analysis] quality_metric` (default the reward,
  `rollout/raw_reward`, else `rollout/rewards`; higher is better), against a non-inferiority margin
  declared before the campaign, `quality_margin` (default 0.05, in the metric's units: five points
  of a 0-1 reward; docs/analysis.md says why and docs/calibration.md holds it):

  | outcome | rule, on the gain g (the difference, negated when lower is better) with interval [L, U] |
  |---|---|
  | not_worse | L > -margin: the worst the interval allows is within the margin |
  | worse | U < 0 and g <= -margin: worse, and by at least the margin (the mirror of throughput's rule) |
  | open | neither: more pairs may decide |

  A metric without a better direction (a declared margin on the loss, the KL) is judged both ways:
  not_worse when the interval lies inside ±margin, worse when it is significant and its estimate
  beyond ±margin.

Before the rules: a metric constant in both arms (a reward of 0 everywhere: a task nobody solves) is
not testable, never agreement; a difference of exactly 0 in every pair is said as such (identical:
a change that leaves the maths alone on a deterministic CPU, or an A/A whose runs share a seed in a
block); the same non-zero difference in every pair means the blocks replay one seed, so the pairs are
not independent and no interval can be made (not testable: give each block its own seed).

The other metrics Relax users read (loss, KL, response length, entropy, grad norm where logged) get
the same pairs and interval and are shown; one whose two-sided interval excludes 0 is named as
differing, and it decides only when `[analysis] quality_margins` declares a margin for it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from reportgen.analysis import document as doc
from reportgen.analysis import runlevel
from reportgen.rounding import fmt_difference, fmt_difference_interval
from reportgen.specfile.model import QUALITY_MARGIN_DEFAULT
from reportgen.store.run import StoredRun, by_block
from reportgen.vocab import (
    ENTROPY,
    GRAD_NORM,
    HIGHER,
    KL_LOSS,
    LOSS,
    PPO_KL,
    RAW_REWARD,
    RESPONSE_LEN_MEAN,
    RESPONSE_LENGTHS,
    REWARDS,
    Direction,
    QualityOutcome,
    Status,
    title,
)

NONE = "none"  # quality_metric = "none": the spec asks for a verdict on speed alone
REWARD = "reward"
# The quality metrics Relax users read, each with the keys that stand for it (the first every run
# logged is used) and the better direction (None: neither way is better).
METRICS: tuple[tuple[str, tuple[str, ...], Direction | None], ...] = (
    (REWARD, (RAW_REWARD, REWARDS), HIGHER),
    ("loss", (LOSS,), None),
    ("KL to the reference", (KL_LOSS,), None),
    ("policy KL", (PPO_KL,), None),
    ("response length", (RESPONSE_LENGTHS, RESPONSE_LEN_MEAN), None),
    ("entropy", (ENTROPY,), None),
    ("grad norm", (GRAD_NORM,), None),
)
FLAT = "flat at"  # "reward flat at 0 in both arms": a constant says nothing about training
SAME = 1e-12  # relative: differences (or values) within this of each other are the same number
LARGE_MARGIN = 0.5  # a margin of half the baseline's reward figure or more lets most of the reward go unseen
# Outcomes of the deciding metrics, worst first: the half takes the first one any of them has.
PRECEDENCE: tuple[QualityOutcome, ...] = ("worse", "not_testable", "open", "not_worse", "identical")


@dataclass(frozen=True)
class Settings:
    """The spec's quality keys ([analysis] quality_metric, quality_margin, quality_margins)."""

    metric: str | None = None  # None: the reward; "none": speed alone
    margin: float = QUALITY_MARGIN_DEFAULT
    margins: Mapping[str, float] = field(default_factory=dict)


def logged_by_all(runs: Sequence[StoredRun], keys: Sequence[str]) -> str | None:
    """The first of `keys` every run logged (None when none was, or there is no run)."""
    for k in keys:
        if runs and all(k in r.steps.columns for r in runs):
            return k
    return None


def _figure(r: StoredRun, key: str, windows: Sequence[tuple[str, int, int]]) -> float | None:
    """The run's figure of `key`, as throughput's (evidence.run_figure): the mean of its window
    means; None when a window has no finite value."""
    means = r.window_means(key, windows)
    return float(np.mean(means)) if means is not None else None


def _flat(runs: Sequence[StoredRun], key: str, windows: Sequence[tuple[str, int, int]]) -> float | None:
    """The one value `key` takes at every step of every window of every run, when it takes one."""
    vals = np.concatenate(
        [np.asarray(r.series(key, s, e), dtype=float) for r in runs for _, s, e in windows] or [np.array([])]
    )
    vals = vals[np.isfinite(vals)]
    if not len(vals):
        return None
    lo, hi = float(vals.min()), float(vals.max())
    return lo if hi - lo <= SAME * max(1.0, abs(lo), abs(hi)) else None


def _pairs(
    baseline: Sequence[StoredRun], candidate: Sequence[StoredRun], key: str, windows: Sequence[tuple[str, int, int]]
) -> list[doc.QualityPair]:
    """The blocks where both arms have a complete run with a figure of `key`, in block order."""
    complete = (
        [r for r in baseline if r.status == Status.COMPLETE],
        [c for c in candidate if c.status == Status.COMPLETE],
    )
    out = []
    for r, c in by_block(*complete):
        rv, cv = _figure(r, key, windows), _figure(c, key, windows)
        if rv is None or cv is None:
            continue
        rm, cm = r.manifest.fingerprint_id, c.manifest.fingerprint_id
        out.append(
            doc.QualityPair(
                repeat=c.repeat,
                reference_run=r.rel,
                candidate_run=c.rel,
                reference=rv,
                candidate=cv,
                difference=cv - rv,
                machine=rm[:12] if rm and (cm is None or cm == rm) else None,
            )
        )
    return out


def _margin_text(margin: float) -> str:
    return f"{margin:g}"


def judge(
    label: str,
    key: str,
    better: Direction | None,
    margin: float | None,
    baseline: Sequence[StoredRun],
    candidate: Sequence[StoredRun],
    windows: Sequence[tuple[str, int, int]],
    design: doc.Design,
) -> doc.QualityMetric:
    """One quality metric of the candidate against the baseline: the pairs, the repeated interval of the
    mean difference and what it says against `margin` (None: shown, not judged)."""

    def row(outcome: QualityOutcome, reason: str, **found: object) -> doc.QualityMetric:
        first = doc.QualityMetric(
            metric=key,
            label=label,
            better=better,
            margin=margin,
            confidence=design.confidence,
            outcome=outcome,
            reason=reason,
        )
        return first.model_copy(update=found)

    flat = _flat([*baseline, *candidate], key, windows)
    if flat is not None:
        return row("not_testable", f"{label} {FLAT} {flat:.6g} in both arms")
    pairs = _pairs(baseline, candidate, key, windows)
    n = len(pairs)
    if n == 0:
        reason = f"no pair of complete runs with a {label} in every window yet"
        return row("open" if margin is not None else "not_judged", reason)
    d = np.asarray([p.difference for p in pairs], dtype=float)
    scale = max(1.0, *(abs(p.reference) for p in pairs), *(abs(p.candidate) for p in pairs))
    means: dict[str, object] = {
        "pairs": pairs,
        "reference": float(np.mean([p.reference for p in pairs])),
        "candidate": float(np.mean([p.candidate for p in pairs])),
        "estimate": float(d.mean()),
    }
    said_pairs = f"{n} pair{'s' if n != 1 else ''}"
    if np.all(np.abs(d) <= SAME * scale):
        every = "every one of the" if n > 1 else "the"
        return row("identical", f"{label} identical in {every} {said_pairs}: the same figure in both runs", **means)
    if n >= 2 and float(d.max() - d.min()) <= SAME * scale:
        reason = (
            f"{label} {fmt_difference(float(d[0]))} in every one of the {said_pairs}: the blocks replay one seed, so "
            "the pairs are not independent and no interval can be made (give each block its own seed)"
        )
        return row("not_testable", reason, **means)
    s, b, dsg = runlevel.paired_look(d, design)
    lo, hi, est = float(b.low[0]), float(b.high[0]), float(s.mean[0])
    finite = math.isfinite(lo) and math.isfinite(hi)
    low, high = (lo, hi) if finite else (None, None)
    found: dict[str, object] = {
        **means,
        "low": low,
        "high": high,
        "look_confidence": dsg.look_confidence,
        "df": float(s.df[0]) if finite else None,
        "significant": finite and (lo > 0 or hi < 0),
    }
    figure = fmt_difference_interval(est, low, high, confidence=design.confidence)
    first = runlevel.first_look(design)
    if margin is None:
        said = f"{label} {figure}, {said_pairs}" + (": differs from the baseline's" if found["significant"] else "")
        return row("not_judged", said, **found)
    outcome = _outcome(est, lo, hi, margin, better) if finite and n >= first else "open"
    m = _margin_text(margin)
    worse_side = "a loss" if better is not None else "a difference"
    reason = {
        "not_worse": f"{label} {figure}, {said_pairs}: within the {m} margin",
        "worse": f"{label} {figure}, {said_pairs}: worse beyond the {m} margin",
    }.get(
        outcome,
        f"{label} {figure}, {said_pairs}: {worse_side} of {m} is not excluded yet"
        + (f" (a verdict needs at least {first} pairs)" if n < first else ""),
    )
    return row(outcome, reason, **found)


# Outcomes of a look, as integers for the vectorised rule (calibration_quality.py runs thousands of
# campaigns through it), and their names.
NOT_WORSE, WORSE, OPEN = range(3)
OUTCOME_NAMES: tuple[QualityOutcome, ...] = ("not_worse", "worse", "open")


def outcomes(est: np.ndarray, lo: np.ndarray, hi: np.ndarray, margin: float, better: Direction | None) -> np.ndarray:
    """The rules of the module docstring on mean differences `est` with intervals [lo, hi] (arrays of
    any one shape): NOT_WORSE, WORSE or OPEN each."""
    est, lo, hi = (np.asarray(x, dtype=float) for x in (est, lo, hi))
    ok = np.isfinite(lo) & np.isfinite(hi)
    if better is None:
        fine = ok & (lo > -margin) & (hi < margin)
        bad = ok & (((hi < 0) & (est <= -margin)) | ((lo > 0) & (est >= margin)))
    else:
        g, gl, gh = (est, lo, hi) if better == HIGHER else (-est, -hi, -lo)
        fine = ok & (gl > -margin)
        bad = ok & (gh < 0) & (g <= -margin)
    return np.where(fine, NOT_WORSE, np.where(bad, WORSE, OPEN))


def _outcome(est: float, lo: float, hi: float, margin: float, better: Direction | None) -> QualityOutcome:
    """`outcomes` for one look."""
    return OUTCOME_NAMES[int(outcomes(np.array(est), np.array(lo), np.array(hi), margin, better))]


def _deciding(settings: Settings, runs: Sequence[StoredRun]) -> tuple[str | None, str, Direction | None]:
    """(key, label, better) of the metric that decides; key None when it is not logged by every run."""
    if settings.metric is None:
        label, keys, better = METRICS[0]
        return logged_by_all(runs, keys), label, better
    known = next(((lbl, b) for lbl, keys, b in METRICS if settings.metric in keys), None)
    label, better = known if known is not None else (title(settings.metric), None)
    return (settings.metric if logged_by_all(runs, [settings.metric]) else None), label, better


def compare(
    baseline: Sequence[StoredRun],
    candidate: Sequence[StoredRun],
    windows: Sequence[tuple[str, int, int]],
    *,
    design: doc.Design,
    settings: Settings,
) -> doc.QualityHalf:
    """The training-quality half of the candidate's verdict against the baseline (module docstring)."""
    runs = [*baseline, *candidate]
    judged_speed_only = settings.metric == NONE
    key, label, better = (None, "", None) if judged_speed_only else _deciding(settings, runs)
    rows: list[doc.QualityMetric] = []
    missing: list[str] = []
    seen: set[str] = set()
    if key is not None:
        rows.append(judge(label, key, better, settings.margin, baseline, candidate, windows, design))
        seen.add(key)
    elif not judged_speed_only:
        missing.append(label if settings.metric is None else settings.metric)
    for lbl, keys, direction in METRICS:
        k = logged_by_all(runs, keys)
        if k is None:
            if lbl not in missing:
                missing.append(lbl)
            continue
        if k in seen:
            continue
        seen.add(k)
        rows.append(judge(lbl, k, direction, settings.margins.get(k), baseline, candidate, windows, design))
    for k, margin in settings.margins.items():  # a declared metric outside the usual list
        if k in seen:
            continue
        if logged_by_all(runs, [k]) is None:
            missing.append(k)
            continue
        rows.append(judge(title(k), k, None, margin, baseline, candidate, windows, design))
    deciding = [r for r in rows if r.margin is not None]
    flat = [r.label for r in rows if r.outcome == "not_testable" and f" {FLAT} " in r.reason]
    differ = [r.label for r in rows if r.margin is None and r.significant]
    head = rows[0] if rows and key is not None else None
    status: QualityOutcome
    if judged_speed_only and not deciding:
        status = "not_judged"
    elif key is None and not judged_speed_only:
        status = "not_testable"
    else:
        status = next((o for o in PRECEDENCE if any(r.outcome == o for r in deciding)), "not_judged")
    summary = _summary(status, head, deciding, settings, missing)
    if differ:
        summary += f"; differs from the baseline's: {', '.join(differ)}"
    warnings = []
    ref = head.reference if head is not None and head.label == REWARD else None
    if ref is not None and 0.0 < ref <= 1.0 and settings.margin >= LARGE_MARGIN * ref:
        warnings.append(
            f"the margin ({_margin_text(settings.margin)}) is {settings.margin / ref:.0%} of the baseline's reward "
            f"figure ({fmt_difference(ref).lstrip('+')}): a loss that large passes as 'not worse'; declare a smaller "
            "[analysis] quality_margin, or measure on a run whose reward has risen"
        )
    if ref is not None and not 0.0 <= ref <= 1.0 and settings.margin == QUALITY_MARGIN_DEFAULT:
        warnings.append(
            f"the baseline's reward figure is {fmt_difference(ref).lstrip('+')}, outside 0-1: the default margin "
            f"({_margin_text(settings.margin)}) is five points of a 0-1 reward; declare [analysis] quality_margin "
            "in this reward's units"
        )
    return doc.QualityHalf(
        status=status,
        metric=head.metric if head is not None else settings.metric,
        margin=None if judged_speed_only else settings.margin,
        pairs=len(head.pairs) if head is not None else 0,
        summary=summary,
        metrics=rows,
        differ=differ,
        flat=flat,
        missing=missing,
        warnings=warnings,
    )


def _summary(
    status: QualityOutcome,
    head: doc.QualityMetric | None,
    deciding: Sequence[doc.QualityMetric],
    settings: Settings,
    missing: Sequence[str],
) -> str:
    """The half in one line, as the first lines of the answer and the PR body say it."""
    if status == "not_judged":
        return 'training quality not judged: the spec asks for a verdict on speed alone (quality_metric = "none")'
    if head is None:
        what = missing[0] if missing else "the quality metric"
        return f"training quality not testable: {what} not logged by every run of both arms"
    worst = next((r for r in deciding if r.outcome == status), head)
    n = len(worst.pairs)
    said_n = f"{n} pair{'s' if n != 1 else ''}"
    if status == "identical":
        return f"trains identically: {worst.label} the same in {'all ' if n > 1 else ''}{said_n}"
    if status == "not_testable":
        return f"training quality not testable: {worst.reason}"
    figure = fmt_difference_interval(worst.estimate, worst.low, worst.high, confidence=worst.confidence)
    m = _margin_text(worst.margin or settings.margin)
    if status == "worse":
        return f"trains worse: {worst.label} {figure}, beyond the {m} margin, {said_n}"
    if status == "open":
        return f"training quality open: {worst.label} {figure} does not yet exclude a loss of {m}, {said_n}"
    return f"trains as well: {worst.label} {figure}, within the {m} margin, {said_n}"

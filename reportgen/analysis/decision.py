"""The verdict of one candidate: every piece of evidence goes in, one decision comes out.

Part of reportgen.analysis (pure). This is the only place a verdict is made; the next step
(next_step.py) and the pages read the verdict, its `basis` (which piece of evidence decided it)
and its cause as they are. Precedence, first match wins:

1. an invalid comparison (different machine, model or data; another measurement or other load on
   the machine, basis "disturbed"): nothing about speed can be said;
2. a failure (a run failed, a guardrail failed), unless runs are still unfinished and no finished
   run failed: then what follows;
3. different generated work in the finished runs (against the baseline or the candidate's base):
   invalid, and resuming would not change it;
4. unfinished runs (interrupted, or left running): incomplete, resuming redoes them;
5. the primary metric never logged by an arm: inconclusive, name another; a declared window that
   holds no step of some run (a resumed or short run): inconclusive, declare windows that fit;
6. training quality worse than the declared margin (quality.py, the verdict's second half):
   rejected on quality (basis "quality"), with the figure, whatever the speed;
7. the run-level comparison (runlevel.py): against the candidate's base when it is built on
   another candidate whose runs completed (A3 = A1 + a smaller token budget is one variable away
   from A1, not from the baseline), else against the baseline. Its outcome under the design's
   rules gives accepted, rejected, no_change or inconclusive with the reason. Accepted needs both
   halves: faster by the minimum effect *and* quality not worse than the margin (or identical in
   every pair, or not judged because the spec asks for speed alone); faster with quality still open
   is inconclusive (basis "quality_open": a sequential campaign goes on, or the last look says so),
   faster with quality that cannot be tested (flat, not logged, replayed seeds) is inconclusive
   (basis "quality_untestable").

Thresholds come from the design (min_effect both ways, min_pairs, looks) and the spec's direction.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from reportgen.analysis import check
from reportgen.analysis import design as designs
from reportgen.analysis import document as doc
from reportgen.analysis.check import FAIL, which_runs
from reportgen.analysis.guardrails import INVALIDATING
from reportgen.rounding import change_decimals, fmt_change, fmt_level
from reportgen.store.run import StoredRun
from reportgen.vocab import (
    BASELINE,
    METRICS,
    STEP_RESP_TOKEN_PER_S,
    STEP_TOKEN_PER_S,
    Verdicts,
    gain,
    is_better,
    metric,
)

DISTURBING = ("no_overlap", "quiet_machine")  # invalidating guardrails that say the machine was not quiet


@dataclass(frozen=True)
class Failure:
    """The first failure named in the comparison's runs: its words, its arm, whether it was an OOM."""

    cause: str
    arm: str
    oom: bool


@dataclass(frozen=True)
class Evidence:
    """Everything the verdict of one candidate rests on, gathered by report.py."""

    candidate: str
    guardrails: Sequence[doc.GuardrailResult]  # against the baseline, the same-work check excluded
    same_work: tuple[str, str]  # (status, reason) against the baseline
    vs_baseline: doc.RunLevel
    design: doc.Design
    direction: str
    metric_label: str
    base: str = BASELINE
    vs_base: doc.RunLevel | None = None  # None: built on the baseline, or the base has no completed run
    base_same_work: tuple[str, str] | None = None
    failure: Failure | None = None
    pending: str | None = None  # the unfinished runs, in words
    finished_both: bool = True  # both arms have finished runs (guardrails could judge them)
    base_pending: str | None = None  # the base's unfinished runs, when it has any
    missing_metric: str | None = None
    no_runs: bool = False  # the candidate has no formal run at all
    windows: Sequence[str] = ()  # the windows' names, in order
    windows_gap: str | None = None  # coverage.Gap.cause: declared windows that hold no step of some run
    # The comparison's guardrails counted once (check.tally, the same-work check included), and its flag
    # edits that change the maths: an accepted verdict's sentence says both as the pages do.
    tally: doc.GuardrailTally | None = None
    maths: Sequence[doc.MathsChange] = ()
    set_aside: int = 0  # pairs left out because the machine was not quiet (set_aside.py)
    quality: doc.QualityHalf | None = None  # the training-quality half against the baseline (quality.py)


def missing_metric_cause(key: str, arms: dict[str, Sequence[StoredRun]]) -> str | None:
    """Why no interval can exist when an arm never logged the primary metric, naming the arm and
    the metrics every run did log that could stand in (Relax's hybrid mode prints no
    `perf/step_resp_token_per_s`, `perf/step_token_per_s` remains); None when every run logged it."""
    runs = [r for rs in arms.values() for r in rs]
    lacking = {arm: rs for arm, rs in arms.items() if rs and all(key not in r.steps.columns for r in rs)}
    if not lacking or not runs:
        return None
    everywhere = set.intersection(*(set(map(str, r.steps.columns)) for r in runs))
    want = metric(key)
    ranked = [STEP_TOKEN_PER_S, STEP_RESP_TOKEN_PER_S] + [
        k for k, m in METRICS.items() if m.unit == want.unit and m.direction == want.direction
    ]
    alike = [k for k in dict.fromkeys(ranked) if k != key and k in everywhere]
    who = which_runs([r for rs in lacking.values() for r in rs])
    said = f"{key} was never logged by {who}"
    if key == STEP_RESP_TOKEN_PER_S:
        said += " (Relax's hybrid mode does not print it)"
    if alike:
        return f'{said}; every run logged {alike[0]}: set [analysis].primary = "{alike[0]}" to compare on it'
    return f"{said}; name a metric every arm logs in [analysis].primary"


def _verdict(
    status: doc.VerdictStatus,
    basis: doc.Basis,
    summary: str,
    cause: str | None = None,
    *,
    against: str = BASELINE,
    pairs: int = 0,
    failure: Failure | None = None,
) -> doc.Verdict:
    return doc.Verdict(
        status=status,
        basis=basis,
        pairs=pairs,
        summary=summary,
        cause=cause,
        against=against,
        failed_arm=failure.arm if failure else None,
        oom=failure.oom if failure else False,
    )


def decide(e: Evidence) -> doc.Verdict:
    """The verdict, its basis and cause, from all the evidence of one candidate (precedence in the
    module docstring)."""
    bad = [g for g in e.guardrails if g.status == FAIL]
    invalid = [g for g in bad if g.id in INVALIDATING]
    if invalid:
        g = invalid[0]
        basis: doc.Basis = "disturbed" if g.id in DISTURBING else Verdicts.INVALID
        return _verdict(Verdicts.INVALID, basis, f"Invalid comparison: {g.title.lower()} failed.", g.reason)
    real_failure = e.failure is not None
    if (real_failure or bad) and (e.pending is None or real_failure or e.finished_both):
        cause = e.failure.cause if e.failure else bad[0].reason
        return _verdict(Verdicts.FAILED, Verdicts.FAILED, f"Failed: {cause}.", cause, failure=e.failure)
    for finding, who in ((e.same_work, BASELINE), (e.base_same_work, e.base)):
        if finding is not None and finding[0] == FAIL:
            title = "same generated work" if who == BASELINE else f"same generated work as its base {who}"
            return _verdict(
                Verdicts.INVALID, "same_work", f"Invalid comparison: {title} failed.", finding[1], against=who
            )
    if e.pending is not None:
        return _verdict(
            Verdicts.INCOMPLETE,
            "pending",
            f"Incomplete: {e.pending}; resume the campaign to finish it (any figures so far come from the finished "
            "runs).",
            e.pending,
        )
    if e.no_runs:
        cause = "no formal run of this candidate"
        return _verdict(Verdicts.FAILED, Verdicts.FAILED, f"Failed: {cause}.", cause)
    if e.missing_metric:
        return _verdict(Verdicts.INCONCLUSIVE, "missing_metric", f"Inconclusive: {e.missing_metric}.", e.missing_metric)
    if e.windows_gap:
        return _verdict(Verdicts.INCONCLUSIVE, "windows_missed", f"Inconclusive: {e.windows_gap}.", e.windows_gap)
    if e.base != BASELINE and e.base_pending is not None:
        return _verdict(
            Verdicts.INCOMPLETE,
            "pending",
            f"Incomplete: its base {e.base} has unfinished runs ({e.base_pending}); resume the campaign to finish "
            "them.",
            e.base_pending,
            against=e.base,
        )
    if e.quality is not None and e.quality.status == "worse":
        return _worse_quality(e, e.quality)
    if e.vs_base is not None:
        return _statistics(e, e.vs_base, against=e.base)
    return _statistics(e, e.vs_baseline, against=BASELINE)


def _figure_words(rl: doc.RunLevel, *, direction: str, confidence: float) -> tuple[str, str] | None:
    """A run-level comparison's estimate as a change and what it rests on, as the verdicts' lines say
    them: ("+19%", "(95% CI 0% to +40%, 3 pairs)"); None before its first pair."""
    iv = rl.interval
    if iv.estimate is None:
        return None
    n = len(rl.pairs)
    said_n = f"{n} pair{'s' if n != 1 else ''}"
    pct = _pct_for(iv, direction)(gain(iv.estimate, direction) - 1)
    if iv.low is None or iv.high is None:
        return pct, f"({said_n})"
    return pct, f"({fmt_level(confidence)} CI {_span(iv, direction)}, {said_n})"


def _speed(e: Evidence) -> str:
    """The speed half as it stands, in words: "response tokens/s +19% (95% CI 0% to +40%, 3 pairs)"."""
    rl = e.vs_base if e.vs_base is not None else e.vs_baseline
    words = _figure_words(rl, direction=e.direction, confidence=e.design.confidence)
    if words is None:
        return f"{e.metric_label}: no figure yet"
    vs = "" if rl.reference == BASELINE else f" against {rl.reference}"
    return f"{e.metric_label} {words[0]}{vs} {words[1]}"


SPEED_WORDS: dict[str, str] = {
    Verdicts.ACCEPTED: "faster",
    Verdicts.REJECTED: "slower",
    Verdicts.NO_CHANGE: "no change in speed",
    "futility": "no change of the minimum effect within reach",
    "windows": "speed: windows disagree",
    "open": "speed open",
    "too_few_pairs": "speed: too few pairs",
}


def speed_half(rl: doc.RunLevel, design: doc.Design, *, direction: str, metric_label: str) -> str:
    """The speed half of a verdict in words, as the answer's and the PR body's first lines say it beside
    the quality half: "faster: response tokens/s +91% (95% CI +65% to +121%, 4 pairs)"; against a base, named."""
    word = SPEED_WORDS.get(rl.outcome, "speed open")
    vs = "" if rl.reference == BASELINE else f" against {rl.reference}"
    words = _figure_words(rl, direction=direction, confidence=design.confidence)
    if words is None:
        return f"speed: no pair of runs yet{vs}"
    return f"{word}{vs}: {metric_label} {words[0]} {words[1]}"


def _worse_quality(e: Evidence, q: doc.QualityHalf) -> doc.Verdict:
    """Rejected on quality: the candidate trains worse than the baseline beyond the declared margin,
    whatever its speed."""
    cause = f"it {q.summary}; speed: {_speed(e)}"
    return _verdict(
        Verdicts.REJECTED, "quality", f"Rejected on quality: {cause}.", cause, against=BASELINE, pairs=q.pairs
    )


def _accepted_or_not(e: Evidence, summary: str, *, faster: str, against: str, n: int) -> doc.Verdict:
    """Faster by the minimum effect (`faster`, in words): accepted only when the quality half allows it."""
    q = e.quality
    if q is None or q.status in ("not_worse", "identical", "not_judged"):
        return _verdict(Verdicts.ACCEPTED, "interval", summary, against=against, pairs=n)
    if q.status == "open":
        when = (
            f"the design's last look ({designs.last_look(e.design)} pairs) came without it"
            if designs.is_last_look(e.design, n)
            else "more pairs may decide it"
        )
        cause = f"faster: {faster}; but {q.summary}: {when}"
        return _verdict(
            Verdicts.INCONCLUSIVE, "quality_open", f"Inconclusive: {cause}.", cause, against=against, pairs=n
        )
    cause = f"faster: {faster}; but {q.summary}"
    return _verdict(
        Verdicts.INCONCLUSIVE, "quality_untestable", f"Inconclusive: {cause}.", cause, against=against, pairs=n
    )


def _caveats(e: Evidence) -> str:
    """What an accepted verdict's sentence says besides speed: the guardrails' one count, and what
    makes the candidate train differently (a guardrail's warning, a flag that changes the maths).
    "all guardrails passed" is said only when every guardrail passed and no edit changes the maths."""
    tally = e.tally or check.tally(e.guardrails)
    said = [tally.text()]
    said += [f"warning: {g.reason.split('; ')[0]}" for g in e.guardrails if g.status == check.WARN]
    if e.maths:
        said.append("it changes the maths: " + "; ".join(m.text() for m in e.maths))
    return "; ".join(said)


def _gain_bounds(iv: doc.Interval, direction: str) -> tuple[float | None, float | None]:
    """The interval of the gain (fractions), low first; (None, None) without one."""
    if iv.low is None or iv.high is None:
        return None, None
    lo, hi = sorted((gain(iv.low, direction) - 1, gain(iv.high, direction) - 1))
    return lo, hi


def _pct_for(iv: doc.Interval, direction: str) -> Callable[[float | None], str]:
    """Formats a change with the decimals `iv` supports (reportgen/rounding.py), so the figure in a
    cause reads as it does in every table."""
    d = change_decimals(*_gain_bounds(iv, direction))
    return lambda x: fmt_change(x, digits=d)


def _span(iv: doc.Interval, direction: str) -> str:
    lo, hi = _gain_bounds(iv, direction)
    pct = _pct_for(iv, direction)
    return f"{pct(lo)} to {pct(hi)}"


def _statistics(e: Evidence, rl: doc.RunLevel, *, against: str) -> doc.Verdict:
    """The verdict from the run-level comparison's outcome."""
    d = e.design
    n = len(rl.pairs)
    vs = "" if against == BASELINE else f" against its base {against}"
    iv = rl.interval
    level = f"{fmt_level(d.confidence)} CI"
    _pct = _pct_for(iv, e.direction)
    if n == 0:
        cause = (
            f"no pair of finished runs{vs} with a value of the primary metric in every window: a verdict needs at "
            f"least {d.min_pairs} pairs"
        )
        if e.set_aside:  # the only pairs were disturbed: say so, not that the metric is missing
            cause = f"every pair{vs} was set aside ({e.set_aside}: the machine was not quiet): a verdict needs at least {d.min_pairs}"
        return _verdict(Verdicts.INCONCLUSIVE, "no_pairs", f"Inconclusive: {cause}.", cause, against=against)
    est = gain(iv.estimate, e.direction) - 1 if iv.estimate is not None else None
    pairs_word = f"{n} pair{'s' if n != 1 else ''} of runs" + (f" on {rl.claim}" if "machines" in rl.claim else "")
    if rl.outcome == "too_few_pairs":
        need = max(d.min_pairs, d.looks[0] if d.mode == "fixed" else d.min_pairs)
        seen = f"{_pct(est)}" if est is not None else "no figure"
        planned = f" of the {d.looks[0]} planned" if d.mode == "fixed" and d.looks[0] > n else ""
        cause = (
            f"{pairs_word}{planned}{vs} ({seen}); a verdict needs at least {need}, because the run-to-run spread, "
            f"not the steps' noise, decides: {need - n} more"
        )
        return _verdict(
            Verdicts.INCONCLUSIVE, "too_few_pairs", f"Inconclusive: {cause}.", cause, against=against, pairs=n
        )
    assert iv.low is not None and iv.high is not None and est is not None
    span = _span(iv, e.direction)
    where = f"{level} {span}, {pairs_word}{vs}"
    if rl.outcome == Verdicts.ACCEPTED:
        if against != BASELINE and e.vs_baseline.outcome in (Verdicts.REJECTED, Verdicts.NO_CHANGE, "futility"):
            base_iv = e.vs_baseline.interval
            figure = (
                _pct_for(base_iv, e.direction)(gain(base_iv.estimate, e.direction) - 1)
                if base_iv.estimate is not None
                else "n/a"
            )
            cause = (
                f"what it adds to {against} is a gain ({_pct(est)}, {where}), but together with {against} it is not "
                f"better than the baseline ({figure})"
            )
            return _verdict(Verdicts.INCONCLUSIVE, "base", f"Inconclusive: {cause}.", cause, against=against, pairs=n)
        half = f"; {e.quality.summary}" if e.quality is not None else ""
        summary = f"Accepted: better by {_pct(est)} ({where}), in every window{half}; {_caveats(e)}."
        if against != BASELINE:
            summary = (
                f"Accepted against its base {against}: {e.metric_label} {_pct(est)} ({level} {span}, "
                f"{pairs_word}), in every window{half}; {_caveats(e)}."
            )
        return _accepted_or_not(e, summary, faster=f"{e.metric_label} {_pct(est)} ({where})", against=against, n=n)
    if rl.outcome == Verdicts.REJECTED:
        summary = f"Rejected: worse by {_pct(est)} ({where})."
        why: str | None = None
        if against != BASELINE:
            summary = f"Rejected against its base {against}: {e.metric_label} {_pct(est)} ({where}); its gain over the baseline is {against}'s."
            why = f"what it adds to {against} makes {e.metric_label} worse: {_pct(est)} ({level} {span})"
        return _verdict(Verdicts.REJECTED, "interval", summary, why, against=against, pairs=n)
    if rl.outcome == Verdicts.NO_CHANGE:
        summary = f"No meaningful change: {_pct(est)} ({where}), inside ±{d.min_effect:.0%}."
        why = None
        if against != BASELINE:
            summary = f"No meaningful change against its base {against}: {_pct(est)} ({where}), inside ±{d.min_effect:.0%}; its gain over the baseline is {against}'s."
            why = f"what it adds to {against} moves {e.metric_label} by less than the {d.min_effect:.0%} minimum effect: {_pct(est)}"
        return _verdict(Verdicts.NO_CHANGE, "interval", summary, why, against=against, pairs=n)
    if rl.outcome == "futility":
        look = rl.looks[-1] if rl.looks else None
        ends = [
            gain(r, e.direction) - 1
            for r in ((look.futility_low, look.futility_high) if look is not None else ())
            if r is not None
        ]
        bounds = (
            f"; with {d.futility or 0.9:.0%} one-sided bounds the change lies between {_pct(min(ends))} and "
            f"{_pct(max(ends))}"
            if len(ends) == 2
            else ""
        )
        cause = (
            f"neither a gain nor a loss of the {d.min_effect:.0%} minimum effect is within reach{vs}: {_pct(est)} "
            f"after {pairs_word}{bounds} ({level} {span})"
        )
        return _verdict(Verdicts.INCONCLUSIVE, "futility", f"Inconclusive: {cause}.", cause, against=against, pairs=n)
    if rl.outcome == "windows":
        names = list(e.windows) or [f"W{i + 1}" for i in range(len(rl.window_changes))]
        off = [
            f"{name} ({'n/a' if c is None else _pct(c)})"
            for name, c in zip(names, rl.window_changes, strict=False)
            if c is None or is_better(1 + c, e.direction) != (est > 0)
        ]
        cause = (
            f"{_pct(est)} ({where}) clears the threshold, but {len(off)} of {len(rl.window_changes)} windows "
            f"went the other way: {', '.join(off)}"
        )
        return _verdict(Verdicts.INCONCLUSIVE, "windows", f"Inconclusive: {cause}.", cause, against=against, pairs=n)
    last = d.mode == "sequential" and n >= d.max_pairs
    more = rl.more_pairs
    if last:
        cause = (
            f"{_pct(est)} with a {where}: the design's last look ({d.max_pairs} pairs) came without the interval "
            f"clearing ±{d.min_effect:.0%}"
        )
        return _verdict(Verdicts.INCONCLUSIVE, "max_pairs", f"Inconclusive: {cause}.", cause, against=against, pairs=n)
    cause = f"{_pct(est)} with a {where}: too wide to decide at the {d.min_effect:.0%} minimum effect"
    if more is not None:
        cause += f"; about {more} more pair{'s' if more != 1 else ''} would decide if the spread stays as seen"
    return _verdict(Verdicts.INCONCLUSIVE, "open", f"Inconclusive: {cause}.", cause, against=against, pairs=n)

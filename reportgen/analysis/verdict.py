"""The verdict for one candidate against its baseline, from guardrails, interval and windows.

Part of reportgen.analysis (pure). Order of precedence: an invalid comparison (machine, model or
data differ) says nothing about speed; then any failed run or guardrail; then the interval.
Thresholds (minimum effect, direction) come from the spec's [analysis] table.

A candidate built on another one (A3 = A1 + a smaller token budget) is one variable away from its
base, not from the baseline: against the baseline it carries its base's whole gain, so an
"accepted" there says nothing about the change it adds. `against_base` decides such a candidate,
once it is accepted against the baseline, on its interval against its base, as the task-01 plan
did (A3: -5.75 % against A1, rejected).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from reportgen.analysis.guardrails import FAIL, INVALIDATING, Guardrail, which_runs
from reportgen.analysis.inputs import RunData
from reportgen.analysis.interval import Interval
from reportgen.vocab import BASELINE, METRICS, STEP_RESP_TOKEN_PER_S, STEP_TOKEN_PER_S, metric

STATUSES = ("accepted", "rejected", "no_change", "inconclusive", "failed", "invalid", "incomplete")


@dataclass(frozen=True)
class Verdict:
    status: str
    summary: str
    cause: str | None = None
    against: str = BASELINE  # the arm whose comparison decided: the baseline, or the candidate's base

    def as_dict(self) -> dict:
        return {"status": self.status, "summary": self.summary, "cause": self.cause, "against": self.against}


def _pct(x: float) -> str:
    return f"{x * 100:+.2f}%"


def missing_metric_cause(key: str, arms: dict[str, Sequence[RunData]]) -> str | None:
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


def decide(
    *,
    guardrails: Sequence[Guardrail],
    interval: Interval | None,
    window_changes: Sequence[float | None],
    direction: str,
    min_effect: float,
    repeat_ratios: Sequence[float] = (),
    failure_cause: str | None = None,
    missing_metric: str | None = None,
) -> Verdict:
    """`window_changes` are candidate/baseline - 1 of the primary metric per window;
    `repeat_ratios` the run-level ratios when there are repeats; `missing_metric` is
    `missing_metric_cause`'s reason when an arm never logged the primary metric."""
    bad = [g for g in guardrails if g.status == FAIL]
    invalid = [g for g in bad if g.id in INVALIDATING]
    if invalid:
        return Verdict("invalid", f"Invalid comparison: {invalid[0].title.lower()} failed.", invalid[0].reason)
    if failure_cause or bad:
        cause = failure_cause or bad[0].reason
        return Verdict("failed", f"Failed: {cause}.", cause)
    if missing_metric:
        return Verdict("inconclusive", f"Inconclusive: {missing_metric}.", missing_metric)
    if interval is None or interval.low is None or interval.high is None or interval.estimate is None:
        why = interval.warnings[0] if interval is not None and interval.warnings else "no interval"
        return Verdict("inconclusive", f"Inconclusive: {why}.")

    def gain(r: float) -> float:  # improvement factor: > 1 is better whichever the direction
        return r if direction == "higher" else 1.0 / r

    est = gain(interval.estimate)
    lo, hi = sorted((gain(interval.low), gain(interval.high)))
    target = 1.0 + min_effect
    level = f"{interval.confidence:.0%}"
    span = f"{_pct(lo - 1)} to {_pct(hi - 1)}"
    better = lambda c: c is not None and (c > 0 if direction == "higher" else c < 0)  # noqa: E731
    worse = lambda c: c is not None and (c < 0 if direction == "higher" else c > 0)  # noqa: E731
    consistent = bool(window_changes) and all(better(c) for c in window_changes)
    repeats_agree = all(gain(r) > 1.0 for r in repeat_ratios)
    if hi < 1.0:
        return Verdict("rejected", f"Rejected: worse by {_pct(est - 1)} ({level} interval of the gain {span}).")
    if lo > 1.0:
        if hi < target:
            return Verdict(
                "no_change",
                f"No meaningful change: better by {_pct(est - 1)}, but the whole {level} "
                f"interval ({span}) is below the {min_effect:.0%} minimum effect.",
            )
        if lo < target:
            return Verdict(
                "inconclusive",
                f"Inconclusive: better by {_pct(est - 1)}, but the {level} interval "
                f"({span}) does not clear the {min_effect:.0%} minimum effect.",
            )
        if not consistent:
            off = sum(1 for c in window_changes if not better(c))
            return Verdict(
                "inconclusive",
                f"Inconclusive: better by {_pct(est - 1)} overall, but {off} of "
                f"{len(window_changes)} windows went the other way.",
            )
        if not repeats_agree:
            return Verdict("inconclusive", f"Inconclusive: better by {_pct(est - 1)} overall, but not in every repeat.")
        return Verdict(
            "accepted",
            f"Accepted: better by {_pct(est - 1)} ({level} interval {span}), in every window, all guardrails passed.",
        )
    # The interval holds 1.
    if lo >= 1.0 / target and hi <= target:
        return Verdict(
            "no_change", f"No significant change: {_pct(est - 1)} ({level} interval {span}, inside ±{min_effect:.0%})."
        )
    if any(worse(c) for c in window_changes) and any(better(c) for c in window_changes):
        note = " Windows disagree in direction."
    else:
        note = ""
    return Verdict(
        "inconclusive",
        f"Inconclusive: {_pct(est - 1)} with a {level} interval of {span}, too wide to "
        f"rule out the {min_effect:.0%} minimum effect either way.{note}",
    )


def against_base(
    verdict: Verdict,
    *,
    base: str,
    estimate: float | None,
    low: float | None,
    high: float | None,
    confidence: float,
    direction: str,
    min_effect: float,
    label: str,
) -> Verdict:
    """The verdict of a candidate built on `base`, given its verdict against the baseline and the
    ratio candidate/base of the primary metric (`label`) with its interval.

    Only an accepted verdict is reconsidered (a failed, invalid or inconclusive comparison with
    the baseline already says what is wrong), and only when an interval against the base exists
    (a base whose runs all failed cannot be compared with; then the candidate is what there is to
    merge). The change it adds must clear the minimum effect on its own: worse is `rejected`,
    within the minimum effect is `no_change`, too wide to tell is `inconclusive`."""
    if verdict.status != "accepted" or estimate is None or low is None or high is None:
        return verdict

    def gain(r: float) -> float:
        return r if direction == "higher" else 1.0 / r

    lo, hi = sorted((gain(low), gain(high)))
    target = 1.0 + min_effect
    level = f"{confidence:.0%}"
    # The metric's own change and interval (step time +18 %, not the gain -16 %), as the page's
    # against-the-base table shows it; worse or better is said in words.
    r_lo, r_hi = sorted((low, high))
    figure = f"{_pct(estimate - 1)} against {base} ({level} interval {_pct(r_lo - 1)} to {_pct(r_hi - 1)})"
    vs = f"{label} {figure}"
    if lo >= target:
        return Verdict("accepted", f"{verdict.summary.rstrip('.')}; against its base {base}: {vs}.", against=base)
    if hi < 1.0:
        return Verdict(
            "rejected",
            f"Rejected against its base {base}: {vs}; its gain over the baseline is {base}'s.",
            f"what it adds to {base} makes {label} worse: {figure}",
            against=base,
        )
    if (lo > 1.0 and hi < target) or (lo >= 1.0 / target and hi <= target):
        return Verdict(
            "no_change",
            f"No meaningful change against its base {base}: {vs}, inside ±{min_effect:.0%}; its gain over the "
            f"baseline is {base}'s.",
            f"what it adds to {base} moves {label} by less than the {min_effect:.0%} minimum effect: {figure}",
            against=base,
        )
    return Verdict(
        "inconclusive",
        f"Inconclusive against its base {base}: {vs}, too wide to show the {min_effect:.0%} minimum effect.",
        f"what it adds to {base} is not shown to move {label} by the {min_effect:.0%} minimum effect: {figure}",
        against=base,
    )


def incomplete(verdict: Verdict, *, pending: str, real_failure: bool, finished_both: bool) -> Verdict:
    """The verdict while runs of the campaign are unfinished (interrupted, or marked running by a
    runner that died): they are redone when the campaign resumes, so they are no failure, and a
    verdict over the finished runs alone is provisional. `pending` names them ("A1/2 interrupted
    at step 12/48"). What resuming cannot change stands: an invalid comparison, and a failure seen
    in a finished run (`real_failure`: a failure event, or a guardrail failed while both arms had
    finished runs to judge)."""
    if verdict.status == "invalid" or (verdict.status == "failed" and (real_failure or finished_both)):
        return verdict
    return Verdict(
        "incomplete",
        f"Incomplete: {pending}; resume the campaign to finish it (any figures so far come from the finished runs).",
        pending,
        against=verdict.against,
    )

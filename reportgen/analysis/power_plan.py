"""Planning a campaign from a past one: how many pairs a minimum effect needs, and which effect a
budget of GPU minutes can see.

Part of reportgen.analysis (pure: an AnalysisDocument in, numbers out; `reportgen plan-power`
prints them). What a campaign's length depends on is the spread of one pair's log ratio on the
machine class, which a past campaign (or an A/A experiment) of that class measured: every
comparison's pairs give their sample variance, and the variances are pooled over comparisons
(each about its own mean, so a real gain of a candidate does not count as noise). With that
spread, a sequential design of `min_pairs` to N pairs is simulated through the analysis' own rules
(runlevel.look_stats / bounds / outcome and design.py's exact per-look level) on normal pairs, and
N is the smallest maximum whose power to accept the effect, and to reject its loss, reaches the
target. The windows' agreement is not simulated (a pair-level model), so the figures are a lower
bound on the pairs a real campaign needs when windows disagree.

The spread is an estimate from few pairs: the plan is also given at its one-sided 80 % upper bound
(chi-square on the pooled degrees of freedom), so that a user who wants to be safe plans for it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from reportgen.analysis import design as dz
from reportgen.analysis import document as doc
from reportgen.analysis import inference, runlevel
from reportgen.errors import UserError

POWER = 0.90  # the shipped target: accept +10 % and reject -10 % in 90 % of campaigns (docs/calibration.md)
SIMS = 4000
SEED = 20261203
MAX_PAIRS = 40  # the largest maximum the planner considers
PATHS = 100_000  # paths behind a planned design's per-look level (the analysis' own uses design.T_PATHS)
UPPER = 0.80  # one-sided level of the spread's upper bound


@dataclass(frozen=True)
class Spread:
    """The spread of one pair's log ratio on the machine class, and what it rests on."""

    sd: float
    df: int  # pooled degrees of freedom (pairs minus comparisons)
    pairs: int
    comparisons: tuple[str, ...]
    pair_minutes: float | None  # wall-clock minutes of one pair (a baseline run and a candidate run)
    gpus: float  # GPUs a run holds (1 on a CPU: minutes are the runs' own)
    on_gpu: bool = False

    def upper(self, level: float = UPPER) -> float:
        """One-sided upper confidence bound of sd (chi-square on `df`)."""
        return self.sd * math.sqrt(self.df / inference.chi2_quantile(1.0 - level, self.df))


def spread_of(analysis: doc.AnalysisDocument, source: str) -> Spread:
    """The pooled spread of the pairs' log ratios of every comparison against the baseline in a past
    analysis.json; UserError when there are not two pairs in one comparison."""
    ss = 0.0
    df = 0
    pairs = 0
    names: list[str] = []
    for c in analysis.comparisons:
        rl = c.run_level
        logs = np.log([p.ratio for p in rl.pairs if p.ratio > 0])
        if logs.size >= 2:
            ss += float(((logs - logs.mean()) ** 2).sum())
            df += int(logs.size - 1)
            pairs += int(logs.size)
            names.append(c.candidate)
    if df < 1 or ss <= 0:
        raise UserError(
            f"{source}: no comparison has two pairs of runs, so the run-to-run spread is unknown; plan from a "
            "campaign (or an A/A experiment) with at least two pairs"
        )
    minutes = _pair_minutes(analysis)
    cost = analysis.campaign
    gpus = (cost.gpu_minutes / cost.run_minutes) if cost.gpu_minutes and cost.run_minutes else 1.0
    return Spread(math.sqrt(ss / df), df, pairs, tuple(names), minutes, gpus, cost.gpu_minutes is not None)


def _pair_minutes(analysis: doc.AnalysisDocument) -> float | None:
    """Mean minutes of a baseline run plus the mean of the candidates' mean run minutes."""
    means: dict[str, float] = {}
    for arm in analysis.arms:
        secs = [r.duration_s for r in arm.runs if r.role == "formal" and r.status == "complete" and r.duration_s]
        if secs:
            means[arm.id] = float(np.mean(secs)) / 60.0
    base = means.pop("baseline", None)
    if base is None or not means:
        return None
    return base + float(np.mean(list(means.values())))


def power(
    sd: float, effect: float, *, min_effect: float, min_pairs: int, max_pairs: int, confidence: float, sims: int = SIMS
) -> float:
    """Probability that a sequential campaign of `min_pairs` to `max_pairs` pairs decides a true
    relative change `effect` the right way (accepts a gain, rejects a loss), pairs' log ratios normal
    with standard deviation `sd`, through the analysis' rules."""
    design = dz.make(
        sequential=True,
        looks=range(min_pairs, max_pairs + 1),
        min_pairs=min_pairs,
        confidence=confidence,
        min_effect=min_effect,
        pool=False,
        interleaved=True,
        paths=PATHS,
    )
    return campaign(sd, effect, design, sims=sims)[0]


def campaign(sd: float, effect: float, design: doc.Design, *, sims: int = SIMS) -> tuple[float, float]:
    """(the share of campaigns of `design` that decide a true relative change `effect` the right way,
    the mean pairs they run) for pairs' log ratios normal with standard deviation `sd`, through the
    analysis' rules (a pair-level model: the windows' agreement is taken as given)."""
    rng = np.random.default_rng(SEED)
    last = design.max_pairs
    d = math.log1p(effect) + sd * rng.standard_normal((sims, last))
    final = np.full(sims, -1)
    pairs = np.full(sims, last)
    up = np.full(sims, effect >= 0)
    for n in design.looks:
        if n < runlevel.first_look(design):
            continue
        s = runlevel.look_stats(d[:, :n])
        o = runlevel.outcome(s, runlevel.bounds(s, design), design, higher=True, windows_better=up, windows_worse=~up)
        newly = (final < 0) & np.isin(o, runlevel.DECIDED)
        final[newly] = o[newly]
        pairs[newly] = n
    want = runlevel.ACCEPTED if effect >= 0 else runlevel.REJECTED
    return float(np.mean(final == want)), float(pairs.mean())


def pairs_needed(
    sd: float,
    effect: float,
    *,
    min_effect: float,
    min_pairs: int = dz.MIN_PAIRS,
    confidence: float = 0.95,
    target: float = POWER,
    limit: int = MAX_PAIRS,
) -> int | None:
    """The smallest max_pairs whose design accepts +effect and rejects -effect with probability at
    least `target` (bisection: power grows with the maximum); None beyond `limit`."""

    def ok(n: int) -> bool:
        kw = {"min_effect": min_effect, "min_pairs": min_pairs, "max_pairs": n, "confidence": confidence}
        return power(sd, effect, **kw) >= target and power(sd, -effect, **kw) >= target  # type: ignore[arg-type]

    if not ok(limit):
        return None
    lo, hi = min_pairs, limit  # ok(hi) holds
    if ok(lo):
        return lo
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if ok(mid):
            hi = mid
        else:
            lo = mid
    return hi


def effect_within(
    sd: float, pairs: int, *, min_pairs: int = dz.MIN_PAIRS, confidence: float = 0.95, target: float = POWER
) -> float | None:
    """The smallest true change (either way) that a sequential design of `min_pairs` to `pairs`
    pairs, with the minimum effect at half of it (the shipped proportion: 5 % for +10 %), decides
    the right way with probability `target`; None when `pairs` is below min_pairs."""
    if pairs < min_pairs:
        return None

    def ok(e: float) -> bool:
        kw = {"min_effect": e / 2.0, "min_pairs": min_pairs, "max_pairs": pairs, "confidence": confidence}
        return power(sd, e, **kw) >= target and power(sd, -e / (1.0 + e), **kw) >= target  # type: ignore[arg-type]

    lo, hi = 0.001, 4.0
    if not ok(hi):
        return None
    for _ in range(18):
        mid = math.sqrt(lo * hi)
        if ok(mid):
            hi = mid
        else:
            lo = mid
    return hi


@dataclass(frozen=True)
class Plan:
    """What `reportgen plan-power` prints."""

    spread: Spread
    effect: float
    min_effect: float
    confidence: float
    target: float
    pairs: int | None  # max_pairs for the effect at the estimated spread
    pairs_upper: int | None  # at the spread's 80 % upper bound
    budget_minutes: float | None = None
    budget_pairs: int | None = None
    budget_effect: float | None = None

    def lines(self) -> list[str]:
        s = self.spread
        out = [
            f"spread of one pair's log ratio: {s.sd:.4f} ({s.pairs} pairs of {', '.join(s.comparisons)}, {s.df} degrees "
            f"of freedom; {UPPER:.0%} upper bound {s.upper():.4f})",
            f"design: sequential from {dz.MIN_PAIRS} pairs, {self.confidence:.0%} confidence, min_effect {self.min_effect:.1%}, "
            f"power {self.target:.0%} to accept +{self.effect:.1%} and to reject -{self.effect:.1%}",
        ]
        for label, n in (
            ("at the estimated spread", self.pairs),
            (f"at its {UPPER:.0%} upper bound", self.pairs_upper),
        ):
            out.append(
                f"max_pairs {label}: {n}"
                if n is not None
                else f"max_pairs {label}: more than {MAX_PAIRS} (the effect is too small for this machine class)"
            )
        unit = "GPU minutes" if s.on_gpu else "minutes"
        if s.pair_minutes is not None:
            per = s.pair_minutes * s.gpus
            out.append(f"one pair (a baseline run and a candidate run): {per:.1f} {unit}")
            if self.pairs is not None:
                out.append(f"at most {self.pairs * per:.0f} {unit} per candidate for {self.pairs} pairs")
        if self.budget_minutes is not None:
            if self.budget_pairs is None or self.budget_effect is None:
                out.append(
                    f"budget {self.budget_minutes:g} {unit}: {self.budget_pairs or 0} pair(s), fewer than the "
                    f"{dz.MIN_PAIRS} a verdict needs"
                )
            else:
                capped = f" (the planner stops at {MAX_PAIRS})" if self.budget_pairs >= MAX_PAIRS else ""
                out.append(
                    f"budget {self.budget_minutes:g} {unit}: {self.budget_pairs} pairs per candidate{capped}; the smallest change "
                    f"decided with {self.target:.0%} power: {self.budget_effect:.1%} (set min_effect "
                    f"{self.budget_effect / 2:.1%})"
                )
        return out


def plan(
    analysis: doc.AnalysisDocument,
    source: str,
    *,
    effect: float | None = None,
    min_effect: float | None = None,
    budget_minutes: float | None = None,
    target: float = POWER,
) -> Plan:
    """The plan from a past analysis.json: pairs for `effect` (default twice the minimum effect,
    itself the past design's by default), and the effect a budget of (GPU) minutes can see."""
    if effect is not None and not 0 < effect < 4:
        raise UserError(f"--effect {effect}: give a relative change between 0 and 4 (0.10 = 10 %)")
    if min_effect is not None and not 0 <= min_effect < 4:
        raise UserError(f"--min-effect {min_effect}: give a relative change between 0 and 4 (0.05 = 5 %)")
    if budget_minutes is not None and budget_minutes <= 0:
        raise UserError(f"--budget-minutes {budget_minutes}: give a positive number of minutes")
    if not 0.5 <= target < 1:
        raise UserError(f"--power {target}: give a probability between 0.5 and 1 (0.9 = 90 %)")
    spread = spread_of(analysis, source)
    design = analysis.settings.design
    confidence = design.confidence if design is not None else 0.95
    me = min_effect if min_effect is not None else (design.min_effect if design is not None else 0.05)
    eff = effect if effect is not None else 2.0 * me
    if eff < me:
        raise UserError(f"--effect {eff:.3g} is below the minimum effect {me:.3g}: no design accepts it")
    kw = {"min_effect": me, "confidence": confidence, "target": target}
    n = pairs_needed(spread.sd, eff, **kw)  # type: ignore[arg-type]
    n_up = pairs_needed(spread.upper(), eff, **kw)  # type: ignore[arg-type]
    b_pairs = b_eff = None
    if budget_minutes is not None:
        if spread.pair_minutes is None:
            raise UserError(f"{source}: no complete baseline and candidate run with a duration: no minutes per pair")
        b_pairs = min(int(budget_minutes // (spread.pair_minutes * spread.gpus)), MAX_PAIRS)
        b_eff = (
            effect_within(spread.sd, b_pairs, confidence=confidence, target=target) if b_pairs >= dz.MIN_PAIRS else None
        )
    return Plan(spread, eff, me, confidence, target, n, n_up, budget_minutes, b_pairs, b_eff)

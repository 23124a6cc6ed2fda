"""Calibration by simulation of the verdict with both halves: speed (runlevel.py) and training quality
(quality.py), decided together as decision.py decides them and stopped as a sequential campaign stops.

Part of reportgen.analysis (pure: returns numbers; scripts/calibrate.py --quality prints them), beside
calibration.py, whose throughput model it reuses (`calibration.campaign_data`: AR(1) steps, run offsets,
machines, drift, interleaved blocks). The quality half adds, per block, the pair's difference of the
quality metric's run figure (candidate - baseline: the reward's mean of window means), drawn
independently of the throughput noise:

    d_b = effect + sd x z_b,   z_b standard normal (or Student t with 3 degrees of freedom, scaled)

which is what a campaign with a seed per block gives (the seed is the same for both runs of a block,
another in every block): a candidate that changes the maths diverges from the baseline's trajectory, so
its pairs' differences vary from block to block around its true effect. `sd` is the spread of one pair's
difference, measured on real runs for the reference cell (docs/calibration.md#training-quality).

At every look both halves are computed through the analysis' own code (runlevel.look_stats, bounds,
outcome for speed; quality.outcomes for quality, at the same per-look level) and combined by
decision.py's precedence:

- quality worse beyond the margin: rejected on quality, the comparison stops;
- speed accepted and quality not worse: accepted, it stops; speed accepted and quality open: it goes on
  (at the last look: "faster, quality open");
- speed rejected, no_change or futility: that verdict, it stops;
- otherwise it goes on.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from reportgen.analysis import design as dz
from reportgen.analysis import document as doc
from reportgen.analysis import quality, runlevel
from reportgen.analysis.calibration import Scenario, campaign_data
from reportgen.vocab import HIGHER, Verdicts

# Final verdicts of the first candidate, as the calibration counts them.
ACCEPTED = Verdicts.ACCEPTED
REJECTED = Verdicts.REJECTED  # slower
NO_CHANGE = Verdicts.NO_CHANGE
FUTILITY = "futility"
WORSE = "rejected on quality"
QUALITY_OPEN = "faster, quality open"
OPEN = "open"  # speed undecided at the last look (open, windows, too few pairs)


@dataclass(frozen=True)
class QualityScenario:
    """The quality half's truth and noise in one simulated campaign."""

    sd: float = 0.04  # spread (sd) of one pair's difference of the quality figure, in its units
    effect: float = 0.0  # true mean difference candidate - baseline (negative: trains worse)
    tails: str = "normal"  # "normal" or "t3" (heavy-tailed, same sd)
    margin: float = 0.05  # the declared non-inferiority margin


@dataclass(frozen=True)
class JointResult:
    """Final verdicts of the first candidate over `sims` campaigns."""

    design: str
    scenario: Scenario
    quality: QualityScenario | None  # None: the speed half alone (the rule before issue 42)
    sims: int
    counts: dict[str, int] = field(default_factory=dict)
    mean_pairs: float = 0.0

    def rate(self, *verdicts: str) -> float:
        return sum(self.counts.get(v, 0) for v in verdicts) / self.sims

    def mc_se(self, *verdicts: str) -> float:
        p = self.rate(*verdicts)
        return math.sqrt(max(p * (1 - p), 1e-12) / self.sims)

    @property
    def worse(self) -> float:
        """Rejected on quality: false when the truth is no loss, power when it is a loss."""
        return self.rate(WORSE)

    @property
    def speed_false_decisive(self) -> float:
        """Accepted or rejected on speed: the throughput cells' false-decision rate when nothing changed."""
        return self.rate(ACCEPTED, REJECTED)


def quality_differences(rng: np.random.Generator, q: QualityScenario, sims: int, blocks: int) -> np.ndarray:
    """Each block's pair difference of the quality figure, shape (sims, blocks)."""
    if q.tails == "t3":
        z = rng.standard_t(3, (sims, blocks)) / math.sqrt(3.0)
    else:
        z = rng.standard_normal((sims, blocks))
    out: np.ndarray = q.effect + q.sd * z
    return out


def simulate_joint(
    design: doc.Design,
    sc: Scenario,
    q: QualityScenario | None,
    *,
    sims: int = 2000,
    seed: int = 20261201,
) -> JointResult:
    """Run `sims` campaigns of `design` under `sc` (speed) and `q` (quality; None: speed alone) through the
    analysis' rules; the first candidate is counted. The throughput draws are those of
    calibration.simulate with the same seed, so a cell with and without the quality half differs only
    by the half."""
    rng = np.random.default_rng(seed)
    blocks = design.max_pairs
    logs, wm, _ = campaign_data(rng, sc, sims, blocks)
    qd = quality_differences(np.random.default_rng([seed, 42]), q, sims, blocks) if q is not None else None
    final = np.full(sims, "", dtype=object)
    stop = np.full(sims, blocks, dtype=int)
    sequential = design.mode == "sequential"
    for n in range(1, blocks + 1):
        if n < runlevel.first_look(design) or n not in design.looks:  # a fixed design's one look is its last
            continue
        open_ = final == ""
        if not open_.any():
            break
        look = dz.at_look(design, n)
        d = logs[:, 1, :n] - logs[:, 0, :n]
        s = runlevel.look_stats(d)  # the pairs' own variance, whatever machines they came from (issue 44)
        b = runlevel.bounds(s, look)
        ch = wm[:, 1, :n].mean(axis=1) / wm[:, 0, :n].mean(axis=1) - 1.0
        speed = runlevel.outcome(
            s, b, look, higher=True, windows_better=(ch > 0).all(axis=1), windows_worse=(ch < 0).all(axis=1)
        )
        if qd is not None and q is not None:
            x = qd[:, :n]
            sq = runlevel.look_stats(x)
            bq = runlevel.bounds(sq, look)
            half = quality.outcomes(sq.mean, bq.low, bq.high, q.margin, HIGHER)
        else:
            half = np.full(sims, quality.NOT_WORSE)
        last = n == design.looks[-1]
        verdict = np.full(sims, "", dtype=object)
        verdict[half == quality.WORSE] = WORSE
        undecided = verdict == ""
        faster = undecided & (speed == runlevel.ACCEPTED)
        verdict[faster & (half == quality.NOT_WORSE)] = ACCEPTED
        if last:
            verdict[faster & (half != quality.NOT_WORSE)] = QUALITY_OPEN
        for code, name in (
            (runlevel.REJECTED, REJECTED),
            (runlevel.NO_CHANGE, NO_CHANGE),
            (runlevel.FUTILITY, FUTILITY),
        ):
            verdict[undecided & (speed == code)] = name
        if last:
            verdict[verdict == ""] = OPEN
        newly = open_ & (verdict != "")
        final[newly] = verdict[newly]
        if sequential:
            stop[newly] = n
    counts: dict[str, int] = {}
    for v in final.tolist():
        counts[str(v)] = counts.get(str(v), 0) + 1
    return JointResult(
        design=dz.label(design),
        scenario=sc,
        quality=q,
        sims=sims,
        counts=counts,
        mean_pairs=float(stop.mean()),
    )

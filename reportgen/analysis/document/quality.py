"""The training-quality half of a verdict (`comparisons[].quality`): per quality metric, the pairs of
runs, the paired interval of the difference candidate - baseline, and what it says against a
declared margin (reportgen/analysis/quality.py; docs/analysis.md#training-quality).

Part of reportgen.analysis.document (pure).
"""

from __future__ import annotations

from pydantic import Field

from reportgen import vocab
from reportgen.analysis.document.base import Direction, Model
from reportgen.analysis.document.intervals import BlockPair


class QualityPair(BlockPair):
    """One block's baseline run and candidate run, and the difference of their figures of the metric."""

    reference: float = Field(description="The reference run's figure: the mean of its window means of the metric.")
    candidate: float = Field(description="The candidate run's figure.")
    difference: float = Field(description="candidate - reference, in the metric's units.")
    machine: str | None = Field(default=None, description="The machine the block ran on (fingerprint id).")


class QualityMetric(Model):
    """One quality metric of the candidate against the baseline, pair by pair."""

    metric: str = Field(description='The key compared, e.g. "rollout/raw_reward".')
    label: str = Field(description='"reward", "loss", "KL to the reference", "policy KL", "response length", ...')
    better: Direction | None = Field(
        default=None,
        description="Which way is better (the reward: higher); null: neither, and a declared margin is two-sided.",
    )
    margin: float | None = Field(
        default=None,
        description="The declared non-inferiority margin, in the metric's units, when this metric decides "
        "(settings.quality_margin for quality_metric, settings.quality_margins for the others); null: shown only.",
    )
    pairs: list[QualityPair] = Field(default_factory=list)
    reference: float | None = Field(default=None, description="Mean of the paired reference runs' figures.")
    candidate: float | None = Field(default=None, description="Mean of the paired candidate runs' figures.")
    estimate: float | None = Field(default=None, description="Mean difference candidate - reference over the pairs.")
    low: float | None = Field(default=None, description="Lower end of the repeated interval of the mean difference.")
    high: float | None = Field(default=None, description="Upper end.")
    confidence: float = Field(default=0.95, description="Level of the interval over every look of the design.")
    look_confidence: float | None = Field(default=None, description="Per-look level of the interval (design.py).")
    df: float | None = Field(default=None, description="Degrees of freedom of the t quantile.")
    significant: bool = Field(
        default=False, description="The two-sided interval excludes 0: the candidate's figure differs."
    )
    outcome: vocab.QualityOutcome = Field(
        description='What the pairs say against the margin; "not_judged" for a metric shown without one.'
    )
    reason: str = Field(description="The finding in words.")


class QualityHalf(Model):
    """Does the candidate train as well as the baseline? The half of the verdict beside speed: the deciding
    metric's pairs and interval against its declared margin, the others shown with their intervals."""

    status: vocab.QualityOutcome = Field(
        description='"not_worse": the interval\'s worse end lies within the margin; "identical": every pair '
        'gave the same figure in both runs; "worse": worse beyond the margin (the verdict is rejected on quality); '
        '"open": not decided yet; "not_testable": flat in both arms, not logged, or every pair the same '
        'difference (replayed seeds); "not_judged": the spec asks for speed alone (quality_metric = "none").'
    )
    metric: str | None = Field(default=None, description="The deciding metric's key (settings.quality_metric).")
    margin: float | None = Field(default=None, description="Its declared margin, in its units.")
    pairs: int = Field(default=0, description="Pairs of runs the deciding metric's interval is over.")
    summary: str = Field(
        description='The half in one line, as the answer and the PR body say it: "trains as well: reward -0.01 '
        '(95% CI -0.04 to +0.02) against the 0.05 margin, 5 pairs".'
    )
    metrics: list[QualityMetric] = Field(
        default_factory=list, description="Every quality metric both arms logged: the deciding one first."
    )
    differ: list[str] = Field(
        default_factory=list,
        description="Metrics shown (not deciding) whose interval excludes 0: the candidate trains differently there.",
    )
    flat: list[str] = Field(default_factory=list, description="Metrics flat (constant) in both arms: not testable.")
    missing: list[str] = Field(default_factory=list, description="Metrics not logged by every run of both arms.")
    warnings: list[str] = Field(
        default_factory=list,
        description="What the reader must weigh beside the half, e.g. a reward outside 0-1 judged with the "
        "default margin.",
    )

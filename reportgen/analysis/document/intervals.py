"""A change and its evidence: the interval of a ratio, the pairs of runs and the looks it was
computed over (`RunLevel`), and one metric's change against a reference arm (`MetricChange`).

Part of reportgen.analysis.document (pure).
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from reportgen import vocab
from reportgen.analysis.document.base import Direction, Model


class Interval(Model):
    """Ratio candidate/reference of a metric's run-level figure, with its confidence interval.

    Run level (`method` "paired-t ..."): over pairs of runs, `pairs` of them, at `look_confidence`
    per look so that the interval holds `confidence` over every look of the design. Within run
    (`method` "block-bootstrap" or "batch-means"): from the steps' own noise, a diagnostic that
    leaves run-to-run variation out."""

    estimate: float | None = None
    low: float | None = None
    high: float | None = None
    confidence: float = 0.95
    method: str = ""
    n_baseline: int = Field(default=0, description="Runs (run level) or steps (within run) of the reference arm.")
    n_candidate: int = Field(default=0, description="Runs (run level) or steps (within run) of the candidate.")
    block_length: int | None = None
    pairs: int | None = Field(default=None, description="Pairs of runs the run-level interval is over.")
    df: float | None = Field(default=None, description="Degrees of freedom of the t quantile.")
    look_confidence: float | None = Field(
        default=None, description="Per-look level of a repeated interval (equal to `confidence` with one look)."
    )
    significant: bool = Field(default=False, description="The interval excludes 1.")
    warnings: list[str] = Field(default_factory=list)


class BlockPair(Model):
    """One block's two runs: the reference arm's and the candidate's (the fields every pair of runs
    in analysis.json starts with: `Pair`, `SetAsidePair`)."""

    repeat: int = Field(description="The block (repeat number) both runs belong to.")
    reference_run: str = Field(description='The run of the reference arm, e.g. "baseline/2".')
    candidate_run: str = Field(description='The run of the candidate, e.g. "A1/2".')


class Pair(BlockPair):
    """One block's reference run and candidate run, and the ratio of their run-level figures."""

    reference: float = Field(description="The reference run's figure: mean of its window means.")
    candidate: float = Field(description="The candidate run's figure.")
    ratio: float = Field(description="candidate / reference.")
    candidate_first: bool | None = Field(
        default=None, description="The candidate run started before the reference run; null: not recorded."
    )
    machine: str | None = Field(
        default=None,
        description="The machine the block ran on (the runs' fingerprint id); null: not recorded, or the two runs "
        "name different machines.",
    )


class MachineEffect(Model):
    """How a comparison's ratio differs between the machines its pairs came from (schema 8; the
    spread and the new meaning of `flagged`, schema 9). Reported beside the verdict, never deciding
    it: the interval is for the machines measured (RunLevel.claim), and this is what a reader needs
    before promising the gain on another machine of the class (docs/analysis.md#pairs-from-several-machines)."""

    pairs_per_machine: dict[str, int] = Field(description="Machine (fingerprint id) -> pairs it gave.")
    f: float | None = Field(default=None, description="One-way ANOVA F statistic of the log ratios by machine.")
    p_value: float | None = Field(default=None, description="Its p-value; null when no machine gave two pairs.")
    spread: float | None = Field(
        default=None,
        description="How much the gain differs from machine to machine: the standard deviation of a machine's "
        "ratio about the class's (variance-components moments estimate, as a fraction, 0 when the machines agree "
        "as well as the pairs of one machine do); null when no machine gave two pairs (schema 9).",
    )
    spread_upper: float | None = Field(
        default=None,
        description="Its one-sided 90 % upper bound (Graybill-Wang; wide with two or three machines) (schema 9).",
    )
    flagged: bool = Field(
        default=False,
        description="The machines differ significantly (p_value below 0.10) by a spread of at least half the "
        "minimum effect: a warning says the verdict holds for these machines, not for the class (schema 9; "
        "before, p_value below 0.10 alone, which widened the interval).",
    )
    note: str = ""


class Look(Model):
    """The comparison as it stood after `pairs` pairs: the interval and what it would have decided."""

    pairs: int
    estimate: float | None = Field(default=None, description="Geometric mean of the pairs' ratios.")
    low: float | None = None
    high: float | None = None
    futility_high: float | None = Field(
        default=None,
        description="The one-sided futility bound of the ratio on the better side (the most the candidate may "
        "still gain, at the design's futility level).",
    )
    futility_low: float | None = Field(
        default=None,
        description="The one-sided futility bound on the worse side (the most it may still lose); schema 8.",
    )
    outcome: vocab.IntervalOutcome = Field(description="What this look's interval says under the design's rules.")


class RunLevel(Model):
    """A candidate against a reference arm at the run level: its pairs, the interval after each
    pair, and the interval now (the evidence of the verdict)."""

    reference: str = Field(description='The reference arm: "baseline", or the candidate\'s base.')
    metric: str
    pairs: list[Pair] = Field(default_factory=list)
    interval: Interval = Interval()
    variance: Literal["pairs", "pooled", "none"] = Field(
        default="none",
        description='"pairs": the sample variance of these pairs\' log ratios; "pooled": the run-to-run variance of '
        'every arm of the campaign (two-way arms x blocks model); "none": fewer than two pairs.',
    )
    variance_note: str | None = Field(default=None, description="Why the pool was or was not used, in words.")
    looks: list[Look] = Field(default_factory=list, description="One per pair count, 1 to len(pairs).")
    window_changes: list[float | None] = Field(
        default_factory=list, description="Per window: candidate/reference - 1 of the window means over these pairs."
    )
    outcome: vocab.IntervalOutcome = Field(
        default="too_few_pairs", description="What the interval now says under the design's rules."
    )
    more_pairs: int | None = Field(
        default=None,
        description="If the estimate and spread stay as seen, the pairs still needed for the interval to decide; "
        "null when it is decided, or no projection within the design's maximum.",
    )
    machine_effect: MachineEffect | None = Field(
        default=None,
        description="How the gain differs between machines, when the pairs come from two machines or more.",
    )
    claim: str = Field(
        default="the machine measured",
        description='What the interval and the verdict speak for: "the machine measured", or "the N machines '
        "measured\" (each pair cancels its machine's offset and the pairs' own variance holds how the gain differs "
        "between them; not every machine of the class: machine_effect) (schema 9).",
    )


class MetricChange(Model):
    """One metric of a candidate against a reference arm (the baseline, or the candidate's base):
    means of window means, their change, and the interval of the ratio candidate/reference."""

    metric: str = Field(description='Metric key; derived keys start with "reportgen/".')
    label: str
    unit: str = ""
    better: Direction | None = None
    against: str = Field(default="baseline", description="The reference arm.")
    reference: float | None = Field(default=None, description="The reference arm's value.")
    candidate: float | None = None
    change: float | None = Field(default=None, description="candidate/reference - 1 (a fraction).")
    interval: Interval | None = Field(
        default=None, description="Ratio candidate/reference with its interval; null where none is computed."
    )


class WarmupPair(Model):
    """One block's warm-up times: the reference run's, the candidate run's, and their difference."""

    repeat: int = Field(description="The block (repeat number) both runs belong to.")
    reference_s: float = Field(description="The reference run's warm-up time, seconds (WarmupCost).")
    candidate_s: float = Field(description="The candidate run's warm-up time, seconds.")
    difference_s: float = Field(description="candidate_s - reference_s.")


class WarmupCost(Model):
    """The candidate's extra (positive) or saved (negative) warm-up time per launch against the arm
    its verdict is decided against, per pair of runs, with a paired interval (analysis/warmup_cost.py,
    schema 9). A run's warm-up time: the time its steps before the burn-in ends (the first window's
    start) took beyond what they would have taken at its own steady step time (its mean step time
    over the windows). Beside the steady-state verdict, never deciding it; a long-run user adds it
    up per launch."""

    reference: str = Field(description="The arm the candidate is compared with (the verdict's `against`).")
    burn_in: int = Field(description="The first window's start: steps before it are the warm-up counted.")
    estimate_s: float = Field(description="Mean over the pairs of candidate minus reference, seconds per launch.")
    low_s: float | None = Field(default=None, description="Low end of its paired t interval; null with one pair.")
    high_s: float | None = Field(default=None, description="High end; null with one pair.")
    confidence: float = Field(default=0.95, description="The interval's level (the campaign's confidence).")
    pairs: list[WarmupPair] = Field(default_factory=list)
    method: str = ""

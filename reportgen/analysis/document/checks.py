"""The checks of a comparison: each guardrail's result, the same-work check and the training
quality.

Part of reportgen.analysis.document (pure).
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from reportgen.analysis.document.base import Model
from reportgen.analysis.document.intervals import MetricChange

# "warn": a finding a reviewer must see that does not decide the verdict (training quality).
GuardrailStatus = Literal["pass", "fail", "warn", "not_applicable"]


class GuardrailResult(Model):
    id: str = Field(
        description="steps_completed, no_failures, samples_per_step, token_accounting, finite_training, "
        "same_quality (warns, never fails), fixed_workload, same_inputs, same_machine, no_profiler, no_overlap, "
        "quiet_machine, same_work"
    )
    title: str
    status: GuardrailStatus
    passed: bool | None = Field(default=None, description="Same as status; null when not applicable.")
    reason: str = ""
    evidence: str | None = Field(default=None, description='Where to look, e.g. "A1/1/stdout.log:812".')


class SameWorkWindow(Model):
    window: str
    response_length_baseline: float | None = None
    response_length_candidate: float | None = None
    response_length_change: float | None = None
    tokens_per_step_baseline: float | None = None
    tokens_per_step_candidate: float | None = None
    tokens_per_step_change: float | None = None
    within: bool | None = Field(default=None, description="Both changes within the tolerance; null: not checkable.")


class SameWork(Model):
    """Did both arms generate comparable work? Tokens/s of different work is not a speed-up."""

    status: GuardrailStatus
    applies: bool = Field(description="The primary metric depends on the amount of generated work (perf/*).")
    tolerance: float
    tokens_metric: str = Field(description="Which tokens per step were compared (total, else response tokens).")
    windows: list[SameWorkWindow] = Field(default_factory=list)
    reason: str = Field(description="The finding in words.")
    work_independent: list[MetricChange] = Field(
        default_factory=list,
        description="Figures that do not depend on how much was generated: per-phase times per step and "
        "time per generated token, against the baseline.",
    )


class QualityWindow(Model):
    """One quality metric in one window: the candidate's mean against the baseline's."""

    metric: str = Field(description='The key compared, e.g. "train/loss".')
    label: str = Field(description='"loss", "reward", "KL to the reference", "policy KL".')
    window: str
    baseline: float
    candidate: float
    difference: float = Field(description="candidate - baseline.")
    scale: float = Field(description="max(|baseline mean|, baseline's step-to-step std in the window).")
    relative: float | None = Field(default=None, description="difference / scale; null when the scale is 0.")
    within: bool = Field(description="|difference| <= tolerance x scale.")


class QualityCheck(Model):
    """Does the candidate train like the baseline? (reportgen/analysis/quality.py; a warning, never
    a verdict: docs/analysis.md#training-quality)."""

    status: GuardrailStatus
    tolerance: float = Field(description="settings.quality_tolerance, a fraction of each window's scale.")
    reason: str
    windows: list[QualityWindow] = Field(default_factory=list)
    flat: list[str] = Field(default_factory=list, description="Quantities flat at 0 in both arms.")
    missing: list[str] = Field(default_factory=list, description="Quantities not logged by both arms.")

"""The checks of a comparison: each guardrail's result and the same-work check (training quality is a
half of the verdict: document/quality.py).

Part of reportgen.analysis.document (pure).
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from reportgen.analysis.document.base import Model
from reportgen.analysis.document.intervals import MetricChange

# "warn": a finding a reviewer must see that does not decide the verdict (a plug-in guardrail may give one).
GuardrailStatus = Literal["pass", "fail", "warn", "not_applicable"]


class GuardrailResult(Model):
    id: str = Field(
        description="steps_completed, no_failures, samples_per_step, token_accounting, finite_training, "
        "fixed_workload, same_inputs, same_machine, no_profiler, no_overlap, "
        "quiet_machine, same_work"
    )
    title: str
    status: GuardrailStatus
    passed: bool | None = Field(default=None, description="Same as status; null when not applicable.")
    reason: str = ""
    evidence: str | None = Field(default=None, description='Where to look, e.g. "A1/1/stdout.log:812".')


class GuardrailTally(Model):
    """How a comparison's guardrails came out, counted once (every page and the verdict's sentence
    read this count, never their own: docs/analysis.md#guardrails)."""

    total: int = Field(description="Guardrails of the comparison (`guardrails`, the same-work check included).")
    passed: int
    warned: list[str] = Field(default_factory=list, description="Titles of the guardrails that warned.")
    failed: list[str] = Field(default_factory=list, description="Titles of the guardrails that failed.")
    not_applicable: int = Field(default=0, description="Guardrails that could not be checked.")

    @property
    def clean(self) -> bool:
        """Every guardrail that could be checked passed: none warned or failed."""
        return not self.warned and not self.failed

    def text(self) -> str:
        """ "10 of 13 guardrails passed (1 warned, 2 not checkable)"; "all 13 guardrails passed"
        only when every one did."""
        if self.total == 0:
            return "no guardrail was checked"
        if self.passed == self.total:
            return f"all {self.total} guardrails passed" if self.total > 1 else "its one guardrail passed"
        said = [f"{len(self.failed)} failed"] if self.failed else []
        said += [f"{len(self.warned)} warned"] if self.warned else []
        said += [f"{self.not_applicable} not checkable"] if self.not_applicable else []
        return f"{self.passed} of {self.total} guardrails passed ({', '.join(said)})"


class MathsChange(Model):
    """A flag edit of the candidate that changes the training's maths, not only its speed
    (`vocab.MATHS_FLAGS`): the candidate trains a different model."""

    flag: str
    baseline: str | None = Field(default=None, description='Value in the baseline; null: absent; "true": a switch.')
    candidate: str | None = None
    changes: str = Field(description="What it changes, in words (vocab.MATHS_FLAGS).")

    def edit(self) -> str:
        """ "removes --use-precision-aware-optimizer", "sets --lr 0.002 (baseline 0.001)"."""
        if self.candidate is None:
            return f"removes {self.flag}"
        if self.baseline is None:
            return f"adds {self.flag}" + ("" if self.candidate == "true" else f" {self.candidate}")
        return f"sets {self.flag} {self.candidate} (baseline {self.baseline})"

    def text(self) -> str:
        """ "removes --use-precision-aware-optimizer, which changes the precision of Adam's moments (...)"."""
        return f"{self.edit()}, which changes {self.changes}"


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

"""A candidate's verdict and what a reviewer reads first: the figures that decide, the cause,
where it can be checked (`EvidenceLink`) and the next step.

Part of reportgen.analysis.document (pure).
"""

from __future__ import annotations

from typing import Final, Literal

from pydantic import Field, model_validator

from reportgen.analysis.document.base import Basis, Model, VerdictStatus
from reportgen.analysis.document.intervals import MetricChange

# A piece of evidence a cause can be checked on, by a stable id: the analysis names what to look
# at, the render stage alone knows on which page and under which anchor it is shown
# (reportgen/render/evidence.py). The ids of one candidate's write-up need the candidate (`arm`).
EvidenceId = Literal[
    "windows",
    "same_work",
    "guardrails",
    "interval_by_pair",
    "quality",
    "memory",
    "quiet_machine",
    "runs",
    "candidate_page",
    "against_base",
    "memory_chart",
]
ARM_EVIDENCE: Final[frozenset[str]] = frozenset({"candidate_page", "against_base", "memory_chart"})


class Verdict(Model):
    status: VerdictStatus
    basis: Basis = Field(description="The piece of evidence that decided it (docs/analysis.md#verdicts).")
    pairs: int = Field(default=0, description="Pairs of runs in the deciding comparison.")
    summary: str = Field(description="One sentence.")
    cause: str | None = Field(
        default=None, description="Why it failed, is invalid, or (against a base) is not accepted, in words."
    )
    against: str = Field(
        default="baseline",
        description="The arm whose comparison decided the verdict: the baseline, or, for a candidate built on "
        "another one, that base (the change it adds is judged on its own: "
        "docs/analysis.md#candidates-built-on-another-one).",
    )
    failed_arm: str | None = Field(
        default=None,
        description="For a failed verdict: the arm whose run failed first (the candidate unless only "
        "the reference failed).",
    )
    oom: bool = Field(default=False, description="For a failed verdict: that run ran out of memory.")


class EvidenceLink(Model):
    label: str = Field(description='What the link shows, e.g. "window W2".')
    id: EvidenceId = Field(
        description="Which evidence, by a stable id (the site maps it to a page and anchor). Of the whole "
        'experiment: "windows" (the declared windows and their statistics), "same_work" (the same-work '
        'check), "guardrails" (the guardrails table), "interval_by_pair" (the interval after each pair and '
        'the verdicts), "quality" (the training-quality curves), "memory" (memory against each arm\'s limit), '
        '"quiet_machine" (what else ran on the machine), "runs" (the runs and their status). Of one '
        'candidate, named by `arm`: "candidate_page" (its write-up), "against_base" (its comparison with the '
        'base it builds on), "memory_chart" (its memory over the steps, up to a failure).'
    )
    arm: str | None = Field(
        default=None,
        description="The candidate whose write-up holds the evidence: set for candidate_page, against_base "
        "and memory_chart, null for the others.",
    )

    @model_validator(mode="after")
    def _arm_when_needed(self) -> EvidenceLink:
        if (self.id in ARM_EVIDENCE) != (self.arm is not None):
            need = "needs" if self.id in ARM_EVIDENCE else "takes no"
            raise ValueError(f"evidence {self.id!r} {need} arm")
        return self


class NextStep(Model):
    action: Literal[
        "merge",
        "repeat",
        "equalize_work",
        "fix_oom",
        "fix_failure",
        "rerun",
        "reject",
        "change_metric",
        "resume",
        "declare_windows",
        "test_quality",
    ] = Field(description="What to do next, derived from the evidence (docs/analysis.md#next-step).")
    text: str = Field(description="The step in one sentence.")
    command: str | None = Field(default=None, description="The exact command(s) to run, when there are any.")


class CandidateSummary(Model):
    """What a reviewer reads first: the figures that decide, the verdict, and what to do next."""

    is_pr: bool = Field(description="This is the pull request's candidate (settings.pr_candidate).")
    primary: MetricChange = Field(
        description="The primary metric in the comparison that decided the verdict (`against` names its reference)."
    )
    primary_vs_baseline: MetricChange | None = Field(
        default=None,
        description="The primary metric against the baseline, when the verdict was decided against a base.",
    )
    step_time: MetricChange = Field(description="Step time in the comparison that decided the verdict (`against`).")
    peak_memory: MetricChange = Field(
        description="Peak GPU memory (MiB) against the baseline, on the figure each arm's limit bounds "
        "(arms[].memory.used_mib); no interval."
    )
    verdict: VerdictStatus
    speed: str = Field(
        default="",
        description="The speed half in words, as the answer's first lines say it beside the quality half "
        '(comparisons[].quality.summary): "faster: response tokens/s +91% (95% CI +65% to +121%)" (schema 9).',
    )
    warmup: str | None = Field(
        default=None,
        description="The declared windows that start inside the warm-up of the candidate, the arm its verdict is "
        'decided against or the baseline (arms[].settled_at), in words: "W1, W2 start inside the warm-up (steady '
        'from step: A3 23, A1 12)"; null when every window starts in the steady state (schema 9).',
    )
    cause: str | None = Field(
        default=None, description="For inconclusive, invalid and failed verdicts: the cause in plain words."
    )
    evidence: list[EvidenceLink] = Field(default_factory=list, description="Where the cause can be checked.")
    next_step: NextStep

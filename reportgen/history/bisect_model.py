"""runs/<bisection>/bisect.json: one bisection's steps, evidence and culprit (pure; part of
reportgen.history). One model owns the format (`BisectRecord`, a versioned store file); the report
page (reportgen.render.bisect_page) is rendered from it, never from logs."""

from __future__ import annotations

from typing import ClassVar

from pydantic import BaseModel, ConfigDict, Field

from reportgen.store.models import StoreFile

FILE = "bisect.json"
REPORT = "report.md"


class BisectStep(BaseModel):
    """One commit measured against GOOD in a paired campaign."""

    model_config = ConfigDict(extra="forbid")

    index: int = Field(description="Position in the range (0: the first commit after GOOD).")
    sha: str = Field(description="Full SHA of the measured commit.")
    subject: str = Field(default="", description="Its commit message's first line.")
    experiment: str = Field(description="The paired campaign's folder under runs/ (GOOD as baseline, this commit).")
    ratio: float = Field(description="Run-level estimate of the primary metric, commit / GOOD.")
    low: float | None = Field(default=None, description="Its interval's lower end.")
    high: float | None = Field(default=None, description="Its interval's upper end.")
    pairs: int = Field(default=0, description="Pairs of runs the campaign spent.")
    verdict: str = Field(default="", description="The campaign's verdict on the commit.")
    outcome: str = Field(default="", description="What the run-level interval said (analysis.json run_level.outcome).")
    call: str = Field(description='"differs" or "same" (than GOOD).')
    decided: bool = Field(description="The campaign decided it; False: classified by its estimate (re-measure).")
    runs: int = Field(default=0, description="Formal runs the campaign spent (both arms).")
    minutes: float = Field(default=0.0, description="Wall-clock minutes of the campaign.")


class PhaseTime(BaseModel):
    """A step phase's time before (GOOD) and after (the culprit), from the culprit's campaign."""

    model_config = ConfigDict(extra="forbid")

    metric: str = Field(description='The metric\'s key ("perf/step_time", "perf/train_time", ...).')
    label: str = Field(description="Its short name.")
    unit: str = Field(default="", description="Its unit.")
    before: float | None = Field(default=None, description="GOOD's mean of window means.")
    after: float | None = Field(default=None, description="The culprit's.")
    change: float | None = Field(default=None, description="after/before - 1.")


class BisectRecord(StoreFile):
    """runs/<bisection>/bisect.json."""

    KIND: ClassVar[str] = "reportgen.bisect"
    SCHEMA_VERSION: ClassVar[int] = 1

    repo: str = Field(description="The repository bisected.")
    spec: str = Field(description="The spec whose baseline recipe was measured.")
    metric: str = Field(default="", description="The primary metric.")
    good: str = Field(description="Full SHA of GOOD.")
    bad: str = Field(description="Full SHA of BAD.")
    commits: list[str] = Field(description="The commits after GOOD up to BAD, oldest first (first-parent).")
    steps: list[BisectStep] = Field(default_factory=list)
    culprit: str | None = Field(default=None, description="The first commit that differs from GOOD; null: none.")
    culprit_subject: str = ""
    culprit_diff: str = Field(default="", description="`git show --stat --patch` of the culprit (truncated).")
    certain: bool = Field(default=False, description="Every step that bounds the culprit was decided.")
    notes: list[str] = Field(default_factory=list)
    where_time_went: list[PhaseTime] = Field(
        default_factory=list, description="Step time and each phase's time, GOOD against the culprit."
    )
    runs: int = Field(default=0, description="Formal runs spent over all steps.")
    minutes: float = Field(default=0.0, description="Wall-clock minutes over all steps.")

"""One candidate against the baseline (`comparisons[]`): the headline, the changes per window,
the run-level comparisons, the checks, the verdict and the flags that differ.

Part of reportgen.analysis.document (pure).
"""

from __future__ import annotations

from pydantic import Field

from reportgen.analysis.document.base import Direction, Model, Number
from reportgen.analysis.document.checks import GuardrailResult, GuardrailTally, MathsChange, SameWork
from reportgen.analysis.document.experiment import FirstStep, LastStep, Window, WindowName
from reportgen.analysis.document.intervals import BlockPair, Interval, MetricChange, RunLevel, WarmupCost
from reportgen.analysis.document.quality import QualityHalf
from reportgen.analysis.document.verdict import CandidateSummary, Verdict


class HeadlineRow(Model):
    metric: str = Field(
        description='Metric key; also "perf/step_time:p95", "gpu/util_mean", "gpu/<i>/util_mean", '
        '"gpu/<i>/mem_peak_mib" (nvidia-smi\'s peak), "memory/allocated_peak_mib" (the framework\'s peak '
        "allocation, what a memory cap bounds; at an out-of-memory failure what PyTorch held), "
        '"steps_completed" (change = difference in steps) and '
        '"workload/limits" (values are strings, change null).'
    )
    label: str
    unit: str = ""
    better: Direction | None = None
    baseline: Number | str | None = None
    candidate: Number | str | None = None
    change: Number | None = Field(default=None, description="candidate/baseline - 1 (a fraction).")
    text: str | None = Field(default=None, description='"unchanged" or "changed" for rows of strings.')


class WindowChange(Model):
    """The primary metric in one declared window: each arm's mean, and the change."""

    window: WindowName
    start: FirstStep
    end: LastStep
    baseline: float | None = Field(
        default=None, description="The baseline's mean over the window's steps of its formal runs (arms[].windows)."
    )
    candidate: float | None = Field(default=None, description="The candidate's, likewise.")
    change: float | None = Field(default=None, description="candidate/baseline - 1 (a fraction).")


class FlagChange(Model):
    """A flag whose effective value (from the runs' effective command line) differs between the
    baseline, the candidate's base and the candidate."""

    flag: str
    baseline: str | None = Field(default=None, description='Value in the baseline; null: absent; "true": a switch.')
    base: str | None = Field(default=None, description="Value in the candidate's base (same as baseline if none).")
    candidate: str | None = None


class SetAsidePair(BlockPair):
    """A block whose two runs failed the quiet-machine check judged alone: set aside (kept on disk,
    left out of the comparison) and, in a sequential campaign, redone by a new block
    (analysis/set_aside.py, docs/analysis.md#disturbed-pairs)."""

    reason: str = Field(description="The quiet-machine check's reason for this pair alone: who was disturbed, by what.")
    evidence: str | None = Field(
        default=None, description='The load samples that show it, e.g. "baseline/1/host.parquet".'
    )


class ChangedFile(Model):
    path: str
    added: int | None = Field(default=None, description="Lines added (null: binary).")
    deleted: int | None = Field(default=None, description="Lines deleted (null: binary).")


class CodeChange(Model):
    """The code a candidate at a git revision changes against the baseline's revision (revisions.json)."""

    baseline_sha: str
    candidate_sha: str
    merge_base: str | None = Field(default=None, description="Their best common ancestor; null: no shared history.")
    files: list[ChangedFile] = Field(default_factory=list, description="Files changed, with lines added and deleted.")
    link: str | None = Field(default=None, description="The compare page when the repository is on GitHub.")
    revert: str = Field(default="", description="The rollback: the command that reverts the range.")

    @property
    def added(self) -> int:
        return sum(f.added or 0 for f in self.files)

    @property
    def deleted(self) -> int:
        return sum(f.deleted or 0 for f in self.files)

    def stat(self) -> str:
        """ "3 files, +12 -4"."""
        n = len(self.files)
        return f"{n} file{'s' if n != 1 else ''}, +{self.added} -{self.deleted}"


class Comparison(Model):
    """One candidate against the baseline."""

    candidate: str
    baseline: str = "baseline"
    headline: list[HeadlineRow] = Field(default_factory=list)
    windows: list[WindowChange] = Field(default_factory=list, description="Primary metric per window.")
    interval: Interval = Field(
        default=Interval(), description="The run-level interval against the baseline (run_level.interval)."
    )
    within_run: Interval = Field(
        default=Interval(),
        description="Diagnostic: the interval from within-run step noise (settings.method); run-to-run variation left out.",
    )
    run_level: RunLevel = Field(description="The candidate against the baseline, pair by pair.")
    base_run_level: RunLevel | None = Field(
        default=None, description="The candidate against its base, pair by pair (candidates built on another one)."
    )
    suggested_windows: list[Window] = Field(
        default_factory=list,
        description="When a declared window holds no step of some run (verdict.basis windows_missed): windows "
        "inside the steps every run has (empty when the runs share none).",
    )
    needs_pairs: bool = Field(
        default=False,
        description="A sequential campaign would run another pair for this candidate: its deciding comparison is "
        "open and below the design's maximum.",
    )
    set_aside: list[SetAsidePair] = Field(
        default_factory=list,
        description="Pairs left out of this comparison because the machine was not quiet while they ran (sequential "
        "campaigns; schema 8); "
        "their runs are kept. More than analysis/set_aside.py MAX_SET_ASIDE of them fail quiet_machine instead.",
    )
    warmup_cost: WarmupCost | None = Field(
        default=None,
        description="The candidate's extra (or saved) warm-up time per launch against the arm its verdict is "
        "decided against, per pair with a paired interval; null without step times (schema 9).",
    )
    warmup_in_windows: list[str] = Field(
        default_factory=list,
        description="Where the candidate or the arm its verdict is decided against settles (arms[].settled_at) "
        "after a window starts: the verdict then averages warm-up steps in; one line per window, as the "
        "experiment's warnings say it (the answer's short form is summary.warmup) (schema 9).",
    )
    consistent_direction: bool = Field(default=False, description="Better in every window.")
    guardrails: list[GuardrailResult] = Field(default_factory=list)
    guardrail_tally: GuardrailTally = Field(
        description="The guardrails counted once (analysis/check.py `tally`): the verdict's sentence and every "
        "page read this count."
    )
    maths_changes: list[MathsChange] = Field(
        default_factory=list,
        description="The candidate's flag edits (against the baseline) that change the training's maths "
        "(vocab.MATHS_FLAGS): it trains a different model; the verdict's sentence and the headline name them.",
    )
    verdict: Verdict
    summary: CandidateSummary
    secondary: list[MetricChange] = Field(
        default_factory=list,
        description="Step time, actor train time and every per-phase time both arms logged, with intervals.",
    )
    same_work: SameWork
    quality: QualityHalf | None = Field(
        default=None,
        description="Training quality against the baseline, the verdict's second half (schema 9): the deciding "
        "metric's paired interval against its declared margin, the others shown; null while an arm has no finished run.",
    )
    base: str | None = Field(default=None, description="The candidate's base when it is not the baseline.")
    depends_on: list[str] = Field(
        default_factory=list, description="Candidates whose edits this candidate's patch needs, nearest first."
    )
    vs_base: list[MetricChange] = Field(
        default_factory=list, description="Primary metric and step time against the base (empty without a base)."
    )
    changed_flags: list[FlagChange] = Field(default_factory=list)
    code_change: CodeChange | None = Field(
        default=None, description="Arms at git revisions: the code the candidate changes (null: same code)."
    )

    def deciding(self) -> RunLevel:
        """The run-level comparison the verdict was decided on: against the base when the verdict
        names it, else against the baseline."""
        if self.verdict.against != self.baseline and self.base_run_level is not None:
            return self.base_run_level
        return self.run_level

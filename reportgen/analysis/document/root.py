"""The document root, runs/<experiment>/analysis.json (`AnalysisDocument`), its schema version,
the campaign-wide parts (profiler runs, baseline drift, cost) and `parse`, the one reader.

Part of reportgen.analysis.document (pure).
"""

from __future__ import annotations

from typing import Final, Literal, cast

from pydantic import Field, JsonValue, ValidationError, model_validator

from reportgen import rounding
from reportgen.analysis.document.arms import ArmResult
from reportgen.analysis.document.base import Basis, Model, VerdictStatus
from reportgen.analysis.document.comparison import Comparison
from reportgen.analysis.document.experiment import (
    Experiment,
    FixedFlag,
    Machine,
    Primary,
    Settings,
    Window,
    WorkloadInfo,
)
from reportgen.errors import UserError, first_problem
from reportgen.traces.stats import TraceStats

SCHEMA_VERSION: Final = 10  # also the Literal of AnalysisDocument.schema_version
# Schemas `parse` still reads: every field added since has a default (8 added the pairs' machine, a
# comparison's machine effect and comparisons[].set_aside; 9 the warm-up cost, the machine spread and
# the claim, the re-analysis record, and training quality as a half of the verdict: an older
# document's `quality` and `settings.quality_tolerance` are dropped as it is read, `_before_9`; 10
# each run's commit, machine class and figures for the history, and each arm's step breakdown, so a
# schema-9 document is read without them and the site asks for it to be analysed again). A reader
# meeting an older one names it (`older_schema`); the site build still asks for the current one.
READABLE_SCHEMAS: Final = (7, 8, 9, 10)
KIND: Final = "reportgen.analysis"


class Artifact(Model):
    path: str
    bytes: int | None = None
    sha256: str | None = None


class ProfilerRun(Model):
    arm: str
    path: str
    status: str
    artifacts: list[Artifact] = Field(default_factory=list)


class BaselineDrift(Model):
    """How much the baseline's primary metric moved between its first and last window."""

    metric: str
    first_window: str
    last_window: str
    first: float | None = Field(
        default=None,
        description="The baseline's mean over the steady-state steps of the first window (from `from_step` when "
        "the window starts inside its warm-up; arms[].windows otherwise).",
    )
    last: float | None = Field(default=None, description="Its mean in the last window.")
    change: float | None = Field(default=None, description="last/first - 1 (a fraction).")
    flagged: bool = Field(
        description="|change| exceeds settings.min_effect and every run of the baseline moved the same way."
    )
    from_step: int | None = Field(
        default=None,
        description="The first step counted when the first window starts inside the baseline's warm-up "
        "(arms[].settled_at) and was cut there, or a later window replaced it (schema 8); null: the window as declared.",
    )
    runs_agree: bool | None = Field(
        default=None,
        description="Every baseline run changed the same way from the first window to the last (schema 8).",
    )


class CampaignCost(Model):
    """What the campaign spent, against what a fixed design would have (formal runs only)."""

    pairs_run: dict[str, int] = Field(default_factory=dict, description="Arm -> finished formal runs.")
    run_minutes: float = Field(default=0.0, description="Wall-clock minutes of the finished formal runs.")
    gpu_minutes: float | None = Field(
        default=None, description="run_minutes x the GPUs each run held ([run] num_gpus); null on a CPU."
    )
    fixed_pairs: int | None = Field(
        default=None,
        description="Pairs per arm of the fixed design with the same error rates (docs/calibration.md); null for a "
        "fixed campaign.",
    )
    fixed_minutes: float | None = Field(
        default=None, description="What fixed_pairs pairs of every arm would take at the measured mean run times."
    )
    stopped: Literal["decided", "max_pairs", "open", "fixed"] = Field(
        default="fixed",
        description='"decided": no comparison needs another pair; "max_pairs": the design\'s last look came; '
        '"open": comparisons still need pairs (a budget or a stop ended the last `reportgen run`; resume adds '
        'pairs); "fixed": a fixed design.',
    )


class PreviousVerdict(Model):
    """One candidate's verdict as the replaced analysis.json had it."""

    candidate: str
    status: VerdictStatus
    basis: Basis | None = None
    against: str = "baseline"
    summary: str = Field(default="", description="The verdict's sentence then.")


class Reanalysis(Model):
    """What the analysis.json this one replaced said, when it was made under other rules (another
    schema) or from another spec (its windows amended): the I/O edge reads it before writing
    (reportgen/analyze.py) and the analysis keeps it, so a page can say what changed and why (schema
    9). A re-analysis under the same rules and spec carries the record forward unchanged."""

    schema_version: int = Field(description="The replaced document's schema.")
    generated_utc: str = Field(default="", description="When the replaced document was written.")
    spec_sha256: str = Field(default="", description="The spec it was made from.")
    windows: list[Window] = Field(default_factory=list, description="Its windows.")
    design: str = Field(default="", description='Its design in words, e.g. "sequential 3-12".')
    verdicts: list[PreviousVerdict] = Field(default_factory=list)
    rules: list[str] = Field(
        default_factory=list,
        description="The rules that changed between its schema and this one (analysis/reanalysis.py RULES).",
    )
    amendments: list[str] = Field(
        default_factory=list,
        description="The spec's amendments since, with their reasons (experiment.json), in words.",
    )
    moved: list[str] = Field(
        default_factory=list,
        description='The candidates whose verdict changed, in words: "A3: rejected -> inconclusive (open)".',
    )


class AnalysisDocument(Model):
    """runs/<experiment>/analysis.json."""

    schema_version: Literal[7, 8, 9, 10] = 10
    kind: Literal["reportgen.analysis"] = "reportgen.analysis"
    generated_utc: str = ""
    reportgen_version: str = ""
    inputs_sha256: str | None = Field(
        default=None, description="Digest of every file the analysis read: the document is stale when they change."
    )
    experiment: Experiment
    settings: Settings
    machine: Machine = Machine()
    workload: WorkloadInfo = Field(default=WorkloadInfo(), description="What ran: trainer, model, steps.")
    fixed_workload: list[FixedFlag] = Field(default_factory=list)
    arms: list[ArmResult] = Field(default_factory=list)
    comparisons: list[Comparison] = Field(default_factory=list)
    profiler_runs: list[ProfilerRun] = Field(default_factory=list)
    traces: TraceStats | None = Field(
        default=None,
        description='"Where the time went": every arm\'s figures from its stored profiler summaries '
        "(traces.parquet) and each candidate's difference from the baseline; null when no run has a summary.",
    )
    baseline_drift: BaselineDrift | None = None
    campaign: CampaignCost = CampaignCost()
    warnings: list[str] = Field(default_factory=list, description="Findings about the whole experiment, in words.")
    reanalysis: Reanalysis | None = Field(
        default=None,
        description="What the analysis.json this one replaced said, when its rules or spec differed (schema 9).",
    )

    @model_validator(mode="before")
    @classmethod
    def _before_9(cls, data: object) -> object:
        """A document of schema 7 or 8 read as far as it goes: its training-quality check (a per-window
        tolerance, a warning) has no place in schema 9's half of the verdict, so it is left out."""
        if not isinstance(data, dict) or data.get("schema_version") not in (7, 8):
            return data
        data = dict(data)
        if isinstance(data.get("settings"), dict):
            data["settings"] = {k: v for k, v in data["settings"].items() if k != "quality_tolerance"}
        if isinstance(data.get("comparisons"), list):
            data["comparisons"] = [
                {k: v for k, v in c.items() if k != "quality"} if isinstance(c, dict) else c
                for c in data["comparisons"]
            ]
        return data

    @property
    def primary(self) -> Primary:
        return self.settings.primary

    def arm_ids(self) -> list[str]:
        return [a.id for a in self.arms]

    def arm(self, arm_id: str) -> ArmResult | None:
        return next((a for a in self.arms if a.id == arm_id), None)

    def comparison(self, candidate: str) -> Comparison | None:
        return next((c for c in self.comparisons if c.candidate == candidate), None)

    def older_schema(self) -> str | None:
        """ "schema 7, this reportgen writes 8" when the document was written by an older reportgen
        (read, but missing what was added since); None when it is current."""
        if self.schema_version == SCHEMA_VERSION:
            return None
        return f"schema {self.schema_version}, this reportgen writes {SCHEMA_VERSION}"

    def to_json(self) -> dict[str, JsonValue]:
        """The JSON-ready form (non-finite floats become null), every float to `rounding.STORED_DIGITS`
        significant digits so that a re-analysis elsewhere writes the same bytes."""
        return cast(dict[str, JsonValue], rounding.stored(self.model_dump(mode="json")))


def parse(data: object, source: str, experiment: str | None = None) -> AnalysisDocument:
    """Validate a loaded analysis.json; anything else is one UserError line naming what to run."""
    redo = f"run `reportgen analyze {experiment}`" if experiment else "run `reportgen analyze`"
    if not isinstance(data, dict) or data.get("kind") != KIND:
        raise UserError(f"{source}: not an analysis.json (kind {KIND!r} missing); {redo}")
    version = data.get("schema_version")
    if version not in READABLE_SCHEMAS:
        readable = ", ".join(map(str, READABLE_SCHEMAS))
        raise UserError(f"{source} has schema {version}, this reportgen reads {readable}: {redo}")
    try:
        return AnalysisDocument.model_validate(data)
    except ValidationError as exc:
        raise UserError(f"{source}: {first_problem(exc)} ({exc.error_count()} problem(s)); {redo}") from None

"""The analysis.json document: one typed, versioned model that the analysis builds and render reads.

Part of reportgen.analysis (pure). Every key of `runs/<experiment>/analysis.json` is declared
once, in one of this package's modules, with its meaning in the field's description;
docs/formats/analysis.md carries the JSON Schema generated from these classes
(scripts/gen_formats.py), and a test fails when the two drift. Numbers keep nine significant digits
(`rounding.stored`, in `to_json`: the same on every machine; rounding for reading is the renderer's
job) and a missing value is `null`.

Why a model and not a dict: the document is the contract between the analysis and every page,
the PR body and the tests' fixtures; with a model, adding a field is one edit that a type checker
follows to every reader, and an old file is refused with one line instead of a KeyError deep in
a page.

The parts, one module each: `base` (the frozen, strict base model and the vocabulary's types),
`experiment` (what was tested, the settings and decision design, the machine, the workload),
`runs` (one run: events, attempts, disturbances), `arms` (an arm's statistics, GPU and memory),
`intervals` (an interval, the pairs and looks of a run-level comparison, a metric's change),
`checks` (guardrails, same work), `quality` (the training-quality half of a verdict), `verdict` (the verdict, the reviewer's
summary, evidence links, the next step), `comparison` (one candidate against the baseline) and
`root` (the document itself, its schema version and `parse`). Readers import the names from here.
"""

from reportgen.analysis.document.arms import ArmResult, GpuPeak, GpuSummary, MemoryUse, WindowStats
from reportgen.analysis.document.base import Basis, Direction, Number, VerdictStatus
from reportgen.analysis.document.checks import (
    GuardrailResult,
    GuardrailStatus,
    GuardrailTally,
    MathsChange,
    SameWork,
    SameWorkWindow,
)
from reportgen.analysis.document.comparison import (
    ChangedFile,
    CodeChange,
    Comparison,
    FlagChange,
    HeadlineRow,
    SetAsidePair,
    WindowChange,
)
from reportgen.analysis.document.experiment import (
    Design,
    Experiment,
    FixedFlag,
    Machine,
    Primary,
    Settings,
    Window,
    WorkloadInfo,
)
from reportgen.analysis.document.intervals import (
    BlockPair,
    Interval,
    Look,
    MachineEffect,
    MetricChange,
    Pair,
    RunLevel,
    WarmupCost,
    WarmupPair,
)
from reportgen.analysis.document.quality import QualityHalf, QualityMetric, QualityPair
from reportgen.analysis.document.root import (
    KIND,
    SCHEMA_VERSION,
    AnalysisDocument,
    Artifact,
    BaselineDrift,
    CampaignCost,
    PreviousVerdict,
    ProfilerRun,
    Reanalysis,
    parse,
)
from reportgen.analysis.document.runs import (
    Disturbance,
    DisturbanceKind,
    RunAttempt,
    RunEvent,
    RunFigure,
    RunLoad,
    RunSummary,
)
from reportgen.analysis.document.verdict import (
    ARM_EVIDENCE,
    CandidateSummary,
    EvidenceId,
    EvidenceLink,
    NextStep,
    Verdict,
)

__all__ = [
    "ARM_EVIDENCE",
    "KIND",
    "SCHEMA_VERSION",
    "AnalysisDocument",
    "ArmResult",
    "Artifact",
    "BaselineDrift",
    "Basis",
    "BlockPair",
    "CampaignCost",
    "CandidateSummary",
    "ChangedFile",
    "CodeChange",
    "Comparison",
    "Design",
    "Direction",
    "Disturbance",
    "DisturbanceKind",
    "EvidenceId",
    "EvidenceLink",
    "Experiment",
    "FixedFlag",
    "FlagChange",
    "GpuPeak",
    "GpuSummary",
    "GuardrailResult",
    "GuardrailStatus",
    "GuardrailTally",
    "HeadlineRow",
    "Interval",
    "Look",
    "Machine",
    "MachineEffect",
    "MathsChange",
    "MemoryUse",
    "MetricChange",
    "NextStep",
    "Number",
    "Pair",
    "PreviousVerdict",
    "Primary",
    "ProfilerRun",
    "QualityHalf",
    "QualityMetric",
    "QualityPair",
    "Reanalysis",
    "RunAttempt",
    "RunEvent",
    "RunFigure",
    "RunLevel",
    "RunLoad",
    "RunSummary",
    "SameWork",
    "SameWorkWindow",
    "SetAsidePair",
    "Settings",
    "Verdict",
    "VerdictStatus",
    "WarmupCost",
    "WarmupPair",
    "Window",
    "WindowChange",
    "WindowStats",
    "WorkloadInfo",
    "parse",
]

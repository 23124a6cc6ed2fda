"""The analysis.json document: one typed, versioned model that the analysis builds and render reads.

Part of reportgen.analysis (pure). Every key of `runs/<experiment>/analysis.json` is declared
here once, with its meaning in the field's description; docs/formats/analysis.md carries the
JSON Schema generated from these classes (scripts/gen_formats.py), and a test fails when the two
drift. Numbers keep nine significant digits (`rounding.stored`, in `to_json`: the same on every
machine; rounding for reading is the renderer's job) and a missing value is `null`.

Why a model and not a dict: the document is the contract between the analysis and every page,
the PR body and the tests' fixtures; with a model, adding a field is one edit that a type checker
follows to every reader, and an old file is refused with one line instead of a KeyError deep in
a page.
"""

from __future__ import annotations

from typing import Final, Literal, cast

from pydantic import BaseModel, ConfigDict, Field, JsonValue, ValidationError, model_validator

from reportgen import rounding, vocab
from reportgen.errors import UserError, first_problem
from reportgen.traces.stats import TraceStats

SCHEMA_VERSION: Final = 7  # also the Literal of AnalysisDocument.schema_version
KIND: Final = "reportgen.analysis"

Number = int | float
Direction = vocab.Direction
VerdictStatus = vocab.VerdictStatus
Basis = vocab.Basis
# "warn": a finding a reviewer must see that does not decide the verdict (training quality).
GuardrailStatus = Literal["pass", "fail", "warn", "not_applicable"]
DisturbanceKind = Literal["other_run", "cpu_load", "gpu_process", "gpu_throttle"]
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


class _Model(BaseModel):
    # Unknown keys are an error: a misspelt field must not silently read as its default.
    model_config = ConfigDict(extra="forbid", frozen=True)


class Experiment(_Model):
    """What was tested and on which code."""

    name: str = Field(description="Folder name under runs/.")
    title: str = Field(description="The spec's title.")
    hypothesis: str = Field(default="", description="The spec's hypothesis, as written.")
    issue: str | None = Field(default=None, description="Issue URL or reference from the spec.")
    pr: str | None = Field(default=None, description="Pull-request URL or reference from the spec.")
    spec_sha256: str = Field(default="", description="SHA-256 of runs/<experiment>/experiment.toml.")
    profile: str | None = Field(default=None, description="The spec profile the runs were made with.")
    created_utc: str | None = Field(default=None, description="Start of the first run (ISO 8601, UTC).")
    baseline_commit: str | None = Field(
        default=None, description="Commit of the baseline run's code (provenance/git.json)."
    )
    dirty: bool | None = Field(default=None, description="Whether that working tree had uncommitted changes.")


class Primary(_Model):
    """The primary metric: decided here once; every reader takes it from `settings.primary`."""

    key: str = Field(description='Metric key, e.g. "perf/step_resp_token_per_s".')
    direction: Direction = Field(description='"higher" or "lower" is better.')


class Window(_Model):
    name: str = Field(description='"W1", "W2", ...')
    start: int = Field(description="First step of the window (inclusive).")
    end: int = Field(description="Last step of the window (inclusive).")


class Settings(_Model):
    """The spec's [analysis] table as applied."""

    primary: Primary
    secondary: list[str] = Field(default_factory=list, description="Secondary metric keys.")
    warmup_steps: int = Field(description="Steps before the first window (not analysed).")
    steps_expected: int | None = Field(default=None, description="Steps each formal run should complete.")
    windows: list[Window] = Field(description="Pre-declared windows of steps.")
    min_effect: float = Field(description="Smallest relative change that counts (0.05 = 5 %).")
    confidence: float = Field(description="Confidence level of the intervals (0.95).")
    method: str = Field(description='Within-run (diagnostic) interval method: "block-bootstrap" or "batch-means".')
    design: Design = Field(description="The decision design: pairs, looks, boundary.")
    seed: int | None = Field(default=None, description="Seed of the bootstrap: the interval is reproducible.")
    site_url: str | None = Field(default=None, description="Where the report site is published (for the PR body).")
    pr_candidate: str = Field(description="The candidate the pull request proposes (spec, default the first).")
    same_work_tolerance: float = Field(
        description="Largest relative difference in mean response length and tokens per step, per window, "
        "for a verdict on a throughput metric (0.05 = 5 %)."
    )
    quality_tolerance: float = Field(
        default=0.10,
        description="Largest difference of a window's mean loss, reward or KL from the baseline's, as a fraction of "
        "the baseline's scale, before the training-quality guardrail warns (0.10 = 10 %).",
    )


class Machine(_Model):
    """The machine the campaign ran on (campaign.json's fingerprint)."""

    fingerprint_id: str | None = None
    hostname: str | None = None
    cpu_model: str | None = None
    cpu_count: int | None = None
    gpus: list[dict[str, JsonValue]] | None = Field(
        default=None,
        description="One entry per GPU as the fingerprint recorded it (index, name, uuid, ...); null: not recorded.",
    )
    driver: str | None = None
    cuda: str | None = None


class WorkloadInfo(_Model):
    """What ran, in a line a reviewer reads before any number (reportgen/analysis/workload.py)."""

    entrypoint: str | None = Field(default=None, description="The trainer's module ([recipe] entrypoint).")
    name: str | None = Field(
        default=None, description="The trainer in words, when reportgen knows it (vocab.WORKLOADS)."
    )
    doc: str | None = Field(default=None, description="Its documentation page, relative to the docs root.")
    model: str | None = Field(
        default=None, description="The model: its shape and how it was made, or the model files the spec declared."
    )
    parameters: int | None = Field(default=None, description="Parameter count, when known.")
    steps: int | None = Field(default=None, description="Steps each formal run makes (settings.steps_expected).")
    samples_per_step: float | None = Field(default=None, description="Samples each step trains on.")
    max_response_tokens: int | None = Field(default=None, description="--rollout-max-response-len.")
    fixed_length: bool = Field(default=False, description="--rollout-ignore-eos: every response is that long.")
    model_manifest_sha256: str | None = Field(default=None, description="Hash of the declared model files.")


class FixedFlag(_Model):
    flag: str = Field(description="A flag no candidate may change (spec `workload.flags`).")
    value: str | None = Field(default=None, description="Its value in the baseline's effective command line.")


class RunEvent(_Model):
    """One entry of the run's events.json (see docs/formats/runs.md)."""

    kind: str = Field(description='"oom", "nan", "traceback", "abnormal_exit", ...')
    step: int | None = None
    stream: str = Field(default="stdout", description='"stdout" or "stderr".')
    line: int | None = Field(default=None, description="Line in that stream's log.")
    message: str = ""
    excerpt: list[str] = Field(default_factory=list, description="Log lines around the event.")
    details: dict[str, JsonValue] = Field(default_factory=dict)


class RunAttempt(_Model):
    """One attempt of a run as its log shows it (the manifest's `ingest.lifecycle`): a job (the
    first, a retry, a resumed run appended to the same log) or an in-run restart of it."""

    attempt: int = Field(description="1-based, in log order.")
    kind: Literal["job", "restart"] = Field(description='"job", or "restart" (Relax\'s health check, inside the job).')
    started_by: str = Field(description='What marked its start: "job submission", "global restart #1", ...')
    steps: list[int] | None = Field(default=None, description="[first, last] step the actor trained in it.")
    trained_steps: int = Field(default=0, description="Steps the actor trained in it.")
    start_step: int | None = Field(default=None, description="The step it started at, when it resumed past 0.")
    resumed_from_iteration: int | None = Field(default=None, description="The checkpoint iteration it loaded.")
    started_utc: str | None = None
    duration_s: float | None = Field(default=None, description="From its first to its last log timestamp.")
    end: str | None = Field(
        default=None, description='"clean", "failed", "stopped", "restarted", "cut"; null when the log does not say.'
    )
    failure: str | None = Field(default=None, description='Its failure in words ("OOM at step 7, ...").')
    redone: str | None = Field(
        default=None, description='Steps it trained again that an earlier attempt had ("10-14").'
    )
    replaced_values: int = Field(default=0, description="Of its values, how many a later attempt replaced.")


class Disturbance(_Model):
    """Something else on the machine during a run (docs/analysis.md#quiet-machine)."""

    kind: DisturbanceKind = Field(
        description='"other_run": another measurement on the same machine at once; "cpu_load": CPU load outside '
        "the run's processes beyond the threshold; \"gpu_process\": a process that is not the run's on a GPU it "
        'uses; "gpu_throttle": a GPU clock held down (thermal, power, sync boost).'
    )
    start_s: float = Field(
        description="Seconds after the run's time zero: its first load sample (as on the GPU charts), else its start."
    )
    end_s: float
    samples: int | None = Field(default=None, description="1 Hz samples it was seen in; null for other_run.")
    in_window: bool = Field(description="It overlaps the measured windows' time span (what the verdict uses).")
    detail: str = Field(description='Who or what, e.g. "pid 4242 stress 1.00 cores", "other-exp/A1/1".')


class RunLoad(_Model):
    """What the load samples say about a run, inside the measured windows' time span."""

    samples: int = Field(description="Load samples (ticks) in the span.")
    disturbed: int = Field(description="Of which disturbed by anything (any kind).")
    by_kind: dict[str, int] = Field(default_factory=dict, description="Disturbed samples per kind.")
    flagged: list[str] = Field(
        default_factory=list, description="Kinds beyond the threshold (docs/analysis.md#quiet-machine): a warning."
    )
    cpu_other_peak: float | None = Field(default=None, description="Most cores busy outside the run in one sample.")


class RunSummary(_Model):
    """One run of an arm."""

    repeat: int
    role: str = Field(description='"formal" or "profile".')
    status: str = Field(description='"complete", "failed", "interrupted", "running" or "unknown".')
    path: str = Field(description='Relative to the experiment folder, e.g. "baseline/1".')
    started_utc: str | None = None
    duration_s: float | None = None
    exit_code: int | None = None
    steps_completed: int = 0
    events: list[RunEvent] = Field(default_factory=list)
    gpu_available: bool = False
    overall: float | None = Field(default=None, description="This run's primary metric: mean of its window means.")
    failure: str | None = Field(default=None, description='Why it failed, in words ("OOM at step 9, tried to ...").')
    failure_sentence: str | None = Field(
        default=None,
        description='The failure as a plain sentence for the write-up ("ran out of GPU memory at step 1: PyTorch '
        'already held 4.94 of the 5.00 GiB allowed ... when it asked for 20.00 MiB more"); null when none is known.',
    )
    notes: list[str] = Field(default_factory=list, description="Problems met reading the run's files.")
    lifecycle: list[RunAttempt] | None = Field(
        default=None,
        description="Its attempts, when its log shows more than one plain start at step 0 (a retried job, "
        "an in-run restart, a resume from a checkpoint); null otherwise.",
    )

    disturbances: list[Disturbance] = Field(
        default_factory=list, description="What else used the machine during the run, and when."
    )
    load: RunLoad | None = Field(default=None, description="Load samples in the measured span; null: none recorded.")


class WindowStats(_Model):
    """One metric over one window; `window` is "all" for all windows pooled."""

    window: str
    start: int
    end: int
    n: int
    mean: float | None = None
    std: float | None = Field(default=None, description="Sample standard deviation (ddof=1).")
    median: float | None = None
    p95: float | None = None
    min: float | None = None
    max: float | None = None


class GpuPeak(_Model):
    index: int
    uuid: str | None = None
    name: str | None = None
    util_mean: float | None = Field(default=None, description="Mean utilization in the windows' time span, %.")
    mem_peak_mib: float | None = Field(default=None, description="Peak memory used (nvidia-smi), MiB.")
    mem_total_mib: float | None = None


class GpuSummary(_Model):
    """GPU samples inside the windows' time span."""

    available: bool = False
    util_mean: float | None = None
    per_gpu: list[GpuPeak] = Field(default_factory=list)
    samples: int = Field(default=0, description="Number of 1 Hz samples used.")
    notes: list[str] = Field(default_factory=list)

    def peak_mib(self) -> float | None:
        peaks = [g.mem_peak_mib for g in self.per_gpu if g.mem_peak_mib is not None]
        return max(peaks) if peaks else None

    def total_mib(self) -> float | None:
        totals = [g.mem_total_mib for g in self.per_gpu if g.mem_total_mib is not None]
        return min(totals) if totals else None


class MemoryUse(_Model):
    """An arm's peak GPU memory against the limit it ran under (reportgen/analysis/memory.py).

    nvidia-smi's figure counts memory in use before the run, the CUDA context and the allocator's
    reserve; a cap the workload set itself bounds only what PyTorch's allocator holds. So the
    headroom is taken on the figure the limit bounds (`used_source`)."""

    allocated_peak_mib: float | None = Field(
        default=None, description="The framework's own peak allocation over every step of every formal run, MiB."
    )
    allocated_metric: str | None = Field(
        default=None, description='The metric it was read from, e.g. "perf/max_memory_allocated_gib"; null: none.'
    )
    device_peak_mib: float | None = Field(
        default=None, description="nvidia-smi's peak memory used over the whole run (the fullest run and GPU), MiB."
    )
    device_before_mib: float | None = Field(
        default=None, description="Memory in use on that GPU at the run's first sample (before it allocated), MiB."
    )
    device_peak_net_mib: float | None = Field(
        default=None, description="device_peak_mib - device_before_mib: the run's own footprint, MiB."
    )
    device_total_mib: float | None = None
    cap_mib: float | None = Field(
        default=None, description="The cap the workload set on its own memory (--gpu-memory-cap-gib), MiB."
    )
    limit: Literal["cap", "device", "none"] = Field(
        default="none", description='"cap": the declared cap; "device": what the card had free at the start.'
    )
    limit_mib: float | None = None
    used_mib: float | None = Field(
        default=None, description="The peak the limit bounds: the allocator's under a cap, else the device's net peak."
    )
    used_source: Literal["allocator", "device", "none"] = "none"
    headroom_mib: float | None = Field(default=None, description="limit_mib - used_mib.")
    headroom: float | None = Field(default=None, description="headroom_mib / limit_mib (a fraction).")


class ArmResult(_Model):
    """The baseline or one candidate, with its runs and per-window statistics."""

    id: str = Field(description='"baseline", "A1", ...')
    title: str
    rationale: str = ""
    base: str | None = Field(default=None, description="The arm this candidate's patch applies on top of.")
    diff: str = Field(
        default="", description="Unified diff of the recipe against the original (empty for the baseline)."
    )
    runs: list[RunSummary] = Field(default_factory=list)
    windows: dict[str, list[WindowStats]] = Field(
        default_factory=dict, description="Metric key -> one row per window, then the pooled row."
    )
    overall: dict[str, float | None] = Field(default_factory=dict, description="Metric key -> mean of window means.")
    gpu: GpuSummary = GpuSummary()
    workload: dict[str, str | None] = Field(
        default_factory=dict, description="Effective values of the fixed, batch and length-limit flags."
    )
    memory: MemoryUse = Field(default=MemoryUse(), description="Peak GPU memory against the limit it ran under.")

    def formal_runs(self) -> list[RunSummary]:
        return [r for r in self.runs if r.role == "formal"]


class HeadlineRow(_Model):
    metric: str = Field(
        description='Metric key; also "perf/step_time:p95", "gpu/util_mean", "gpu/<i>/util_mean", '
        '"gpu/<i>/mem_peak_mib", "steps_completed" (change = difference in steps) and '
        '"workload/limits" (values are strings, change null).'
    )
    label: str
    unit: str = ""
    better: Direction | None = None
    baseline: Number | str | None = None
    candidate: Number | str | None = None
    change: Number | None = Field(default=None, description="candidate/baseline - 1 (a fraction).")
    text: str | None = Field(default=None, description='"unchanged" or "changed" for rows of strings.')


class WindowChange(_Model):
    window: str
    start: int
    end: int
    baseline: float | None = None
    candidate: float | None = None
    change: float | None = None


class Interval(_Model):
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


class Design(_Model):
    """When a comparison may be decided and how wide its interval is at each look
    (reportgen/analysis/design.py; docs/analysis.md#the-interval)."""

    mode: Literal["fixed", "sequential"] = Field(
        description='"fixed": one look at the planned pairs ([run] repeats); "sequential": a look after every '
        'pair from min_pairs to max_pairs ([run] until = "decided").'
    )
    min_pairs: int = Field(description="No verdict is accepted, rejected or no_change on fewer pairs.")
    max_pairs: int = Field(description="The last look of the design.")
    looks: list[int] = Field(description="Pair counts at which the design may decide.")
    confidence: float = Field(description="Probability that the interval covers the truth at every look at once.")
    boundary: float = Field(description="Normal-scale constant of the repeated interval (Pocock): 1.96 for one look.")
    look_confidence: float = Field(description="Two-sided level of each look's interval.")
    futility: float | None = Field(
        default=None,
        description="One-sided level of the futility bound: a sequential comparison stops when this bound of the "
        "gain is below the minimum effect. null for a fixed design.",
    )
    min_effect: float = Field(description="Smallest relative gain that counts, and loss that rejects (0.05 = 5 %).")
    pool: bool = Field(
        description="Run-to-run variance borrowed from the campaign's other arms (two-way arms x blocks model) "
        "unless the comparison's own pairs disagree with it."
    )
    interleaved: bool = Field(description="Runs were made in blocks, each arm once per block: pairs are adjacent.")
    budget_minutes: float | None = Field(default=None, description="[run] budget_minutes of one `reportgen run`.")


class Pair(_Model):
    """One block's reference run and candidate run, and the ratio of their run-level figures."""

    repeat: int = Field(description="The block (repeat number) both runs belong to.")
    reference_run: str = Field(description='e.g. "baseline/2".')
    candidate_run: str = Field(description='e.g. "A1/2".')
    reference: float = Field(description="The reference run's figure: mean of its window means.")
    candidate: float = Field(description="The candidate run's figure.")
    ratio: float = Field(description="candidate / reference.")
    candidate_first: bool | None = Field(
        default=None, description="The candidate run started before the reference run; null: not recorded."
    )


class Look(_Model):
    """The comparison as it stood after `pairs` pairs: the interval and what it would have decided."""

    pairs: int
    estimate: float | None = Field(default=None, description="Geometric mean of the pairs' ratios.")
    low: float | None = None
    high: float | None = None
    futility_high: float | None = Field(
        default=None, description="The one-sided futility bound of the ratio (sequential designs)."
    )
    outcome: vocab.IntervalOutcome = Field(description="What this look's interval says under the design's rules.")


class RunLevel(_Model):
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


class GuardrailResult(_Model):
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


class Verdict(_Model):
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


class MetricChange(_Model):
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


class EvidenceLink(_Model):
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


class NextStep(_Model):
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
    ] = Field(description="What to do next, derived from the evidence (docs/analysis.md#next-step).")
    text: str = Field(description="The step in one sentence.")
    command: str | None = Field(default=None, description="The exact command(s) to run, when there are any.")


class CandidateSummary(_Model):
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
    cause: str | None = Field(
        default=None, description="For inconclusive, invalid and failed verdicts: the cause in plain words."
    )
    evidence: list[EvidenceLink] = Field(default_factory=list, description="Where the cause can be checked.")
    next_step: NextStep


class SameWorkWindow(_Model):
    window: str
    response_length_baseline: float | None = None
    response_length_candidate: float | None = None
    response_length_change: float | None = None
    tokens_per_step_baseline: float | None = None
    tokens_per_step_candidate: float | None = None
    tokens_per_step_change: float | None = None
    within: bool | None = Field(default=None, description="Both changes within the tolerance; null: not checkable.")


class SameWork(_Model):
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


class QualityWindow(_Model):
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


class QualityCheck(_Model):
    """Does the candidate train like the baseline? (reportgen/analysis/quality.py; a warning, never
    a verdict: docs/analysis.md#training-quality)."""

    status: GuardrailStatus
    tolerance: float = Field(description="settings.quality_tolerance, a fraction of each window's scale.")
    reason: str
    windows: list[QualityWindow] = Field(default_factory=list)
    flat: list[str] = Field(default_factory=list, description="Quantities flat at 0 in both arms.")
    missing: list[str] = Field(default_factory=list, description="Quantities not logged by both arms.")


class FlagChange(_Model):
    """A flag whose effective value (from the runs' effective command line) differs between the
    baseline, the candidate's base and the candidate."""

    flag: str
    baseline: str | None = Field(default=None, description='Value in the baseline; null: absent; "true": a switch.')
    base: str | None = Field(default=None, description="Value in the candidate's base (same as baseline if none).")
    candidate: str | None = None


class Comparison(_Model):
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
    consistent_direction: bool = Field(default=False, description="Better in every window.")
    guardrails: list[GuardrailResult] = Field(default_factory=list)
    verdict: Verdict
    summary: CandidateSummary
    secondary: list[MetricChange] = Field(
        default_factory=list,
        description="Step time, actor train time and every per-phase time both arms logged, with intervals.",
    )
    same_work: SameWork
    quality: QualityCheck | None = Field(
        default=None, description="Training quality against the baseline (the same_quality guardrail's figures)."
    )
    base: str | None = Field(default=None, description="The candidate's base when it is not the baseline.")
    depends_on: list[str] = Field(
        default_factory=list, description="Candidates whose edits this candidate's patch needs, nearest first."
    )
    vs_base: list[MetricChange] = Field(
        default_factory=list, description="Primary metric and step time against the base (empty without a base)."
    )
    changed_flags: list[FlagChange] = Field(default_factory=list)

    def deciding(self) -> RunLevel:
        """The run-level comparison the verdict was decided on: against the base when the verdict
        names it, else against the baseline."""
        if self.verdict.against != self.baseline and self.base_run_level is not None:
            return self.base_run_level
        return self.run_level


class Artifact(_Model):
    path: str
    bytes: int | None = None
    sha256: str | None = None


class ProfilerRun(_Model):
    arm: str
    path: str
    status: str
    artifacts: list[Artifact] = Field(default_factory=list)


class BaselineDrift(_Model):
    """How much the baseline's primary metric moved between its first and last window."""

    metric: str
    first_window: str
    last_window: str
    first: float | None = None
    last: float | None = None
    change: float | None = None
    flagged: bool = Field(description="|change| exceeds settings.min_effect.")


class CampaignCost(_Model):
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


class AnalysisDocument(_Model):
    """runs/<experiment>/analysis.json."""

    schema_version: Literal[7] = 7
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

    @property
    def primary(self) -> Primary:
        return self.settings.primary

    def arm_ids(self) -> list[str]:
        return [a.id for a in self.arms]

    def arm(self, arm_id: str) -> ArmResult | None:
        return next((a for a in self.arms if a.id == arm_id), None)

    def comparison(self, candidate: str) -> Comparison | None:
        return next((c for c in self.comparisons if c.candidate == candidate), None)

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
    if version != SCHEMA_VERSION:
        raise UserError(f"{source} has schema {version}, this reportgen reads {SCHEMA_VERSION}: {redo}")
    try:
        return AnalysisDocument.model_validate(data)
    except ValidationError as exc:
        raise UserError(f"{source}: {first_problem(exc)} ({exc.error_count()} problem(s)); {redo}") from None

"""One run of an arm as analysis.json keeps it (`arms[].runs[]`): its status, events, attempts,
what else used the machine while it ran, and its own figures for the performance history.

Part of reportgen.analysis.document (pure).
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, JsonValue

from reportgen.analysis.document.base import Model

DisturbanceKind = Literal["other_run", "cpu_load", "gpu_process", "gpu_throttle"]


class RunEvent(Model):
    """One entry of the run's events.json (see docs/formats/runs.md)."""

    kind: str = Field(description='"oom", "nan", "traceback", "abnormal_exit", ...')
    step: int | None = None
    stream: str = Field(default="stdout", description='"stdout" or "stderr".')
    line: int | None = Field(default=None, description="Line in that stream's log.")
    message: str = ""
    excerpt: list[str] = Field(default_factory=list, description="Log lines around the event.")
    details: dict[str, JsonValue] = Field(default_factory=dict)


class RunAttempt(Model):
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


class Disturbance(Model):
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


class RunLoad(Model):
    """What the load samples say about a run, inside the measured windows' time span."""

    samples: int = Field(description="Load samples (ticks) in the span.")
    disturbed: int = Field(description="Of which disturbed by anything (any kind).")
    by_kind: dict[str, int] = Field(default_factory=dict, description="Disturbed samples per kind.")
    flagged: list[str] = Field(
        default_factory=list, description="Kinds beyond the threshold (docs/analysis.md#quiet-machine): a warning."
    )
    cpu_other_peak: float | None = Field(default=None, description="Most cores busy outside the run in one sample.")


class RunFigure(Model):
    """One figure of one run, as the performance history plots it (reportgen.history): computed here,
    once, from the run's own steps and GPU samples (analysis/run_figures.py), so the history and the
    site read it and never the run's tables."""

    metric: str = Field(description="The metric's key: the primary's, `perf/step_time`, `gpu/mem_peak_mib`.")
    value: float = Field(description="The run's figure: the mean of its window means (peak memory: the maximum).")
    low: float | None = Field(
        default=None, description="Lower bound of its within-run interval; null: none (a maximum, a 1-step window)."
    )
    high: float | None = Field(default=None, description="Upper bound of its within-run interval.")
    confidence: float | None = Field(default=None, description="The interval's confidence; null without one.")
    n: int = Field(description="Steps (peak memory: GPU samples) the figure is made of.")
    method: str = Field(description="How the figure and its interval were computed, in words.")


class RunSummary(Model):
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
    commit: str | None = Field(
        default=None, description="The commit its code was at (provenance/git.json; schema 10); null: not recorded."
    )
    dirty: bool | None = Field(default=None, description="Whether that tree had uncommitted changes.")
    machine_class: str | None = Field(
        default=None,
        description="The class of the machine it ran on (store.machine_id.class_id of its fingerprint: GPU and CPU "
        "models and counts, driver, memory, image); the history keys its series on it. null: no fingerprint.",
    )
    figures: list[RunFigure] = Field(
        default_factory=list,
        description="Its figures for the performance history (complete formal runs only): the primary metric and "
        "step time with a within-run interval, peak GPU memory in the windows (schema 10).",
    )

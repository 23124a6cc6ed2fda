"""What was tested, how it is analysed, and where it ran: analysis.json's `experiment`,
`settings` (with the decision `Design`), `machine`, `workload` and `fixed_workload`.

Part of reportgen.analysis.document (pure).
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, JsonValue

from reportgen.analysis.document.base import Direction, Model


class Experiment(Model):
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


class Primary(Model):
    """The primary metric: decided here once; every reader takes it from `settings.primary`."""

    key: str = Field(description='Metric key, e.g. "perf/step_resp_token_per_s".')
    direction: Direction = Field(description='"higher" or "lower" is better.')


# A declared window as every part of analysis.json that names one states it (`Window`,
# comparison.WindowChange): its name and its span of steps.
WindowName = Annotated[str, Field(description='"W1", "W2", ...')]
FirstStep = Annotated[int, Field(description="First step of the window (inclusive).")]
LastStep = Annotated[int, Field(description="Last step of the window (inclusive).")]


class Window(Model):
    name: WindowName
    start: FirstStep
    end: LastStep


class Settings(Model):
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
    quality_metric: str | None = Field(
        default=None,
        description='The quality metric that decides "trains as well" (schema 9): null, the reward '
        '(rollout/raw_reward, else rollout/rewards); "none": the spec asks for a verdict on speed alone.',
    )
    quality_margin: float = Field(
        default=0.05,
        description="Non-inferiority margin of quality_metric, in its units (schema 9): the candidate's figure may "
        "be worse than the baseline's by less than this (0.05: five points of a 0-1 reward).",
    )
    quality_margins: dict[str, float] = Field(
        default_factory=dict,
        description="Other quality metrics that decide too, each with its margin in its units (schema 9).",
    )


class Design(Model):
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
    boundary: float = Field(
        description="Normal-scale equivalent of the per-look level (1.96 for one look; 2.56 for looks 3-12)."
    )
    look_confidence: float = Field(
        description="Two-sided level of each look's t interval, exact for the t statistics used (98.95 % for looks "
        "3-12)."
    )
    futility: float | None = Field(
        default=None,
        description="One-sided level of the futility bounds: a sequential comparison stops when both bounds of the "
        "gain lie inside the minimum effect (neither a gain nor a loss within reach). null for a fixed design.",
    )
    min_effect: float = Field(description="Smallest relative gain that counts, and loss that rejects (0.05 = 5 %).")
    pool: bool = Field(
        description="Run-to-run variance borrowed from the campaign's other arms: no longer offered (false; true "
        "only in documents of earlier versions, docs/calibration.md)."
    )
    interleaved: bool = Field(description="Runs were made in blocks, each arm once per block: pairs are adjacent.")
    budget_minutes: float | None = Field(default=None, description="[run] budget_minutes of one `reportgen run`.")


class Machine(Model):
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

    def class_name(self) -> str:
        """What makes two machines interchangeable for speed, in words: GPU model and count and the
        driver ("1 x NVIDIA H200, driver 580.159.04"); without GPUs, the CPU model and its cores.
        Hostnames and GPU serials are left out: two leases of one kind of machine are one class
        (their differences are what the history shows). The history's series and plan-windows'
        evidence are grouped by it."""
        if self.gpus:
            names: dict[str, int] = {}
            for g in self.gpus:
                name = str(g.get("name") or "unknown GPU")
                names[name] = names.get(name, 0) + 1
            text = " + ".join(f"{n} x {name}" for name, n in names.items())
            return f"{text}, driver {self.driver}" if self.driver else text
        cpu = self.cpu_model or "unknown CPU"
        return f"CPU: {cpu}, {self.cpu_count} cores" if self.cpu_count else f"CPU: {cpu}"


class WorkloadInfo(Model):
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
    version: str | None = Field(
        default=None,
        description="The version of the workload that made the runs, as its log said (`v2`); the embedded workload's "
        "runs that said none read as `v1`; null for a trainer reportgen does not know.",
    )
    warm_start_sha256: str | None = Field(
        default=None,
        description="SHA-256 of the warm start the baseline's first run began from (the embedded workload).",
    )


class FixedFlag(Model):
    flag: str = Field(description="A flag no candidate may change (spec `workload.flags`).")
    value: str | None = Field(default=None, description="Its value in the baseline's effective command line.")

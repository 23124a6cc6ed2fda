"""An arm's results (`arms[]`): its runs, per-window statistics, GPU samples and memory.

Part of reportgen.analysis.document (pure).
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from reportgen.analysis.document.base import Model
from reportgen.analysis.document.runs import RunSummary


class WindowStats(Model):
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


class GpuPeak(Model):
    index: int
    uuid: str | None = None
    name: str | None = None
    util_mean: float | None = Field(default=None, description="Mean utilization in the windows' time span, %.")
    mem_peak_mib: float | None = Field(default=None, description="Peak memory used (nvidia-smi), MiB.")
    mem_total_mib: float | None = None


class GpuSummary(Model):
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


class MemoryUse(Model):
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
    device_total_mib: float | None = Field(
        default=None, description="The GPU's capacity (nvidia-smi memory.total of that GPU), MiB."
    )
    device_share: float | None = Field(
        default=None,
        description="device_peak_mib / device_total_mib: nvidia-smi's peak against the GPU's capacity (a fraction).",
    )
    beyond_allocated_mib: float | None = Field(
        default=None,
        description="device_peak_net_mib - allocated_peak_mib: what the run's own nvidia-smi peak holds beyond the "
        "framework's allocated peak (the CUDA context and libraries, and what PyTorch's caching allocator reserved "
        "but had not handed out), MiB; null without both.",
    )
    cap_mib: float | None = Field(
        default=None,
        description="The cap the workload set on its own memory (--gpu-memory-cap-gib): an emulated smaller GPU that "
        "bounds PyTorch's allocator, not the GPU's capacity, MiB.",
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


class ArmResult(Model):
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
    step_parts: dict[str, float | None] = Field(
        default_factory=dict,
        description="Timer key (vocab.STEP_PARTS: rollout, wait, train, actor train, log-prob passes, optimizer) -> "
        "its mean seconds per step over the window steps of the arm's formal runs: where a step's time goes "
        "(schema 10); null where the arm logged none.",
    )
    settled_at: int | None = Field(
        default=None,
        description="The first step of the arm's steady state in the primary metric, found from its complete formal "
        "runs' steps (analysis/warmup.py: MSER on the arm's per-step median profile); null with fewer than 8 steps "
        "(schema 8).",
    )
    revision: str | None = Field(
        default=None,
        description="The commit the arm ran at (arms at git revisions, revisions.json); null: the working tree.",
    )
    fingerprint: dict[str, list[float]] = Field(
        default_factory=dict,
        description="Behavioural fingerprint: metric key (train/loss, train/grad_norm) -> its mean over the arm's "
        "runs in each of the first steps (analysis/behaviour.py).",
    )

    def formal_runs(self) -> list[RunSummary]:
        return [r for r in self.runs if r.role == "formal"]

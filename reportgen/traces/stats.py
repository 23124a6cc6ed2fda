"""The figures of "Where the time went", computed from stored summaries (pure: rows in, models out).

Per arm (`arm_stats`): the per-step means of every time part, the stacked bars' figures per
profiled step and rank, the top operators with their mean time per step, the memory of its
snapshots and the rollout engines' kernel time; per candidate against the baseline
(`diff_stats`): the difference of each part, of the bytes copied and of the operators whose time
changed most, and the figures the section's sentences say. The analysis stores them in
analysis.json (`AnalysisDocument.traces`); the pages only format them (render/time_section.py).

Time comes from an arm's profiler runs (`profile-<arm>`; its formal runs' summaries when it has
none, a run ingested with --traces), memory from all its runs: an OOM snapshot is dumped by the
run that failed, not by the profiler run. A training trace counts one file per rank (the longest,
when several targets were traced).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from reportgen import vocab
from reportgen.traces import categories as cats
from reportgen.traces import model

IDLE = "GPU idle"
PYTHON = "Python overhead"
SPAN_TITLES = {
    "optimizer_step": "host: optimizer step",
    "data_movement": "host: data movement",
    "python_overhead": "host: Python overhead",
}
PART_ORDER = (*cats.COMPUTE_CATEGORIES, *cats.MEMCPY_DIRECTIONS, IDLE, PYTHON)
TOP_DIFF_OPS = 8
SAME_WITHIN = 0.05  # kernels (or a step) within 5 % (or 1 ms) of the baseline's are "the same"


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class TraceFile(_Model):
    """A trace file a summary came from (an artifact of the run's manifest)."""

    run: str = Field(description='Run folder relative to the experiment, e.g. "profile-A1/1".')
    path: str = Field(description="Path relative to the run folder.")
    bytes: int | None = None
    sha256: str | None = None


class StepPart(_Model):
    """One segment of the stacked bars: a part of one profiled step of one rank."""

    rank: int
    step: int = Field(description="ProfilerStep#N, or -1 for a trace without step spans (the whole trace).")
    part: str = Field(description="A compute category, a copy direction, GPU idle or Python overhead (CPU view).")
    ms: float


class TopOp(_Model):
    name: str
    category: str = Field(description="Compute category or copy direction.")
    ms: float = Field(description="Mean time per profiled step (over steps and ranks); 0 outside the stored top 25.")


class LiveFrame(_Model):
    name: str = Field(description="Allocating frame (file:line function).")
    area: str = ""
    bytes: int
    count: int = 0


class MemoryStats(_Model):
    """The arm's memory snapshots (every run of the arm)."""

    cpu_peak_rss: int | None = Field(default=None, description="Peak RSS of a CPU run (bytes).")
    allocated: int | None = Field(default=None, description="Peak allocated (bytes).")
    reserved: int | None = Field(default=None, description="Peak reserved (bytes).")
    live_by_area: list[LiveFrame] = Field(
        default_factory=list, description="Live at the peak by code area, largest first."
    )
    live_frames: list[LiveFrame] = Field(default_factory=list, description="The 5 largest live frames at the peak.")
    oom: bool = Field(default=False, description="An OOM snapshot was found.")
    oom_requested: int = 0
    oom_device_free: int = 0
    oom_live: list[LiveFrame] = Field(default_factory=list, description="Live at the failure, by frame.")


class EngineTime(_Model):
    """One SGLang engine's (TP rank's) kernel time per profiled step, in ms."""

    engine: int
    tp: int
    ms: dict[str, float] = Field(description='"wall", each compute category and "GPU idle".')


class PageableCopy(_Model):
    """A copy from pageable (unpinned) host memory among the top operators."""

    name: str
    direction: str
    ms: float = Field(description="Mean time per profiled step.")
    bytes: float = Field(description="Mean bytes copied per step in its direction.")
    gb_per_s: float | None = None


class ArmTraces(_Model):
    """One arm's profiler figures (means over its profiled steps and ranks)."""

    arm: str
    runs: list[str] = Field(description="Run folders the time comes from.")
    view: Literal["gpu", "cpu"] = Field(description="gpu: kernels ran on a GPU; cpu: CPU operators stand in.")
    timed: bool = Field(description="It has a training trace (not only memory snapshots).")
    steps: int = Field(default=0, description="Profiled steps.")
    ranks: int = 0
    per_step: dict[str, float] = Field(
        default_factory=dict,
        description='Mean per profiled step, in ms: "wall", each part, each host span title '
        '("host: optimizer step", ...); bytes for "bytes:<direction>".',
    )
    step_parts: list[StepPart] = Field(default_factory=list, description="The stacked bars' segments.")
    top_ops: list[TopOp] = Field(default_factory=list)
    pageable: list[PageableCopy] = Field(
        default_factory=list, description="Copies from pageable memory, longest first."
    )
    memory: MemoryStats = MemoryStats()
    sglang: list[EngineTime] = Field(default_factory=list)
    traces: list[TraceFile] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list, description="Summaries that could not be read.")


class PartDiff(_Model):
    part: str
    baseline: float
    candidate: float
    difference: float


class TraceDiff(_Model):
    """A candidate against the baseline, per profiled step (ms; bytes for copies)."""

    candidate: str
    baseline: str = vocab.BASELINE
    wall: PartDiff
    parts: list[PartDiff] = Field(description="Every part and host span either arm has, in table order.")
    copied: list[PartDiff] = Field(default_factory=list, description="Bytes copied per direction either arm has.")
    copied_total: float = Field(default=0.0, description="Difference of the bytes copied, all directions.")
    ops: list[PartDiff] = Field(default_factory=list, description="The operators whose time changed most.")
    op_categories: dict[str, str] = Field(default_factory=dict)
    kernels: PartDiff = Field(description="GPU kernel (compute) time.")
    copies_ms: float = Field(description="Difference of the time spent copying, all directions.")
    idle_ms: float = Field(description="Difference of GPU idle time.")
    same_step: bool = Field(description="The step times are within 5 % (or 1 ms).")
    same_kernels: bool = Field(description="The kernel times are within 5 % (or 1 ms).")
    causes: list[PartDiff] = Field(
        default_factory=list,
        description="Host spans (at most 2) and copies that moved the way the step did by at least 5 % of it (or 1 ms).",
    )


class TraceStats(_Model):
    """Every arm's profiler figures and each candidate's difference from the baseline."""

    arms: list[ArmTraces] = Field(default_factory=list)
    diffs: list[TraceDiff] = Field(default_factory=list)

    def arm(self, arm: str) -> ArmTraces | None:
        return next((a for a in self.arms if a.arm == arm), None)

    def diff(self, candidate: str) -> TraceDiff | None:
        return next((d for d in self.diffs if d.candidate == candidate), None)


@dataclass(frozen=True)
class RunSummary:
    """One run's stored summary as the statistics take it."""

    rel: str  # run folder relative to the experiment, e.g. "profile-A1/1"
    rows: Sequence[model.TraceRow] | None  # None: unreadable
    error: str = ""  # why it could not be read
    artifacts: Sequence[dict[str, Any]] = field(default_factory=tuple)


def arm_of(folder: str) -> str:
    return folder[len(vocab.PROFILE_PREFIX) :] if folder.startswith(vocab.PROFILE_PREFIX) else folder


def train_rows(rows: Sequence[model.TraceRow]) -> list[model.TraceRow]:
    """Training-trace rows, one file per rank (the longest, when several targets were traced)."""
    walls: dict[tuple[int, str], float] = defaultdict(float)
    for r in rows:
        if r.source == "train" and r.kind == "wall":
            walls[(r.rank, r.file)] += r.time_us
    best: dict[int, str] = {}
    for (rank, file), wall in sorted(walls.items()):
        if rank not in best or wall > walls[(rank, best[rank])]:
            best[rank] = file
    return [r for r in rows if r.source == "train" and best.get(r.rank) == r.file]


def _n_steps(rows: Sequence[model.TraceRow]) -> int:
    return len({(r.rank, r.step) for r in rows if r.kind == "wall"}) or 1


def step_parts(rows: Sequence[model.TraceRow]) -> list[StepPart]:
    """One stacked-bar segment per part, profiled step and rank."""
    out = []
    for r in train_rows(rows):
        if r.kind in ("compute", "memcpy"):
            part = r.category
        elif r.kind == "idle":
            part = IDLE
        elif r.kind == "cpu_span" and r.category == "python_overhead" and r.view == "cpu":
            part = PYTHON
        else:
            continue
        out.append(StepPart(rank=r.rank, step=r.step, part=part, ms=r.time_us / 1000.0))
    return out


def per_step(rows: Sequence[model.TraceRow]) -> dict[str, float]:
    """Mean per profiled step (over steps and ranks) of every quantity the tables show, in ms
    (bytes for `bytes:<direction>`)."""
    train = train_rows(rows)
    n = _n_steps(train)
    sums: dict[str, float] = defaultdict(float)
    for r in train:
        if r.kind == "wall":
            sums["wall"] += r.time_us / 1000
        elif r.kind in ("compute", "memcpy"):
            sums[r.category] += r.time_us / 1000
            if r.kind == "memcpy":
                sums[f"bytes:{r.category}"] += r.bytes
        elif r.kind == "idle":
            sums[IDLE] += r.time_us / 1000
        elif r.kind == "cpu_span":
            sums[SPAN_TITLES[r.category]] += r.time_us / 1000
            if r.category == "python_overhead" and r.view == "cpu":
                sums[PYTHON] += r.time_us / 1000  # a part of the CPU view's bars
    return {k: v / n for k, v in sums.items()}


def top_ops(rows: Sequence[model.TraceRow]) -> list[TopOp]:
    """The stored top operators, mean ms per profiled step, longest first."""
    train = train_rows(rows)
    n = _n_steps(train)
    out: dict[str, list[Any]] = {}
    for r in train:
        if r.kind == "top_op":
            slot = out.setdefault(r.name, [0.0, r.category])
            slot[0] += r.time_us / 1000 / n
    ops = [TopOp(name=k, category=v[1], ms=v[0]) for k, v in out.items()]
    return sorted(ops, key=lambda o: -o.ms)


def pageable(ops: Sequence[TopOp], means: dict[str, float]) -> list[PageableCopy]:
    """Copies from pageable host memory among the top operators, with their rate."""
    out = []
    for op in ops:
        if "Pageable" not in op.name or op.ms <= 0:
            continue
        size = means.get(f"bytes:{op.category}", 0.0)
        rate = size / (op.ms / 1000) / 1e9 if size else None
        out.append(PageableCopy(name=op.name, direction=op.category, ms=op.ms, bytes=size, gb_per_s=rate))
    return out


def memory(rows: Sequence[model.TraceRow]) -> MemoryStats:
    """Peak memory of the snapshots, and for an OOM snapshot what was live at the failure."""
    mem = [r for r in rows if r.source == "memory"]
    peaks = {r.category: r.bytes for r in mem if r.kind == "mem_peak"}
    live = sorted((r for r in mem if r.kind == "mem_live" and not r.name), key=lambda r: -r.bytes)
    frames = [r for r in mem if r.kind == "mem_live" and r.name][:5]
    oom = [r for r in mem if r.kind == "mem_oom"]
    return MemoryStats(
        cpu_peak_rss=peaks.get("cpu_peak_rss"),
        allocated=peaks.get("allocated"),
        reserved=peaks.get("reserved"),
        live_by_area=[LiveFrame(name="", area=r.category, bytes=r.bytes, count=r.count) for r in live],
        live_frames=[LiveFrame(name=r.name, area=r.category, bytes=r.bytes, count=r.count) for r in frames],
        oom=bool(oom),
        oom_requested=next((r.bytes for r in oom if r.category == "requested"), 0),
        oom_device_free=next((r.bytes for r in oom if r.category == "device_free"), 0),
        oom_live=[LiveFrame(name=r.name, bytes=r.bytes, count=r.count) for r in oom if r.category == "live"],
    )


def sglang(rows: Sequence[model.TraceRow]) -> list[EngineTime]:
    """Rollout engines' kernel time by category (mean per profiled step, or the whole trace)."""
    per: dict[tuple[int, int], dict[str, float]] = defaultdict(lambda: defaultdict(float))
    steps: dict[tuple[int, int], set[int]] = defaultdict(set)
    for r in rows:
        if r.source != "sglang":
            continue
        key = (r.engine, r.rank)
        if r.kind == "wall":
            steps[key].add(r.step)
            per[key]["wall"] += r.time_us / 1000
        elif r.kind in ("compute", "memcpy", "idle"):
            per[key][IDLE if r.kind == "idle" else r.category] += r.time_us / 1000
    out = []
    for (engine, tp), sums in sorted(per.items()):
        n = len(steps[(engine, tp)]) or 1
        out.append(
            EngineTime(
                engine=engine, tp=tp, ms={k: sums.get(k, 0.0) / n for k in ("wall", *cats.COMPUTE_CATEGORIES, IDLE)}
            )
        )
    return out


def arm_stats(arm: str, runs: Sequence[RunSummary]) -> ArmTraces:
    """One arm's figures from the summaries of its runs (profiler runs' time, every run's memory)."""
    timed = {r.rel for r in runs if r.rel.startswith(vocab.PROFILE_PREFIX)} or {r.rel for r in runs}
    rows: list[model.TraceRow] = []
    traces: list[TraceFile] = []
    notes: list[str] = []
    for run in runs:
        if run.rows is None:
            notes.append(f"{run.rel}/{model.FILENAME}: {run.error}")
            continue
        keep = [r for r in run.rows if run.rel in timed or r.source == "memory"]
        rows += keep
        files = {r.file for r in keep}
        for a in run.artifacts:
            if str(a.get("path", "")) in files:
                traces.append(TraceFile(run=run.rel, path=str(a["path"]), bytes=a.get("bytes"), sha256=a.get("sha256")))
    train = train_rows(rows)
    walls = [r for r in train if r.kind == "wall"]
    means = per_step(rows)
    ops = top_ops(rows)
    return ArmTraces(
        arm=arm,
        runs=sorted(timed),
        view="gpu" if any(r.view == "gpu" for r in rows if r.source == "train") else "cpu",
        timed=any(r.source == "train" for r in rows),
        steps=len({r.step for r in walls}),
        ranks=len({r.rank for r in walls}),
        per_step=means,
        step_parts=step_parts(rows),
        top_ops=ops,
        pageable=pageable(ops, means),
        memory=memory(rows),
        sglang=sglang(rows),
        traces=traces,
        notes=notes,
    )


def table_keys(means: Sequence[dict[str, float]]) -> list[str]:
    """Rows of the per-step tables: the bar parts, then the host spans (Python overhead once:
    in the CPU view it is already a part)."""
    spans = list(SPAN_TITLES.values())
    if any(PYTHON in m for m in means):
        spans.remove(SPAN_TITLES["python_overhead"])
    return [*PART_ORDER, *spans]


def _pd(part: str, b: float, c: float) -> PartDiff:
    return PartDiff(part=part, baseline=b, candidate=c, difference=c - b)


def diff_stats(base: ArmTraces, cand: ArmTraces) -> TraceDiff:
    """The candidate against the baseline, per profiled step."""
    b, c = base.per_step, cand.per_step

    def between(key: str, part: str | None = None) -> PartDiff:
        """One per-step figure of both arms (0 where an arm lacks it), named `part` (else `key`)."""
        return _pd(part or key, b.get(key, 0.0), c.get(key, 0.0))

    parts = [between(k) for k in table_keys([b, c]) if k in b or k in c]
    # a direction neither arm copied in adds nothing to the total
    copied = [between(f"bytes:{d}", d) for d in cats.MEMCPY_DIRECTIONS if b.get(f"bytes:{d}") or c.get(f"bytes:{d}")]
    copied_total = sum(p.difference for p in copied)
    bo = {o.name: o for o in base.top_ops}
    co = {o.name: o for o in cand.top_ops}
    names = sorted(set(bo) | set(co))
    ops = sorted(
        (_pd(n, bo[n].ms if n in bo else 0.0, co[n].ms if n in co else 0.0) for n in names),
        key=lambda p: -abs(p.difference),
    )[:TOP_DIFF_OPS]
    categories = {p.part: (co.get(p.part) or bo[p.part]).category for p in ops}
    wall = between("wall")
    kernels = _pd(
        "kernels",
        sum(b.get(k, 0.0) for k in cats.COMPUTE_CATEGORIES),
        sum(c.get(k, 0.0) for k in cats.COMPUTE_CATEGORIES),
    )
    host = sorted((between(k) for k in SPAN_TITLES.values() if k in b or k in c), key=lambda p: -abs(p.difference))
    copies = sum(between(d).difference for d in cats.MEMCPY_DIRECTIONS)
    d = wall.difference
    big = max(1.0, 0.05 * abs(d))  # a part that moved less than this explains nothing of the change
    # the host-side spans that moved the way the step did (a span that grew cannot explain a faster step)
    causes = [p for p in host if abs(p.difference) >= big and p.difference * d > 0][:2]
    if abs(copies) >= big and copies * d > 0:
        causes.append(PartDiff(part="copies between host and device", baseline=0.0, candidate=0.0, difference=copies))
    return TraceDiff(
        candidate=cand.arm,
        baseline=base.arm,
        wall=wall,
        parts=parts,
        copied=copied,
        copied_total=copied_total,
        ops=ops,
        op_categories=categories,
        kernels=kernels,
        copies_ms=copies,
        idle_ms=between(IDLE).difference,
        same_step=abs(d) < max(1.0, SAME_WITHIN * wall.baseline),
        same_kernels=abs(kernels.difference) <= max(1.0, SAME_WITHIN * kernels.baseline),
        causes=causes,
    )


def experiment_stats(runs: Sequence[RunSummary]) -> TraceStats | None:
    """Every arm's figures from the summaries of the runs that have one (a profiler run's count for
    its arm), and each timed candidate's difference from a timed baseline; None when there is none."""
    by_arm: dict[str, list[RunSummary]] = defaultdict(list)
    for summary in runs:
        by_arm[arm_of(summary.rel.split("/")[0])].append(summary)
    if not by_arm:
        return None
    arms = [arm_stats(arm, summaries) for arm, summaries in by_arm.items()]
    base = next((a for a in arms if a.arm == vocab.BASELINE and a.timed), None)
    diffs = [diff_stats(base, a) for a in arms if base is not None and a is not base and a.timed]
    return TraceStats(arms=arms, diffs=diffs)

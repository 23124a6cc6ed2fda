"""The executor interface: what the runner needs from whatever starts a run's workload.

Two implementations: `LocalExecutor` (process groups on this machine, reportgen.execute.process)
and `RayExecutor` (a Ray job on one node of a cluster, reportgen.execute.ray_jobs; ray_run.RAY runs
the experiments). The runner
(reportgen.execute.runner) talks to them only through these two protocols, so a third executor
(Slurm, Kubernetes) implements `Executor` and `Workload` in one module and registers an
`ExecutorKind` under its name (`register`, or one line of `BUILT_IN`): the spec's `[run] executor`
is checked against the registry (`executor_kind`) and `reportgen run` looks it up there; nothing
else changes.

Capture: a local run's provenance and GPU samples are recorded by the runner on this machine. An
executor whose `captures_on_node` is true runs the workload elsewhere; it is given a
`CaptureRequest`, records both beside the workload, puts them into the run folder and hands back a
`NodeCapture` from `Workload.capture_result()` once the workload ended.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from reportgen.capture.gpu import GpuStatus
from reportgen.errors import UserError

if TYPE_CHECKING:
    from reportgen.execute.progress import ProgressDisplay
    from reportgen.plan.arms import Plan

NextBlock = Callable[[int], Sequence[str] | None]
"""A sequential campaign's schedule: given the number of the block about to start (1, 2, ...),
the formal arms to run in it, or None to stop. The caller (reportgen.campaign) makes it from the
analysis after each block; it is asked only once the block before has run."""


@dataclass(frozen=True)
class RunOptions:
    """How to execute a plan (everything but the spec itself)."""

    runs_root: Path = Path("runs")
    rerun: tuple[str, ...] = ()
    new_campaign: bool = False
    profiler: bool = True
    stop_grace_s: float = 10.0
    poll_s: float = 0.25
    budget_minutes: float | None = None  # a sequential campaign's budget for this invocation ([run] budget_minutes)
    share_machine: bool = False  # run beside another campaign on this machine (no machine lock)

    # Only the baseline, as many runs as the design's first look: a point for the performance
    # history (a nightly or post-merge run at a commit; docs/performance-history.md). No profiler runs.
    baseline_only: bool = False


@dataclass(frozen=True)
class RunOutcome:
    arm: str
    repeat: int
    status: str
    path: Path
    reused: bool = False
    detail: str = ""


@dataclass(frozen=True)
class ExperimentOutcome:
    experiment: str
    path: Path
    runs: tuple[RunOutcome, ...]
    interrupted: bool = False


@dataclass(frozen=True)
class ExitInfo:
    """How a workload ended: exit code, or the signal that ended it."""

    exit_code: int | None
    signal: str | None

    @property
    def ok(self) -> bool:
        return self.exit_code == 0


@dataclass(frozen=True)
class CaptureRequest:
    """What a node-side executor records beside the workload (same inputs as the local path)."""

    run_dir: Path
    provenance: Mapping[str, Any]  # keyword arguments of capture_provenance, less dest/env/cache_path
    gpu_interval_s: float


@dataclass(frozen=True)
class Launch:
    """What to start and where its output goes."""

    command: tuple[str, ...]
    cwd: Path
    env: Mapping[str, str]
    stdout_path: Path
    stderr_path: Path
    capture: CaptureRequest | None = None  # given iff the executor `captures_on_node`


@dataclass(frozen=True)
class NodeCapture:
    """What a node-side executor recorded: capture_provenance's summary, and the GPU sampler's status."""

    provenance: Mapping[str, Any]
    gpu: GpuStatus


class Workload(Protocol):
    """One started run: the local process group, or a Ray job."""

    def start(self) -> None:
        """Start it; stdout and stderr stream into the run folder's logs."""

    def poll(self) -> ExitInfo | None:
        """How it ended, or None while it runs. Cheap: called every few hundred milliseconds."""

    def stop(self, *, grace_s: float = 10.0) -> ExitInfo:
        """Stop it (politely, then by force after `grace_s`) and say how it ended."""

    def identity(self) -> dict[str, object]:
        """What the manifest records to find it again (pid and group, or job id): see `stop_orphan`."""

    def finish(self) -> None:
        """After it ended: stop anything it left behind (processes of its group)."""

    def capture_result(self) -> NodeCapture | None:
        """The node's provenance and GPU status (node-side capture), else None."""


class Executor(Protocol):
    """Starts the workloads of one experiment, on this machine or on one node elsewhere."""

    kind: str  # recorded in each manifest's `executor` block: "local", "ray"
    captures_on_node: bool  # see the module docstring

    @property
    def fingerprint(self) -> Mapping[str, Any] | None:
        """The machine the runs execute on, pinned by the campaign; None: this machine."""

    @property
    def lost(self) -> str | None:
        """Why the executor's machine went away mid-run, else None. Once set, the run in progress
        is interrupted and no later run of the experiment may start elsewhere."""

    def launch(self, launch: Launch) -> Workload:
        """A workload for `launch.command`, not started yet."""

    def stop_orphan(self, identity: Mapping[str, object] | None) -> bool:
        """Stop a workload left running by a runner that died (its recorded `identity`); True if one was."""


# -- the registry: executors by name -------------------------------------------------------------


class RunExperiments(Protocol):
    """Runs the plans of one `reportgen run` with one kind of executor; outcomes in plan order (None
    for an experiment that never started). `address` is where to submit (`--address`, `--ray`; None:
    the executor's own default), `display_for(plan)` the progress display of an experiment and
    `next_block_for(plan, display)` a sequential campaign's schedule (None: the fixed order)."""

    def __call__(
        self,
        plans: Sequence[Plan],
        options: RunOptions,
        *,
        address: str | None,
        display_for: Callable[[Plan], ProgressDisplay],
        next_block_for: Callable[[Plan, ProgressDisplay], NextBlock | None],
    ) -> Sequence[ExperimentOutcome | None]: ...


@dataclass(frozen=True)
class ExecutorKind:
    """A registered executor: its name (the spec's `[run] executor`, the manifest's `executor.kind`)
    and how `reportgen run` runs experiments with it."""

    name: str
    run: RunExperiments
    on_this_machine: bool = True  # runs measure this machine: `reportgen run` holds its machine lock
    parallel: bool = False  # several experiments run at once (their progress is tagged lines)
    summary: str = ""  # one line for error messages and docs


BUILT_IN: dict[str, str] = {
    "local": "reportgen.execute.runner:LOCAL",  # process groups on this machine
    "ray": "reportgen.execute.ray_run:RAY",  # a Ray job on one node of a cluster per experiment
}
"""Executors that ship with reportgen: name -> "module:attribute" of their `ExecutorKind`, imported
when first looked up (Ray's client is imported only by a Ray run)."""
_REGISTERED: dict[str, ExecutorKind] = {}


def register(kind: ExecutorKind) -> ExecutorKind:
    """Add an executor under `kind.name` (a plug-in, or a test); a name is registered once."""
    known = _REGISTERED.get(kind.name)
    if (known is not None and known is not kind) or (kind.name in BUILT_IN and known is None):
        raise ValueError(f"an executor named {kind.name!r} is registered already")
    _REGISTERED[kind.name] = kind
    return kind


def unregister(name: str) -> None:
    """Remove an executor `register` added (tests clean up with it); built-in ones stay."""
    if name not in BUILT_IN:
        _REGISTERED.pop(name, None)


def executor_names() -> tuple[str, ...]:
    """Every executor a spec may name, sorted."""
    return tuple(sorted({*BUILT_IN, *_REGISTERED}))


def executor_kind(name: str, *, where: str = "[run] executor") -> ExecutorKind:
    """The registered executor `name`; an unknown one is the user's error, naming the known ones."""
    kind = _REGISTERED.get(name)
    if kind is not None:
        return kind
    if name not in BUILT_IN:
        raise UserError(f"{where} {name!r}: no such executor; known: {', '.join(executor_names())}")
    module, attr = BUILT_IN[name].split(":")
    kind = getattr(importlib.import_module(module), attr)
    assert isinstance(kind, ExecutorKind) and kind.name == name, BUILT_IN[name]
    _REGISTERED[name] = kind
    return kind

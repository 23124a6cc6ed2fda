"""The executor interface: what the runner needs from whatever starts a run's workload.

Two implementations: `LocalExecutor` (process groups on this machine, reportgen.execute.process)
and `RayExecutor` (a Ray job on one node of a cluster, reportgen.execute.ray_jobs). The runner
(reportgen.execute.runner) talks to them only through these two protocols, so a third executor
(Slurm, Kubernetes) implements `Executor` and `Workload` and nothing else changes.

Capture: a local run's provenance and GPU samples are recorded by the runner on this machine. An
executor whose `captures_on_node` is true runs the workload elsewhere; it is given a
`CaptureRequest`, records both beside the workload, puts them into the run folder and hands back a
`NodeCapture` from `Workload.capture_result()` once the workload ended.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from reportgen.capture.gpu import GpuStatus


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

"""The executor interface: a third executor written against reportgen.execute.executor alone
drives the runner, with node-side capture and a machine lost mid-experiment (the paths the Ray
executor takes), on the real tiny workload of conftest.py."""

from __future__ import annotations

import io
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from rich.console import Console

from reportgen.capture.gpu import GpuStatus
from reportgen.execute.executor import CaptureRequest, Executor, ExitInfo, Launch, NodeCapture
from reportgen.execute.process import LocalExecutor, LocalProcess, stop_orphaned_group
from reportgen.execute.progress import ProgressDisplay
from reportgen.execute.runner import RunOptions, run_plan
from reportgen.pipeline import load_plan

from .conftest import make_experiment

NODE_PYTHON = "3.x on the node"
NODE_GPU = "sampled on the node"


class NodeSideRun:
    """A local process group whose provenance and GPU status come back as from a remote node."""

    def __init__(self, process: LocalProcess, capture: CaptureRequest, executor: NodeSideExecutor) -> None:
        self.process = process
        self.capture = capture
        self.executor = executor

    def start(self) -> None:
        self.process.start()

    def poll(self) -> ExitInfo | None:
        return self.process.poll()

    def stop(self, *, grace_s: float = 10.0) -> ExitInfo:
        return self.process.stop(grace_s=grace_s)

    def identity(self) -> dict[str, object]:
        return self.process.identity()

    def finish(self) -> None:
        self.process.finish()
        if self.executor.lose_after == self.executor.launched:
            self.executor.lost = "the test node went away"

    def capture_result(self) -> NodeCapture:
        (self.capture.run_dir / "provenance").mkdir()
        (self.capture.run_dir / "provenance" / "python.txt").write_text(NODE_PYTHON + "\n")
        return NodeCapture({"python_version": NODE_PYTHON}, GpuStatus(available=False, reason=NODE_GPU))


class NodeSideExecutor:
    kind = "node-side"
    captures_on_node = True
    fingerprint: Mapping[str, Any] | None = None

    def __init__(self, lose_after: int | None = None) -> None:
        self.lose_after = lose_after
        self.launched = 0
        self.lost: str | None = None
        self.captures: list[CaptureRequest] = []

    def launch(self, launch: Launch) -> NodeSideRun:
        assert launch.capture is not None, "the runner gives a capture request to a node-side executor"
        self.launched += 1
        self.captures.append(launch.capture)
        return NodeSideRun(LocalProcess(launch), launch.capture, self)

    def stop_orphan(self, identity: Mapping[str, object] | None) -> bool:
        return stop_orphaned_group(identity)


def _run(spec: Path, runs: Path, executor: Executor) -> Any:
    display = ProgressDisplay(Console(file=io.StringIO()), live=False)
    return run_plan(
        load_plan(spec, None), RunOptions(runs_root=runs, profiler=False), display=display, executor=executor
    )


def _manifest(runs: Path, arm: str) -> dict[str, Any]:
    return json.loads((runs / "exp" / arm / "1" / "manifest.json").read_text())


def test_node_side_capture_is_recorded_and_nothing_is_captured_here(tmp_path: Path) -> None:
    spec = make_experiment(tmp_path / "recipes")
    runs = tmp_path / "runs"
    executor = NodeSideExecutor()
    outcome = _run(spec, runs, executor)
    assert [r.status for r in outcome.runs] == ["complete", "complete"]
    assert not outcome.interrupted
    assert [c.run_dir for c in executor.captures] == [runs / "exp" / "baseline" / "1", runs / "exp" / "A1" / "1"]
    assert executor.captures[0].provenance["python"]  # the same inputs the local path would use
    m = _manifest(runs, "A1")
    assert m["executor"]["kind"] == "node-side"
    assert m["python_version"] == NODE_PYTHON
    assert m["gpu"]["available"] is False and m["gpu"]["reason"] == NODE_GPU
    # The runner recorded no provenance of its own: only what the "node" put there.
    assert sorted(p.name for p in (runs / "exp" / "A1" / "1" / "provenance").iterdir()) == ["python.txt"]
    assert not (runs / "exp" / "A1" / "1" / "gpu.jsonl").exists()


def test_a_lost_machine_interrupts_the_run_and_starts_nothing_further(tmp_path: Path) -> None:
    spec = make_experiment(tmp_path / "recipes")
    runs = tmp_path / "runs"
    outcome = _run(spec, runs, NodeSideExecutor(lose_after=1))
    assert outcome.interrupted
    assert [(r.arm, r.status) for r in outcome.runs] == [("baseline", "interrupted")]
    assert _manifest(runs, "baseline")["warnings"] == ["the test node went away"]
    assert not (runs / "exp" / "A1").exists()


def test_local_executor_captures_here(tmp_path: Path) -> None:
    spec = make_experiment(tmp_path / "recipes", steps=2)
    runs = tmp_path / "runs"
    outcome = _run(spec, runs, LocalExecutor())
    assert [r.status for r in outcome.runs] == ["complete", "complete"]
    m = _manifest(runs, "baseline")
    assert m["executor"]["kind"] == "local"
    assert m["python_version"] and m["python_version"] != NODE_PYTHON
    assert len(list((runs / "exp" / "baseline" / "1" / "provenance").iterdir())) > 1
    assert m["gpu"]["reason"] != NODE_GPU

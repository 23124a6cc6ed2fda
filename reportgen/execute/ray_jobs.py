"""The Ray executor for one experiment and its runs as Ray jobs (execute stage).

The runner (reportgen.execute.runner) stays in charge of runs/: it is given the `RayExecutor`
made here instead of the local one (both implement reportgen.execute.executor.Executor). Each run
becomes one job (`RayJob`) submitted through Ray's Job Submission API, pinned with the label
selector `ray.io/node-id` to the node claimed for the experiment, whose entrypoint is
reportgen.execute.ray_node on the node: that wrapper records provenance and GPU samples beside
the workload and ships them back through the job log, which is followed here and split back into
stdout.log / stderr.log (reportgen.execute.ray_log). A job whose node dies marks the executor
`lost`.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import os
import shlex
import threading
import time
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from reportgen.capture.gpu import GpuStatus
from reportgen.execute import ray_cluster as cluster
from reportgen.execute import ray_node
from reportgen.execute.executor import CaptureRequest, ExitInfo, Launch, NodeCapture
from reportgen.execute.process import stop_orphaned_group
from reportgen.execute.ray_claim import NodeClaim
from reportgen.execute.ray_cluster import Node
from reportgen.execute.ray_log import LogDemux, extract_into, unpack_result
from reportgen.plan.arms import Plan

if TYPE_CHECKING:  # ray is an optional extra: imported where a cluster is used
    from ray.job_submission import JobSubmissionClient

STATUS_EVERY_S = 1.0
NODE_CHECK_EVERY_S = 5.0
NODE_DEAD_WAIT_S = 60.0  # how long a job that ended without its result waits for its node to be declared dead


class RayExecutor:
    """The runner's executor for one experiment on one node (see reportgen.execute.executor)."""

    kind = "ray"
    captures_on_node = True

    def __init__(
        self,
        plan: Plan,
        *,
        address: str,
        node: Node,
        fingerprint: dict[str, Any],
        client: JobSubmissionClient | None = None,
    ) -> None:
        self.plan = plan
        self.address = address
        self.node = node
        self.fingerprint: Mapping[str, Any] | None = fingerprint
        self.client = client or cluster.connect(address)
        self.lost: str | None = None  # set when a job of this experiment lost the node
        self.claim: NodeClaim | None = None  # the claim job holding the node, released at the end

    def launch(self, launch: Launch) -> RayJob:
        return RayJob(self, launch)

    def stop_orphan(self, identity: Mapping[str, object] | None) -> bool:
        """Stop a job (or, for a local run, a process group) left running by a runner that died."""
        if not identity or "job_id" not in identity:
            return stop_orphaned_group(identity)
        job_id = str(identity["job_id"])
        client = (
            self.client
            if identity.get("address") in (None, self.address)
            else cluster.connect(str(identity["address"]))
        )
        try:
            if str(client.get_job_status(job_id)) in cluster.TERMINAL:
                return False
            client.stop_job(job_id)
        except Exception:
            return False  # the job is gone with its cluster: nothing left to stop
        cluster.wait_terminal(client, job_id, 60.0)
        return True


def job_env(env: Mapping[str, str], base: Mapping[str, str]) -> dict[str, str]:
    """What the runner added to its own environment: the only variables that travel to the node.

    The node keeps its own PATH, HOME, drivers and so on; the spec's [recipe.env], the arm's
    env and reportgen's variables are set on top.
    """
    return {k: v for k, v in env.items() if base.get(k) != v}


class RayJob:
    """One run as one Ray job; follows its log into the run folder as it arrives."""

    def __init__(self, executor: RayExecutor, launch: Launch) -> None:
        if launch.capture is None:
            raise ValueError("the Ray executor records provenance on the node: it needs a CaptureRequest")
        self.executor = executor
        self.client = executor.client
        self.command = list(launch.command)
        self.cwd = Path(launch.cwd)
        self.env = dict(launch.env)
        self.capture: CaptureRequest = launch.capture
        self.run_dir = Path(launch.capture.run_dir)
        self.demux = LogDemux(launch.stdout_path, launch.stderr_path)
        run = self.run_dir
        name = executor.plan.spec.name
        self.job_id = f"reportgen-{name}-{run.parent.name}-{run.name}-{uuid.uuid4().hex[:8]}"
        self._tail: threading.Thread | None = None
        self._exit: ExitInfo | None = None
        self._result: dict[str, Any] | None = None
        self._last_status = 0.0
        self._last_node_check = time.monotonic()
        self._status = "PENDING"

    def _job(self) -> dict[str, Any]:
        prov = dict(self.capture.provenance)
        for key in ("recipe_repo", "model_dir"):
            prov[key] = str(prov[key]) if prov.get(key) else None
        prov["data_files"] = [str(p) for p in prov.get("data_files") or []]
        files = {}
        for arg in self.command[1:2]:  # the runner's patched recipe copy, for nodes without the shared folder
            path = Path(arg)
            if path.name.startswith(".reportgen.") and path.is_file():
                files[str(path)] = base64.b64encode(path.read_bytes()).decode()
        return {
            "mode": "run",
            "command": self.command,
            "cwd": str(self.cwd),
            "run_dir": str(self.run_dir.resolve()),
            "provenance": prov,
            "gpu_interval_s": self.capture.gpu_interval_s,
            "files": files,
            # An arm at a git revision (docs/revisions.md): the workload's PYTHONPATH is its checkout alone.
            **({"pythonpath": self.env["PYTHONPATH"]} if self.env.get("REPORTGEN_REVISION") else {}),
        }

    def start(self) -> None:
        spec = self.executor.plan.spec
        env_vars = job_env(self.env, os.environ)
        env_vars[ray_node.JOB_ENV] = ray_node.encode_job(self._job())
        run = self.run_dir
        cluster.submit(
            self.client,
            entrypoint=f"{shlex.quote(spec.recipe.interpreter())} -m reportgen.execute.ray_node",
            submission_id=self.job_id,
            runtime_env={"env_vars": env_vars, "py_modules": [str(cluster.PACKAGE_DIR)]},
            metadata={
                "reportgen_experiment": spec.name,
                "reportgen_arm": run.parent.name,
                "reportgen_repeat": run.name,
            },
            entrypoint_num_cpus=spec.run.num_cpus,
            entrypoint_num_gpus=spec.run.num_gpus,
            entrypoint_label_selector={cluster.LABEL_NODE_ID: self.executor.node.node_id},
        )
        self._tail = threading.Thread(target=self._follow, name=f"reportgen-log-{self.job_id}", daemon=True)
        self._tail.start()

    def _follow(self) -> None:
        async def follow() -> None:
            async for chunk in self.client.tail_job_logs(self.job_id):
                self.demux.feed(chunk)

        # On any error the remainder is fetched in one piece once the job has ended (_finish).
        with contextlib.suppress(Exception):
            asyncio.run(follow())

    def identity(self) -> dict[str, object]:
        return {"job_id": self.job_id, "node_id": self.executor.node.node_id, "address": self.executor.address}

    def poll(self) -> ExitInfo | None:
        if self._exit is not None:
            return self._exit
        now = time.monotonic()
        if now - self._last_status < STATUS_EVERY_S:
            return None
        self._last_status = now
        try:
            self._status = str(self.client.get_job_status(self.job_id))
        except Exception:
            self._status = "UNKNOWN"
        if self._status in cluster.TERMINAL:
            return self._finish()
        if self.demux.result_complete:
            # The result came back while Ray still says RUNNING: a job whose node died keeps that
            # status until the cluster declares the node dead (about a minute by default).
            return self._finish(wait_s=5.0)
        if now - self._last_node_check >= NODE_CHECK_EVERY_S or self._status == "UNKNOWN":
            self._last_node_check = now
            if cluster.node_alive(self.executor.address, self.executor.node.node_id) is False:
                self._mark_lost()
                with contextlib.suppress(Exception):
                    self.client.stop_job(self.job_id)
                return self._finish(wait_s=5.0)
        return None

    def stop(self, *, grace_s: float = 10.0) -> ExitInfo:
        if self._exit is not None:
            return self._exit
        with contextlib.suppress(Exception):
            self.client.stop_job(self.job_id)
        cluster.wait_terminal(self.client, self.job_id, grace_s + 30.0)
        return self._finish(default=ExitInfo(exit_code=None, signal="SIGTERM"))

    def _mark_lost(self) -> None:
        node = self.executor.node
        self.executor.lost = f"Ray node {node.node_id[:12]} ({node.ip}) died during the run"

    def _finish(self, *, wait_s: float = 0.0, default: ExitInfo | None = None) -> ExitInfo:
        if wait_s:
            cluster.wait_terminal(self.client, self.job_id, wait_s)
        if self._tail is not None:
            self._tail.join(timeout=15.0)
        try:  # whatever the tail missed (a dropped websocket) is still in the full log
            full = self.client.get_job_logs(self.job_id)
            if len(full) > self.demux.consumed:
                self.demux.feed(full[self.demux.consumed :])
        except Exception:
            pass
        self.demux.close()
        unpacked = unpack_result(self.demux.result)
        if unpacked is not None:
            self._result, blob = unpacked
            extract_into(blob, self.run_dir)
            info = ExitInfo(self._result.get("exit_code"), self._result.get("signal"))
            if self._result.get("orphaned") and self.executor.lost is None:
                self._mark_lost()  # the wrapper outlived its job's raylet: the node is gone
        else:
            info = default or self._info_from_job()
            if self.executor.lost is None and (default is None and self._node_gone()):
                self._mark_lost()
        self._exit = info
        return info

    def _node_gone(self) -> bool:
        """The job ended and no result came back: its wrapper died, most often with its node. The
        cluster declares a node dead only after some missed health checks, so ask for a while
        before taking the run for a failure (an interrupted run is redone, a failed one is kept)."""
        deadline = time.monotonic() + NODE_DEAD_WAIT_S
        while True:
            if cluster.node_alive(self.executor.address, self.executor.node.node_id) is False:
                return True
            if time.monotonic() >= deadline:
                return False
            time.sleep(1.0)

    def _info_from_job(self) -> ExitInfo:
        try:
            details = self.client.get_job_info(self.job_id)
            code = getattr(details, "driver_exit_code", None)
        except Exception:
            code = None
        return ExitInfo(exit_code=code if code is not None else 1, signal=None)

    def finish(self) -> None:
        """Nothing left behind here: the node's wrapper stops its own process group."""
        return None

    def capture_result(self) -> NodeCapture:
        if self._result is None:
            reason = "no result came back from the Ray node (the job was stopped or its node was lost)"
            return NodeCapture({}, GpuStatus(available=False, reason=reason))
        gpu = dict(self._result.get("gpu") or {})
        status = (
            GpuStatus(**{k: gpu[k] for k in GpuStatus.__dataclass_fields__ if k in gpu})
            if gpu
            else GpuStatus(available=False, reason="the node sent no GPU status")
        )
        prov = dict(self._result.get("provenance") or {})
        return NodeCapture(prov, status)

"""Ray executor (execute stage): each run is a Ray job pinned to one node per experiment.

The runner (reportgen.execute.runner) stays in charge of runs/: it is given the `RayExecutor`
made here instead of the local one (both implement reportgen.execute.executor.Executor). Each run becomes one job submitted through
Ray's Job Submission API, whose entrypoint is reportgen.execute.ray_node on the node: that
wrapper records provenance and GPU samples beside the workload and ships them back through
the job log, which is followed here and split back into stdout.log / stderr.log.

Same-machine rule: an experiment takes one node (preferring the node its campaign already
ran on), every arm and repeat is pinned to it with the label selector `ray.io/node-id`, and
the campaign pins that node's fingerprint. Experiments run in this process take distinct
nodes; one waits while all fitting nodes are taken. If the node dies mid-run, the run is
marked interrupted and `run_experiments` reruns every arm of that experiment together on
another node as a new campaign (the old one is archived, never mixed).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import hashlib
import io
import json
import os
import shlex
import socket
import sys
import tarfile
import threading
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from reportgen.capture.fingerprint import class_id
from reportgen.capture.gpu import GpuStatus
from reportgen.errors import UserError
from reportgen.execute import ray_node
from reportgen.execute.executor import (
    CaptureRequest,
    ExecutorKind,
    ExitInfo,
    ExperimentOutcome,
    Launch,
    NextBlock,
    NodeCapture,
    RunOptions,
)
from reportgen.execute.process import stop_orphaned_group
from reportgen.execute.progress import ProgressDisplay
from reportgen.execute.runner import run_plan
from reportgen.execute.signals import stop_on_signals
from reportgen.plan.arms import Plan
from reportgen.store import lock
from reportgen.store.runs import read_campaign

if TYPE_CHECKING:  # ray is an optional extra: imported where a cluster is used
    from ray.job_submission import JobSubmissionClient

LABEL_NODE_ID = "ray.io/node-id"
TERMINAL = ("SUCCEEDED", "FAILED", "STOPPED")
STATUS_EVERY_S = 1.0
NODE_CHECK_EVERY_S = 5.0
PROBE_TIMEOUT_S = 180.0
MAX_NODE_ATTEMPTS = 2
NODE_DEAD_WAIT_S = 60.0  # how long a job that ended without its result waits for its node to be declared dead
CLAIM_RETRY_S = 10.0  # between tries of nodes held by other runners (each try is a short job)
SUBMIT_RETRY_S = 60.0
_PACKAGE_DIR = Path(__file__).resolve().parents[1]  # reportgen/, shipped to nodes as a py_module


def normalise_address(address: str) -> str:
    """The dashboard's HTTP address: `host:port` becomes `http://host:port`."""
    address = address.strip().rstrip("/")
    if "://" not in address:
        address = f"http://{address}"
    return address


def resolve_address(plan: Plan, address: str | None) -> str:
    chosen = address or plan.spec.run.ray_address or os.environ.get("RAY_ADDRESS")
    if not chosen:
        raise UserError(
            f'{plan.spec.source_path}: [run] executor = "ray" needs a cluster address: pass --ray '
            "http://HEAD:8265 or set [run].ray_address (the address of the Ray dashboard)"
        )
    return normalise_address(chosen)


def _client(address: str) -> JobSubmissionClient:
    import logging

    from ray.job_submission import JobSubmissionClient

    # The SDK logs every package upload and websocket close at INFO; the runner has its own display.
    for name in ("ray.dashboard.modules.dashboard_sdk", "ray.dashboard.modules.job.sdk"):
        logging.getLogger(name).setLevel(logging.WARNING)
    try:
        return JobSubmissionClient(address)
    except Exception as exc:  # ConnectionError, or a refused/odd HTTP answer
        raise UserError(
            f"--ray {address}: no Ray dashboard answers there ({type(exc).__name__}); give the address of a "
            "running cluster's dashboard, e.g. http://HEAD:8265 (see docs/ray.md)"
        ) from exc


# -- nodes --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Node:
    node_id: str
    ip: str
    name: str
    resources: Mapping[str, float] = field(default_factory=dict, hash=False, compare=False)

    def record(self) -> dict[str, Any]:
        return {"node_id": self.node_id, "node_ip": self.ip, "node_name": self.name}


def alive_nodes(address: str) -> list[Node]:
    from ray.util.state import list_nodes

    # Without raise_on_missing_output=False the state API raises once a node has died: the filter
    # leaves out the dead node, which it then counts as output lost to truncation.
    nodes = list_nodes(
        address=address,
        filters=[("state", "=", "ALIVE")],
        detail=True,
        limit=10000,
        raise_on_missing_output=False,
    )
    return sorted(
        (Node(n.node_id, n.node_ip, n.node_name, dict(n.resources_total or {})) for n in nodes),
        key=lambda n: n.node_id,
    )


def node_alive(address: str, node_id: str) -> bool | None:
    """True/False, or None when the cluster cannot be asked right now."""
    try:
        return any(n.node_id == node_id for n in alive_nodes(address))
    except Exception:
        return None


def fits(node: Node, num_cpus: float, num_gpus: float) -> bool:
    return node.resources.get("CPU", 0) >= num_cpus and node.resources.get("GPU", 0) >= num_gpus


def choose_node(
    nodes: Sequence[Node],
    *,
    num_cpus: float,
    num_gpus: float,
    preferred: str | None,
    busy: set[str],
    excluded: set[str],
) -> Node | None:
    """The campaign's node when it is free and fits; else the first free fitting node."""
    ok = [n for n in nodes if fits(n, num_cpus, num_gpus) and n.node_id not in excluded]
    free = [n for n in ok if n.node_id not in busy]
    for n in free:
        if n.node_id == preferred:
            return n
    return free[0] if free else None


class NodePool:
    """Hands each experiment its own node. Within one `reportgen run` a set of busy nodes keeps
    experiments apart; across runners (and against a local `reportgen run` on a node's machine) a
    claim job holds the node's locks on the node itself (`claim_node`). An experiment waits for a
    free node; a node held by a runner of this machine that died is taken over."""

    def __init__(self, address: str, client: JobSubmissionClient | None = None) -> None:
        self.address = address
        self.client = client
        self.busy: set[str] = set()
        self.cond = threading.Condition()

    def acquire(
        self,
        plan: Plan,
        *,
        preferred: str | None,
        excluded: set[str],
        stop: threading.Event,
        accept: Callable[[NodeClaim], str | None],
        machine: bool,
    ) -> NodeClaim | None:
        """A claimed node for `plan` that `accept` takes (it returns why not, or None), or None when
        `stop` was set while waiting. UserError when no alive node fits, or none is acceptable."""
        spec = plan.spec
        name, num_cpus, num_gpus = spec.name, spec.run.num_cpus, spec.run.num_gpus
        client = self.client or _client(self.address)
        announced: set[str] = set()
        while not stop.is_set():
            nodes = [n for n in alive_nodes(self.address) if fits(n, num_cpus, num_gpus) and n.node_id not in excluded]
            if not nodes:
                raise UserError(
                    f"experiment {name}: no alive node of the cluster at {self.address} has {num_cpus:g} CPU and "
                    f"{num_gpus:g} GPU; lower [run].num_cpus / num_gpus or add a node"
                )
            nodes.sort(key=lambda n: n.node_id != preferred)
            refusals: list[str] = []
            waiting: list[str] = []
            for node in nodes:
                with self.cond:
                    if node.node_id in self.busy:
                        waiting.append(f"node {node.ip} ({node.node_id[:12]}) runs another experiment of this run")
                        continue
                    self.busy.add(node.node_id)
                try:
                    claim = claim_node(client, node, plan, machine=machine)
                    why = None if isinstance(claim, lock.Holder | None) else accept(claim)
                except BaseException:
                    self.release(node)
                    raise
                if isinstance(claim, NodeClaim) and why is None:
                    return claim
                self.release(node)
                if isinstance(claim, NodeClaim):
                    release_claim(client, claim)
                    refusals.append(f"node {node.ip} ({node.node_id[:12]}): {why}")
                else:
                    waiting.append(f"node {node.ip} ({node.node_id[:12]}) is held by {lock.describe(claim)}")
            if not waiting:
                raise UserError(f"experiment {name}: no node can take it: {'; '.join(refusals)}")
            said = "; ".join(waiting)
            if said not in announced:
                sys.stderr.write(f"[{name}] waiting for a free node: {said}\n")
                announced.add(said)
            with self.cond:
                self.cond.wait(timeout=CLAIM_RETRY_S)
        return None

    def release(self, node: Node) -> None:
        with self.cond:
            self.busy.discard(node.node_id)
            self.cond.notify_all()


# -- the job log ---------------------------------------------------------------------------------


class LogDemux:
    """Splits the wrapper's tagged job log back into stdout.log, stderr.log and the result block."""

    def __init__(self, stdout_path: Path, stderr_path: Path) -> None:
        self.out = open(stdout_path, "a", encoding="utf-8")  # noqa: SIM115 (open until close())
        self.err = open(stderr_path, "a", encoding="utf-8")  # noqa: SIM115
        self.pending = ""
        self.consumed = 0  # characters of the job log fed so far
        self.result: list[str] = []
        self.lock = threading.Lock()

    def feed(self, text: str) -> None:
        with self.lock:
            self.consumed += len(text)
            self.pending += text
            *lines, self.pending = self.pending.split("\n")
            for line in lines:
                self._line(line)
            self.out.flush()
            self.err.flush()

    def _line(self, line: str) -> None:
        tag, body = line[:2], line[2:]
        if tag == "O|":
            self.out.write(body + "\n")
        elif tag == "o|":
            self.out.write(body)
        elif tag == "E|":
            self.err.write(body + "\n")
        elif tag == "e|":
            self.err.write(body)
        elif tag == "R|":
            self.result.append(body)
        else:  # Ray's own lines, or a wrapper that failed before it could tag anything
            self.err.write(line + "\n")

    @property
    def result_complete(self) -> bool:
        """The wrapper's result block has come through: it is about to exit, whatever Ray reports."""
        with self.lock:
            return any(line.startswith("END ") for line in self.result) and "BEGIN" in self.result

    def close(self) -> None:
        with self.lock:
            if self.pending:
                self._line(self.pending)
                self.pending = ""
            self.out.close()
            self.err.close()


def unpack_result(lines: Sequence[str]) -> tuple[dict[str, Any], bytes] | None:
    """(result.json, the tar.gz bytes) from a complete, intact result block; None otherwise."""
    if "BEGIN" not in lines:
        return None
    start = len(lines) - 1 - lines[::-1].index("BEGIN")
    tail = lines[start + 1 :]
    end = next((i for i, line in enumerate(tail) if line.startswith("END ")), None)
    if end is None:
        return None
    data = "".join(tail[:end])
    if hashlib.sha256(data.encode()).hexdigest() != tail[end].split(" ", 1)[1].strip():
        return None
    blob = base64.b64decode(data)
    with tarfile.open(fileobj=io.BytesIO(blob), mode="r:gz") as tar:
        member = tar.extractfile(ray_node.RESULT_FILE)
        result = json.loads(member.read()) if member else {}
    return result, blob


def extract_into(blob: bytes, run_dir: Path) -> None:
    """Put the node's provenance/, gpu.jsonl, tensorboard/, traces/ into the run folder."""
    with tarfile.open(fileobj=io.BytesIO(blob), mode="r:gz") as tar:
        members = [m for m in tar.getmembers() if m.name != ray_node.RESULT_FILE]
        tar.extractall(run_dir, members=members, filter="data")


# -- executor and job ----------------------------------------------------------------------------


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
        self.client = client or _client(address)
        self.lost: str | None = None  # set when a job of this experiment lost the node
        self.claim: NodeClaim | None = None  # the claim job holding the node, released at the end

    def launch(self, launch: Launch) -> RayJob:
        return RayJob(self, launch)

    def stop_orphan(self, identity: Mapping[str, object] | None) -> bool:
        """Stop a job (or, for a local run, a process group) left running by a runner that died."""
        if not identity or "job_id" not in identity:
            return stop_orphaned_group(identity)
        job_id = str(identity["job_id"])
        client = self.client if identity.get("address") in (None, self.address) else _client(str(identity["address"]))
        try:
            if str(client.get_job_status(job_id)) in TERMINAL:
                return False
            client.stop_job(job_id)
        except Exception:
            return False  # the job is gone with its cluster: nothing left to stop
        _wait_terminal(client, job_id, 60.0)
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
        }

    def start(self) -> None:
        spec = self.executor.plan.spec
        env_vars = job_env(self.env, os.environ)
        env_vars[ray_node.JOB_ENV] = ray_node.encode_job(self._job())
        run = self.run_dir
        submit(
            self.client,
            entrypoint=f"{shlex.quote(spec.recipe.interpreter())} -m reportgen.execute.ray_node",
            submission_id=self.job_id,
            runtime_env={"env_vars": env_vars, "py_modules": [str(_PACKAGE_DIR)]},
            metadata={
                "reportgen_experiment": spec.name,
                "reportgen_arm": run.parent.name,
                "reportgen_repeat": run.name,
            },
            entrypoint_num_cpus=spec.run.num_cpus,
            entrypoint_num_gpus=spec.run.num_gpus,
            entrypoint_label_selector={LABEL_NODE_ID: self.executor.node.node_id},
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
        if self._status in TERMINAL:
            return self._finish()
        if self.demux.result_complete:
            # The result came back while Ray still says RUNNING: a job whose node died keeps that
            # status until the cluster declares the node dead (about a minute by default).
            return self._finish(wait_s=5.0)
        if now - self._last_node_check >= NODE_CHECK_EVERY_S or self._status == "UNKNOWN":
            self._last_node_check = now
            if node_alive(self.executor.address, self.executor.node.node_id) is False:
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
        _wait_terminal(self.client, self.job_id, grace_s + 30.0)
        return self._finish(default=ExitInfo(exit_code=None, signal="SIGTERM"))

    def _mark_lost(self) -> None:
        node = self.executor.node
        self.executor.lost = f"Ray node {node.node_id[:12]} ({node.ip}) died during the run"

    def _finish(self, *, wait_s: float = 0.0, default: ExitInfo | None = None) -> ExitInfo:
        if wait_s:
            _wait_terminal(self.client, self.job_id, wait_s)
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
            if node_alive(self.executor.address, self.executor.node.node_id) is False:
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


def submit(client: JobSubmissionClient, **kwargs: Any) -> str:
    """submit_job, retried while the cluster says its job agent is not ready yet (a node just joined)."""
    deadline = time.monotonic() + SUBMIT_RETRY_S
    while True:
        try:
            return client.submit_job(**kwargs)
        except RuntimeError as exc:
            if "try again" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(1.0)


def _wait_terminal(client: JobSubmissionClient, job_id: str, timeout_s: float) -> str:
    deadline = time.monotonic() + timeout_s
    status = "UNKNOWN"
    while time.monotonic() < deadline:
        try:
            status = str(client.get_job_status(job_id))
        except Exception:
            status = "UNKNOWN"
        if status in TERMINAL:
            break
        time.sleep(0.25)
    return status


# -- choosing a node, probing its fingerprint --------------------------------------------------


@dataclass(frozen=True)
class NodeClaim:
    """A node held for one experiment by a claim job (ray_node's `hold` mode), and what it probed."""

    node: Node
    job_id: str
    probe: dict[str, Any]  # the node's fingerprint, fingerprint_id and hostname


def _claim_job(client: JobSubmissionClient, node: Node, plan: Plan, machine: bool) -> tuple[str, dict[str, Any]]:
    """Submit a claim job on `node` and read its answer: (job id, result)."""
    spec = plan.spec
    python = spec.recipe.interpreter()
    job_id = f"reportgen-hold-{spec.name}-{uuid.uuid4().hex[:8]}"
    runs = spec.run.repeats * (len(plan.arms) + 1)
    job = {
        "mode": "hold",
        "node_id": node.node_id,
        "machine": machine,
        # A runner that dies leaves its claim; a later runner of this machine stops it, else it ends here.
        "max_s": float(spec.run.timeout_s) * runs + 3600.0,
        "experiment": spec.name,
        "job_id": job_id,
        "runner": {"host": socket.gethostname(), "pid": os.getpid()},
        "command_text": f"reportgen run of {spec.name}",
    }
    submit(
        client,
        entrypoint=f"{shlex.quote(python)} -m reportgen.execute.ray_node",
        submission_id=job_id,
        runtime_env={"env_vars": {ray_node.JOB_ENV: ray_node.encode_job(job)}, "py_modules": [str(_PACKAGE_DIR)]},
        metadata={"reportgen_experiment": spec.name, "reportgen_claim": node.node_id},
        entrypoint_num_cpus=0,
        entrypoint_label_selector={LABEL_NODE_ID: node.node_id},
    )
    deadline = time.monotonic() + PROBE_TIMEOUT_S
    status, logs = "PENDING", ""
    while time.monotonic() < deadline:
        with contextlib.suppress(Exception):
            logs = client.get_job_logs(job_id)
        unpacked = unpack_result([line[2:] for line in logs.splitlines() if line.startswith("R|")])
        if unpacked is not None:
            return job_id, dict(unpacked[0])
        with contextlib.suppress(Exception):
            status = str(client.get_job_status(job_id))
        if status in TERMINAL:
            break
        time.sleep(0.5)
    if status not in TERMINAL:
        with contextlib.suppress(Exception):
            client.stop_job(job_id)
    last = " | ".join(logs.strip().splitlines()[-3:])
    raise UserError(
        f"Ray node {node.ip} ({node.node_id[:12]}): the reportgen claim job ended {status}: {last}; "
        f"check that `{python} -c 'import ray'` works on that node ([recipe].python)"
    )


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def claim_node(client: JobSubmissionClient, node: Node, plan: Plan, *, machine: bool) -> NodeClaim | lock.Holder | None:
    """Claim `node` for `plan`'s experiment: the claim, or the holder in the way (None: unreadable).
    A holder whose runner ran on this machine and is gone is stopped, and the node taken over."""
    for _ in range(2):
        job_id, result = _claim_job(client, node, plan, machine)
        if result.get("held"):
            return NodeClaim(node, job_id, result)
        holder = lock.Holder.from_json(result.get("holder"))
        dead = (
            holder is not None
            and holder.job_id is not None
            and holder.runner_host == socket.gethostname()
            and holder.runner_pid is not None
            and not _pid_alive(holder.runner_pid)
        )
        if not dead or holder is None or holder.job_id is None:
            return holder
        sys.stderr.write(
            f"[{plan.spec.name}] node {node.ip} ({node.node_id[:12]}): took over the claim left by "
            f"{holder.describe()}: that runner is gone; stopped its job\n"
        )
        with contextlib.suppress(Exception):
            client.stop_job(holder.job_id)
        _wait_terminal(client, holder.job_id, 30.0)
    return holder


def release_claim(client: JobSubmissionClient, claim: NodeClaim, *, wait: bool = True) -> None:
    """Stop the claim job: the node's locks go with it (a node that died took them already, and its
    job's status is not worth waiting for: `wait` False)."""
    with contextlib.suppress(Exception):
        client.stop_job(claim.job_id)
        if wait:
            _wait_terminal(client, claim.job_id, 30.0)


def placement(
    campaign: Mapping[str, Any] | None, probe: Mapping[str, Any], *, campaign_node_gone: bool
) -> tuple[str | None, bool]:
    """(why this node cannot take the campaign, or None; whether the campaign moves to it).

    The campaign's machine (same fingerprint: its node, or a loopback cluster's twin) resumes it;
    another node of the same class takes it over only once its node has left the cluster, as a new
    campaign (runs of two machines are never compared); any other node is refused."""
    if not campaign or not campaign.get("fingerprint"):
        return None, False
    if probe.get("fingerprint_id") == campaign.get("fingerprint_id"):
        return None, False
    same_class = class_id(probe.get("fingerprint") or {}) == class_id(campaign["fingerprint"])
    if same_class and campaign_node_gone:
        return None, True
    if same_class:
        return "another node of the campaign's class, while the campaign's own node is still alive", False
    return "not of the campaign's class (other hardware, driver or image)", False


def ray_executor(
    plan: Plan,
    *,
    address: str | None,
    runs_root: Path,
    pool: NodePool | None = None,
    excluded: set[str] | None = None,
    stop: threading.Event | None = None,
    options: RunOptions | None = None,
    node_lost: bool = False,
) -> tuple[RayExecutor | None, dict[str, Any], bool]:
    """An executor pinned to one claimed node for `plan`'s experiment, the executor block to record,
    and whether the campaign moves to that node (its own node died: a new campaign of the same
    class). Prefers the node the campaign ran on; (None, {}, False) if `stop` was set while waiting."""
    address = resolve_address(plan, address)
    client = _client(address)
    pool = pool or NodePool(address, client)
    spec = plan.spec
    opts = options or RunOptions(runs_root=runs_root)
    campaign = None if opts.new_campaign else read_campaign(Path(runs_root) / spec.name)
    preferred = ((campaign or {}).get("executor") or {}).get("node_id")
    # `node_lost`: this runner saw the campaign's node die (the cluster may not say so yet).
    gone = preferred is not None and (node_lost or node_alive(address, preferred) is False)
    moves: dict[str, bool] = {}

    def accept(claim: NodeClaim) -> str | None:
        why, moves[claim.job_id] = placement(campaign, claim.probe, campaign_node_gone=gone)
        return why

    claim = pool.acquire(
        plan,
        preferred=preferred,
        excluded=set(excluded or ()),
        stop=stop or threading.Event(),
        accept=accept,
        machine=not opts.share_machine,
    )
    if claim is None:
        return None, {}, False
    node, probe = claim.node, claim.probe
    executor = RayExecutor(plan, address=address, node=node, fingerprint=probe["fingerprint"], client=client)
    executor.claim = claim
    moved = moves.get(claim.job_id, False)
    if moved:
        sys.stderr.write(
            f"[{spec.name}] the campaign's node {str(preferred)[:12]} has left the cluster: moving it to node "
            f"{node.ip} ({node.node_id[:12]}) of the same class as a new campaign; its runs are archived (runs of "
            "two machines are never compared)\n"
        )
    info = {"address": address, **node.record(), "hostname": probe.get("hostname")}
    return executor, info, moved


# -- several experiments at once -----------------------------------------------------------------


def run_experiments(
    plans: Sequence[Plan],
    options: RunOptions,
    *,
    address: str | None,
    display_for: Callable[[Plan], ProgressDisplay],
    stop: threading.Event | None = None,
    next_block_for: Callable[[Plan, ProgressDisplay], NextBlock | None] | None = None,
) -> list[ExperimentOutcome | None]:
    """Run each plan on its own node, in parallel (one thread per experiment); outcomes in plan order.

    A node lost mid-experiment reruns that experiment's arms together on another node as a new
    campaign (at most MAX_NODE_ATTEMPTS nodes in all). Ctrl-C/SIGTERM stops every job.
    `next_block_for(plan, display)` gives a sequential campaign's schedule (None: the fixed order);
    every run of a campaign, so both runs of each pair, goes to its one node.
    """
    stop = stop or threading.Event()
    address = resolve_address(plans[0], address)
    pool = NodePool(address, _client(address))
    outcomes: list[ExperimentOutcome | None] = [None] * len(plans)
    errors: list[BaseException] = []

    def one(i: int, plan: Plan) -> None:
        excluded: set[str] = set()
        opts = options
        try:
            for _ in range(MAX_NODE_ATTEMPTS):
                executor, info, moved = ray_executor(
                    plan,
                    address=address,
                    runs_root=options.runs_root,
                    pool=pool,
                    excluded=excluded,
                    stop=stop,
                    options=opts,
                    node_lost=bool(excluded),
                )
                if executor is None:
                    return
                try:
                    display = display_for(plan)
                    outcomes[i] = run_plan(
                        plan,
                        replace(opts, new_campaign=opts.new_campaign or moved),
                        display=display,
                        executor=executor,
                        executor_info=info,
                        stop_event=stop,
                        next_block=next_block_for(plan, display) if next_block_for else None,
                    )
                finally:
                    if executor.claim is not None:
                        release_claim(executor.client, executor.claim, wait=executor.lost is None)
                    pool.release(executor.node)
                if executor.lost is None:
                    return
                sys.stderr.write(f"[{plan.spec.name}] {executor.lost}; resuming on another node of its class\n")
                excluded.add(executor.node.node_id)
                # The user's --new-campaign and --rerun are done; a resume keeps what finished.
                opts = replace(options, new_campaign=False, rerun=())
        except BaseException as exc:  # reported by the caller's thread
            errors.append(exc)
            stop.set()

    threads = [threading.Thread(target=one, args=(i, p), name=f"reportgen-{p.spec.name}") for i, p in enumerate(plans)]
    with stop_on_signals(stop):
        for t in threads:
            t.start()
        for t in threads:
            while t.is_alive():
                t.join(timeout=0.2)
    if errors:
        raise errors[0]
    return outcomes


RAY = ExecutorKind(
    "ray",
    run_experiments,
    on_this_machine=False,
    parallel=True,
    summary="a Ray job per run, one node of the cluster per experiment (docs/ray.md)",
)

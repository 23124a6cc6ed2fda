"""Claiming a node of a Ray cluster for one experiment (execute stage): a claim job (ray_node's
`hold` mode) holds the node's locks on the node itself and probes its fingerprint; `placement`
says whether that node may take the experiment's campaign; `NodePool` hands each experiment of
one `reportgen run` its own node, waiting while every fitting node is taken.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import socket
import sys
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from reportgen.capture.fingerprint import class_id
from reportgen.errors import UserError
from reportgen.execute import ray_node
from reportgen.execute.ray_cluster import (
    LABEL_NODE_ID,
    PACKAGE_DIR,
    TERMINAL,
    Node,
    alive_nodes,
    connect,
    fits,
    submit,
    wait_terminal,
)
from reportgen.execute.ray_log import unpack_result
from reportgen.plan.arms import Plan
from reportgen.store import lock

if TYPE_CHECKING:  # ray is an optional extra: imported where a cluster is used
    from ray.job_submission import JobSubmissionClient

PROBE_TIMEOUT_S = 180.0
CLAIM_RETRY_S = 10.0  # between tries of nodes held by other runners (each try is a short job)


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
        runtime_env={"env_vars": {ray_node.JOB_ENV: ray_node.encode_job(job)}, "py_modules": [str(PACKAGE_DIR)]},
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
        wait_terminal(client, holder.job_id, 30.0)
    return holder


def release_claim(client: JobSubmissionClient, claim: NodeClaim, *, wait: bool = True) -> None:
    """Stop the claim job: the node's locks go with it (a node that died took them already, and its
    job's status is not worth waiting for: `wait` False)."""
    with contextlib.suppress(Exception):
        client.stop_job(claim.job_id)
        if wait:
            wait_terminal(client, claim.job_id, 30.0)


def placement(
    campaign: Mapping[str, Any] | None,
    probe: Mapping[str, Any],
    *,
    campaign_node_gone: bool,
    blocks: bool = False,
) -> tuple[str | None, bool]:
    """(why this node cannot take the campaign, or None; whether the campaign moves to it).

    The campaign's machine (same fingerprint: its node, or a loopback cluster's twin) resumes it;
    another node of the same class takes it over only once its node has left the cluster, as a new
    campaign (runs of two machines are never compared); any other node is refused. A campaign run
    in blocks (`blocks`: a sequential one, reportgen.execute.parallel) pairs runs within a block only,
    so any node of its class adds blocks to it: nothing moves."""
    if not campaign or not campaign.get("fingerprint"):
        return None, False
    if probe.get("fingerprint_id") == campaign.get("fingerprint_id"):
        return None, False
    same_class = class_id(probe.get("fingerprint") or {}) == class_id(campaign["fingerprint"])
    if same_class and blocks:
        return None, False
    if same_class and campaign_node_gone:
        return None, True
    if same_class:
        return "another node of the campaign's class, while the campaign's own node is still alive", False
    return "not of the campaign's class (other hardware, driver or image)", False


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
        # Experiments of this `reportgen run` still waiting for their first node: `claim_more`
        # leaves that many free nodes to them.
        self.first_claims_pending = 0

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
        client = self.client or connect(self.address)
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

    def claim_more(
        self,
        plan: Plan,
        *,
        excluded: set[str],
        accept: Callable[[NodeClaim], str | None],
        machine: bool,
        most: int,
    ) -> list[NodeClaim]:
        """Up to `most` more claimed nodes for `plan`'s blocks, without waiting: each alive fitting
        node that is free now, claimable and accepted (`accept`: of the campaign's class)."""
        spec = plan.spec
        client = self.client or connect(self.address)
        got: list[NodeClaim] = []
        nodes = [
            n
            for n in alive_nodes(self.address)
            if n.node_id not in excluded and fits(n, spec.run.num_cpus, spec.run.num_gpus)
        ]
        with self.cond:
            most = min(most, sum(n.node_id not in self.busy for n in nodes) - self.first_claims_pending)
        for node in nodes:
            if len(got) >= most:
                break
            with self.cond:
                if node.node_id in self.busy:
                    continue
                self.busy.add(node.node_id)
            try:
                claim = claim_node(client, node, plan, machine=machine)
                why = accept(claim) if isinstance(claim, NodeClaim) else "held by another runner"
            except BaseException:
                self.release(node)
                raise
            if isinstance(claim, NodeClaim) and why is None:
                got.append(claim)
                continue
            self.release(node)
            if isinstance(claim, NodeClaim):
                release_claim(client, claim)
        return got

    def first_claim_done(self) -> None:
        """An experiment got its first node (or gave up waiting): one fewer to leave a node for."""
        with self.cond:
            self.first_claims_pending = max(0, self.first_claims_pending - 1)

    def release(self, node: Node) -> None:
        with self.cond:
            self.busy.discard(node.node_id)
            self.cond.notify_all()

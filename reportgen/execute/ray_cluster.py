"""A Ray cluster as the Ray executor sees it (execute stage): its dashboard's address, the client,
the alive nodes and what they hold, and job submission with its retries.

The ray package is an optional extra: it is imported inside the functions that talk to a cluster.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from reportgen.errors import UserError
from reportgen.plan.arms import Plan

if TYPE_CHECKING:  # ray is an optional extra: imported where a cluster is used
    from ray.job_submission import JobSubmissionClient

LABEL_NODE_ID = "ray.io/node-id"
TERMINAL = ("SUCCEEDED", "FAILED", "STOPPED")
SUBMIT_RETRY_S = 60.0
PACKAGE_DIR = Path(__file__).resolve().parents[1]  # reportgen/, shipped to nodes as a py_module


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


def connect(address: str) -> JobSubmissionClient:
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


def wait_terminal(client: JobSubmissionClient, job_id: str, timeout_s: float) -> str:
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

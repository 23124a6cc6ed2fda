"""A real two-node Ray cluster on loopback for the Ray executor's tests, started and stopped here.

Both nodes run on this machine (one CPU each) so that two experiments can be placed on two
different nodes. The cluster's processes are found by the private temp dir on their command
lines or by the session `ray start` was started in (Ray renames its agents' command lines) and
stopped by pid, so another Ray on the same machine is never touched.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest

RAY = Path(sys.executable).with_name("ray")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _session(pid_dir: Path) -> int | None:
    try:
        stat = (pid_dir / "stat").read_text()
        return int(stat[stat.rfind(")") + 2 :].split()[3])
    except (OSError, ValueError, IndexError):
        return None


def _pids_with(marker: str, sessions: set[int]) -> list[int]:
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if marker.encode() in cmdline or _session(entry) in sessions:
            pids.append(int(entry.name))
    return pids


def _stop_cluster(temp_dir: str, sessions: set[int]) -> None:
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid in _pids_with(temp_dir, sessions):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, sig)
        deadline = time.monotonic() + 10
        while _pids_with(temp_dir, sessions) and time.monotonic() < deadline:
            time.sleep(0.2)


def _ray(args: list[str], env: dict[str, str], sessions: set[int], hostname: str | None = None) -> int:
    # A new session per `ray start`: every daemon it leaves behind is found by it at teardown.
    # `hostname`: the node and everything it starts run in a UTS namespace of their own under that
    # name (unshare execs in place: the pid, hence the session, stays the one recorded).
    prefix = ["unshare", "--uts", "--", "sh", "-c", f'hostname {hostname} && exec "$@"', "sh"] if hostname else []
    proc = subprocess.Popen(
        [*prefix, str(RAY), *args],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    sessions.add(proc.pid)
    out, err = proc.communicate(timeout=120)
    if proc.returncode != 0:
        raise RuntimeError(f"ray {' '.join(args)} failed:\n{out}\n{err}")
    return proc.pid


def _agent_ports() -> list[str]:
    """Free ports for a node's agents: the defaults would clash between the two nodes (and other Rays)."""
    return [
        f"--dashboard-agent-listen-port={free_port()}",
        f"--dashboard-agent-grpc-port={free_port()}",
        f"--metrics-export-port={free_port()}",
        f"--runtime-env-agent-port={free_port()}",
    ]


def _warm_up(address: str) -> None:
    """Wait until the cluster runs a job: its job agent starts some seconds after the node."""
    from ray.job_submission import JobSubmissionClient

    from reportgen.execute.ray_cluster import submit, wait_terminal

    client = JobSubmissionClient(address)
    job = submit(client, entrypoint="true")
    if wait_terminal(client, job, 120) != "SUCCEEDED":
        raise RuntimeError(f"the test cluster could not run a job: {client.get_job_logs(job)}")


@dataclass
class Cluster:
    """A loopback cluster: its dashboard address, and each worker's label and `ray start` session."""

    address: str
    workers: dict[str, int]

    def node_of(self, label: str) -> str:
        """The node id of worker `label` (each worker carries a custom resource rg_<label>)."""
        from ray.util.state import list_nodes

        for n in list_nodes(address=self.address, detail=True, limit=1000, raise_on_missing_output=False):
            if f"rg_{label}" in (n.resources_total or {}):
                return n.node_id
        raise LookupError(label)

    def label_of(self, node_id: str) -> str:
        return next(label for label in self.workers if self.node_of(label) == node_id)

    def kill_raylet(self, label: str) -> int:
        """SIGKILL the raylet of worker `label`: the node dies as when its machine goes."""
        session = self.workers[label]
        [pid] = [
            int(e.name)
            for e in Path("/proc").iterdir()
            if e.name.isdigit() and _session(e) == session and _comm(int(e.name)) == "raylet"
        ]
        os.kill(pid, signal.SIGKILL)
        return pid


def _comm(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return ""


def can_name_hosts() -> bool:
    """Whether this process may start a node under a hostname of its own (`unshare --uts`: root)."""
    try:
        done = subprocess.run(["unshare", "--uts", "--", "hostname", "rg-probe"], capture_output=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return False
    return done.returncode == 0


@contextlib.contextmanager
def cluster(
    *,
    head_cpus: int,
    workers: Sequence[str],
    env_extra: dict[str, str] | None = None,
    own_machines: bool = False,
) -> Iterator[Cluster]:
    """A fresh head and one node per worker label (one CPU each) on 127.0.0.1, stopped by pid afterwards.

    `own_machines`: each worker is a machine of its own as reportgen sees it, of one class: its own
    hostname `rg-<label>` ($REPORTGEN_HOSTNAME in its environment, and a UTS namespace of that name
    where this process may make one: root), hence its own machine fingerprint, and its own machine
    lock. They still share this machine's cores: what runs on them at once competes for them."""
    if not RAY.is_file():
        pytest.skip("the ray extra is not installed (pip install 'reportgen[ray]')")
    uts = own_machines and can_name_hosts()
    temp_dir = tempfile.mkdtemp(prefix="rg-ray-", dir="/tmp")  # short: Ray's socket paths have a length limit
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    env.update(RAY_USAGE_STATS_ENABLED="0", PATH=f"{RAY.parent}{os.pathsep}{env.get('PATH', '')}")
    # The nodes' machine and node locks (reportgen.store.lock): the cluster's own, not this machine's.
    env["REPORTGEN_MACHINE_LOCK"] = str(Path(temp_dir) / "machine.lock")
    env.update(env_extra or {})
    gcs, dashboard = free_port(), free_port()
    sessions: set[int] = set()
    common = ["--node-ip-address=127.0.0.1", "--object-store-memory=100000000", "--disable-usage-stats"]
    try:
        _ray(
            [
                "start",
                "--head",
                f"--port={gcs}",
                "--dashboard-host=127.0.0.1",
                f"--dashboard-port={dashboard}",
                "--include-dashboard=true",
                f"--temp-dir={temp_dir}",
                f"--ray-client-server-port={free_port()}",
                f"--num-cpus={head_cpus}",
                *_agent_ports(),
                *common,
            ],
            env,
            sessions,
        )
        started = {}
        for label in workers:
            resources = json.dumps({f"rg_{label}": 1})
            own = dict(
                env,
                REPORTGEN_MACHINE_LOCK=str(Path(temp_dir) / f"machine-{label}.lock"),
                REPORTGEN_HOSTNAME=f"rg-{label}",
            )
            started[label] = _ray(
                [
                    "start",
                    f"--address=127.0.0.1:{gcs}",
                    "--num-cpus=1",
                    f"--resources={resources}",
                    *_agent_ports(),
                    *common,
                ],
                own if own_machines else env,
                sessions,
                hostname=f"rg-{label}" if uts else None,
            )
        address = f"http://127.0.0.1:{dashboard}"
        from ray.util.state import list_nodes

        deadline = time.monotonic() + 60
        while len(list_nodes(address=address, filters=[("state", "=", "ALIVE")])) < 1 + len(workers):
            if time.monotonic() > deadline:
                raise RuntimeError("the worker nodes did not join the test cluster")
            time.sleep(0.5)
        _warm_up(address)
        yield Cluster(address, started)
    finally:
        _stop_cluster(temp_dir, sessions)
        shutil.rmtree(temp_dir, ignore_errors=True)


@pytest.fixture(scope="session")
def ray_cluster() -> Iterator[str]:
    """The dashboard address of a fresh head + worker node on 127.0.0.1 (one CPU each), one for the
    session's worker: the tests that use it carry `xdist_group("ray")` or `xdist_group("ray-2")`, so
    under pytest-xdist they run as two chains of tests, each chain on one worker sharing its cluster
    (two chains: one would be the suite's longest); each test's experiments and runs folders are its own."""
    with cluster(head_cpus=1, workers=["w1"]) as c:
        yield c.address

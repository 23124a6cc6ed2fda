"""A real two-node Ray cluster on loopback for the Ray executor's tests, started and stopped here.

Both nodes run on this machine (one CPU each) so that two experiments can be placed on two
different nodes. The cluster's processes are found by the private temp dir on their command
lines or by the session `ray start` was started in (Ray renames its agents' command lines) and
stopped by pid, so another Ray on the same machine is never touched. One such cluster per test
chain (`ray_session`); a test that kills a node or needs machines of its own adds workers to it for
its time (`Cluster.added_workers`) rather than starting a cluster: each cluster costs tens of
CPU-seconds to start and keeps costing while idle.
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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.execute.conftest import make_experiment

RAY = Path(sys.executable).with_name("ray")
# No log monitor: it forwards workers' prints to `ray.init` drivers, which reportgen has none of (a
# job's log is read from its driver's log file), and costs each node a Python process polling files
# (measured: about a third less cluster CPU at start, a fifth less idle).
COMMON = [
    "--node-ip-address=127.0.0.1",
    "--object-store-memory=100000000",
    "--disable-usage-stats",
    "--include-log-monitor=false",
]
# The cluster declares a node dead after missed one-second health checks (defaults: 5 x 3 s), so
# that a test that kills a node does not wait long for it.
FAST_HEALTH_CHECKS = {
    "RAY_health_check_period_ms": "1000",
    "RAY_health_check_timeout_ms": "1000",
    "RAY_health_check_failure_threshold": "3",
}
# No metrics: reportgen reads a job's status and log and the nodes' liveness, never Ray's metrics, which
# every node recorded and exported all the same (the dashboard agent sampling its processes every 5 s,
# the raylet and workers recording and exporting theirs every few seconds; the dashboard recording the
# cluster's every 5 s): an idle test cluster spent about 4 CPU-seconds a minute more with them.
NO_METRICS = {
    "RAY_enable_metrics_collection": "false",
    "RAY_metrics_report_interval_ms": "600000",
    "REPORTER_UPDATE_INTERVAL_MS": "600000",
    "METRICS_RECORD_INTERVAL_S": "600",
}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _stat(pid_dir: Path) -> list[str]:
    """The fields of /proc/<pid>/stat after the command name (state first); [] when it is gone."""
    try:
        stat = (pid_dir / "stat").read_text()
    except OSError:
        return []
    return stat[stat.rfind(")") + 2 :].split()


def _session(pid_dir: Path) -> int | None:
    fields = _stat(pid_dir)
    return int(fields[3]) if len(fields) > 3 else None


def _pids_with(marker: str | None, sessions: set[int]) -> list[int]:
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if (marker is not None and marker.encode() in cmdline) or _session(entry) in sessions:
            pids.append(int(entry.name))
    return pids


def _alive(pids: list[int]) -> list[int]:
    """The pids not yet dead: a zombie has exited and only waits for its parent to reap it."""
    return [pid for pid in pids if _stat(Path(f"/proc/{pid}"))[:1] not in ([], ["Z"])]


# How long the cluster's daemons get to exit on SIGTERM before SIGKILL. Measured: gcs_server, the
# raylets and their runtime-env agents were all still running 12 s after SIGTERM, so a 10 s grace
# only delayed every teardown by 10 s (the session's two clusters at the end of the suite's parallel
# phase, each node a test added mid-chain); nothing of a test cluster needs a graceful end (its temp
# dir is removed next, and its workers exit with their raylet).
TERM_GRACE_S = 2.0


def _stop_cluster(temp_dir: str | None, sessions: set[int]) -> None:
    """Stop every process of the cluster's temp dir (None: none) or of its `ray start` sessions:
    SIGTERM, then SIGKILL to what is left after TERM_GRACE_S, then wait (10 s at most) until none lives."""
    for sig, wait_s in ((signal.SIGTERM, TERM_GRACE_S), (signal.SIGKILL, 10.0)):
        for pid in _alive(_pids_with(temp_dir, sessions)):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, sig)
        deadline = time.monotonic() + wait_s
        while _alive(_pids_with(temp_dir, sessions)) and time.monotonic() < deadline:
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
        raise _StartFailed(proc.pid, f"ray {' '.join(args)} failed:\n{out}\n{err}")
    return proc.pid


class _StartFailed(RuntimeError):
    def __init__(self, session: int, message: str) -> None:
        super().__init__(message)
        self.session = session


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
    gcs: int = 0
    temp_dir: str = ""
    env: dict[str, str] = field(default_factory=dict)
    sessions: set[int] = field(default_factory=set)

    def _start_worker(self, label: str, num_cpus: int, own_machine: bool) -> None:
        resources = json.dumps({f"rg_{label}": 1})
        env = self.env
        if own_machine:
            env = dict(
                env,
                REPORTGEN_MACHINE_LOCK=str(Path(self.temp_dir) / f"machine-{label}.lock"),
                REPORTGEN_HOSTNAME=f"rg-{label}",
            )
        for attempt in (1, 2):
            try:
                self.workers[label] = _ray(
                    [
                        "start",
                        f"--address=127.0.0.1:{self.gcs}",
                        f"--num-cpus={num_cpus}",
                        f"--resources={resources}",
                        *_agent_ports(),
                        *COMMON,
                    ],
                    env,
                    self.sessions,
                    hostname=f"rg-{label}" if own_machine and can_name_hosts() else None,
                )
                return
            except _StartFailed as exc:
                # On a loaded machine the head may not answer the joining node in time ("Failed to
                # get node info ... Deadline Exceeded"): what the attempt started is stopped, once more.
                _stop_sessions({exc.session})
                if attempt == 2 or "Deadline Exceeded" not in str(exc):
                    raise

    def _wait_alive(self, labels: Sequence[str]) -> None:
        """Until the workers `labels` have joined the cluster (each carries a resource rg_<label>)."""
        from ray.util.state import list_nodes

        deadline = time.monotonic() + 60
        while True:
            alive = list_nodes(
                address=self.address,
                filters=[("state", "=", "ALIVE")],
                detail=True,
                limit=1000,
                raise_on_missing_output=False,  # the dead nodes of earlier tests are "missing" from the filtered list
            )
            if {f"rg_{label}" for label in labels} <= {r for n in alive for r in (n.resources_total or {})}:
                return
            if time.monotonic() > deadline:
                raise RuntimeError("the worker nodes did not join the test cluster")
            time.sleep(0.5)

    @contextlib.contextmanager
    def added_workers(self, labels: Sequence[str], *, num_cpus: int, own_machines: bool = False) -> Iterator[Cluster]:
        """Worker nodes `labels` joined to this cluster for a test, stopped (by their `ray start`
        sessions) afterwards, whatever the test did to them. `num_cpus` above the cluster's own
        nodes' (one CPU each) and [run].num_cpus = `num_cpus` in the test's spec keep the test's
        experiments on its own nodes and the chain's other tests off them. `own_machines`: as
        `cluster`'s. Yields a view of the cluster that knows only these workers."""
        mine: dict[str, int] = {}
        try:
            for label in labels:
                self._start_worker(label, num_cpus, own_machines)
                mine[label] = self.workers[label]
            self._wait_alive(labels)
            yield Cluster(self.address, mine)
        finally:
            _stop_sessions(set(mine.values()))
            for label in mine:
                del self.workers[label]

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
        pid = _raylet_of(self.workers[label])
        assert pid is not None, f"worker {label} has no raylet"
        os.kill(pid, signal.SIGKILL)
        return pid


def _raylet_of(session: int) -> int | None:
    pids = [
        int(e.name)
        for e in Path("/proc").iterdir()
        if e.name.isdigit() and _session(e) == session and _comm(int(e.name)) == "raylet"
    ]
    return pids[0] if pids else None


def _stop_sessions(sessions: set[int]) -> None:
    """Stop one or more nodes of a cluster: every process of their `ray start` sessions."""
    _stop_cluster(None, sessions)


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
    temp_dir = tempfile.mkdtemp(prefix="rg-ray-", dir="/tmp")  # short: Ray's socket paths have a length limit
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    env.update(RAY_USAGE_STATS_ENABLED="0", PATH=f"{RAY.parent}{os.pathsep}{env.get('PATH', '')}", **NO_METRICS)
    # The nodes' machine and node locks (reportgen.store.lock): the cluster's own, not this machine's.
    env["REPORTGEN_MACHINE_LOCK"] = str(Path(temp_dir) / "machine.lock")
    env.update(env_extra or {})
    sessions: set[int] = set()
    try:
        for attempt in (1, 2):
            gcs, dashboard = free_port(), free_port()
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
                        # No autoscaler monitor: the test cluster has a fixed set of nodes, and the monitor is
                        # a Python process polling the cluster's state every few seconds for nothing.
                        "--no-monitor",
                        *_agent_ports(),
                        *COMMON,
                    ],
                    env,
                    sessions,
                )
                break
            except _StartFailed as exc:
                # As a joining node's (`_start_worker`): on a loaded machine, as at the start of the
                # suite when every worker imports at once, the head's raylet may not hear from its own
                # GCS in time ("Failed to get node info ... Deadline Exceeded"): stopped, once more.
                _stop_sessions({exc.session})
                if attempt == 2 or "Deadline Exceeded" not in str(exc):
                    raise
        c = Cluster(f"http://127.0.0.1:{dashboard}", {}, gcs, temp_dir, env, sessions)
        for label in workers:
            c._start_worker(label, 1, own_machines)
        c._wait_alive(workers)
        _warm_up(c.address)
        yield c
    finally:
        _stop_cluster(temp_dir, sessions)
        shutil.rmtree(temp_dir, ignore_errors=True)


class _Chain:
    """This worker's cluster (`ray_session`): started when a test first asks for it, stopped when the
    worker's next test needs none (`pytest_runtest_teardown` below), started again should another
    Ray test come to this worker after that."""

    def __init__(self) -> None:
        self._stack: contextlib.ExitStack | None = None
        self.cluster: Cluster | None = None

    def get(self) -> Cluster:
        if self.cluster is None:
            stack = contextlib.ExitStack()
            self.cluster = stack.enter_context(cluster(head_cpus=1, workers=["w0"], env_extra=FAST_HEALTH_CHECKS))
            self._stack = stack
        return self.cluster

    def stop(self) -> None:
        stack, self._stack, self.cluster = self._stack, None, None
        if stack is not None:
            stack.close()


_CHAIN = _Chain()


@pytest.fixture(scope="session")
def _ray_chain() -> Iterator[_Chain]:
    """The worker's `_Chain`; whatever cluster it still holds at the end of the session (a run
    interrupted mid-chain, a test selection that ends on a Ray test) is stopped then."""
    yield _CHAIN
    _CHAIN.stop()


@pytest.fixture(scope="module")
def ray_session(_ray_chain: _Chain) -> Cluster:
    """A head and worker node `w0` on 127.0.0.1 (one CPU each), one for the worker's chain: the
    tests that use it carry `xdist_group("ray")` or `xdist_group("ray-2")`, so under pytest-xdist
    they run as two chains of tests, each chain on one worker sharing its cluster (two chains: one
    would be the suite's longest); each test's experiments and runs folders are its own. A test
    that needs nodes of its own (to kill one, or as machines of their own) adds them for its time
    with `Cluster.added_workers` instead of starting a cluster. The cluster is stopped as soon as
    the chain's last test is done, not at the end of the session: an idle cluster costs about a
    twentieth of a core (its GCS, raylets, dashboard and agents polling), minutes of it while the
    worker goes on with other tests."""
    return _ray_chain.get()


@pytest.fixture(scope="module")
def ray_cluster(ray_session: Cluster) -> str:
    """The dashboard address of the chain's cluster (`ray_session`)."""
    return ray_session.address


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    """After a test's teardown: stop the chain's cluster when the next test on this worker is in
    another module and needs none (xdist runs a test only once it knows the next one, so `nextitem`
    is the worker's real next test; None: the last one)."""
    yield
    if _CHAIN.cluster is None or "ray_session" not in item.fixturenames:
        return
    if nextitem is None or (nextitem.path != item.path and "ray_session" not in nextitem.fixturenames):
        _CHAIN.stop()


def gated_experiment(root: Path, gate: Path, *, hold_at: int, **kwargs: Any) -> Path:
    """`make_experiment`'s stand-in trainer, held before printing step `hold_at` until the file
    `gate` exists: a test acts while a run is surely running (whatever the load), then lets it go
    with `gate.touch()`; the runs that start after that are not held."""
    spec = make_experiment(root, **kwargs)
    trainer = root / "trainer.py"
    text = trainer.read_text()
    anchor = "    time.sleep(a.step_sleep)\n"
    assert anchor in text, "the stand-in trainer changed: update gated_experiment"
    hold = f"    while step >= {hold_at} and not os.path.exists({str(gate)!r}):\n        time.sleep(0.1)\n"
    trainer.write_text(text.replace(anchor, anchor + hold, 1))
    return spec

"""The node side of a claim (ray_node's `hold` mode) as plain processes, without a cluster: it takes
the node's lock and the machine lock, sends its fingerprint back and holds until stopped; a second
claim on the node answers with its holder; a claim whose job's raylet goes away lets go."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from reportgen.execute import ray_node
from reportgen.execute.ray_log import unpack_result
from reportgen.store import lock
from tests.conftest import env_with_repo_on_path
from tests.helpers import wait_for


def _claim(tmp_path: Path, *, machine: bool = True, job_id: str = "reportgen-hold-e1-1") -> subprocess.Popen[str]:
    job = {
        "mode": "hold",
        "node_id": "abc123",
        "machine": machine,
        "max_s": 60,
        "experiment": "e1",
        "job_id": job_id,
        "runner": {"host": "laptop", "pid": 4242},
        "command_text": "reportgen run of e1",
    }
    env = {**env_with_repo_on_path(), ray_node.JOB_ENV: ray_node.encode_job(job)}
    env["REPORTGEN_MACHINE_LOCK"] = str(tmp_path / "machine.lock")
    return subprocess.Popen(
        [sys.executable, "-m", "reportgen.execute.ray_node"], env=env, stdout=subprocess.PIPE, text=True
    )


def _answer(proc: subprocess.Popen[str]) -> dict:
    lines = []
    assert proc.stdout is not None
    for line in proc.stdout:
        lines.append(line.rstrip("\n")[2:])
        if line.startswith("R|END "):
            break
    unpacked = unpack_result(lines)
    assert unpacked is not None, lines
    return unpacked[0]


def test_a_claim_holds_the_node_and_the_machine_until_stopped(tmp_path: Path) -> None:
    first = _claim(tmp_path)
    try:
        held = _answer(first)
        assert held["held"] and len(held["fingerprint_id"]) == 64
        assert held["locks"] == [str(tmp_path / "reportgen-ray-node-abc123.lock"), str(tmp_path / "machine.lock")]
        second = _claim(tmp_path, job_id="reportgen-hold-e2-1")
        busy = _answer(second)
        assert second.wait(timeout=30) == 3 and not busy["held"]
        holder = lock.Holder.from_json(busy["holder"])
        assert holder is not None and (holder.job_id, holder.runner_host, holder.runner_pid) == (
            "reportgen-hold-e1-1",
            "laptop",
            4242,
        )
        assert "Ray job reportgen-hold-e1-1 for pid 4242 on laptop" in holder.describe()
    finally:
        first.send_signal(signal.SIGTERM)
        assert first.wait(timeout=30) == 0
    assert not (tmp_path / "machine.lock").exists()  # released, and removed
    shared = _claim(tmp_path, machine=False)
    try:
        assert _answer(shared)["locks"] == [str(tmp_path / "reportgen-ray-node-abc123.lock")]
    finally:
        shared.send_signal(signal.SIGTERM)
        shared.wait(timeout=30)


def _alive(pid: int) -> bool:
    """Running: an exited orphan nobody reaped yet (a zombie; a container's init may be slow) is not."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


@pytest.mark.serial  # timed: the orphaned claim must notice within its polling deadline
def test_a_claim_whose_parent_goes_away_lets_go(tmp_path: Path) -> None:
    """Its ancestors stand for the Ray job's supervisor and raylet: when one dies, the claim ends."""
    code = (
        "import subprocess, sys, time\n"
        "p = subprocess.Popen([sys.executable, '-m', 'reportgen.execute.ray_node'], stdout=sys.stdout)\n"
        "print(p.pid, flush=True)\n"
        "time.sleep(60)\n"
    )
    job = {"mode": "hold", "node_id": "n2", "machine": False, "max_s": 60, "job_id": "j", "runner": {}}
    env = {**env_with_repo_on_path(), ray_node.JOB_ENV: ray_node.encode_job(job)}
    env["REPORTGEN_MACHINE_LOCK"] = str(tmp_path / "machine.lock")
    parent = subprocess.Popen([sys.executable, "-c", code], env=env, stdout=subprocess.PIPE, text=True)
    assert parent.stdout is not None
    child = int(parent.stdout.readline())
    _answer(parent)
    parent.kill()
    parent.wait()
    try:  # it notices within a second or two; a busy 2-core machine may take longer
        wait_for(lambda: not _alive(child), 30, "the orphaned claim to end")
    except AssertionError:
        os.kill(child, signal.SIGKILL)
        raise


def test_a_claim_watches_the_ancestors_it_had_when_it_started(tmp_path: Path) -> None:
    """main() reads the ancestry before anything else and the hold watches that chain: read after
    the claim was answered, a parent killed in between was already gone from it (the orphan's
    parent is init), and the claim held the node until max_s. Here the chain names a process that
    has ended, so the claim answers, then lets go at its first check."""
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    job = {"mode": "hold", "node_id": "n3", "machine": True, "max_s": 60, "job_id": "j", "runner": {}}
    code = (
        "import sys\n"
        "from reportgen.execute import ray_node\n"
        f"sys.exit(ray_node._hold(ray_node.decode_job({ray_node.encode_job(job)!r}), [({gone.pid}, 0)]))\n"
    )
    env = {**env_with_repo_on_path(), "REPORTGEN_MACHINE_LOCK": str(tmp_path / "machine.lock")}
    proc = subprocess.Popen([sys.executable, "-c", code], env=env, stdout=subprocess.PIPE, text=True)
    try:
        assert _answer(proc)["held"] is True
        assert proc.wait(timeout=30) == 0  # not the 60 s of max_s
    finally:
        proc.kill()
    assert not (tmp_path / "machine.lock").exists()

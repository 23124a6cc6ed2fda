"""A Ray worker node that dies during a run, on a real loopback cluster (two workers of two CPUs the
test adds to the session's cluster, and an experiment asking for two CPUs, so that it lands on them
and nowhere else): its raylet is killed mid-run. The run is recorded
`interrupted` (not failed, not lost) with the node named, and the campaign resumes on the other
node, of the same class, and completes."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import env_with_repo_on_path
from tests.execute.ray.conftest import Cluster, gated_experiment
from tests.helpers import log_shows, wait_for

pytestmark = [pytest.mark.ray, pytest.mark.slow, pytest.mark.xdist_group("ray")]


@pytest.fixture
def two_workers(ray_session: Cluster) -> Iterator[Cluster]:
    with ray_session.added_workers(["n1", "n2"], num_cpus=2) as c:
        yield c


def _manifest(path: Path) -> dict:
    return json.loads((path / "manifest.json").read_text())


def test_a_killed_worker_node_leaves_the_run_interrupted_and_the_campaign_resumes_elsewhere(
    tmp_path: Path, two_workers: Cluster
) -> None:
    # Every run is held before its step 3 until the node is killed and the campaign resumed.
    gate = tmp_path / "gate"
    spec = gated_experiment(tmp_path / "r", gate, hold_at=3, name="lost", steps=5, sleep=0.05, run={"num_cpus": 2})
    runs = tmp_path / "runs"
    exp = runs / "lost"
    args = [sys.executable, "-m", "reportgen", "run", str(spec), "--runs", str(runs), "--no-profiler", "--no-analyze"]
    # Both workers are this one machine: --share-machine lets the resume claim the second one at once
    # (the dead node's machine lock is this machine's too).
    args += ["--ray", two_workers.address, "--share-machine"]
    proc = subprocess.Popen(
        args, env=env_with_repo_on_path(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    stdout = exp / "baseline" / "1" / "stdout.log"
    wait_for(lambda: log_shows(stdout, b"perf 2:"), 120, "the baseline's step 2 in its stdout.log", poll=0.2)
    first = json.loads((exp / "campaign.json").read_text())["executor"]["node_id"]
    label = two_workers.label_of(first)
    two_workers.kill_raylet(label)
    # Let the runs go once the runner has taken the run for lost (the dead node's run moved aside by
    # the resume): the held run can no longer end `complete`.
    wait_for(lambda: any(exp.glob("archive/*/baseline-1")), 180, "the lost run moved aside", poll=0.2)
    gate.touch()
    out, _ = proc.communicate(timeout=300)
    assert proc.returncode == 0, out
    assert "died during the run" in out and "resuming on another node of its class" in out

    # The run on the dead node: interrupted, moved aside by the resume, the node named.
    [old] = list((exp / "archive").glob("*/baseline-1"))
    m = _manifest(old)
    assert m["status"] == "interrupted", m
    assert any(f"Ray node {first[:12]}" in w and "died during the run" in w for w in m["warnings"])
    # The campaign resumed on the other worker (loopback nodes share one machine, hence one
    # fingerprint: the campaign is the same) and completed there.
    second = two_workers.node_of("n2" if label == "n1" else "n1")
    for arm in ("baseline", "A1"):
        m = _manifest(exp / arm / "1")
        assert m["status"] == "complete" and m["executor"]["node_id"] == second, m
    assert len(list((exp / "archive").iterdir())) == 1

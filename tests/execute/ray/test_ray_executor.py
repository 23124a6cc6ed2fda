"""`reportgen run --ray` against a real local two-node Ray cluster: same runs/ tree as the local
executor, every arm of an experiment on one node, experiments in parallel on different nodes,
Ctrl-C stops the job and marks the run interrupted, resume redoes only that run."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path
from typing import IO

import pandas as pd
import pytest

from reportgen.cli import main
from tests.conftest import env_with_repo_on_path
from tests.execute.conftest import make_experiment
from tests.execute.ray.conftest import gated_experiment
from tests.helpers import log_shows, wait_for

pytestmark = [pytest.mark.ray, pytest.mark.slow, pytest.mark.xdist_group("ray")]

LOCAL_ONLY = {"gpu.jsonl"}  # identical names on both sides; see docs/ray.md for stderr.log's extra lines


def manifest(runs: Path, exp: str, arm: str, repeat: int = 1) -> dict:
    return json.loads((runs / exp / arm / str(repeat) / "manifest.json").read_text())


def files(run_dir: Path) -> set[str]:
    return {str(p.relative_to(run_dir)) for p in run_dir.rglob("*") if p.is_file()}


def test_two_experiments_run_in_parallel_each_pinned_to_one_node(tmp_path: Path, ray_cluster: str) -> None:
    e1 = make_experiment(tmp_path / "r1", name="e1", steps=3, sleep=0.3)
    e2 = make_experiment(tmp_path / "r2", name="e2", steps=3, sleep=0.3)
    runs, local = tmp_path / "runs", tmp_path / "local"
    # Both nodes of a loopback cluster are this one machine: without --share-machine, the second
    # experiment would wait for the machine lock the first one's node claim holds.
    args = ["--runs", str(runs), "--no-analyze", "--no-profiler", "--ray", ray_cluster, "--share-machine"]
    assert main(["run", str(e1), str(e2), *args]) == 0
    assert main(["run", str(e1), "--runs", str(local), "--no-analyze", "--no-profiler"]) == 0

    nodes = {}
    for exp in ("e1", "e2"):
        campaign = json.loads((runs / exp / "campaign.json").read_text())
        pinned = campaign["executor"]["node_id"]
        for arm in ("baseline", "A1"):
            m = manifest(runs, exp, arm)
            assert m["status"] == "complete" and m["exit_code"] == 0
            assert m["executor"]["kind"] == "ray" and m["executor"]["node_id"] == pinned
            assert m["process"]["node_id"] == pinned and m["process"]["job_id"].startswith(f"reportgen-{exp}-{arm}-1-")
            assert m["fingerprint_id"] == campaign["fingerprint_id"]
        nodes[exp] = pinned
    assert nodes["e1"] != nodes["e2"]
    # In parallel: the two experiments' baselines overlap in time.
    b1, b2 = manifest(runs, "e1", "baseline"), manifest(runs, "e2", "baseline")
    assert b1["started_utc"] <= manifest(runs, "e2", "A1")["ended_utc"]
    assert b2["started_utc"] <= manifest(runs, "e1", "A1")["ended_utc"]

    # The same tree and the same workload output as the local executor.
    for arm in ("baseline", "A1"):
        ray_dir, local_dir = runs / "e1" / arm / "1", local / "e1" / arm / "1"
        assert files(ray_dir) == files(local_dir)
        assert (ray_dir / "stdout.log").read_bytes() == (local_dir / "stdout.log").read_bytes()
        assert "+ " in (ray_dir / "stderr.log").read_text()  # the recipe's `set -x` trace came back
        got, want = pd.read_parquet(ray_dir / "metrics.parquet"), pd.read_parquet(local_dir / "metrics.parquet")
        pd.testing.assert_frame_equal(
            got.drop(columns=[c for c in got if c == "wall_time"]),
            want.drop(columns=[c for c in want if c == "wall_time"]),
        )
        fp = json.loads((ray_dir / "provenance" / "fingerprint.json").read_text())
        assert fp["fingerprint_id"] == manifest(runs, "e1", arm)["fingerprint_id"]
    speed = pd.read_parquet(runs / "e1" / "A1" / "1" / "metrics.parquet")
    assert speed.loc[speed.key == "perf/step_resp_token_per_s", "value"].tolist() == [100.0] * 3


def test_ctrl_c_stops_the_job_marks_interrupted_and_resume_redoes_it(tmp_path: Path, ray_cluster: str) -> None:
    from ray.job_submission import JobSubmissionClient

    # The baseline is held before its step 2 until the Ctrl-C; the resumed runs are not held.
    gate = tmp_path / "gate"
    spec = gated_experiment(tmp_path / "r", gate, hold_at=2, name="slow", steps=4, sleep=0.05)
    runs = tmp_path / "runs"
    args = [
        sys.executable,
        "-m",
        "reportgen",
        "run",
        str(spec),
        "--runs",
        str(runs),
        "--no-analyze",
        "--no-profiler",
        "--ray",
        ray_cluster,
    ]
    proc = subprocess.Popen(args, env=env_with_repo_on_path(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    stdout = runs / "slow" / "baseline" / "1" / "stdout.log"
    # The log streams in while the job runs: step 1 arrives before the job has ended.
    wait_for(lambda: log_shows(stdout, b"perf 1:"), 90, "step 1 in the baseline's stdout.log", poll=0.2)
    job_id = manifest(runs, "slow", "baseline")["process"]["job_id"]
    assert str(JobSubmissionClient(ray_cluster).get_job_status(job_id)) == "RUNNING"
    proc.send_signal(signal.SIGINT)
    out, _ = proc.communicate(timeout=120)
    assert proc.returncode == 130, out.decode()
    m = manifest(runs, "slow", "baseline")
    assert m["status"] == "interrupted"
    assert str(JobSubmissionClient(ray_cluster).get_job_status(job_id)) == "STOPPED"
    assert not (runs / "slow" / "A1").exists()

    gate.touch()
    assert main(["run", str(spec), "--runs", str(runs), "--no-analyze", "--no-profiler", "--ray", ray_cluster]) == 0
    assert manifest(runs, "slow", "baseline")["status"] == "complete"
    assert manifest(runs, "slow", "A1")["status"] == "complete"
    old = list((runs / "slow" / "archive").glob("*/baseline-1"))
    assert len(old) == 1 and json.loads((old[0] / "manifest.json").read_text())["status"] == "interrupted"


def test_a_sequential_campaign_runs_every_pair_on_its_one_node(tmp_path: Path, ray_cluster: str) -> None:
    # [run] until = "decided" on a cluster: the blocks come from the analysis after each block, and
    # every run of the campaign (so both runs of every pair) goes to the experiment's one node.
    spec = make_experiment(
        tmp_path / "r",
        name="seq",
        steps=5,
        sleep=0.01,
        order=None,
        repeats=None,
        run={"until": "decided", "min_pairs": 2, "max_pairs": 4},  # twice as fast: decided at the first look
    )
    runs = tmp_path / "runs"
    assert main(["run", str(spec), "--runs", str(runs), "--no-profiler", "--ray", ray_cluster]) == 0
    exp = runs / "seq"
    pinned = json.loads((exp / "campaign.json").read_text())["executor"]["node_id"]
    made = sorted((p.parent.name, int(p.name)) for p in exp.glob("*/*") if p.name.isdigit())
    assert made == [("A1", 1), ("A1", 2), ("baseline", 1), ("baseline", 2)]
    assert {manifest(runs, "seq", arm, rep)["executor"]["node_id"] for arm, rep in made} == {pinned}
    doc = json.loads((exp / "analysis.json").read_text())
    (a1,) = doc["comparisons"]
    assert a1["verdict"]["status"] == "accepted" and len(a1["run_level"]["pairs"]) == 2
    assert doc["campaign"]["stopped"] == "decided"


def _start(
    spec: Path, runs: Path, address: str, *extra: str, stdout: IO[str] | int = subprocess.PIPE
) -> subprocess.Popen[str]:
    args = [sys.executable, "-m", "reportgen", "run", str(spec), "--runs", str(runs), "--no-analyze", "--no-profiler"]
    return subprocess.Popen(
        [*args, "--ray", address, *extra],
        env=env_with_repo_on_path(),
        stdout=stdout,
        stderr=subprocess.STDOUT,
        text=True,
    )


def _node(runs: Path, exp: str) -> str:
    return json.loads((runs / exp / "campaign.json").read_text())["executor"]["node_id"]


def test_separate_runners_never_share_a_node_and_wait_for_the_machine_their_node_shares(
    tmp_path: Path, ray_cluster: str
) -> None:
    """Two `reportgen run` processes know nothing of each other; the node claim keeps the second off
    the first one's node (sharing the machine, as loopback nodes must, is allowed with
    --share-machine). Without --share-machine a node claim also takes the node machine's lock: both
    loopback nodes are this machine, so a third runner waits for the first to end, naming its holder."""
    # The first runner's baseline is held (its node and machine claimed) until the second runner has
    # finished and the third says it waits for a free node.
    gate = tmp_path / "gate"
    e1 = gated_experiment(tmp_path / "r1", gate, hold_at=2, name="e1", steps=4, sleep=0.05)
    e2 = make_experiment(tmp_path / "r2", name="e2", steps=3, sleep=0.05)
    e3 = make_experiment(tmp_path / "r3", name="e3", steps=3, sleep=0.05)
    runs = tmp_path / "runs"
    first = _start(e1, runs, ray_cluster)
    stdout = runs / "e1" / "baseline" / "1" / "stdout.log"
    wait_for(lambda: log_shows(stdout, b"perf 1:"), 90, "step 1 in the baseline's stdout.log", poll=0.2)
    second = _start(e2, runs, ray_cluster, "--share-machine")
    out, _ = second.communicate(timeout=240)
    assert second.returncode == 0, out
    assert _node(runs, "e1") != _node(runs, "e2")
    assert manifest(runs, "e1", "baseline")["status"] == "running"  # e2 ran while e1 held its node

    log3 = tmp_path / "third.log"
    with log3.open("w") as sink:
        third = _start(e3, runs, ray_cluster, stdout=sink)
    wait_for(lambda: log_shows(log3, b"[e3] waiting for a free node:"), 120, "the third runner waiting", poll=0.2)
    gate.touch()
    third.communicate(timeout=300)
    out3 = log3.read_text()
    out1, _ = first.communicate(timeout=60)
    assert first.returncode == 0 and third.returncode == 0, (out1, out3)
    assert "[e3] waiting for a free node:" in out3 and f"for pid {first.pid} on " in out3
    assert manifest(runs, "e2", "baseline")["started_utc"] <= manifest(runs, "e1", "A1")["ended_utc"]  # in parallel
    assert manifest(runs, "e3", "baseline")["started_utc"] >= manifest(runs, "e1", "A1")["ended_utc"]

"""Lifecycles made for real by `reportgen run` with the embedded workload (issue 22): a run killed
mid-step, a run resumed from its own checkpoint (--load), and a killed job retried from its
checkpoint in the same log. Each log is also given to `reportgen ingest`, which knows nothing of
the process: the runner's status rests on the exit it saw, the ingest's on the log's end.

Not made here: Relax's in-run restart (the embedded workload has no health checker) and a
fully-async rollout running ahead (it is one synchronous process); their logs are read from the
conformance corpus (tests/ingest/test_relax_lifecycle.py)."""

from __future__ import annotations

import json
import os
import sys
import textwrap
from pathlib import Path

import pytest

from reportgen.analyze import analyze_experiment
from reportgen.cli import main
from tests.helpers import write_spec
from tests.workloads.conftest import TINY
from tests.workloads.profiled import profiled_run

pytestmark = pytest.mark.slow

ARGS = " ".join([*TINY, "--rollout-batch-size", "2", "--n-samples-per-prompt", "4", "--optimizer-cpu-offload"])

# Kill the workload once its log shows step 2's first perf line (the rollout's, before the step
# trains): a SIGKILL mid-step leaves no end line.
KILL = """\
W=$(mktemp -d)
"${{PYTHON}}" -m reportgen.workloads.grpo {args} --num-rollout 200 {save} > >(tee "$W/w.log") &
pid=$!
until grep -q ' - perf 2: {{' "$W/w.log" 2>/dev/null; do sleep 0.05; done
kill -9 $pid
"""


def experiment(root: Path, name: str, body: str, env: dict[str, str] | None = None) -> Path:
    """recipe.sh (`body` under bash -x) and its spec: the embedded workload, A1 without the offload flag."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "recipe.sh").write_text("#!/bin/bash\nset -x\n" + body)
    return write_spec(
        root / "spec.toml",
        name=name,
        title="Lifecycle of a real run",
        recipe={
            "script": "recipe.sh",
            "python": sys.executable,
            "entrypoint": "reportgen.workloads.grpo",
            **({"env": env} if env else {}),
        },
        workload={"flags": ["--rollout-batch-size", "--n-samples-per-prompt"]},
        run={"timeout_s": 300},
        analysis={"warmup_steps": 1, "windows": [{"name": "W1", "start": 1, "end": 3}]},
        candidates=[{"id": "A1", "title": "no offload flag", "remove": ["--optimizer-cpu-offload"]}],
    )


def manifest(runs: Path, exp: str, arm: str, repeat: int = 1) -> dict:
    return json.loads((runs / exp / arm / str(repeat) / "manifest.json").read_text())


def ingest_again(runs: Path, spec: Path, exp: str) -> dict:
    """The run's own stdout.log through `reportgen ingest` (repeat 2 of the baseline)."""
    log = runs / exp / "baseline" / "1" / "stdout.log"
    assert (
        main(["ingest", str(log), "--spec", str(spec), "--arm", "baseline", "--runs", str(runs), "--no-analyze"]) == 0
    )
    return manifest(runs, exp, "baseline", 2)


def test_a_run_killed_mid_step(tmp_path: Path) -> None:
    spec = experiment(tmp_path / "r", "killed", KILL.format(args=ARGS, save="") + "wait $pid\nexit $?\n")
    runs = tmp_path / "runs"
    # The baseline alone: what is checked is one run's lifecycle (A1 would be the same, killed again).
    assert main(["run", str(spec), "--runs", str(runs), "--no-analyze", "--baseline-only"]) == 0
    assert not (runs / "killed" / "A1").exists()
    ran = manifest(runs, "killed", "baseline")
    # The runner saw the exit: the recipe's `wait` returned 128 + SIGKILL.
    assert (ran["status"], ran["exit_code"], ran["status_reason"]) == (
        "failed",
        137,
        "the workload process exited with code 137",
    )
    assert "Main func successfully" not in (runs / "killed" / "baseline" / "1" / "stdout.log").read_text()
    # The same log alone says nothing of its end: not complete, cut.
    ingested = ingest_again(runs, spec, "killed")
    assert ingested["status"] == "interrupted"
    assert ingested["status_reason"].startswith("the log ends without Relax's end-of-run lines (")
    assert ingested["ingest"]["lifecycle"]["attempts"][-1]["end"] == "cut" and ingested["ingest"]["steps"] >= 2


def test_a_killed_job_retried_from_its_checkpoint_in_the_same_log(tmp_path: Path) -> None:
    # The flags once (a candidate's edit must find each once), used by both jobs.
    body = f"ARGS=({ARGS})\n" + KILL.format(args='"${ARGS[@]}"', save='--save "$W/ck" --save-interval 2')
    body += textwrap.dedent(
        """\
        wait $pid || true
        "${PYTHON}" -m reportgen.workloads.grpo "${ARGS[@]}" --num-rollout 8 --load "$W/ck" --save "$W/ck" --save-interval 2
        """
    )
    spec = experiment(tmp_path / "r", "retried", body)
    runs = tmp_path / "runs"
    assert main(["run", str(spec), "--runs", str(runs), "--no-analyze", "--baseline-only"]) == 0
    for m in (manifest(runs, "retried", "baseline"), ingest_again(runs, spec, "retried")):
        # Ran or ingested alike: the last job ended clean, so the run is complete.
        assert (m["status"], m["status_reason"]) == ("complete", None)
        first, second = m["ingest"]["lifecycle"]["attempts"]
        assert (first["kind"], first["started_by"], first["end"]) == ("job", "argument dump", "cut")
        assert (second["kind"], second["end"]) == ("job", "clean")
        # The kill came during step 2, so the last checkpoint is iteration 1 (or 3, had the kill landed
        # late): the retry resumed after it and redid what the first had logged.
        start = second["start_step"]
        assert start in (2, 4) and second["resumed_from_iteration"] == start - 1
        assert second["steps"] == [start, 7] and first["steps"][0] == 0 and first["steps"][1] >= start - 1
        assert second["redone_steps"] and second["redone_steps"][0][0] == start
        assert first["replaced_values"] > 0 and m["ingest"]["disagreements"] == 0
        assert m["ingest"]["steps"] == 8


def test_runs_resumed_from_a_checkpoint_and_windows_that_miss_them(
    tmp_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    # The checkpoint of iteration 3 that the session's profiled run of the same tiny model saved
    # (tests/workloads/profiled.py): the baseline loads it, read-only.
    made, run_dir = profiled_run(tmp_path_factory)
    assert made.returncode == 0, made.stderr[-2000:]
    ck = run_dir / "ck"
    body = '"${PYTHON}" -m reportgen.workloads.grpo ' + ARGS + ' --num-rollout 10 --load "$CKPT"\n'
    spec = experiment(tmp_path / "r", "resumed", body, env={"CKPT": str(ck)})
    runs = tmp_path / "runs"
    # One real resumed run (each costs ~6 CPU-s of start-up): the runner makes baseline/1, and
    # `reportgen ingest`, which knows nothing of the process, makes A1/1 of the same log. Both
    # must read the resume from the log alone; the analysis then pairs them.
    assert main(["run", str(spec), "--runs", str(runs), "--no-analyze", "--no-profiler", "--baseline-only"]) == 0
    log = runs / "resumed" / "baseline" / "1" / "stdout.log"
    assert main(["ingest", str(log), "--spec", str(spec), "--arm", "A1", "--runs", str(runs), "--no-analyze"]) == 0
    for arm in ("baseline", "A1"):
        m = manifest(runs, "resumed", arm)
        assert m["status"] == "complete"
        (a,) = m["ingest"]["lifecycle"]["attempts"]
        assert (a["resumed_from_iteration"], a["start_step"], a["steps"]) == (3, 4, [4, 9])
        assert m["ingest"]["steps"] == 6
    cmp = json.loads(analyze_experiment(runs / "resumed").read_text())["comparisons"][0]
    assert cmp["verdict"]["status"] == "inconclusive"
    assert cmp["verdict"]["cause"].startswith(
        "baseline/1 and A1/1 ran steps 4-9 (resumed from iteration 3): no step in window W1 (steps 1-3)"
    )
    assert cmp["summary"]["next_step"]["command"] == 'windows = [{name = "W1", start = 5, end = 9}]'
    assert os.path.isdir(ck / "iter_0000003")

import json
import os
import random

from reportgen.ingest.metrics import read_metrics
from reportgen.ingest.run_dir import ingest_run
from reportgen.store.run import wide_table

from .conftest import relax_stdout, step_time
from .test_metrics import write_tb

FIXED = ["--global-batch-size", "--n-samples-per-prompt", "--rollout-max-response-len", "--seed"]


def test_ingest_run_writes_metrics_events_and_returns_section(run_dir):
    write_tb(
        run_dir / "tensorboard", [("perf/step_time", step_time(s) + (1.0 if s == 2 else 0.0), s) for s in range(9)]
    )
    ingested = ingest_run(run_dir, invariants=FIXED, expected={"--n-samples-per-prompt": "4"}, exit_code=1)
    assert ingested.argv_source == "trace"
    assert ingested.effective_argv["--global-batch-size"] == "16"
    inv = ingested.invariants
    assert inv["values"]["--seed"] is None
    assert inv["violations"] == [{"flag": "--n-samples-per-prompt", "expected": "4", "actual": "8"}]
    ing = ingested.ingest
    # Steps 0-8 trained; the rollout manager's `perf 9` before the OOM is no trained step: reported apart.
    assert ing["steps"] == 9 and ing["last_step"] == 8 and ing["rollout_only_steps"] == [9]
    assert ing["skipped_lines"] == 1 and ing["records"] == 37
    assert ing["disagreements"] == 1 and ing["sources"] == ["console", "tensorboard"]
    ev = json.loads((run_dir / "events.json").read_text())
    assert ev["schema_version"] == 1 and ev["kind"] == "reportgen.events"
    kinds = [(e["kind"], e["step"]) for e in ev["events"]]
    # One failure, one event: the exit code 1 is the OOM's consequence, not a second event.
    assert kinds == [("oom", 9)]
    assert ingested.status == "failed" and ingested.status_reason.startswith(
        "OOM at step 9, tried to allocate 2.46 GiB"
    )
    assert ing["events"] == len(ev["events"])
    assert ev["disagreements"][0]["step"] == 2
    wide = wide_table(read_metrics(run_dir))
    assert wide.loc[8, "perf/step_time"] == step_time(8)


def test_argument_dump_when_no_trace(run_dir):
    text = (run_dir / "stderr.log").read_text()
    (run_dir / "stderr.log").write_text("\n".join(line for line in text.splitlines() if not line.startswith("+")))
    ingested = ingest_run(run_dir, invariants=["--global-batch-size"], timed_out=True)
    assert ingested.argv_source == "argument-dump"
    assert ingested.invariants["values"]["--global-batch-size"] == "16"
    ev = json.loads((run_dir / "events.json").read_text())["events"]
    assert ev[-1]["kind"] == "timeout" and ev[-1]["excerpt"][-1] == "W1129 some warning"


def test_metrics_on_stdout_failure_on_stderr(tmp_path):
    (tmp_path / "stdout.log").write_text(relax_stdout(steps=6, fail=False))
    (tmp_path / "stderr.log").write_text("Training loop failed with error: boom\n")
    ingested = ingest_run(tmp_path, invariants=[])
    ev = json.loads((tmp_path / "events.json").read_text())["events"]
    # Step 3's nan grad norm follows an fp16 loss-scale skip: routine, counted, no event.
    assert [(e["kind"], e["step"], e["stream"]) for e in ev] == [("fatal", 6, "stderr")]
    assert ingested.ingest["loss_scale_skips"]["steps"] == 1
    assert ingested.argv_source == "none" and ingested.effective_argv == {}


def test_never_raises_on_garbage(tmp_path):
    rng = random.Random(7)
    junk = bytes(rng.randrange(256) for _ in range(200_000))
    (tmp_path / "stdout.log").write_bytes(junk + b"\nperf 1: {'perf/step_time': 2.0}\n" + junk[:999])
    (tmp_path / "stderr.log").write_bytes(
        b"perf 2: {{{{\nstep 3: {'a': [1, 2\n+ python3 'unterminated\n" + "é".encode()[:1]
    )
    ingested = ingest_run(tmp_path, invariants=["--x"], interrupted=True)
    assert ingested.ingest["records"] == 1 and ingested.ingest["skipped_lines"] >= 2
    assert ingested.argv_source == "none"
    assert read_metrics(tmp_path)["value"].tolist() == [2.0]


def test_empty_run_dir(tmp_path):
    ingested = ingest_run(tmp_path, invariants=["--a"], signal="SIGKILL")
    assert ingested.ingest["steps"] == 0 and ingested.ingest["last_step"] is None
    ev = json.loads((tmp_path / "events.json").read_text())["events"]
    assert [(e["kind"], e["step"]) for e in ev] == [("abnormal_exit", None)]
    assert read_metrics(tmp_path).empty
    assert sorted(os.listdir(tmp_path)) == ["events.json", "metrics.parquet"]

import json

import pandas as pd
import pytest

from reportgen.analyze import is_stale
from reportgen.cli import main

from .conftest import TRACE, hand_made_spec, relax_stdout
from .test_metrics import write_tb

FLAGS = ("--global-batch-size", "--n-samples-per-prompt")


@pytest.fixture
def setup(tmp_path):
    (tmp_path / "recipe.sh").write_text(
        "#!/bin/bash\nset -x\npython3 -m relax.entrypoints.train --optimizer-cpu-offload\n"
    )
    spec = hand_made_spec(tmp_path / "exp.toml", flags=FLAGS)
    log = tmp_path / "hand.log"
    log.write_text(TRACE + relax_stdout(steps=9, fail=False))
    return tmp_path, spec, log


def test_ingest_end_to_end(setup, capsys):
    tmp, spec, log = setup
    runs = tmp / "runs"
    tb = tmp / "tb"
    write_tb(tb / "proj" / "exp", [("perf/step_time", 30.0, 0)])
    assert (
        main(
            [
                "ingest",
                str(log),
                "--spec",
                str(spec),
                "--arm",
                "baseline",
                "--runs",
                str(runs),
                "--tensorboard",
                str(tb),
            ]
        )
        == 0
    )
    run = runs / "offload" / "baseline" / "1"
    # the run's path, then the analysis it leaves current (the site build only reads it)
    assert capsys.readouterr().out.strip().splitlines() == [str(run), f"analysis: {runs / 'offload' / 'analysis.json'}"]
    assert not is_stale(runs / "offload")
    assert (runs / "offload" / "experiment.toml").read_text() == spec.read_text()
    assert sorted(p.name for p in run.iterdir()) == [
        "events.json",
        "manifest.json",
        "metrics.parquet",
        "stdout.log",
        "tensorboard",
    ]
    m = json.loads((run / "manifest.json").read_text())
    assert (m["schema_version"], m["kind"], m["experiment"], m["arm"], m["repeat"], m["role"]) == (
        1,
        "reportgen.run",
        "offload",
        "baseline",
        1,
        "formal",
    )
    # Step 3's nan grad norm follows an fp16 loss-scale skip: a warning with its count, not a failure.
    assert m["status"] == "complete" and m["status_reason"] is None
    assert (
        m["ingest"]["loss_scale_skips"]["steps"] == 1
        and "skipped the parameter update of 1" in m["ingest"]["warnings"][0]
    )
    assert m["started_utc"] == "2026-08-05T10:10:01Z" and m["ended_utc"] == "2026-08-05T10:19:12Z"
    assert m["executor"] == {"kind": "external"} and m["exit_code"] is None
    assert m["argv_source"] == "trace"
    assert m["invariants"]["values"] == {"--global-batch-size": "16", "--n-samples-per-prompt": "8"}
    assert m["ingest"]["steps"] == 9 and m["ingest"]["sources"] == ["console", "tensorboard"]
    assert set(pd.read_parquet(run / "metrics.parquet").columns) == {"step", "key", "value", "source"}
    # a second ingest of the same arm takes the next repeat; a clean log makes a complete run
    clean = tmp / "clean.log"
    clean.write_text(
        log.read_text()
        .replace("'train/grad_norm': nan", "'train/grad_norm': 1.0")
        .replace("Inf found in gradients", "gradients fine")
    )
    nan = tmp / "nan.log"  # the same log with a NaN loss: a failure through ingest (and run: test_status.py)
    nan.write_text(log.read_text().replace("'train/loss': 0.06", "'train/loss': nan"))
    assert main(["ingest", str(nan), "--spec", str(spec), "--arm", "baseline", "--runs", str(runs)]) == 0
    m2 = json.loads((runs / "offload" / "baseline" / "2" / "manifest.json").read_text())
    assert m2["status"] == "failed" and m2["status_reason"].startswith("NaN/Inf at step 5 (stdout.log:")
    assert main(["ingest", str(clean), "--spec", str(spec), "--arm", "A1", "--runs", str(runs)]) == 0
    assert main(["ingest", str(clean), "--spec", str(spec), "--arm", "A1", "--runs", str(runs)]) == 0
    assert json.loads((runs / "offload" / "A1" / "2" / "manifest.json").read_text())["status"] == "complete"
    assert sorted(p.name for p in (runs / "offload" / "A1").iterdir()) == ["1", "2"]
    assert not is_stale(runs / "offload")
    assert main(["ingest", str(clean), "--spec", str(spec), "--arm", "A1", "--runs", str(runs), "--no-analyze"]) == 0
    assert is_stale(runs / "offload")


def run_err(args, capsys):
    code = main(args)
    err = capsys.readouterr().err.strip()
    return code, err


def test_malformed_input_exit_2_nothing_written(setup, capsys):
    tmp, spec, log = setup
    runs = tmp / "runs"
    bad = tmp / "notes.txt"
    bad.write_text("just some text\nwithout metrics\n")
    binary = tmp / "core.bin"
    binary.write_bytes(b"\x7fELF\x00\x00" * 100)
    quiet = tmp / "quiet.log"
    quiet.write_text("[2026-08-05 10:10:01] train.py:12 - starting Relax training\n")
    cases = [
        ([str(bad), "--arm", "baseline"], "holds no console line"),
        ([str(quiet), "--arm", "baseline"], "no Relax metric lines"),
        ([str(binary), "--arm", "baseline"], "holds no console line"),
        ([str(tmp / "missing.log"), "--arm", "baseline"], "not found"),
        ([str(log), "--arm", "A9"], "--arm A9"),
        ([str(log), "--arm", "baseline", "--tensorboard", str(tmp / "none")], "--tensorboard"),
    ]
    for args, needle in cases:
        code, err = run_err(["ingest", *args, "--spec", str(spec), "--runs", str(runs)], capsys)
        assert code == 2, needle
        assert err.count("\n") == 0 and needle in err and err.startswith("reportgen: error: ")
        assert not runs.exists()


def test_refuses_existing_run_and_other_spec(setup, capsys):
    tmp, spec, log = setup
    runs = tmp / "runs"
    assert (
        main(["ingest", str(log), "--spec", str(spec), "--arm", "baseline", "--runs", str(runs), "--repeat", "3"]) == 0
    )
    before = sorted(str(p) for p in runs.rglob("*"))
    code, err = run_err(
        ["ingest", str(log), "--spec", str(spec), "--arm", "baseline", "--runs", str(runs), "--repeat", "3"], capsys
    )
    assert code == 2 and "already holds" in err
    other = hand_made_spec(tmp / "other.toml", flags=FLAGS, title="Keep optimizer CPU offload")
    code, err = run_err(["ingest", str(log), "--spec", str(other), "--arm", "baseline", "--runs", str(runs)], capsys)
    assert code == 2 and "differs from" in err
    assert sorted(str(p) for p in runs.rglob("*")) == before


def test_refused_while_a_campaign_of_the_experiment_is_in_progress(setup, capsys):
    # Another process runs the campaign (it holds the campaign lock): an ingest would take a repeat
    # number the runner is about to use, so it is refused in one line, nothing written.
    from reportgen.store import lock
    from tests.store.test_lock import holder_process, stop

    tmp, spec, log = setup
    runs = tmp / "runs"
    proc = holder_process(runs / "offload" / lock.CAMPAIGN_LOCK)
    try:
        code, err = run_err(["ingest", str(log), "--spec", str(spec), "--arm", "baseline", "--runs", str(runs)], capsys)
        assert code == 2 and "a campaign of this experiment is in progress" in err and f"pid {proc.pid}" in err
        assert "ingest once it has ended" in err and len(err.strip().splitlines()) == 1
        assert sorted(p.name for p in runs.rglob("*")) == sorted(["offload", lock.CAMPAIGN_LOCK])
    finally:
        stop(proc)
    assert main(["ingest", str(log), "--spec", str(spec), "--arm", "baseline", "--runs", str(runs)]) == 0
    assert (runs / "offload" / "baseline" / "1" / "manifest.json").is_file()
    assert not (runs / "offload" / lock.CAMPAIGN_LOCK).exists()

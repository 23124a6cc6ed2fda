"""`reportgen ingest LOG ... --traces DIR`: a hand-made run's traces become traces.parquet;
a bad trace or a hostile snapshot stops the ingest with one line and leaves nothing behind."""

from __future__ import annotations

import pickle

from reportgen.cli import main
from reportgen.traces import model
from tests.ingest.conftest import TRACE, hand_made_spec, relax_stdout

from .synth import offload_trace
from .test_snapshot import Hostile, snap


def _setup(tmp_path):
    (tmp_path / "recipe.sh").write_text("#!/bin/bash\nset -x\npython3 -m relax.entrypoints.train\n")
    spec = hand_made_spec(tmp_path / "exp.toml", flags=("--global-batch-size",))
    log = tmp_path / "hand.log"
    log.write_text(TRACE + relax_stdout(steps=5, fail=False))
    traces = tmp_path / "traces"
    offload_trace(traces / "exp" / "train_trace" / "train_overall_rank0_dp0_tp0_pp0.1.pt.trace.json.gz", offload=True)
    offload_trace(traces / "exp" / "train_trace" / "train_overall_rank1_dp1_tp0_pp0.1.pt.trace.json.gz", offload=True)
    mem = traces / "exp" / "memory_snapshot" / "memory_snapshot_time1_rank0_dp0_tp0_pp0_snapshot.pickle"
    mem.parent.mkdir(parents=True)
    mem.write_bytes(pickle.dumps(snap(oom=True)))
    return spec, log, traces


def _ingest(tmp_path, spec, log, traces):
    argv = ["ingest", str(log), "--spec", str(spec), "--arm", "baseline", "--runs", str(tmp_path / "runs")]
    return main([*argv, "--traces", str(traces)])


def test_ingest_with_traces_writes_the_summary(tmp_path, capsys):
    spec, log, traces = _setup(tmp_path)
    assert _ingest(tmp_path, spec, log, traces) == 0
    run = tmp_path / "runs" / "offload" / "baseline" / "1"
    rows = model.read(run / model.FILENAME)
    assert {(r.source, r.rank) for r in rows} == {("train", 0), ("train", 1), ("memory", 0)}
    assert {r.step for r in rows if r.source == "train"} == {3, 4}
    assert any(r.kind == "mem_oom" for r in rows)
    assert all(r.file.startswith("traces/exp/") for r in rows)
    assert (run / "traces" / "exp" / "train_trace").is_dir()


def test_hostile_snapshot_stops_the_ingest_and_leaves_nothing(tmp_path, capsys):
    spec, log, traces = _setup(tmp_path)
    marker = tmp_path / "pwned"
    bad = traces / "exp" / "memory_snapshot" / "memory_snapshot_time2_rank1_dp1_tp0_pp0_snapshot.pickle"
    bad.write_bytes(pickle.dumps({"segments": [Hostile(marker)]}))
    assert _ingest(tmp_path, spec, log, traces) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "refused" in err and "time2_rank1" in err
    assert not marker.exists()
    assert not (tmp_path / "runs" / "offload").exists()


def test_unreadable_trace_and_missing_folder(tmp_path, capsys):
    spec, log, traces = _setup(tmp_path)
    (traces / "exp" / "train_trace" / "train_overall_rank2_dp2_tp0_pp0.1.pt.trace.json.gz").write_bytes(b"junk")
    assert _ingest(tmp_path, spec, log, traces) == 2
    assert "rank2" in capsys.readouterr().err
    assert not (tmp_path / "runs" / "offload").exists()
    assert _ingest(tmp_path, spec, log, tmp_path / "nope") == 2
    assert "--traces" in capsys.readouterr().err


def test_module_entry_point_summarises_run_folders(tmp_path, capsys):
    from reportgen.traces.__main__ import main as traces_main

    run = tmp_path / "profile-A1" / "1"
    offload_trace(
        run / "traces" / "e" / "train_trace" / "train_actor_rank0_dp0_tp0_pp0.1.pt.trace.json.gz", offload=False
    )
    empty = tmp_path / "empty"
    empty.mkdir()
    assert traces_main([str(run), str(empty)]) == 0
    out = capsys.readouterr().out
    assert str(run / model.FILENAME) in out and "nothing written" in out
    assert model.read(run / model.FILENAME)
    assert traces_main([str(tmp_path / "missing")]) == 2


def test_runner_hook_turns_a_bad_trace_into_a_warning(tmp_path):
    from reportgen.traces.store import summarize_run_noting

    run = tmp_path / "run"
    assert summarize_run_noting(run) == []  # no traces/: nothing to say, nothing written
    bad = run / "traces" / "e" / "train_trace" / "train_actor_rank0_dp0_tp0_pp0.1.pt.trace.json.gz"
    bad.parent.mkdir(parents=True)
    bad.write_bytes(b"\x1f\x8b not really gzip")
    warnings = summarize_run_noting(run)
    assert len(warnings) == 1 and warnings[0].startswith("traces: ") and "rank0" in warnings[0]
    assert not (run / model.FILENAME).exists()

"""The one run-folder reader: typed files, the digest of exactly the bytes read, and a freshness
check that any input going stale trips (store.run_folder, store.freshness, store.models)."""

from __future__ import annotations

import json
import shutil
from datetime import datetime
from pathlib import Path

import pytest

from reportgen.analysis.document import SCHEMA_VERSION
from reportgen.analyze import analyze_experiment
from reportgen.errors import UserError
from reportgen.store import layout
from reportgen.store.freshness import input_files, stale_reason
from reportgen.store.models import Campaign, Events, ExperimentRecord, GitProvenance, Manifest, RunCommand
from reportgen.store.run_folder import read_experiment, read_run_folder
from tests.analysis.builder import FakeArm, make_experiment
from tests.helpers import committed_experiments

COMMITTED = [p.name for p in committed_experiments()]


def _experiment(tmp_path: Path) -> Path:
    """A small experiment with every kind of input the analysis reads: the runs' tables and
    manifests, experiment.json, campaign.json, each run's provenance/git.json, and a profiler run
    whose manifest lists no artifacts (its traces/ folder is listed from the files)."""
    exp = make_experiment(tmp_path / "runs", {"baseline": FakeArm(), "A1": FakeArm(speed=1.1)}, repeats=3)
    (exp / "experiment.json").write_text(
        json.dumps({"schema_version": 1, "kind": "reportgen.experiment", "name": "exp", "source_path": "/r/x.toml"})
    )
    (exp / "campaign.json").write_text(
        json.dumps({"schema_version": 1, "kind": "reportgen.campaign", "campaign_id": "c1", "fingerprint": {}})
    )
    for arm, rep, run_dir in layout.iter_runs(exp):
        (run_dir / "provenance").mkdir(exist_ok=True)
        (run_dir / "provenance" / "git.json").write_text(json.dumps({"repository": True, "head": f"abc{arm}{rep}"}))
    profile = exp / "profile-A1" / "1"
    shutil.copytree(exp / "A1" / "1", profile)
    manifest = json.loads((profile / "manifest.json").read_text())
    manifest.pop("artifacts", None)
    manifest["role"] = "profile"
    (profile / "manifest.json").write_text(json.dumps(manifest))
    (profile / "traces").mkdir()
    (profile / "traces" / "rank0.pt.trace.json").write_text("{}")
    return exp


def test_every_input_read_going_stale_stops_the_build(tmp_path: Path) -> None:
    exp = _experiment(tmp_path)
    analyze_experiment(exp)
    assert stale_reason(exp, SCHEMA_VERSION) is None
    read = read_experiment(exp).read_sha256
    # What analyze reads beyond the run tables is in the digest too.
    for rel in ("experiment.toml", "experiment.json", "campaign.json", "baseline/1/provenance/git.json"):
        assert rel in read, rel
    assert "profile-A1/1/traces/rank0.pt.trace.json" in read
    assert [p.relative_to(exp).as_posix() for p in input_files(exp)] == sorted(read)
    for rel in sorted(read):
        path = exp / rel
        before = path.read_bytes()
        path.write_bytes(before + b" ")
        assert stale_reason(exp, SCHEMA_VERSION) == "its runs changed since it was written", rel
        path.write_bytes(before)
        assert stale_reason(exp, SCHEMA_VERSION) is None, rel
    # A new artifact, and a removed input, change what was read as well.
    (exp / "profile-A1" / "1" / "traces" / "rank1.pt.trace.json").write_text("{}")
    assert stale_reason(exp, SCHEMA_VERSION) is not None
    (exp / "profile-A1" / "1" / "traces" / "rank1.pt.trace.json").unlink()
    (exp / "baseline" / "1" / "provenance" / "git.json").unlink()
    assert stale_reason(exp, SCHEMA_VERSION) is not None


def test_runs_of_other_experiments_on_the_same_machine_are_inputs_too(tmp_path: Path) -> None:
    """The overlap check compares the runs with every run recorded on their machine: another
    experiment's run there (or a change to one) makes the analysis stale; one of another machine,
    or this experiment's archived campaign on another, does not."""
    exp = _experiment(tmp_path)
    make_experiment(tmp_path / "runs", {"baseline": FakeArm(fingerprint="fp-other")}, name="elsewhere", repeats=1)
    analyze_experiment(exp)
    assert stale_reason(exp, SCHEMA_VERSION) is None
    assert not any(k.startswith("../") for k in read_experiment(exp).read_sha256)
    make_experiment(tmp_path / "runs", {"baseline": FakeArm()}, name="beside", repeats=1)  # fp-1: this machine
    assert stale_reason(exp, SCHEMA_VERSION) == "its runs changed since it was written"
    files = read_experiment(exp)
    assert "../beside/baseline/1/manifest.json" in files.read_sha256
    assert [(m.experiment, m.rel) for m in files.machine_runs if m.experiment == "beside"] == [("beside", "baseline/1")]
    analyze_experiment(exp)
    assert stale_reason(exp, SCHEMA_VERSION) is None
    manifest = tmp_path / "runs" / "beside" / "baseline" / "1" / "manifest.json"
    manifest.write_text(manifest.read_text().replace('"complete"', '"failed"'))
    assert stale_reason(exp, SCHEMA_VERSION) == "its runs changed since it was written"
    analyze_experiment(exp)
    # A campaign run on the machine after this one ended cannot overlap it: not an input.
    make_experiment(tmp_path / "runs", {"baseline": FakeArm()}, name="later", repeats=1, t0=1_864_000_000.0)
    assert stale_reason(exp, SCHEMA_VERSION) is None
    assert not any("later" in m.experiment for m in read_experiment(exp).machine_runs)
    # Nor one that starts the second this campaign's last run ended (times are whole seconds).
    end = max(m.manifest.ended_utc or "" for m in read_experiment(exp).machine_runs if m.experiment == "exp")
    ends_at = datetime.fromisoformat(end.replace("Z", "+00:00")).timestamp()
    make_experiment(tmp_path / "runs", {"baseline": FakeArm()}, name="next", repeats=1, t0=ends_at)
    assert stale_reason(exp, SCHEMA_VERSION) is None


def test_digest_is_of_the_bytes_read(tmp_path: Path) -> None:
    exp = _experiment(tmp_path)
    files = read_experiment(exp)
    assert read_experiment(exp, tables=False).digest == files.digest
    run = next(r for r in files.runs if r.rel == "baseline/1")
    assert run.manifest.status == "complete" and not run.metrics.empty and run.missing == frozenset()
    assert run.git is not None and run.git.commit_id == "abcbaseline1" and run.git.schema_version == 1
    profile = next(r for r in files.runs if r.arm == "profile-A1")
    assert [a["path"] for a in profile.artifacts] == ["traces/rank0.pt.trace.json"]


@pytest.mark.parametrize("name", COMMITTED)
def test_committed_runs_read_and_their_analysis_is_current(name: str, committed_runs: Path) -> None:
    """Every committed file loads through its model (git.json of schema 0, recorded before it was
    versioned, migrated; a later showcase's as written), and the committed
    analysis.json was made from exactly these bytes."""
    exp = committed_runs / name
    files = read_experiment(exp, tables=False)
    assert files.record is not None and files.campaign is not None
    for run in files.runs:
        assert run.notes == () and run.missing == frozenset(), run.rel
        assert run.manifest.schema_version == Manifest.SCHEMA_VERSION
        assert run.run_dir is not None and run.git is not None
        raw = json.loads((run.run_dir / "provenance" / "git.json").read_text())
        assert run.git.to_dict() == {**raw, "schema_version": 1, "kind": "reportgen.git"}
        # Read and written back, a manifest is byte for byte what was read.
        assert json.dumps(run.manifest.to_dict()) == json.dumps(json.loads((run.run_dir / "manifest.json").read_text()))
        # command.json (the provenance page's, not an analysis input, so not read for it), read
        # when the run folder is read on its own.
        assert run.command is None and run.provenance == {}
        shown = read_run_folder(run.run_dir, run.arm, run.repeat)
        command, notes = shown.command, shown.notes
        raw_cmd = json.loads((run.run_dir / layout.COMMAND).read_text())
        assert notes == () and command is not None
        assert command.to_dict() == {**raw_cmd, "schema_version": 1, "kind": "reportgen.command"}
        assert command.command and command.env
    assert stale_reason(exp, SCHEMA_VERSION) is None


@pytest.mark.parametrize("model", [Manifest, Events, Campaign, ExperimentRecord, GitProvenance, RunCommand])
def test_newer_schema_is_refused_in_one_line(tmp_path: Path, model: type) -> None:
    path = tmp_path / "f.json"
    path.write_text(json.dumps({"schema_version": 99, "kind": model.KIND, "campaign_id": "c"}))
    with pytest.raises(UserError) as err:
        model.read(path)
    assert str(err.value) == (
        f"{path}: schema_version 99 is newer than this reportgen reads ({model.KIND} {model.SCHEMA_VERSION}); "
        "upgrade reportgen"
    )


def test_newer_manifest_in_a_run_stops_the_analysis(tmp_path: Path) -> None:
    exp = make_experiment(tmp_path / "runs", {"baseline": FakeArm(), "A1": FakeArm()}, repeats=1)
    path = exp / "A1" / "1" / "manifest.json"
    path.write_text(json.dumps({**json.loads(path.read_text()), "schema_version": 2}))
    with pytest.raises(UserError, match="newer than this reportgen"):
        read_experiment(exp)


def test_other_kind_and_bad_fields_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "m.json"
    path.write_text(json.dumps({"schema_version": 1, "kind": "reportgen.events"}))
    with pytest.raises(UserError, match=r"kind 'reportgen\.events', expected 'reportgen\.run'"):
        Manifest.read(path)
    path.write_text(json.dumps({"schema_version": 1, "kind": "reportgen.run", "repeat": "one"}))
    with pytest.raises(UserError, match="repeat"):
        Manifest.read(path)
    path.write_text(json.dumps({"kind": "reportgen.run"}))
    with pytest.raises(UserError, match="no schema_version"):
        Manifest.read(path)


def test_an_invalid_file_inside_a_run_is_a_note(tmp_path: Path) -> None:
    exp = make_experiment(tmp_path / "runs", {"baseline": FakeArm(), "A1": FakeArm()}, repeats=1)
    (exp / "A1" / "1" / "events.json").write_text(json.dumps({"schema_version": 1, "events": "none"}))
    (exp / "A1" / "1" / "manifest.json").write_text("{truncated")
    run = next(r for r in read_experiment(exp).runs if r.arm == "A1")
    assert {"manifest.json", "events.json"} <= run.missing and run.manifest.status is None and run.events == ()
    assert run.notes == (
        "manifest.json: unreadable (JSONDecodeError)",
        "events.json: invalid (events: Input should be a valid list)",
    )


def test_command_json_is_written_versioned_and_its_oldest_form_read(tmp_path: Path) -> None:
    cmd = RunCommand.create({"command": ["bash", "r.sh"], "cwd": "/w", "env": {"A": "1"}, "env_total": 9})
    cmd.write(tmp_path / layout.COMMAND)
    assert json.loads((tmp_path / layout.COMMAND).read_text())["kind"] == "reportgen.command"
    assert read_run_folder(tmp_path, "A1", 1).command == cmd
    (tmp_path / layout.COMMAND).write_text(json.dumps({"argv": ["python", "-m", "x"], "cwd": "/w", "env": {}}))
    old = read_run_folder(tmp_path, "A1", 1).command
    assert old is not None and old.command == ["python", "-m", "x"] and old.env_total is None
    (tmp_path / layout.COMMAND).write_text("{not json")
    run = read_run_folder(tmp_path, "A1", 1)
    assert run.command is None and run.notes == ("command.json: unreadable (JSONDecodeError)",)

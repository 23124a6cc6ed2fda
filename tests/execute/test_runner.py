"""`reportgen run` end to end with real subprocesses: the runs/ tree, resume, stops, refusals."""

from __future__ import annotations

import hashlib
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from reportgen.cli import main
from reportgen.store.run import parse_utc
from tests.conftest import env_with_repo_on_path, logging_python
from tests.execute.conftest import A1, RECIPE, make_experiment
from tests.helpers import log_shows, wait_for


def run_cli(*args: str) -> int:
    return main(list(args))


def manifest(runs: Path, arm: str, repeat: int = 1, exp: str = "exp") -> dict:
    return json.loads((runs / exp / arm / str(repeat) / "manifest.json").read_text())


def tree_digest(path: Path) -> dict[str, str]:
    return {
        str(p.relative_to(path)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(path.rglob("*"))
        if p.is_file()
    }


def test_run_writes_a_complete_self_describing_tree(
    tmp_path: Path, experiment: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    runs = tmp_path / "runs"
    monkeypatch.setenv("REPORTGEN_CACHE", str(tmp_path / "cache"))  # where the Python's answer is kept
    python, calls = logging_python(tmp_path / "bin")  # the workload's Python, counting who asks it what
    experiment.write_text(experiment.read_text().replace(f'python = "{sys.executable}"', f'python = "{python}"'))
    assert run_cli("run", str(experiment), "--runs", str(runs), "--no-analyze") == 0
    exp = runs / "exp"
    assert (exp / "experiment.toml").read_bytes() == experiment.read_bytes()
    campaign = json.loads((exp / "campaign.json").read_text())
    assert campaign["schema_version"] == 2 and len(campaign["fingerprint_id"]) >= 12
    for arm in ("baseline", "A1"):
        run_dir = exp / arm / "1"
        m = manifest(runs, arm)
        assert m["schema_version"] == 1 and m["kind"] == "reportgen.run"
        assert m["status"] == "complete" and m["exit_code"] == 0 and m["signal"] is None
        assert m["duration_s"] > 0 and m["started_utc"].endswith("Z") and m["ended_utc"].endswith("Z")
        assert m["fingerprint_id"] == campaign["fingerprint_id"]
        for name in (
            "recipe.sh",
            "recipe.patch",
            "command.json",
            "stdout.log",
            "stderr.log",
            "gpu.parquet",
            "metrics.parquet",
            "events.json",
        ):
            assert (run_dir / name).is_file(), name
        assert (run_dir / "provenance" / "pip-freeze.txt").is_file()
        for name in ("python.txt", "pip-freeze.txt"):  # asked once for both runs, written into each
            assert (run_dir / "provenance" / name).read_bytes() == (
                exp / "baseline" / "1" / "provenance" / name
            ).read_bytes()
        assert (run_dir / "provenance" / "fingerprint.json").is_file()
        assert not list(run_dir.glob(".*.tmp")), "temporary files left behind"
        gpu = pd.read_parquet(run_dir / "gpu.parquet")
        assert list(gpu.columns)[:3] == ["t", "index", "uuid"]
        metrics = pd.read_parquet(run_dir / "metrics.parquet")
        steps = sorted(metrics.loc[metrics.key == "perf/step_resp_token_per_s", "step"].unique())
        assert steps == [0, 1, 2, 3, 4]
        assert m["effective_argv"]["--num-rollout"] == "5"
    # Two runs, each its trainer; the Python's version and packages asked once for the campaign (after
    # the key script, `python -`), and the answer kept in the cache for the next `reportgen run`.
    asked = calls.read_text().splitlines()
    assert [a for a in asked if not a.startswith("trainer.py")] == ["-", "-V", "-m pip freeze"]
    assert len(list((tmp_path / "cache" / "probes").glob("*.json"))) == 1
    assert sum(a.startswith("trainer.py") for a in asked) == 2
    assert "pandas==" in (exp / "A1" / "1" / "provenance" / "pip-freeze.txt").read_text().lower()
    # The candidate's patch is exactly the flag removal, and only it.
    patch = (exp / "A1" / "1" / "recipe.patch").read_text()
    assert "-   --optimizer-cpu-offload\n" in patch
    assert (
        sum(1 for line in patch.splitlines() if line.startswith(("-", "+")) and not line.startswith(("---", "+++")))
        == 1
    )
    assert (exp / "baseline" / "1" / "recipe.patch").read_text() == ""
    speed = pd.read_parquet(exp / "A1" / "1" / "metrics.parquet")
    assert speed.loc[speed.key == "perf/step_resp_token_per_s", "value"].iloc[0] == 100.0
    # The patched copy that ran beside the original is gone.
    assert sorted(p.name for p in experiment.parent.iterdir()) == ["experiment.toml", "recipe.sh", "trainer.py"]


def test_dry_run_prints_plan_and_writes_nothing(
    tmp_path: Path, experiment: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    runs = tmp_path / "runs"
    assert run_cli("run", str(experiment), "--runs", str(runs), "--dry-run") == 0
    out = capsys.readouterr().out
    assert "== baseline" in out and "== A1" in out
    assert "-   --optimizer-cpu-offload" in out
    assert "bash" in out
    assert not runs.exists()


def _dry_run_order(out: str) -> list[tuple[str, int]]:
    order = out.split("\nrun order", 1)[1]
    return [(m[1], int(m[2])) for m in re.finditer(r"^  \d+\. (\S+)/(\d+)(?:  \(.*\))?$", order, re.M)]


@pytest.mark.parametrize(
    ("flags", "options"),
    [
        ((), {}),
        (("--baseline-only",), {"baseline_only": True, "profiler": False}),
        (("--no-profiler",), {"profiler": False}),
    ],
)
def test_dry_run_previews_exactly_the_runs_the_same_options_start(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], flags: tuple[str, ...], options: dict
) -> None:
    # The repository's default experiment with profiler runs (a sequential campaign: the dry run
    # shows its first min_pairs blocks, which the runner starts before the first look).
    from reportgen.execute.executor import RunOptions
    from reportgen.execute.runner import _order
    from reportgen.pipeline import load_plan

    spec = Path(__file__).resolve().parents[2] / "scripts" / "recipes" / "default.toml"
    runs = tmp_path / "runs"
    assert run_cli("run", str(spec), "--profile", "traces", "--runs", str(runs), "--dry-run", *flags) == 0
    out = capsys.readouterr().out
    plan = load_plan(spec, "traces")
    shown = _dry_run_order(out)
    if options.get("baseline_only"):  # what the runner runs with the same options
        assert shown == [(a.id, r) for a, r, *_ in _order(plan, RunOptions(runs_root=runs, **options))]
    assert {a for a, _ in shown} == {line[3:].split(":")[0] for line in out.splitlines() if line.startswith("== ")}
    profiles = {a.id for a in plan.profile_arms}
    assert profiles and (profiles <= {a for a, _ in shown}) == (options.get("profiler", True))
    if options.get("baseline_only"):
        assert shown == [("baseline", r) for r in range(1, plan.spec.run.min_pairs + 1)] and "== A1" not in out
    else:
        assert [r for a, r in shown if a == "A1"] == list(range(1, plan.spec.run.min_pairs + 1))
    assert not runs.exists()


def test_bad_spec_exits_2_and_writes_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spec = make_experiment(tmp_path / "r", candidates=[{**A1, "set": {"--num-rollout": 3}}])
    runs = tmp_path / "runs"
    assert run_cli("run", str(spec), "--runs", str(runs)) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "fixed-workload flag --num-rollout" in err and str(spec) in err
    assert not runs.exists()


def test_edit_of_a_flag_absent_from_the_recipe_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spec = make_experiment(tmp_path / "r", candidates=[A1, {"id": "A2", "title": "x", "remove": ["--no-such-flag"]}])
    runs = tmp_path / "runs"
    assert run_cli("run", str(spec), "--runs", str(runs)) == 2
    assert "--no-such-flag" in capsys.readouterr().err
    assert not runs.exists()


def test_credentials_never_reach_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    secret, key = "hf_plantedSecretValue123", "sk-plantedApiKey987"
    monkeypatch.setenv("HF_TOKEN", secret)
    monkeypatch.setenv("MY_SERVICE_API_KEY", key)

    leaky = RECIPE.replace(
        "set -ex\n", 'set -ex\necho "token is $HF_TOKEN"\nexport WANDB_API_KEY="$MY_SERVICE_API_KEY"\n'
    )
    spec = make_experiment(tmp_path / "r", recipe=leaky)
    runs = tmp_path / "runs"
    assert run_cli("run", str(spec), "--runs", str(runs), "--no-analyze") == 0
    files = [p for p in runs.rglob("*") if p.is_file()]
    assert len(files) > 20
    for path in files:
        data = path.read_bytes()
        assert secret.encode() not in data, path
        assert key.encode() not in data, path
    env = json.loads((runs / "exp" / "baseline" / "1" / "command.json").read_text())["env"]
    assert env["HF_TOKEN"] == "<redacted>" and env["MY_SERVICE_API_KEY"] == "<redacted>"


def test_failure_and_timeout_are_recorded(tmp_path: Path) -> None:
    spec = make_experiment(tmp_path / "r", candidates=[A1, {"id": "A2", "title": "fails", "add": {"--fail-at": 2}}])
    runs = tmp_path / "runs"
    assert run_cli("run", str(spec), "--runs", str(runs), "--no-analyze") == 0
    m = manifest(runs, "A2")
    assert m["status"] == "failed" and m["exit_code"] == 1
    events = json.loads((runs / "exp" / "A2" / "1" / "events.json").read_text())["events"]
    assert any(e["kind"] == "oom" for e in events)

    slow = make_experiment(tmp_path / "s", name="slow", sleep=5, timeout=1.5)
    assert run_cli("run", str(slow), "--runs", str(runs), "--no-analyze", "--no-profiler") == 0
    m = manifest(runs, "baseline", exp="slow")
    assert m["status"] == "failed" and m["timed_out"] is True and m["duration_s"] < 20


def test_resume_keeps_finished_runs_and_rerun_archives(tmp_path: Path, experiment: Path) -> None:
    runs = tmp_path / "runs"
    assert run_cli("run", str(experiment), "--runs", str(runs), "--no-analyze") == 0
    before = tree_digest(runs / "exp" / "baseline")
    a1_before = tree_digest(runs / "exp" / "A1" / "1")
    assert run_cli("run", str(experiment), "--runs", str(runs), "--no-analyze") == 0
    assert tree_digest(runs / "exp" / "baseline") == before
    assert tree_digest(runs / "exp" / "A1" / "1") == a1_before
    assert run_cli("run", str(experiment), "--runs", str(runs), "--no-analyze", "--rerun", "A1") == 0
    assert tree_digest(runs / "exp" / "baseline") == before
    archived = list((runs / "exp" / "archive").glob("*/A1-1"))
    assert len(archived) == 1 and tree_digest(archived[0]) == a1_before


def test_other_machine_is_refused_then_new_campaign(
    tmp_path: Path, experiment: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    runs = tmp_path / "runs"
    assert run_cli("run", str(experiment), "--runs", str(runs), "--no-analyze") == 0
    campaign_path = runs / "exp" / "campaign.json"
    campaign = json.loads(campaign_path.read_text())
    campaign["fingerprint_id"] = "0" * 64
    campaign_path.write_text(json.dumps(campaign))
    capsys.readouterr()
    assert run_cli("run", str(experiment), "--runs", str(runs), "--no-analyze") == 2
    assert "another machine" in capsys.readouterr().err
    assert run_cli("run", str(experiment), "--runs", str(runs), "--no-analyze", "--new-campaign") == 0
    archive = runs / "exp" / "archive" / campaign["campaign_id"]
    assert (archive / "baseline" / "1" / "manifest.json").is_file()
    assert manifest(runs, "baseline")["status"] == "complete"


def _start_runner(spec: Path, runs: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "reportgen", "run", str(spec), "--runs", str(runs), "--no-analyze"],
        env=env_with_repo_on_path(),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )


def _a1_running(runs: Path) -> bool:
    path = runs / "exp" / "A1" / "1" / "manifest.json"
    if not path.is_file():
        return False
    m = json.loads(path.read_text())
    return m.get("status") == "running" and bool(m.get("process"))


@pytest.mark.slow
def test_sigkilled_runner_resumes_redoing_only_the_interrupted_run(tmp_path: Path) -> None:
    # A1 runs 2.5 s: the poll (every 0.1 s) sees it running long before it could end.
    spec = make_experiment(tmp_path / "r", steps=5, sleep=0.5)
    runs = tmp_path / "runs"
    proc = _start_runner(spec, runs)
    wait_for(lambda: _a1_running(runs), 60, "run A1 to be running")
    baseline = tree_digest(runs / "exp" / "baseline")
    orphan_pgid = json.loads((runs / "exp" / "A1" / "1" / "manifest.json").read_text())["process"]["pgid"]
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    # Resume: the finished baseline is untouched, the half-done A1 is redone from scratch.
    assert run_cli("run", str(spec), "--runs", str(runs), "--no-analyze") == 0
    assert tree_digest(runs / "exp" / "baseline") == baseline
    assert manifest(runs, "A1")["status"] == "complete"
    old = list((runs / "exp" / "archive").glob("*/A1-1"))
    assert len(old) == 1 and json.loads((old[0] / "manifest.json").read_text())["status"] == "running"
    with pytest.raises(ProcessLookupError):
        os.killpg(orphan_pgid, 0)


@pytest.mark.slow
def test_sigterm_stops_the_group_and_marks_interrupted(tmp_path: Path) -> None:
    spec = make_experiment(tmp_path / "r", steps=30, sleep=0.5)
    runs = tmp_path / "runs"
    proc = _start_runner(spec, runs)
    wait_for(
        lambda: log_shows(runs / "exp" / "baseline" / "1" / "stdout.log", b"perf 1:"), 60, "step 1 of the baseline"
    )
    pgid = json.loads((runs / "exp" / "baseline" / "1" / "manifest.json").read_text())["process"]["pgid"]
    proc.send_signal(signal.SIGTERM)
    out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 130, out.decode()
    m = manifest(runs, "baseline")
    assert m["status"] == "interrupted" and m["signal"] in ("SIGTERM", "SIGKILL")
    assert not (runs / "exp" / "A1").exists()
    with pytest.raises(ProcessLookupError):
        os.killpg(pgid, 0)


def test_ls_lists_runs(tmp_path: Path, experiment: Path, capsys: pytest.CaptureFixture[str]) -> None:
    runs = tmp_path / "runs"
    assert run_cli("run", str(experiment), "--runs", str(runs), "--no-analyze") == 0
    capsys.readouterr()
    assert run_cli("ls", "--runs", str(runs)) == 0
    out = capsys.readouterr().out
    assert "baseline" in out and "A1" in out and out.count("complete") == 2


def test_interleaved_order_runs_repeats_in_turn(tmp_path: Path) -> None:
    spec = make_experiment(tmp_path / "r", order="interleaved", repeats=2, steps=2, sleep=0.01)
    runs = tmp_path / "runs"
    assert run_cli("run", str(spec), "--runs", str(runs), "--no-analyze") == 0
    starts = sorted(
        (manifest(runs, arm, rep)["started_utc"], manifest(runs, arm, rep)["duration_s"], arm, rep)
        for arm in ("baseline", "A1")
        for rep in (1, 2)
    )
    order = [
        (m[2], m[3])
        for m in sorted(starts, key=lambda s: (runs / "exp" / s[2] / str(s[3]) / "manifest.json").stat().st_mtime)
    ]
    assert order == [("baseline", 1), ("A1", 1), ("A1", 2), ("baseline", 2)]  # blocks alternate direction


def test_a_run_ends_when_its_workload_ends_not_when_its_folder_is_finished(
    tmp_path: Path, experiment: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ended_utc is when the workload ended: the analysis walks back from it by the logged step times
    to place the measured windows among the load samples, so the seconds spent after the end
    (compacting, redacting, ingesting: slow on a loaded machine) must not shift it."""
    from reportgen.execute import runner

    called: list[float] = []
    real = runner.ingest_run

    def slow_ingest(*args, **kwargs):  # the real ingest, after a wait as a loaded machine makes one
        called.append(time.time())
        time.sleep(1.5)
        return real(*args, **kwargs)

    monkeypatch.setattr(runner, "ingest_run", slow_ingest)
    runs = tmp_path / "runs"
    assert run_cli("run", str(experiment), "--runs", str(runs), "--no-analyze", "--no-profiler") == 0
    assert len(called) == 2
    for arm, ingested_at in zip(("baseline", "A1"), called, strict=True):
        m = manifest(runs, arm)
        ended = parse_utc(m["ended_utc"])
        assert ended is not None and ended <= ingested_at + 0.002, (m["ended_utc"], ingested_at)
        assert ended >= (parse_utc(m["started_utc"]) or 0) + m["duration_s"] - 0.002

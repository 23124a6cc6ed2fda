"""Bisection and the paired history on real runs of the embedded CPU workload, in a throw-away git
repository whose commits change the workload's code: six commits after GOOD, the fourth of which
makes every training step sleep 2 s inside its timed block. A fixed sleep, not a share of the step's
own time: on two cores shared with other test workers a run's step time moves 2-3x with the load,
and the slowdown has to stand out of that for a test that must decide every time.

`reportgen bisect GOOD BAD SPEC --json` (a real subprocess) must name that commit with paired
campaigns at each step; the paired history of every commit against GOOD (the bisection's own
campaigns, and one small campaign each for the commits it skipped) must put its one alarm at that
commit and none in the A/A stretches either side; `reportgen history` must offer the bisect command
for the alarm's range. The campaigns are made once for the module (one build, three tests)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import reportgen
from reportgen.cli import main
from reportgen.history import paired, store
from reportgen.history.bisect_model import BisectRecord
from tests.conftest import built_once

pytestmark = pytest.mark.slow  # 3 bisection campaigns of 3 pairs and 3 of 2: about 30 short CPU runs

PACKAGE = Path(reportgen.__file__).resolve().parent
RECIPE = PACKAGE.parent / "scripts" / "recipes" / "grpo-recipe.sh"
ARGS = Path("reportgen/workloads/grpo/args.py")
TRAIN = Path("reportgen/workloads/grpo/train.py")
STEP_LINE = "        rollout, perf = self.train(rollout_id, batch, verdicts)\n"  # inside Trainer.step's timed block
SLEEP_S = 2.0
SLOW_AT = 3  # position of the slow commit in the range after GOOD (0-based): the 4th of 6
COMMITS = 6
STEPS = 6
SPEC = """\
schema_version = 1
name = "bisect-demo"
title = "The embedded workload at revisions of its own repository"

[recipe]
script = "recipe.sh"
workdir = "."
entrypoint = "reportgen.workloads.grpo"
env = {{ NUM_ROLLOUT = "{steps}", ROLLOUT_BATCH_SIZE = "2", GLOBAL_BATCH_SIZE = "16", PRESET = "cpu-tiny", DEVICE = "cpu" }}

[workload]
steps = {steps}
flags = ["--num-rollout", "--rollout-batch-size", "--n-samples-per-prompt", "--global-batch-size", "--seed", "--rollout-seed", "--preset", "--device"]

[run]
timeout_s = 240

[analysis]
warmup_steps = 2
windows = [{{ name = "W1", start = 2, end = {last} }}]

[[candidates]]
id = "A1"
title = "Remove the optimizer offload trio (never run here: revisions only)"
remove = ["--optimizer-cpu-offload", "--overlap-cpu-optimizer-d2h-h2d", "--use-precision-aware-optimizer"]
"""
GIT_ENV = {
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@example.invalid",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@example.invalid",
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_CONFIG_NOSYSTEM": "1",
}


def _git(repo: Path, *args: str) -> str:
    res = subprocess.run(
        ["git", "-C", str(repo), *args], check=True, capture_output=True, text=True, env={**os.environ, **GIT_ENV}
    )
    return res.stdout.strip()


def _commit(repo: Path, message: str) -> str:
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "--allow-empty", "-m", message)
    return _git(repo, "rev-parse", "HEAD")


def make_repo(repo: Path) -> tuple[str, list[str]]:
    """GOOD (the workload, its recipe and spec.toml) and six commits that change the workload's code,
    the fourth slowing every training step by half its time. Returns GOOD and the six SHAs."""
    repo.mkdir(parents=True)
    _git(repo, "init", "-q", "-b", "main")
    for rel in ("__init__.py", "workloads/__init__.py"):
        (repo / "reportgen" / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(PACKAGE / rel, repo / "reportgen" / rel)
    shutil.copytree(
        PACKAGE / "workloads" / "grpo",
        repo / "reportgen" / "workloads" / "grpo",
        ignore=shutil.ignore_patterns("__pycache__"),
    )
    shutil.copyfile(RECIPE, repo / "recipe.sh")
    (repo / "spec.toml").write_text(SPEC.format(steps=STEPS, last=STEPS - 1), encoding="utf-8")
    good = _commit(repo, "the embedded workload")
    shas = []
    for i in range(COMMITS):
        path = repo / (TRAIN if i == SLOW_AT else ARGS)
        text = path.read_text(encoding="utf-8")
        if i == SLOW_AT:
            assert STEP_LINE in text, "Trainer.step changed: update STEP_LINE"
            text = text.replace(STEP_LINE, STEP_LINE + f"        time.sleep({SLEEP_S})  # a slower step\n", 1)
            message = f"train: every step sleeps {SLEEP_S} s"
        else:
            text += f"\n# refactor {i}: no change in what runs\n"
            message = f"args: refactor {i}"
        path.write_text(text, encoding="utf-8")
        shas.append(_commit(repo, message))
    return good, shas


def _build(folder: Path) -> None:
    repo, runs, cache = folder / "repo", folder / "runs", folder / "cache"
    good, shas = make_repo(repo)
    env = {
        **os.environ,
        "REPORTGEN_CACHE": str(cache),
        "REPORTGEN_MACHINE_LOCK": str(folder / "machine.lock"),
        "PYTHONPATH": str(PACKAGE.parent),
    }
    cmd = [sys.executable, "-m", "reportgen", "bisect", good, shas[-1], str(repo / "spec.toml")]
    cmd += ["--repo", str(repo), "--runs", str(runs), "--pairs", "3", "--json"]
    res = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=1500)
    assert res.returncode == 0, res.stderr[-3000:]
    (folder / "bisect.json").write_text(res.stdout)
    measured = {s["sha"] for s in json.loads(res.stdout)["steps"]}
    # The paired history: every other commit against GOOD, two pairs each (what a nightly job adds).
    from reportgen.pipeline import run_revisions

    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("REPORTGEN_MACHINE_LOCK", str(folder / "machine.lock"))
        for sha in shas:
            if sha not in measured:
                run_revisions(
                    repo, good, sha, repo / "spec.toml", runs_root=runs, pairs=2, name=f"nightly-{sha[:7]}", cache=cache
                )
    (folder / "commits.json").write_text(json.dumps({"good": good, "shas": shas}))


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return built_once(tmp_path_factory, "bisect-workload-repo", _build)


def test_bisection_names_the_commit_that_slowed_every_step(made: Path) -> None:
    c = json.loads((made / "commits.json").read_text())
    out = json.loads((made / "bisect.json").read_text())
    culprit = c["shas"][SLOW_AT]
    assert out["culprit"] == culprit, out
    # BAD first, then the halves of six commits: 3 campaigns, each stopped at its decision (3 pairs at most).
    assert out["steps"][0]["sha"] == c["shas"][-1] and len(out["steps"]) <= 4
    assert all(2 <= s["pairs"] <= 3 for s in out["steps"])
    slow = next(s for s in out["steps"] if s["sha"] == culprit)
    assert slow["call"] == "differs" and slow["ratio"] < 0.7
    assert out["runs"] == sum(2 * s["pairs"] for s in out["steps"]) and out["minutes"] > 0
    record = BisectRecord.read(Path(out["record"]))
    assert record is not None and record.culprit == culprit
    assert f"time.sleep({SLEEP_S})" in record.culprit_diff and record.culprit_subject.startswith("train: every step")
    report = Path(out["report"]).read_text()
    assert (
        f"**Culprit: `{culprit}`**" in report and "## Steps" in report and f"+        time.sleep({SLEEP_S})" in report
    )
    assert "## Where the time went" in report  # step time and phases, GOOD against the culprit


def test_paired_history_alarms_at_the_slow_commit_and_not_in_the_aa_stretches(made: Path) -> None:
    c = json.loads((made / "commits.json").read_text())
    runs, repo = made / "runs", made / "repo"
    _, pts = store.collect_both(runs)
    assert {p.anchor for p in pts} == {c["good"]} and {p.commit for p in pts} == set(c["shas"])
    (series,) = paired.build(pts, commit_order=store.commit_order(repo))
    assert [p.commit for p in series.points] == c["shas"]
    assert [(a.before.commit, a.after.commit) for a in series.alarms] == [
        (c["shas"][SLOW_AT - 1], c["shas"][SLOW_AT])
    ], [(p.commit[:7], round(p.ratio, 3)) for p in series.points]
    assert series.alarms[0].worse


def test_history_command_offers_the_bisect_command_for_the_alarm(made: Path, capsys) -> None:
    c = json.loads((made / "commits.json").read_text())
    runs = made / "runs"
    out_dir = made / "history-out"
    out_dir.mkdir(exist_ok=True)
    assert main(["history", "--runs", str(runs), "--git", str(made / "repo"), "--out", str(out_dir / "h.parquet")]) == 0
    text = capsys.readouterr().out
    assert f"bisect: reportgen bisect {c['shas'][SLOW_AT - 1]} {c['shas'][SLOW_AT]}" in text, text
    assert len(store.read_paired(out_dir / "paired-history.parquet")) == COMMITS

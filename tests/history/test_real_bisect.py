"""Bisection and the paired history on real runs of the embedded CPU workload, in a throw-away git
repository whose commits change the workload's code: seven commits after GOOD, the fourth of which
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
import subprocess
import sys
from pathlib import Path

import pytest

from reportgen.analysis.document import parse
from reportgen.cli import main
from reportgen.history import paired, store
from reportgen.history.bisect_model import BisectRecord
from reportgen.store.atomic import read_json
from tests.conftest import built_once
from tests.git_repos import PACKAGE, code_history

# 3 bisection campaigns of 3 pairs and 3 of 2: about 30 short CPU runs, made once by the worker that
# runs all three tests (another worker waiting on the build would sit idle for minutes).
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("real-bisect")]

SLOW_AT = 3  # position of the slow commit in the range after GOOD (0-based): the 4th of 7
# 3 A/A points before it and 4 after: the detector tests a change at 0.001 with a t on their logs,
# and 3 against 3 noisy points (the suite's load moved A/A points by 25 %) fell just short of it.
COMMITS = 7
SLEEP_S = 2.0


def _build(folder: Path) -> None:
    repo, runs, cache = folder / "repo", folder / "runs", folder / "cache"
    good, shas = code_history(repo, commits=COMMITS, slow_at=SLOW_AT, sleep_s=SLEEP_S)
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
    # A step stops at its first pair when the analysis finds the machine disturbed (an invalid verdict
    # is final): the search classes it by its estimate, but one pair is no history point.
    measured = {s["sha"] for s in json.loads(res.stdout)["steps"] if s["pairs"] >= 2}
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
    # BAD first, then the halves of seven commits: at most 4 campaigns, each stopped at its decision (3 pairs at most).
    assert out["steps"][0]["sha"] == c["shas"][-1] and len(out["steps"]) <= 4
    assert all(1 <= s["pairs"] <= 3 for s in out["steps"])  # 1: stopped as disturbed (invalid), see _build
    slow = next(s for s in out["steps"] if s["sha"] == culprit)
    assert slow["call"] == "differs" and slow["ratio"] < 0.7
    record = BisectRecord.read(Path(out["record"]))
    assert record is not None and record.culprit == culprit
    # Every run is counted, a pair set aside as disturbed and redone too (two runs more than its pairs).
    assert out["runs"] == sum(s.runs for s in record.steps) and out["minutes"] > 0
    assert all(s.runs >= 2 * s.pairs for s in record.steps)
    assert f"time.sleep({SLEEP_S})" in record.culprit_diff and record.culprit_subject.startswith("train: every step")
    report = Path(out["report"]).read_text()
    assert (
        f"**Culprit: `{culprit}`**" in report and "## Steps" in report and f"+        time.sleep({SLEEP_S})" in report
    )
    assert "## Where the time went" in report  # step time and phases, GOOD against the culprit


def test_the_campaign_of_good_and_the_slow_commit_rejects_it(made: Path) -> None:
    """Issue 34's first real-run check, on the bisection's own campaign of GOOD against the slow
    commit: one campaign of two revisions rejects the slower one, with the same work and the same
    maths on both sides, and names both commits and the code between them."""
    c = json.loads((made / "commits.json").read_text())
    out = json.loads((made / "bisect.json").read_text())
    culprit = c["shas"][SLOW_AT]
    step = next(s for s in out["steps"] if s["sha"] == culprit)
    doc = parse(read_json(made / "runs" / step["experiment"] / "analysis.json"), "analysis.json")
    comp = doc.comparison("candidate")
    assert comp is not None and comp.verdict.status == "rejected", comp.verdict.model_dump() if comp else None
    assert comp.run_level.interval.high is not None and comp.run_level.interval.high < 0.9
    status = {g.id: g.status for g in comp.guardrails}
    assert status["same_work"] == "pass" and status["same_maths"] == "pass", comp.guardrails
    assert comp.code_change is not None and comp.code_change.merge_base == c["good"]
    changed = {f.path: (f.added, f.deleted) for f in comp.code_change.files}
    assert changed["reportgen/workloads/grpo/train.py"] == (1, 0)  # the sleep; the refactors touch args.py
    assert {a.id: a.revision for a in doc.arms} == {"baseline": c["good"], "candidate": culprit}


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

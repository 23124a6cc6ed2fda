"""`reportgen plan-windows`: where every arm settles in earlier campaigns of the class, the windows
whose burn-in covers it, and (--amend) the windows recorded in a campaign's stored spec with their
reason, so that the next `reportgen analyze` rests on steady-state steps and says what moved."""

from __future__ import annotations

import json
from pathlib import Path

from reportgen.analyze import analyze_experiment, plan_windows
from reportgen.cli import main
from reportgen.render.load import load_analysis
from reportgen.store.experiment import read_spec
from tests.analysis.builder import FakeArm, make_experiment

R = "showcase-1xh200-grpo-offload"


def test_the_windows_of_r4_from_r2_and_r3(capsys, committed_runs: Path) -> None:
    spec = (committed_runs / f"{R}-r4" / "experiment.toml").read_bytes()
    args = ["plan-windows", f"{R}-r4", "--runs", str(committed_runs), "--from", f"{R}-r2", "--from", f"{R}-r3"]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert f"{R}-r2 (1 x NVIDIA H200, driver 580.159.04, 48 steps): settled at baseline 14, A1 12, A3 23" in out
    assert "burn-in: steps 0-23 (the latest settle point + 1); windows W1 24-35, W2 36-47 of 48-step runs" in out
    assert (
        'warmup_steps = 24\nwindows = [{ name = "W1", start = 24, end = 35 }, { name = "W2", start = 36, end = 47 }]'
        in out
    )
    assert (committed_runs / f"{R}-r4" / "experiment.toml").read_bytes() == spec  # printed, not written


def test_amending_a_campaign_records_the_windows_and_the_reanalysis_says_what_moved(tmp_path: Path, capsys) -> None:
    """A candidate that warms up over 30 steps of 60, otherwise as fast as the baseline: windows from
    step 6 reject it; the windows declared from another campaign of the class start after its warm-up,
    the verdict moves, and the re-analysis record says from what and why."""
    root = tmp_path / "runs"
    arms = {"baseline": FakeArm(ramp_steps=4, cv=0.01), "A1": FakeArm(ramp_steps=30, cv=0.01)}
    exp = make_experiment(root, arms, name="campaign", steps=60, warmup=6, windows=2, repeats=3)
    make_experiment(root, arms, name="earlier", steps=60, warmup=6, windows=2, repeats=2, seed=2, t0=1_800_000_000.0)
    assert main(["analyze", "campaign", "--runs", str(root)]) == 0
    first = load_analysis(exp)
    assert first.reanalysis is None and first.comparison("A1").verdict.status == "rejected"  # type: ignore[union-attr]
    capsys.readouterr()
    assert main(["plan-windows", "campaign", "--runs", str(root), "--from", "earlier", "--amend"]) == 0
    out = capsys.readouterr().out
    assert "earlier (" in out and "settled at baseline" in out and "recorded in" in out
    spec = read_spec(exp)
    burn = spec.analysis.warmup_steps
    assert 24 <= burn <= 33 and spec.analysis.windows[0].start == burn and spec.analysis.windows[-1].end == 59
    record = json.loads((exp / "experiment.json").read_text())
    last = record["amendments"][-1]
    assert last["changed"]["analysis.warmup_steps"] == [6, burn] and last["looks_taken"] == []
    assert "the evidence of earlier" in last["reason"] and "A1 at step" in last["reason"]
    assert main(["analyze", "campaign", "--runs", str(root)]) == 0  # the spec changed: stale, analysed again
    doc = load_analysis(exp)
    r = doc.reanalysis
    assert r is not None and r.schema_version == doc.schema_version and [w.start for w in r.windows] == [6, 33]
    assert r.verdicts[0].status == "rejected" and doc.comparison("A1").verdict.status != "rejected"  # type: ignore[union-attr]
    assert r.moved and r.moved[0].startswith("A1: rejected -> ")
    assert any("analysis.windows" in a and "the evidence of earlier" in a for a in r.amendments)
    assert r.rules == []  # same schema: no rule changed, the windows did
    # analysing again under the same rules and spec carries the record forward
    assert main(["analyze", "campaign", "--runs", str(root), "--force"]) == 0
    assert load_analysis(exp).reanalysis == r


def test_an_amendment_made_in_the_second_of_the_analysis_is_said_once(tmp_path: Path) -> None:
    """An amendment written in the very second of the analysis before it (time stamps are to the second:
    `plan-windows --amend` right after `analyze`, as above) is one made since: the next analysis says it, and
    the one after a second amendment says that one alone. Told by the specs' digests, not by the clock."""
    root = tmp_path / "runs"
    arms = {"baseline": FakeArm(ramp_steps=4, cv=0.01), "A1": FakeArm(ramp_steps=30, cv=0.01)}
    exp = make_experiment(root, arms, name="campaign", steps=60, warmup=6, windows=2, repeats=2)
    earlier = make_experiment(root, arms, name="earlier", steps=60, warmup=6, windows=2, repeats=2, seed=2)
    analyze_experiment(exp)
    first = load_analysis(exp)
    plan_windows(exp, [earlier], amend=True, utc=first.generated_utc)  # in the analysis' second
    analyze_experiment(exp)
    second = load_analysis(exp)
    assert second.reanalysis is not None
    said = second.reanalysis.amendments
    assert len(said) == 1 and said[0].startswith(first.generated_utc) and "analysis.windows: W1 6-32" in said[0]
    plan_windows(exp, [earlier], windows=3, amend=True, utc=second.generated_utc)  # again, three windows
    analyze_experiment(exp)
    third = load_analysis(exp)
    assert third.reanalysis is not None and len(read_spec(exp).analysis.windows) == 3
    said = third.reanalysis.amendments
    assert len(said) == 1 and said[0].startswith(second.generated_utc) and ", W3 " in said[0], said


def test_nothing_to_plan_from_is_one_line(capsys, committed_runs: Path) -> None:
    assert main(["plan-windows", "--runs", str(committed_runs)]) == 2
    err = capsys.readouterr().err
    assert "name an experiment, or earlier campaigns with --from" in err and err.count("\n") == 1

"""Sequential campaigns end to end with real subprocesses: `reportgen run` with [run] until =
"decided" runs a pair at a time, stops each comparison when it is decided, keeps to its budget,
resumes and adds pairs, and a fixed campaign is continued instead of restarted."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from reportgen.analysis.next_step import SAME_MACHINE
from reportgen.cli import main
from reportgen.render.load import load_analysis
from tests.execute.conftest import A1, make_experiment

pytestmark = pytest.mark.slow  # real runs, about 20 s a test

NOISY = {"id": "A2", "title": "A no-op whose runs are noisy", "add": {"--noise": 0.3}}


def _spec(tmp_path: Path, run: dict[str, object], *, noisy: bool = True) -> Path:
    """The runner's experiment with `run` as its whole [run] table (bar the time limit)."""
    candidates = [A1, NOISY] if noisy else [A1]
    return make_experiment(
        tmp_path / "recipes", steps=5, sleep=0.01, order=None, repeats=None, run=run, candidates=candidates
    )


def _runs(exp: Path) -> dict[str, list[int]]:
    out: dict[str, list[int]] = {}
    for arm in sorted(p.name for p in exp.iterdir() if p.is_dir() and p.name != "archive"):
        out[arm] = sorted(int(r.name) for r in (exp / arm).iterdir() if r.name.isdigit())
    return out


def _started(err: str, arm: str, pair: int) -> int:
    """Where the console said the run started: the order the runs ran in (a manifest's started_utc has
    whole seconds, and runs of 5 short steps start within one second)."""
    return err.index(f"[{arm} pair {pair}] started")


def test_a_sequential_campaign_runs_pairs_until_each_comparison_is_decided(tmp_path: Path, capsys) -> None:
    spec = _spec(tmp_path, {"until": "decided", "min_pairs": 3, "max_pairs": 5})
    runs = tmp_path / "runs"
    assert main(["run", str(spec), "--runs", str(runs)]) == 0
    exp = runs / "exp"
    doc = load_analysis(exp)
    a1, a2 = doc.comparison("A1"), doc.comparison("A2")
    assert a1 is not None and a2 is not None
    # A1 (twice as fast, no noise) is decided at the first look; A2 (noisy, no effect) needs more pairs
    assert a1.verdict.status == "accepted" and len(a1.run_level.pairs) == 3 and not a1.needs_pairs
    assert [lk.outcome for lk in a1.run_level.looks] == ["too_few_pairs", "too_few_pairs", "accepted"]
    made = _runs(exp)
    assert made["A1"] == [1, 2, 3]
    assert made["A2"] == made["baseline"] and len(made["A2"]) > 3  # the baseline runs as long as A2 needs it
    assert len(a2.run_level.pairs) == len(made["A2"]) <= 5 and not a2.needs_pairs
    assert a2.verdict.status != "accepted" and a2.verdict.status != "rejected"
    # blocks alternate direction: the candidate runs first in even blocks
    err = " ".join(capsys.readouterr().err.split())  # the console wraps long lines
    assert _started(err, "baseline", 1) < _started(err, "A1", 1) < _started(err, "A2", 1)
    assert _started(err, "A2", 2) < _started(err, "A1", 2) < _started(err, "baseline", 2)
    assert _started(err, "A2", 4) < _started(err, "baseline", 4)
    assert doc.settings.design.mode == "sequential" and doc.settings.design.looks == [3, 4, 5]
    cost = doc.campaign
    assert cost.stopped in ("decided", "max_pairs") and cost.pairs_run == {a: len(r) for a, r in made.items()}
    assert cost.run_minutes > 0 and cost.gpu_minutes is None  # no GPU held
    assert "campaign: block 4 for A2 (still undecided)" in err and "[A1 pair 3]" in err


def test_the_budget_stops_a_campaign_and_the_same_command_adds_pairs(tmp_path: Path, capsys) -> None:
    spec = _spec(tmp_path, {"until": "decided", "max_pairs": 6, "budget_minutes": 0.001})
    runs = tmp_path / "runs"
    assert main(["run", str(spec), "--runs", str(runs)]) == 0
    exp = runs / "exp"
    assert _runs(exp) == {"A1": [1], "A2": [1], "baseline": [1]}  # one block, then the budget
    said = " ".join(capsys.readouterr().err.split())  # the console wraps long lines
    assert "of the 0.001 min budget are spent; the same command resumes the campaign" in said
    doc = load_analysis(exp)
    assert doc.campaign.stopped == "open"
    a1 = doc.comparison("A1")
    assert a1 is not None and a1.needs_pairs and a1.verdict.basis == "too_few_pairs"
    # resuming adds to this campaign: on the machine that ran it, which the command says
    assert a1.summary.next_step.action == "repeat" and a1.summary.next_step.command == (
        f"{SAME_MACHINE}\nreportgen run {spec} --name exp"
    )
    first = {p: hashlib.sha256(p.read_bytes()).hexdigest() for p in (exp / "baseline" / "1").rglob("*") if p.is_file()}
    assert main(["run", str(spec), "--runs", str(runs)]) == 0  # resumes: one more block
    assert _runs(exp)["baseline"] == [1, 2]
    assert {p: hashlib.sha256(p.read_bytes()).hexdigest() for p in first} == first  # kept, byte for byte


def test_a_fixed_campaign_is_continued_when_only_its_size_changes(tmp_path: Path) -> None:
    spec = _spec(tmp_path, {"repeats": 1}, noisy=False)
    runs = tmp_path / "runs"
    assert main(["run", str(spec), "--runs", str(runs)]) == 0
    exp = runs / "exp"
    one = load_analysis(exp).comparison("A1")
    assert one is not None and one.verdict.basis == "too_few_pairs"
    assert one.summary.next_step.action == "repeat" and 'until = "decided"' in one.summary.next_step.text
    kept = (exp / "A1" / "1" / "manifest.json").read_bytes()
    spec.write_text(spec.read_text().replace("repeats = 1", 'until = "decided"'))
    assert main(["run", str(spec), "--runs", str(runs)]) == 0
    assert (exp / "A1" / "1" / "manifest.json").read_bytes() == kept
    record = json.loads((exp / "experiment.json").read_text())
    (amend,) = record["amendments"]
    assert amend["changed"]["until"] == ["fixed", "decided"] and amend["looks_taken"] == []  # 1 pair decides nothing
    doc = load_analysis(exp)
    a1 = doc.comparison("A1")
    # two pairs that agree exactly decide at the first look (min_pairs 2 by default, issue 43)
    assert a1 is not None and a1.verdict.status == "accepted" and len(a1.run_level.pairs) == 2
    # a smaller max_pairs after looking would narrow the interval: refused, nothing written
    spec.write_text(spec.read_text().replace('until = "decided"', 'until = "decided"\nmax_pairs = 4'))
    before = sorted(p.name for p in exp.iterdir())
    assert main(["run", str(spec), "--runs", str(runs)]) == 2
    assert sorted(p.name for p in exp.iterdir()) == before


def test_a_campaign_is_not_resized_after_a_look(tmp_path: Path) -> None:
    """Fixed 3 pairs looked at 3: repeats 3 -> 4 would decide falsely more often than 5 %
    (docs/calibration.md, resized campaigns): refused with one line, nothing written."""
    spec = _spec(tmp_path, {"repeats": 3})
    runs = tmp_path / "runs"
    assert main(["run", str(spec), "--runs", str(runs), "--no-profiler"]) == 0
    exp = runs / "exp"
    before = sorted(p.name for p in exp.iterdir())
    spec.write_text(spec.read_text().replace("repeats = 3", "repeats = 4"))
    assert main(["run", str(spec), "--runs", str(runs), "--no-profiler"]) == 2
    assert sorted(p.name for p in exp.iterdir()) == before
    assert "amendments" not in json.loads((exp / "experiment.json").read_text())

"""The training-quality half of a verdict (analysis/quality.py, decision.py) on constructed runs/ trees:
pairs of runs, the paired interval of the differences against the declared margin, and what the verdict
says with both halves."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from builder import FakeArm, analyse, comparison

from reportgen.analysis import document as doc
from reportgen.errors import UserError
from reportgen.specfile.load import load_spec
from tests.helpers import write_spec

SEQUENTIAL = {"until": "decided", "min_pairs": 3, "max_pairs": 5}


def test_faster_but_trains_worse_is_rejected_on_quality_with_the_figure(tmp_path: Path) -> None:
    doc_ = analyse(tmp_path, {"baseline": FakeArm(), "A1": FakeArm(speed=1.3, reward=0.3)})
    c = comparison(doc_, "A1")
    assert c.run_level.outcome == "accepted"  # faster...
    q = c.quality
    assert q is not None and q.status == "worse" and q.metric == "rollout/raw_reward" and q.margin == 0.05
    reward = q.metrics[0]
    assert reward.label == "reward" and reward.better == "higher" and len(reward.pairs) == 3
    assert reward.estimate == pytest.approx(-0.2, abs=0.02) and reward.high is not None and reward.high < 0
    # ...but rejected on quality, whatever its speed, with the figure and the speed beside it
    assert (c.verdict.status, c.verdict.basis, c.verdict.pairs) == ("rejected", "quality", 3)
    assert c.verdict.summary.startswith("Rejected on quality: it trains worse: reward -0.19")
    assert "beyond the 0.05 margin, 3 pairs; speed: response tokens/s +29" in c.verdict.summary
    step = c.summary.next_step
    assert step.action == "reject" and step.text.startswith("Do not merge A1: it trains worse: reward")
    assert "quality" in [e.id for e in c.summary.evidence]


def test_not_worse_than_the_margin_is_accepted_with_both_halves_said(tmp_path: Path) -> None:
    c = comparison(analyse(tmp_path, {"baseline": FakeArm(), "A1": FakeArm(speed=1.3)}), "A1")
    q = c.quality
    assert q is not None and q.status == "not_worse" and q.pairs == 3
    assert q.metrics[0].low is not None and q.metrics[0].low > -0.05
    assert q.summary.startswith("trains as well: reward ") and "within the 0.05 margin, 3 pairs" in q.summary
    assert c.verdict.status == "accepted"
    assert "; trains as well: reward " in c.verdict.summary
    # the shown metrics have their pairs and intervals too; flat ones are named, never agreement
    shown = {m.label: m for m in q.metrics[1:]}
    assert shown["loss"].outcome == "not_testable" and shown["loss"].reason == "loss flat at 0.1 in both arms"
    assert "loss" in q.flat and "policy KL" in q.flat


def test_a_reward_flat_in_both_arms_is_not_testable_and_does_not_accept(tmp_path: Path) -> None:
    flat = {"reward": 0.0, "reward_run_sd": 0.0, "reward_step_sd": 0.0}
    c = comparison(analyse(tmp_path, {"baseline": FakeArm(**flat), "A1": FakeArm(speed=1.3, **flat)}), "A1")
    q = c.quality
    assert q is not None and q.status == "not_testable" and "reward" in q.flat
    assert q.summary == "training quality not testable: reward flat at 0 in both arms"
    assert (c.verdict.status, c.verdict.basis) == ("inconclusive", "quality_untestable")
    assert c.verdict.summary.startswith("Inconclusive: faster: response tokens/s +29")
    step = c.summary.next_step
    assert step.action == "test_quality" and "a workload whose reward moves" in step.text
    assert 'quality_metric = "none"' in step.text


def test_identical_in_every_pair_is_said_as_such_and_accepts(tmp_path: Path) -> None:
    same = {"quality_by_block": True}
    c = comparison(analyse(tmp_path, {"baseline": FakeArm(**same), "A1": FakeArm(speed=1.3, **same)}), "A1")
    q = c.quality
    assert q is not None and q.status == "identical"
    assert q.summary == "trains identically: reward the same in all 3 pairs"
    assert all(p.difference == 0 for p in q.metrics[0].pairs)
    assert c.verdict.status == "accepted"


def test_the_same_nonzero_difference_in_every_pair_is_a_replay_not_evidence(tmp_path: Path) -> None:
    arms = {"baseline": FakeArm(quality_by_block=True), "A1": FakeArm(speed=1.3, quality_by_block=True, reward=0.4)}
    q = comparison(analyse(tmp_path, arms), "A1").quality
    assert q is not None and q.status == "not_testable"
    assert "the blocks replay one seed" in q.summary and "give each block its own seed" in q.summary


def test_quality_open_keeps_a_sequential_campaign_going_and_is_said_at_its_last_look(tmp_path: Path) -> None:
    # A noisy reward: the interval is too wide for the 0.05 margin at 3 pairs.
    noisy = {"reward_run_sd": 0.08}
    arms = {"baseline": FakeArm(**noisy), "A1": FakeArm(speed=1.3, **noisy)}
    c = comparison(analyse(tmp_path, arms, repeats=3, run=SEQUENTIAL), "A1")
    assert c.run_level.outcome == "accepted" and c.quality is not None and c.quality.status == "open"
    assert (c.verdict.status, c.verdict.basis) == ("inconclusive", "quality_open")
    assert c.needs_pairs, "faster with quality open: the campaign goes on"
    assert "more pairs may decide it" in c.verdict.summary
    assert c.summary.next_step.action == "repeat" and "training quality is still open" in c.summary.next_step.text
    # at the design's last look the same evidence is said to be open there, and the campaign stops
    last = comparison(analyse(tmp_path / "last", arms, repeats=5, run=SEQUENTIAL), "A1")
    assert last.quality is not None and last.quality.status == "open" and last.quality.pairs == 5
    assert not last.needs_pairs and last.verdict.basis == "quality_open"
    assert "the design's last look (5 pairs) came without it" in last.verdict.summary
    assert last.summary.next_step.action == "reject"


def test_speed_alone_when_the_spec_says_so(tmp_path: Path) -> None:
    flat = {"reward": 0.0, "reward_run_sd": 0.0, "reward_step_sd": 0.0}
    doc_ = analyse(
        tmp_path,
        {"baseline": FakeArm(**flat), "A1": FakeArm(speed=1.3, **flat)},
        analysis={"quality_metric": "none"},
    )
    c = comparison(doc_, "A1")
    assert doc_.settings.quality_metric == "none"
    assert c.quality is not None and c.quality.status == "not_judged" and c.verdict.status == "accepted"
    assert "training quality not judged: the spec asks for a verdict on speed alone" in c.verdict.summary


def test_a_shown_metric_whose_interval_excludes_zero_is_named_and_decides_only_with_a_margin(tmp_path: Path) -> None:
    arms = {"baseline": FakeArm(loss_run_sd=0.002), "A1": FakeArm(speed=1.3, loss=0.2, loss_run_sd=0.002)}
    shown = comparison(analyse(tmp_path / "a", arms), "A1")
    q = shown.quality
    assert q is not None and q.status == "not_worse" and shown.verdict.status == "accepted"
    loss = next(m for m in q.metrics if m.metric == "train/loss")
    assert loss.margin is None and loss.outcome == "not_judged" and loss.significant
    assert loss.estimate == pytest.approx(0.1, abs=0.01)
    assert q.differ == ["loss"] and q.summary.endswith("; differs from the baseline's: loss")
    # declared with a margin (no better direction: two-sided), the same loss decides: worse
    decided = comparison(analyse(tmp_path / "b", arms, analysis={"quality_margins": {"train/loss": 0.02}}), "A1")
    q = decided.quality
    assert (
        q is not None
        and q.status == "worse"
        and (decided.verdict.basis, decided.verdict.status)
        == (
            "quality",
            "rejected",
        )
    )
    assert "trains worse: loss +0.099" in q.summary and "beyond the 0.02 margin" in q.summary


def test_a_reward_outside_0_1_under_the_default_margin_is_warned_about(tmp_path: Path) -> None:
    arms = {"baseline": FakeArm(reward=3.0), "A1": FakeArm(speed=1.3, reward=3.0)}
    q = comparison(analyse(tmp_path, arms), "A1").quality
    assert q is not None and q.warnings and "outside 0-1" in q.warnings[0]


def test_the_old_tolerance_key_is_refused_with_why(tmp_path: Path) -> None:
    spec = write_spec(
        tmp_path / "s.toml", name="s", title="t", recipe={"script": "r.sh"}, analysis={"quality_tolerance": 0.1}
    )
    with pytest.raises(UserError, match="quality_tolerance is gone: training quality is now a half of the verdict"):
        load_spec(spec)


def test_a_schema_8_document_reads_without_its_quality_check() -> None:
    example = Path(__file__).resolve().parents[2] / "docs" / "formats" / "analysis.md"
    text = example.read_text()
    start = text.index("```json\n", text.index("## Example")) + 8
    data = json.loads(text[start : text.index("\n```", start)])
    data["schema_version"] = 8
    data["settings"]["quality_tolerance"] = 0.1
    for k in ("quality_metric", "quality_margin", "quality_margins"):
        data["settings"].pop(k, None)
    data["comparisons"][0]["quality"] = {"status": "pass", "tolerance": 0.1, "reason": "x", "windows": []}
    read = doc.parse(data, "x")
    assert read.schema_version == 8 and read.comparisons[0].quality is None
    assert read.older_schema() == f"schema 8, this reportgen writes {doc.SCHEMA_VERSION}"


def test_a_margin_that_is_most_of_a_low_reward_is_warned_about(tmp_path: Path) -> None:
    arms = {"baseline": FakeArm(reward=0.07), "A1": FakeArm(speed=1.3, reward=0.07)}
    q = comparison(analyse(tmp_path, arms), "A1").quality
    assert q is not None and q.warnings and q.warnings[0].startswith("the margin (0.05) is ")
    assert "of the baseline's reward figure (0.06" in q.warnings[0]

"""From analysis.json to the answer's rows: the PR candidate, causes in words, next steps, evidence."""

from __future__ import annotations

import copy

import pytest

from reportgen.analysis.document import AnalysisDocument
from reportgen.render import decision
from reportgen.render.load import load_experiment
from tests.render import site_fixture


@pytest.fixture(scope="module")
def doc(tmp_path_factory) -> AnalysisDocument:
    root = tmp_path_factory.mktemp("runs")
    site_fixture.build_experiment(root)
    return load_experiment(root / "grpo-offload").analysis


def _edit(doc: AnalysisDocument, edit) -> AnalysisDocument:
    data = copy.deepcopy(doc.to_json())
    edit(data)
    return AnalysisDocument.model_validate(data)


def test_the_first_candidate_is_the_pr_candidate_by_default(doc):
    assert decision.pr_candidate(doc) == "A1"
    rows = decision.answers(doc, href_of={})
    assert [(a.candidate, a.is_pr) for a in rows] == [("A1", True), ("A2", False), ("A3", False)]
    assert rows[1].base == "A1" and rows[0].base is None


def test_next_step_follows_the_verdict(doc):
    steps = {a.candidate: (a.next_step, a.next_command) for a in decision.answers(doc, href_of={}, spec="s.toml")}
    assert steps["A1"] == ("merge this pull request", None)
    assert steps["A2"][0].startswith("fix the out-of-memory failure") and "--rerun A2" in (steps["A2"][1] or "")
    assert steps["A3"][0].startswith("reject")
    inconclusive = _edit(doc, lambda d: d["comparisons"][0]["verdict"].update(status="inconclusive"))
    step, command = decision.next_step(inconclusive, inconclusive.comparisons[0], pr="A1", spec="s.toml")
    assert 'repeats = 2, order = "interleaved"' in step and "--new-campaign" in (command or "")
    assert "reportgen run s.toml" in (command or "") and "--name grpo-offload" in (command or "")


def test_an_inconclusive_cause_names_the_window_that_disagreed(doc):
    def edit(d):
        c = d["comparisons"][0]
        c["verdict"].update(status="inconclusive", cause=None)
        c["windows"][0]["change"] = -0.42
        c["interval"]["warnings"].append("mean response length differs: baseline 48.0, candidate 37.0 tokens (-23.0%)")

    changed = _edit(doc, edit)
    comp = changed.comparisons[0]
    cause = decision.cause(changed, comp) or ""
    assert "1 of 3 windows went the other way: W1 (-42%)" in cause
    assert "throughput compared different generated work" in cause
    links = [(e.label, e.href) for e in decision.evidence(changed, comp, "A1/")]
    assert ("window W1", "#windows") in links and ("same-work check", "#guardrails") in links
    assert any(href == "#chart-quality" for _, href in links)
    assert decision.cause(doc, doc.comparisons[0]) is None  # accepted: nothing to explain


def test_an_oom_cause_states_the_cap_it_hit(doc):
    def edit(d):
        arm = next(a for a in d["arms"] if a["id"] == "A2")
        arm["workload"]["--gpu-memory-cap-gib"] = "5"

    changed = _edit(doc, edit)
    cause = decision.cause(changed, changed.comparison("A2")) or ""  # type: ignore[arg-type]
    assert cause.startswith("OOM at step 9") and "5 GiB memory cap" in cause and "MiB in use" in cause


def test_a_derived_candidate_against_its_base(doc):
    figs = dict(decision.base_figures(doc, "A3"))
    a1, a3 = doc.arm("A1"), doc.arm("A3")
    assert a1 is not None and a3 is not None
    key = doc.primary.key
    assert figs["response tokens/s"] == pytest.approx(a3.overall[key] / a1.overall[key] - 1)
    assert decision.base_figures(doc, "A1") == []

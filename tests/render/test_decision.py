"""From analysis.json's decision data to the answer's rows: the PR candidate first, figures with
their intervals, evidence ids as links, commands with the reader's spec path, wrapped."""

from __future__ import annotations

import copy

import pytest

from reportgen.analysis.document import AnalysisDocument, MetricChange
from reportgen.render import decision
from reportgen.render.format import fmt_change_supported
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


def test_the_spec_names_the_pr_candidate(doc):
    assert decision.pr_candidate(doc) == "A1"
    rows = decision.answers(doc, href_of={})
    assert [(a.candidate, a.is_pr) for a in rows] == [("A1", True), ("A2", False), ("A3", False)]

    def a3(d):
        d["settings"]["pr_candidate"] = "A3"
        for c in d["comparisons"]:
            c["summary"]["is_pr"] = c["candidate"] == "A3"

    changed = _edit(doc, a3)
    assert decision.pr_candidate(changed) == "A3"
    assert [a.candidate for a in decision.answers(changed, href_of={}) if a.is_pr] == ["A3"]


def test_figures_carry_the_interval_as_changes(doc):
    primary = doc.comparisons[0].summary.primary
    f = decision.figure(primary)
    iv = primary.interval
    assert iv is not None and iv.low is not None and iv.high is not None and iv.estimate is not None
    # the figure is the interval's estimate, rounded to the interval, with the interval under it
    assert f.head == fmt_change_supported(iv.estimate - 1, iv.low - 1, iv.high - 1)
    assert f.detail == f"95% CI {fmt_change_supported(iv.low - 1, iv.low - 1, iv.high - 1)} to " + fmt_change_supported(
        iv.high - 1, iv.low - 1, iv.high - 1
    )
    bare = decision.figure(MetricChange(metric="gpu/mem_peak_mib", label="peak GPU memory", unit="MiB", change=0.1))
    assert bare.head == "+10.0%" and bare.detail == "no interval" and bare.note == ""


def test_commands_name_the_readers_spec_and_fit_the_column():
    cmd = "reportgen run /work/main/scripts/recipes/default.toml --profile gpu --name showcase-h200-grpo-offload --new-campaign"
    got = decision.tidy_command(cmd, lambda w: "scripts/recipes/default.toml" if w.endswith("default.toml") else w)
    assert "/work/main" not in got and got.startswith("reportgen run scripts/recipes/default.toml")
    assert all(len(line) <= 80 for line in got.splitlines()) and got.count("\\\n") >= 1
    assert (
        decision.tidy_command("# set it first\nreportgen run a.toml", lambda w: w)
        == "# set it first\nreportgen run a.toml"
    )


def test_rows_follow_the_documents_summary(doc):
    rows = {a.candidate: a for a in decision.answers(doc, href_of={"A2": "A2/index.md"})}
    for comp in doc.comparisons:
        a = rows[comp.candidate]
        assert a.status == comp.summary.verdict and a.cause == comp.summary.cause
        assert a.next_step == comp.summary.next_step.text and a.base == comp.base
    assert rows["A2"].href == "A2/index.md" and rows["A2"].cause and "OOM" in rows["A2"].cause


def test_the_answer_shows_an_incomplete_verdict_and_a_verdict_decided_against_a_base(doc):
    from reportgen.render.answer import next_line, summary_table

    def edit(d):
        for c in d["comparisons"]:
            if c["candidate"] == "A1":
                c["verdict"] = {
                    "status": "incomplete",
                    "summary": "Incomplete: A1/2 interrupted at step 12/60; resume the campaign to finish it.",
                    "cause": "A1/2 interrupted at step 12/60",
                    "against": "baseline",
                    "basis": "pending",
                }
                c["summary"].update(verdict="incomplete", cause="A1/2 interrupted at step 12/60")
                c["summary"]["next_step"] = {
                    "action": "resume",
                    "text": "Resume the campaign.",
                    "command": "reportgen run x.toml",
                }
                c["summary"]["evidence"] = [{"label": "runs", "id": "runs"}]
            if c["candidate"] == "A3":
                c["verdict"].update(status="rejected", against="A1")
                c["summary"]["verdict"] = "rejected"

    rows = {a.candidate: a for a in decision.answers(_edit(doc, edit), href_of={})}
    table = summary_table(list(rows.values()))
    assert 'rg-badge rg-incomplete">incomplete<' in table
    assert 'rg-badge rg-rejected">rejected</span><br><span class="rg-ci">against A1</span>' in table
    assert rows["A1"].decided_against is None and rows["A3"].decided_against == "A1"
    line = next_line(rows["A1"])
    assert (
        "<strong>next:</strong> Resume the campaign." in line
        and "Why incomplete: A1/2 interrupted at step 12/60." in line
    )

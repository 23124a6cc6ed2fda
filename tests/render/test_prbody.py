"""The pull-request body: the report link first, the answer table with the report's figures, one
line per candidate, the rest folded; at most 60 lines unless asked for everything."""

from __future__ import annotations

import re

import pytest

from reportgen.render import figures
from reportgen.render.load import load_experiment
from reportgen.render.prbody import MAX_LINES, render_pr_body
from tests.render import site_fixture


@pytest.fixture(scope="module")
def doc(tmp_path_factory):
    return load_experiment(site_fixture.build_experiment(tmp_path_factory.mktemp("runs"))).analysis


def test_short_with_the_link_first_the_table_and_a_line_per_candidate(doc):
    body = render_pr_body(doc, site_url="https://me.github.io/report")
    lines = body.splitlines()
    assert len(lines) <= MAX_LINES
    assert lines[0].startswith("**[Full report: ") and "(https://me.github.io/report/reports/grpo-offload/)" in lines[0]
    table = [ln for ln in lines if ln.startswith("| ")]
    assert table[0] == "| candidate | verdict | response tokens/s | step time | peak memory |"
    assert [ln.split(" | ")[0] for ln in table[1:]] == ["| `A1` (PR)", "| `A2` on `A1`", "| `A3` on `A1`"]
    assert [ln.split(":")[0] for ln in lines if ln.startswith("- `")][:3] == [
        "- `A1` (PR)",
        "- `A2` on `A1`",
        "- `A3` on `A1`",
    ]
    # everything else is folded, and no raw metric key is a header
    assert body.count("<details>") == 1 and body.rstrip().endswith("</details>")
    assert lines.index("<details><summary>Details: windows, guardrails, commands, reproduce</summary>") < len(lines)
    assert not re.search(r"^\|.*perf/step_resp_token_per_s change", body, flags=re.M)


def test_the_figures_are_the_reports(doc):
    body = render_pr_body(doc)
    for c in doc.comparisons:
        rl = c.deciding()
        if rl.interval.estimate is not None:
            head = figures.change_text(c.summary.primary)
            assert f"{head} (95% CI" in body or f"~ {head}" in body, (c.candidate, head)
    a2 = next(ln for ln in body.splitlines() if ln.startswith("| `A2`"))
    assert "GiB" in a2  # its memory against the limit, though it failed


def test_without_a_site_url_there_is_no_link_and_the_line_says_how_to_give_one(doc):
    # a path into the built site/ is a 404 inside a pull request (issue 46.1)
    first = render_pr_body(doc).splitlines()[0]
    assert first.startswith("**Full report: ") and "](" not in first and "site/reports" not in first
    assert first.endswith(
        "(no published site is known: pass `--site-url URL`, set `site_url` in mkdocs.yml, or publish the site "
        "with mike to the repository's gh-pages branch)"
    )


def test_the_machine_and_the_workload_come_before_any_number(doc):
    lines = render_pr_body(doc).splitlines()
    assert lines[2].startswith("GPU run on 2 x NVIDIA A100-SXM4-80GB · workload: `relax.entrypoints.train`; ")
    assert min(i for i, ln in enumerate(lines) if ln.startswith("| ")) > 2  # before the answer table
    showcase = doc.model_copy(
        update={
            "machine": doc.machine.model_copy(update={"gpus": [{"name": "NVIDIA H200"}]}),
            "workload": doc.workload.model_copy(update={"name": "the embedded stand-in GRPO trainer, not Relax"}),
            "experiment": doc.experiment.model_copy(update={"name": "showcase-1xh200"}),
        }
    )
    second = render_pr_body(showcase).splitlines()[2]
    assert second.startswith(
        "GPU showcase on 1 x NVIDIA H200 · workload: the embedded stand-in GRPO trainer, not Relax;"
    )
    unknown = doc.model_copy(update={"machine": type(doc.machine)()})
    assert render_pr_body(unknown).splitlines()[2].startswith("Machine not recorded · ")


def test_full_adds_every_guardrail_and_the_headline_tables(doc):
    short, full = render_pr_body(doc), render_pr_body(doc, full=True)
    assert len(full.splitlines()) > len(short.splitlines())
    assert "✅ pass All declared steps completed" in full and "✅ pass All declared steps completed" not in short
    assert "| metric | baseline | candidate | change |" in full

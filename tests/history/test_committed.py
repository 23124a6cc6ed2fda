"""The history of the committed GPU runs: the one-H200 campaigns (r2-r4), the two-H200 one and the
one-H100 learning-workload one on one recipe page, classes apart, as the machines' health; no
absolute flag across leases."""

from __future__ import annotations

import pytest

from reportgen.history import store
from reportgen.history.series import build
from reportgen.render.history_page import history_of, paired_of, render_all, vs_history_lines
from reportgen.render.load import load_experiment
from reportgen.vocab import PEAK_GPU_MEMORY, STEP_TIME

ONE = "1 x NVIDIA H200, driver 580.159.04"
TWO = "2 x NVIDIA H200, driver 580.159.04"
H100 = "1 x NVIDIA H100 80GB HBM3, driver 580.159.04"


@pytest.fixture(scope="module")
def series(committed_runs):
    return build(store.collect(committed_runs))


def test_every_arm_metric_and_class_of_the_showcases(series) -> None:
    mine = [s for s in series if s.key.recipe == "grpo-offload-default"]
    classes = {(s.key.profile, s.key.machine_class) for s in mine}
    assert classes == {("gpu", ONE), ("gpu2", TWO), ("gpu", H100)}
    one = {(s.key.arm, s.key.metric): s for s in mine if s.key.machine_class == ONE}
    base = one[("baseline", "perf/step_resp_token_per_s")]
    assert [c.experiment for c in base.points] == [f"showcase-1xh200-grpo-offload-r{i}" for i in (2, 3, 4)]
    assert [c.commit[:7] for c in base.points if c.commit] == ["4773b89", "81f7f03", "66079f7"]
    assert [c.n_runs for c in base.points] == [2, 3, 3]
    assert [round(c.value) for c in base.points] == [2119, 1689, 1523]  # geometric means, three leases (steps 24-47)
    assert {("baseline", STEP_TIME), ("baseline", PEAK_GPU_MEMORY), ("A1", "perf/step_resp_token_per_s")} <= set(one)
    assert ("A2", "perf/step_resp_token_per_s") not in one  # A2 failed on one H200: no figure
    assert not any(s.changes for s in mine)  # three campaigns a series: too few to find a change


def test_the_primary_point_is_what_the_analysis_stored(series, committed_runs) -> None:
    doc = load_experiment(committed_runs / "showcase-1xh200-grpo-offload-r3").analysis
    stored = {r.path: r.overall for r in doc.arms[0].runs}
    pts = [
        p for p in store.collect(committed_runs) if p.experiment.endswith("-r3") and p.primary and p.arm == "baseline"
    ]
    assert {p.run: p.value for p in pts} == stored
    assert all(p.low is not None and p.low < p.value < p.high for p in pts)  # type: ignore[operator]


def test_r3s_baseline_is_not_flagged_against_another_lease(committed_runs) -> None:
    # r3's baseline measured 21 % below r2's on another lease of one class: the absolute figure across
    # leases is the machine's health, not a verdict on the code, so the experiment page says only where
    # the paired history stands (no paired campaign of these commits: none).
    exps = [
        load_experiment(committed_runs / n)
        for n in ("showcase-1xh200-grpo-offload-r2", "showcase-1xh200-grpo-offload-r3")
    ]
    lines = vs_history_lines(paired_of(exps), exps)
    line = lines["showcase-1xh200-grpo-offload-r3"]
    assert line.startswith("**vs history**: its baseline") and "81f7f03 has no paired history point" in line
    # the command it names is code, not backticks escaped into the text (issue 46.6)
    assert "<code>reportgen run --baseline-ref ANCHOR --candidate-ref 81f7f03</code> measures one" in line
    assert "&#96;" not in line
    assert "below the last baseline" not in line and "⚑" not in line


def test_one_history_page_holds_both_showcases_classes_apart(committed_runs) -> None:
    exps = [load_experiment(p) for p in sorted(committed_runs.iterdir()) if (p / "analysis.json").is_file()]
    pages = {p.path: p for p in render_all(history_of(exps), known={e.name for e in exps}, svg=False)}
    assert set(pages) == {"history/index.md", "history/grpo-offload-default/index.md", "history/aa-grpo/index.md"}
    page = pages["history/grpo-offload-default/index.md"]
    md = page.markdown
    assert md.index(f"### Health on {ONE}") < md.index(f"### Health on {TWO}")
    assert f"### Health on {H100}" in md  # the learning workload's campaign: a class of its own
    assert "No paired campaign yet" in md  # the committed campaigns are of one commit each
    for name in ("showcase-1xh200-grpo-offload-r2", "showcase-1xh200-grpo-offload-r3", "showcase-2xh200-grpo-offload"):
        assert f"[{name}](../../reports/{name}/index.md)" in md
    assert len(page.charts) == 3 and "history.parquet" in page.files  # a chart per machine class
    (spec,) = [c for c in page.charts.values() if "showcase-1xh200-grpo-offload-r2/" in c["datasets"]["history"]]
    assert spec["facet"]["row"]["field"] == "metric" and "href" in spec["spec"]["layer"][-1]["encoding"]
    assert "showcase-2xh200" not in spec["datasets"]["history"]  # the two-GPU class is its own chart
    assert "showcase-1xh100" not in spec["datasets"]["history"]  # and the H100's
    # each section names its fingerprint class and the means a point is made of
    assert "machine class <code>8fbecfa2</code>" in md and "a point is the geometric mean of the campaign's runs" in md
    assert "each run's figure the arithmetic mean of the run's window means" in md


def test_the_navigation_lists_the_history_after_the_reports() -> None:
    from reportgen.render.page import Page
    from reportgen.render.site import summary

    pages = [Page("history/index.md", "History", ""), Page("history/r/index.md", "History: r", "")]
    nav = summary([], [("a.md", "A")], pages)
    assert (
        nav.index("[Reports]")
        < nav.index("[History](history/index.md)")
        < nav.index("[History: r](history/r/index.md)")
    )
    assert nav.index("[History: r]") < nav.index("Documentation")


def test_the_site_and_the_command_compute_the_same_history(series, committed_runs) -> None:
    # The site builds it from what its pages loaded, the command from disk: one history either way.
    exps = [load_experiment(p) for p in sorted(committed_runs.iterdir()) if (p / "analysis.json").is_file()]
    assert history_of(exps) == series

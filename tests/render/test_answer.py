"""The answer block and the report kind: plain data in, the Markdown a reviewer reads first out."""

from __future__ import annotations

import re
from dataclasses import replace

import markdown

from reportgen.analysis.document import Interval, MemoryUse, MetricChange
from reportgen.render.answer import CandidateAnswer, Evidence, Figure, block, figure_cell, ordered
from reportgen.render.decision import figure, memory_figure
from reportgen.render.kinds import classify, page_title

EXTS = ["tables", "attr_list", "md_in_html", "admonition", "pymdownx.superfences"]


def _change(label: str, unit: str, change: float, low: float | None, high: float | None, against="baseline"):
    iv = None
    if low is not None and high is not None:
        iv = Interval(estimate=1 + change, low=1 + low, high=1 + high, significant=not (low < 0 < high))
    return MetricChange(metric=label, label=label, unit=unit, against=against, change=change, interval=iv)


MEMORY = MemoryUse(used_mib=4515.1, limit="cap", limit_mib=5120.0, cap_mib=5120.0, headroom_mib=604.9, headroom=0.118)


def _answers() -> list[CandidateAnswer]:
    def figs(change: float, low: float | None, high: float | None, against: str = "baseline") -> list[Figure]:
        context = _change("response tokens/s", "tok/s", 0.31, 0.15, 0.49) if against != "baseline" else None
        return [
            figure(_change("response tokens/s", "tok/s", change, low, high, against), context=context),
            figure(_change("step time", "s", -0.365, -0.40, -0.33, against)),
            memory_figure(MEMORY),
        ]

    return [
        CandidateAnswer(
            "A3",
            "A1 + a smaller token budget",
            "accepted",
            figs(0.3214, 0.255, 0.3912, against="A1"),
            base="A1",
            decided_against="A1",
        ),
        CandidateAnswer(
            "A1",
            "Remove the optimizer offload trio",
            "inconclusive",
            figs(0.3638, 0.1131, 0.6709),
            is_pr=True,
            cause="window W1 went the other way (-42 %)",
            next_step="Repeat with 2 interleaved runs per arm",
            next_command="reportgen run spec.toml --new-campaign",
            evidence=(Evidence("window W1", "#windows"), Evidence("quality curves", "#quality")),
            href="A1/index.md",
        ),
        CandidateAnswer("A2", "A1 without recompute", "failed", figs(0.0, None, None), base="A1", cause="OOM"),
    ]


def _text(html: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html))


def test_pr_candidate_comes_first_and_is_named():
    assert [a.candidate for a in ordered(_answers())] == ["A1", "A3", "A2"]
    html = markdown.markdown(block(_answers(), docs_prefix="../../"), extensions=EXTS)
    rows = re.findall(r"<tr>(.*?)</tr>", html, flags=re.S)
    assert "PR candidate" in rows[1] and ">A1<" in rows[1]
    assert "on A1" in rows[2] and "A3" in rows[2]
    assert 'href="../../analysis.md#verdicts"' in html


def test_every_figure_shows_its_interval_rounded_to_it():
    html = markdown.markdown(block(_answers(), docs_prefix=""), extensions=EXTS)
    text = _text(html)
    assert "+36% 95% CI +11% to +67%" in text  # primary of A1, whole percent under a 28-point interval
    assert "-36.5% 95% CI -40.0% to -33.0%" in text
    # memory: the peak against the cap the run had (an emulated GPU, the real one beside it), and what is
    # left, marked when under 15 %
    assert "4.41 GiB of 5.00 GiB emulated cap" in text and "12% left" in text
    assert 'class="rg-ci rg-warn">12% left' in html


def test_a_figure_beside_a_verdict_decided_against_a_base_says_so():
    # A3 was decided against A1: its figures are against A1, labelled, the baseline's after them
    text = _text(markdown.markdown(block(_answers(), docs_prefix=""), extensions=EXTS))
    assert "+32.1% 95% CI +25.5% to +39.1% against A1 (baseline: +31%)" in text
    assert "-36.5% 95% CI -40.0% to -33.0% against A1" in text


def test_cause_in_words_with_links_to_the_evidence():
    md = block(_answers(), docs_prefix="")
    assert "Why inconclusive:" in md and "window W1 went the other way (-42 %)" in md
    assert "[window W1](#windows)" in md and "[quality curves](#quality)" in md
    assert md.index("<strong>A1</strong> (PR candidate") < md.index("<strong>A2</strong>")  # PR candidate first
    assert "reportgen run spec.toml --new-campaign" in md and "next step for A1" in md
    assert "Why accepted" not in md  # accepted: nothing to explain


def test_a_candidate_that_changes_the_maths_says_so_beside_its_verdict():
    answers = [replace(a, changes_maths=a.candidate == "A3") for a in _answers()]
    rows = re.findall(r"<tr>(.*?)</tr>", markdown.markdown(block(answers, docs_prefix=""), extensions=EXTS), re.S)
    said = [r for r in rows if "changes the maths" in r]
    assert len(said) == 1 and "A3" in said[0] and 'class="rg-ci rg-warn">changes the maths' in said[0]


def test_no_interval_and_no_change_cells():
    assert figure_cell(Figure("x", None)) == "n/a"
    assert "&#126; +1.0%" in figure_cell(figure(_change("x", "s", 0.01, -0.02, 0.04)))
    assert "no interval" in figure_cell(figure(_change("x", "s", 0.01, None, None)))
    assert figure_cell(memory_figure(MemoryUse())) == "n/a"


def test_report_kind_in_front_of_the_title():
    demo = classify("grpo-offload-default", [], "Intel Xeon, 2 cores")
    show = classify("showcase-h200-grpo-offload", ["NVIDIA H200"], "1 x NVIDIA H200")
    run = classify("mine", ["NVIDIA A100"], "1 x NVIDIA A100")
    assert (demo.label, show.label, run.label) == ("CPU demo", "GPU showcase", "GPU run")
    assert page_title("Drop the trio", demo) != page_title("Drop the trio", show)
    assert page_title("Drop the trio", show).startswith("GPU showcase")


def test_a_figure_nobody_measured_gets_no_column():
    a = CandidateAnswer("A1", "t", "accepted", [Figure("response tokens/s", "+20%"), memory_figure(MemoryUse())])
    md = block([a], docs_prefix="")
    assert "response tokens/s" in md and "peak memory" not in md


def test_a_long_limit_may_wrap_before_its_parenthesis_but_an_interval_never_wraps():
    # "of 68.00 GiB emulated cap (GPU 80.00 GiB)" widened the memory column past a desktop's page
    cap = figure_cell(Figure("peak memory", "60.40 GiB", detail="of 68.00 GiB emulated cap (GPU 80.00 GiB)"))
    assert (
        '<span class="rg-ci rg-wrap"><span class="rg-nowrap">of 68.00 GiB emulated cap</span> '
        '<span class="rg-nowrap">(GPU 80.00 GiB)</span></span>'
    ) in cap
    ci = figure_cell(Figure("x", "+21.4%", detail="95% CI +18.9% to +23.9%"))
    assert '<span class="rg-ci">95% CI +18.9% to +23.9%</span>' in ci and "rg-wrap" not in ci

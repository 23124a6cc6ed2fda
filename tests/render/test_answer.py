"""The answer block and the report kind: plain data in, the Markdown a reviewer reads first out."""

from __future__ import annotations

import re

import markdown

from reportgen.render.answer import CandidateAnswer, Evidence, Figure, block, figure_cell, ordered
from reportgen.render.report_kind import page_title, report_kind

EXTS = ["tables", "attr_list", "md_in_html", "admonition", "pymdownx.superfences"]


def _answers() -> list[CandidateAnswer]:
    def figs(change: float, low: float | None, high: float | None) -> list[Figure]:
        return [
            Figure("response tokens/s", "tok/s", 1456.6, 1456.6 * (1 + change), change, low, high, True),
            Figure("step time", "s", 1.07, 0.68, -0.365, -0.40, -0.33, True),
            Figure("peak GPU memory", "MiB", 3022, 6068, 1.008),
        ]

    return [
        CandidateAnswer("A3", "A1 + a smaller token budget", "accepted", figs(0.3214, 0.255, 0.3912), base="A1"),
        CandidateAnswer(
            "A1",
            "Remove the optimizer offload trio",
            "inconclusive",
            figs(0.3638, 0.1131, 0.6709),
            is_pr=True,
            cause="window W1 went the other way (-42 %)",
            next_step="Repeat with 2 interleaved runs per arm",
            next_command="reportgen run spec.toml --new-campaign",
            evidence=(Evidence("window W1", "#windows"), Evidence("quality curves", "#chart-quality")),
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
    assert "-36% 95% CI -40% to -33%" in text or "-36.5% 95% CI -40.0% to -33.0%" in text
    assert "+100.8% no interval" in text  # memory has no interval: said so


def test_cause_in_words_with_links_to_the_evidence():
    md = block(_answers(), docs_prefix="")
    assert "Why inconclusive:" in md and "window W1 went the other way (-42 %)" in md
    assert "[window W1](#windows)" in md and "[quality curves](#chart-quality)" in md
    assert md.index("<strong>A1</strong> (PR candidate") < md.index("<strong>A2</strong>")  # PR candidate first
    assert "reportgen run spec.toml --new-campaign" in md and "next step for A1" in md
    assert "Why accepted" not in md  # accepted: nothing to explain


def test_no_interval_and_no_change_cells():
    assert figure_cell(Figure("x", "s", 1.0, None, None)) == "n/a"
    assert "&#126; +1.0%" in figure_cell(Figure("x", "s", 1.0, 1.01, 0.01, -0.02, 0.04, False))


def test_report_kind_in_front_of_the_title():
    demo = report_kind("grpo-offload-default", [], "Intel Xeon, 2 cores")
    show = report_kind("showcase-h200-grpo-offload", ["NVIDIA H200"], "1 x NVIDIA H200")
    run = report_kind("mine", ["NVIDIA A100"], "1 x NVIDIA A100")
    assert (demo.label, show.label, run.label) == ("CPU demo", "GPU showcase", "GPU run")
    assert page_title("Drop the trio", demo) != page_title("Drop the trio", show)
    assert page_title("Drop the trio", show).startswith("GPU showcase")


def test_a_figure_nobody_measured_gets_no_column():
    a = CandidateAnswer(
        "A1", "t", "accepted", [Figure("response tokens/s", "tok/s", 1.0, 1.2, 0.2), Figure("peak GPU memory", "MiB")]
    )
    md = block([a], docs_prefix="")
    assert "response tokens/s" in md and "peak GPU memory" not in md

"""One figure, one rounding: every page and the PR body show a figure with the same digits, and a
change of a percentage is in percentage points (docs/pages.md#numbers-one-rounding-per-figure)."""

from __future__ import annotations

import re

import pytest

from reportgen.render import candidate_page, experiment_page, figures, home_page, prbody, rollback_page
from reportgen.render.load import load_experiment
from reportgen.render.site import render_experiment
from tests.render import site_fixture

PERCENT = re.compile(r"(?<![\w.])([+-]?\d+(?:\.\d+)?)%")


@pytest.fixture(scope="module")
def exp(tmp_path_factory):
    return load_experiment(site_fixture.build_experiment(tmp_path_factory.mktemp("runs")))


@pytest.fixture(scope="module")
def texts(exp) -> dict[str, str]:
    pages = {p.path: p.markdown for p in render_experiment(exp, svg=False)}
    pages["reports/index.md"] = home_page.render([exp]).markdown
    pages["pr-body"] = prbody.render_pr_body(exp.analysis)
    return pages


def _rounds_to(token: str, value: float) -> bool:
    """`token` ("+91%", "91.1") is `value` (in %) rounded to the token's own decimals."""
    decimals = len(token.split(".")[1]) if "." in token else 0
    return abs(float(token) - value) <= 0.5 * 10 ** (-decimals) + 1e-9


def test_the_deciding_change_reads_the_same_on_every_page(exp, texts):
    for c in exp.analysis.comparisons:
        rl = c.deciding()
        if rl.interval.estimate is None:
            continue
        canonical = figures.interval_text(rl.interval)
        head = canonical.split(" (")[0].removeprefix("~ no significant change").strip() or canonical
        value = (rl.interval.estimate - 1) * 100
        shown = head.split()[0] if head[0] in "+-" else canonical.split("(")[1].split(",")[0]
        places = [path for path, text in texts.items() if shown in text]
        # the answer table, the verdict table, the reports list and the PR body all show it
        assert {"reports/grpo-offload/index.md", "reports/index.md", "pr-body"} <= set(places), (c.candidate, places)
        for path, text in texts.items():
            for m in PERCENT.finditer(text):
                token = m.group(1)
                same_sign = (token[0] in "+-") == (shown[0] in "+-")
                # a rendering of this value at other digits ("+149.7%" by a "+150%") is the same
                # figure, or one that reads as it, rounded twice
                assert not (same_sign and _rounds_to(token, value) and f"{token}%" != shown), (
                    c.candidate,
                    path,
                    token,
                    shown,
                )


def test_a_window_mean_and_an_arms_figure_read_the_same_everywhere(exp, texts):
    key = exp.analysis.primary.key
    doc = exp.analysis
    for arm in doc.arms:
        for w in arm.windows.get(key, []):
            if w.mean is None or w.window == "all":
                continue
            want = figures.arm_value(doc, arm.id, key, w.mean, window=w.window)
            # the experiment page's window table and the candidate page's, the same digits
            rows = [
                line
                for text in texts.values()
                for line in text.splitlines()
                if re.search(rf"\b{w.window}\b", line) and want in line
            ]
            assert rows, (arm.id, w.window, want)
        overall = arm.overall.get(key)
        if overall is not None:
            want = figures.arm_value(doc, arm.id, key, overall)
            exp_page = texts["reports/grpo-offload/index.md"]
            assert f"**{want}**" in exp_page, (arm.id, want)  # the windows table's mean of window means
            assert f"| {want} tok/s |" in exp_page or f"{want} tok/s" in exp_page, (arm.id, want)  # the headline


def test_a_change_of_a_percentage_is_in_percentage_points(exp, texts):
    row = next(r for r in exp.comparison("A1").headline if r.metric == "gpu/util_mean")
    pp = f"{row.candidate - row.baseline:+.1f} pp"
    assert pp in texts["reports/grpo-offload/index.md"] and pp in texts["reports/grpo-offload/A1/index.md"]
    rel = f"{(row.candidate / row.baseline - 1) * 100:+.1f}%"
    assert all(rel not in t for t in texts.values())  # never as a relative change


def test_causes_written_by_the_analysis_use_the_same_rule(exp):
    # the analysis words a cause with reportgen/rounding.py: no "+78.96%" beside a "+79%" table
    md = experiment_page.render(exp).markdown + candidate_page.render(exp, "A3").markdown
    assert not re.search(r"[+-]\d+\.\d\d%.*interval", md)
    assert rollback_page.render(exp).markdown.count("95% CI") >= 1

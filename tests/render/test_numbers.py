"""Rounding to what an interval supports, units on counts, footnote markers that cannot be misread."""

from __future__ import annotations

import markdown
import pytest

from reportgen.render.blocks import footnote_list, footnote_refs
from reportgen.render.format import (
    change_decimals,
    decimals_for,
    fmt_change_interval,
    fmt_change_supported,
    fmt_count,
    fmt_value,
)


@pytest.mark.parametrize(
    ("halfwidth", "decimals"),
    [(364.0, -1), (36.4, 0), (3.64, 1), (0.0364, 3), (99.0, 0), (100.0, -1), (None, None), (0.0, None)],
)
def test_decimals_keep_two_significant_digits_of_the_half_width(halfwidth, decimals):
    assert decimals_for(halfwidth) == decimals


def test_value_rounded_to_its_interval():
    assert fmt_value(1456.629, unit="tok/s", halfwidth=0.25 * 1456.629) == "1460 tok/s"
    assert fmt_value(1456.629, unit="tok/s", halfwidth=3.0) == "1456.6 tok/s"
    assert fmt_value(0.6790074, unit="s", halfwidth=0.05) == "0.679 s"
    # a huge interval never rounds the value's own leading digit away
    assert fmt_value(4.2, halfwidth=300.0) == "4"


def test_value_without_interval_keeps_three_significant_digits():
    assert fmt_value(16.360, unit="%") == "16.4%"
    assert fmt_value(1456.629) == "1460"
    assert fmt_value(0.0123456, unit="s") == "0.0123 s"
    assert fmt_value(80) == "80" and fmt_value(None) == "n/a"
    assert fmt_value(-0.0001, halfwidth=0.5) == "-0.0001"  # leading digit kept
    assert fmt_value(-0.0, halfwidth=0.5) == "0.00"  # never "-0.00"


def test_changes_rounded_to_their_interval():
    assert fmt_change_supported(1.0080, 0.72, 1.29) == "+101%"
    assert fmt_change_supported(0.20682, 0.1894, 0.2394) == "+20.7%"
    assert fmt_change_supported(0.0123, 0.0120, 0.0126) == "+1.23%"  # capped at two decimals
    assert change_decimals(None, None) == 1
    assert fmt_change_interval(0.3638, 0.1131, 0.6709, confidence=0.95) == "+36% (95% CI +11% to +67%)"


@pytest.mark.parametrize(
    ("n", "signed", "text"),
    [
        (1, False, "1 step"),
        (2, False, "2 steps"),
        (0, False, "0 steps"),
        (-79, True, "-79 steps"),
        (1, True, "+1 step"),
    ],
)
def test_counts_carry_their_unit(n, signed, text):
    assert fmt_count(n, "step", signed=signed) == text


def test_count_with_irregular_plural():
    assert fmt_count(2, "repeat") == "2 repeats" and fmt_count(1, "entry", "entries") == "1 entry"
    assert fmt_count(3, "entry", "entries") == "3 entries" and fmt_count(None, "step") == "n/a"


def test_two_footnote_markers_do_not_read_as_twelve():
    html = markdown.markdown("| a |\n|---|\n| x" + footnote_refs([1, 2]) + " |", extensions=["tables"])
    text = html.replace("<sup", "\x00<sup").split("\x00", 1)[1]
    import re

    visible = re.sub(r"<[^>]+>", "", text).split("|")[0].strip()
    assert visible.startswith("[1, 2]"), visible
    assert 'href="#note-2"' in html
    notes = footnote_list(["first", "second"])
    assert '<li id="note-1">first</li>' in notes and '<li id="note-2">second</li>' in notes
    assert footnote_refs([]) == "" and footnote_list([]) == ""


def test_headline_rows_per_gpu_only_with_more_than_one_gpu():
    from reportgen.analysis.document import Comparison, HeadlineRow, Verdict
    from reportgen.render.blocks import LIMITS_LABEL, headline_label, headline_rows

    def comp(gpus: int) -> Comparison:
        rows = [
            HeadlineRow(metric="gpu/util_mean", label="GPU utilization mean", unit="%", baseline=16.0, candidate=23.0)
        ]
        for i in range(gpus):
            rows += [
                HeadlineRow(
                    metric=f"gpu/{i}/util_mean",
                    label=f"GPU {i} utilization mean",
                    unit="%",
                    baseline=16.0,
                    candidate=23.0,
                ),
                HeadlineRow(
                    metric=f"gpu/{i}/mem_peak_mib",
                    label=f"peak memory GPU {i}",
                    unit="MiB",
                    baseline=1.0,
                    candidate=2.0,
                ),
            ]
        rows += [
            HeadlineRow(metric="perf/step_time", label="step time mean", unit="s", baseline=1.0, candidate=None),
            HeadlineRow(
                metric="workload/limits",
                label="effective batch / length limits",
                baseline="32 / 8 / 48",
                candidate="32 / 8 / 48",
            ),
        ]
        return Comparison.model_validate(
            {"candidate": "A1", "headline": rows, "verdict": Verdict(status="accepted", basis="interval", summary="")}
            | _schema3_defaults()
        )

    one = headline_rows(comp(1))
    assert [r.metric for r in one] == ["gpu/util_mean", "gpu/0/mem_peak_mib", "workload/limits"]  # no n/a row
    assert headline_label(one[1], gpus=1) == "GPU memory used, nvidia-smi peak"
    assert headline_label(one[2], gpus=1) == LIMITS_LABEL
    two = headline_rows(comp(2))
    assert [r.metric for r in two].count("gpu/1/util_mean") == 1 and len(two) == 6


def _schema3_defaults() -> dict:
    """The decision fields a Comparison requires, filled the way the analysis fills them for an
    accepted candidate (only their presence matters to the headline rows)."""
    change = {"metric": "m", "label": "m"}
    return {
        "summary": {
            "is_pr": True,
            "primary": change,
            "step_time": change,
            "peak_memory": change,
            "verdict": "accepted",
            "next_step": {"action": "merge", "text": "Merge A1."},
        },
        "same_work": {"status": "pass", "applies": True, "tolerance": 0.05, "tokens_metric": "t", "reason": "r"},
        "run_level": {"reference": "baseline", "metric": "m"},
        "guardrail_tally": {"total": 0, "passed": 0},
    }

"""Chart specs: repeats dashed apart, warm-up cut off the axis, GPU utilization per arm, the cap's
colour, one colour per arm on every page, a palette that reads on both schemes, chart text at 4.5:1,
and a look's interval in words."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from reportgen.analyze import analyze_experiment
from reportgen.render import chart_data, charts, machine_charts, palette, time_section
from reportgen.render.load import load_experiment
from tests.analysis.builder import FakeArm, make_experiment
from tests.render import site_fixture


@pytest.mark.parametrize(
    "colour", [*palette.ARM_COLORS, *palette.PART_COLORS, *time_section.PART_COLORS, palette.NEUTRAL]
)
def test_every_mark_colour_reads_on_the_white_and_the_dark_page(colour):
    # WCAG 2.1 non-text contrast: 3:1 against Material's white page and its slate one
    assert all(palette.contrast(colour, bg) >= 3.0 for bg in palette.PAGE_BACKGROUND.values()), colour


def test_chart_text_has_4_5_to_1_contrast_in_both_schemes():
    """Chart labels (axes, window labels, legends) are text: WCAG 2.1 AA asks 4.5:1. The colours are
    read from the stylesheet that draws them, so the test fails if report.css drifts from palette.py."""
    css = (Path(__file__).resolve().parents[2] / "docs/assets/report.css").read_text()
    light = re.search(r"^\.rg-svg svg text \{ fill: (#[0-9a-f]{6}); \}", css, re.M)
    dark = re.search(r'^\[data-md-color-scheme="slate"\] \.rg-svg svg text \{ fill: (#[0-9a-f]{6}); \}', css, re.M)
    assert light and dark
    assert (light.group(1), dark.group(1)) == (palette.CHART_TEXT["light"], palette.CHART_TEXT["dark"])
    for scheme, colour in palette.CHART_TEXT.items():
        assert palette.contrast(colour, palette.PAGE_BACKGROUND[scheme]) >= 4.5, scheme
    assert palette.contrast(palette.NEUTRAL, "#ffffff") < 4.5  # what the window labels were drawn in: 3.68:1


def test_the_cap_is_no_arms_colour():
    assert palette.LIMIT_COLOR not in palette.ARM_COLORS


def test_an_arm_has_one_colour_whatever_else_a_chart_shows():
    every = ["baseline", "A1", "A2", "A3"]
    assert palette.arm_color("A1", every) == palette.arm_color("A1", ["baseline", "A1"]) == palette.arm_color("A1")
    assert palette.arm_color("baseline") == palette.ARM_COLORS[0]
    assert len({palette.arm_color(a, every) for a in every}) == 4
    # ids that are not A<n>: by their place among the experiment's others, after the numbered ones
    mixed = ["baseline", "A1", "fp16", "bf16"]
    assert len({palette.arm_color(a, mixed) for a in mixed}) == 4
    assert palette.arm_color("fp16", mixed) == palette.arm_color("fp16", ["baseline", "A1", "fp16"])


def test_a_look_without_an_interval_says_so_in_words():
    assert charts.look_interval(None, None, early=True) == "none drawn yet: too few pairs to decide"
    assert charts.look_interval(None, 1.2, early=False) == "none: no lower bound"
    assert charts.look_interval(1.05, 1.2, early=False) == "+5.0% to +20.0%"


@pytest.fixture(scope="module")
def repeated(tmp_path_factory):
    exp = make_experiment(tmp_path_factory.mktemp("runs"), {"baseline": FakeArm(), "A1": FakeArm(speed=1.3)}, repeats=3)
    analyze_experiment(exp)
    return load_experiment(exp)


def _layers(spec: dict) -> list[dict]:
    return spec.get("layer") or spec["spec"]["layer"]


def test_repeats_of_an_arm_are_dashed_apart(repeated):
    spec = charts.step_metric(repeated, "perf/step_resp_token_per_s", title="response tokens/s", unit="tok/s")
    assert spec is not None
    dashed = [layer for layer in _layers(spec) if "strokeDash" in layer.get("encoding", {})]
    assert len(dashed) == 2  # the raw lines and the rolling means
    enc = dashed[0]["encoding"]["strokeDash"]
    assert enc["field"] == "repeat" and enc["scale"]["domain"] == ["1", "2", "3"] and enc["legend"]["title"] == "repeat"
    assert {"A1/1", "A1/2", "A1/3"} <= set(spec["datasets"]["main"].split()) or "A1/3" in spec["datasets"]["main"]


def test_gpu_utilization_is_one_binned_line_per_arm(repeated):
    spec = machine_charts.gpu_util(repeated)
    assert spec is not None
    rows = spec["datasets"]["main"].splitlines()
    assert rows[0] == "sec,value,arm,runs"
    secs = [float(r.split(",")[0]) for r in rows[1:]]
    assert len(set(secs)) <= max(secs) / chart_data.UTIL_BIN_S + 2  # one point per 5-second bin, not per sample
    assert {r.split(",")[2] for r in rows[1:]} == {"baseline", "A1"} and max(
        int(r.split(",")[3]) for r in rows[1:]
    ) == 3


def test_warm_up_does_not_squeeze_the_step_time_axis(tmp_path):
    # the fixture's warm-up steps are 1.7x slower than the windows' steps
    exp = load_experiment(site_fixture.build_experiment(tmp_path))
    spec = charts.step_metric(exp, "perf/step_time", title="step time", unit="s")
    assert spec is not None and "cut" in spec["usermeta"]
    values = [float(r.split(",")[3]) for r in spec["datasets"]["main"].splitlines()[1:] if r.split(",")[3]]
    assert spec["usermeta"]["cut"] < max(values)
    assert {"name": "ymax", "value": spec["usermeta"]["cut"]} in spec["params"]
    # a metric without such a warm-up keeps its whole range
    flat = charts.step_metric(exp, "perf/step_resp_token_per_s", title="response tokens/s")
    assert flat is not None and "usermeta" not in flat


def test_the_cap_is_drawn_on_the_figure_it_bounds(tmp_path):
    exp = load_experiment(site_fixture.build_experiment(tmp_path, cap_gib=80))
    spec = machine_charts.memory_allocated(exp, cap_mib=80 * 1024.0)
    assert spec is not None
    rules = [layer for layer in spec["layer"] if layer["mark"]["type"] == "rule"]
    assert rules and all(layer["mark"]["color"] == palette.LIMIT_COLOR for layer in rules)
    gpu = machine_charts.gpu_metric(
        exp, "mem_used_mib", title="GPU memory used", unit="MiB", show_total=True, how="max"
    )
    assert gpu is not None and "cap" not in gpu["datasets"]["main"].splitlines()[0]

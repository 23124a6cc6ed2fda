"""Chart specs: repeats dashed apart, warm-up cut off the axis, GPU utilization per arm, the cap's
colour, and a palette that reads on both schemes."""

from __future__ import annotations

import pytest

from reportgen.analyze import analyze_experiment
from reportgen.render import charts, time_section
from reportgen.render.load import load_experiment
from tests.analysis.builder import FakeArm, make_experiment
from tests.render import site_fixture


def _luminance(colour: str) -> float:
    def f(v: float) -> float:
        v /= 255
        return v / 12.92 if v <= 0.03928 else ((v + 0.055) / 1.055) ** 2.4

    r, g, b = (int(colour[i : i + 2], 16) for i in (1, 3, 5))
    return 0.2126 * f(r) + 0.7152 * f(g) + 0.0722 * f(b)


def _contrast(a: str, b: str) -> float:
    x, y = _luminance(a), _luminance(b)
    return (max(x, y) + 0.05) / (min(x, y) + 0.05)


@pytest.mark.parametrize("colour", [*charts.ARM_COLORS, *charts.PART_COLORS, *time_section.PART_COLORS, charts.NEUTRAL])
def test_every_mark_colour_reads_on_the_white_and_the_dark_page(colour):
    # WCAG 2.1 non-text contrast: 3:1 against Material's white page and its slate one
    assert _contrast(colour, "#ffffff") >= 3.0 and _contrast(colour, "#1e2029") >= 3.0, colour


def test_the_cap_is_no_arms_colour():
    assert charts.LIMIT_COLOR not in charts.ARM_COLORS


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
    spec = charts.gpu_util(repeated)
    assert spec is not None
    rows = spec["datasets"]["main"].splitlines()
    assert rows[0] == "sec,value,arm,runs"
    secs = [float(r.split(",")[0]) for r in rows[1:]]
    assert len(set(secs)) <= max(secs) / charts.UTIL_BIN_S + 2  # one point per 5-second bin, not per sample
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
    spec = charts.memory_allocated(exp, cap_mib=80 * 1024.0)
    assert spec is not None
    rules = [layer for layer in spec["layer"] if layer["mark"]["type"] == "rule"]
    assert rules and all(layer["mark"]["color"] == charts.LIMIT_COLOR for layer in rules)
    gpu = charts.gpu_metric(exp, "mem_used_mib", title="GPU memory used", unit="MiB", show_total=True, how="max")
    assert gpu is not None and "cap" not in gpu["datasets"]["main"].splitlines()[0]

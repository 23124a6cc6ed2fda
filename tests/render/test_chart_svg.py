"""Charts drawn at build time (render/chart_svg.py): the SVG that goes into the page carries each
mark's tooltip without missing values, a band per step with every run's values, ids of its own, no
background and no arm legend (the page's HTML legend lists the arms, in the site's colours)."""

from __future__ import annotations

import html
import random
import re
from pathlib import Path

import pytest

from reportgen.render import chart_svg, palette

ARMS = ["baseline", "A1"]
SPEC = {
    "$schema": "https://vega.github.io/schema/vega-lite/v5.json",
    "width": "container",
    "height": 100,
    "data": {
        "values": [
            {"step": s, "arm": a, "value": 1.0 + s + i, "low": None if s == 0 else 0.5}
            for s in range(4)
            for i, a in enumerate(ARMS)
        ]
    },
    "encoding": {
        "x": {"field": "step", "type": "quantitative"},
        "color": {
            "field": "arm",
            "type": "nominal",
            "scale": {"domain": ARMS, "range": [palette.arm_color(a, ARMS) for a in ARMS]},
        },
    },
    "layer": [
        {"mark": "line", "encoding": {"y": {"field": "value", "type": "quantitative"}}},
        {
            "mark": {"type": "point", "filled": True},
            "encoding": {
                "y": {"field": "value", "type": "quantitative"},
                "opacity": {"value": 0},
                "tooltip": [{"field": "arm"}, {"field": "value", "type": "quantitative"}, {"field": "low"}],
            },
        },
        {
            "mark": "rule",
            "params": [{"name": "hover", "select": {"type": "point", "fields": ["step"], "nearest": True}}],
            "encoding": {
                "color": {"value": palette.NEUTRAL},
                "opacity": {"value": 0},
                "tooltip": [{"field": "step", "type": "quantitative"}, {"field": "value", "aggregate": "max"}],
            },
        },
    ],
}


@pytest.fixture(scope="module")
def drawn(tmp_path_factory) -> str:
    return chart_svg.inline(chart_svg.render(SPEC, tmp_path_factory.mktemp("cache")), "demo")


def tooltips(svg: str, item: str = r"<\w+") -> list[str]:
    """Every tooltip of `svg` as the reader sees it: an item's own text, or its values put into its
    group's template (chart_svg.fill_template, as docs/assets/charts.js does)."""
    out = []
    for group in re.finditer(r'<g[^>]*?(?: data-tips="([^"]*)")?>((?:(?!<g[ >]).)*?)</g>', svg, re.S):
        for value in re.findall(item + r'[^>]*data-tip="([^"]*)"', group.group(2)):
            out.append(chart_svg.fill_template(group.group(1), value) if group.group(1) else value)
    return out


def test_tooltips_leave_out_missing_values(drawn):
    tips = tooltips(drawn)
    assert len(tips) >= 8
    assert not [t for t in tips if "null" in t or "NaN" in t]
    assert any("low: 0.5" in t for t in tips) and any("arm: A1" in t for t in tips)
    assert 'class="rg-hits"' in drawn or 'class="rg-hit"' in drawn  # the hidden points show under the pointer


def test_each_step_is_a_band_that_carries_its_tooltip(drawn):
    bands = tooltips(drawn, r'<path class="rg-band"')
    assert len(bands) == 4 and all(t.startswith("step: ") for t in bands), bands


def test_a_marks_tooltips_fold_into_a_template_and_back() -> None:
    """`tip_template` writes what every item of a mark shares once; `fill_template` (charts.js's rule)
    gives back each item's tooltip exactly, a row an item lacks left out."""
    tips = ["step: 1&#10;arm: A1&#10;value: 2", "step: 2&#10;arm: A1&#10;value: 3", "step: 3&#10;arm: A1"]
    template, values = chart_svg.tip_template(tips)
    assert template == "step: {0}&#10;arm: A1&#10;value: {1}" and values == ["1|2", "2|3", "3|"]
    assert [chart_svg.fill_template(template, v) for v in values] == tips
    assert chart_svg.tip_template(["a: 1|2", "a: 3"]) is None  # the separator in a value: left as it is
    assert chart_svg.tip_template(["a: 1&#10;b: 2", "b: 2&#10;a: 1"]) is None  # rows in another order
    assert chart_svg.tip_template(["a: 1"]) is None


def test_points_are_circles_and_coordinates_a_tenth_of_a_pixel() -> None:
    svg = (
        '<svg class="marks" width="10" height="10"><g class="mark-symbol role-mark m_marks">'
        '<path transform="translate(1.23456,7.891)" d="M5.4,0A5.4,5.4,0,1,1,-5.4,0A5.4,5.4,0,1,1,5.4,0" '
        'fill="#123456" opacity="0.001" aria-label="x: 1"/>'
        '<path transform="translate(2.5,3)" d="M5.4,0A5.4,5.4,0,1,1,-5.4,0A5.4,5.4,0,1,1,5.4,0" '
        'fill="#123456" opacity="0.001" aria-label="x: 2"/></g></svg>'
    )
    out = chart_svg.inline(svg, "p")
    # points of one size: their radius once, on their group (the stylesheet's `.rg-r > circle`)
    assert '<circle cx="1.2" cy="7.9" data-tip="1"/>' in out and '<circle cx="2.5" cy="3" data-tip="2"/>' in out
    assert 'class="rg-hits rg-r" fill="#123456" style="r:5.4px" data-tips="x: {0}"' in out and "opacity" not in out
    assert tooltips(out) == ["x: 1", "x: 2"]
    # points of two sizes keep their own
    two = chart_svg.inline(
        svg.replace("M5.4,0A5.4,5.4,0,1,1,-5.4,0A5.4,5.4,0,1,1,5.4,0", "M3,0A3,3,0,1,1,-3,0A3,3,0,1,1,3,0", 1), "p"
    )
    assert '<circle cx="1.2" cy="7.9" r="3" data-tip="1"/>' in two and 'r="5.4"' in two and "rg-r" not in two


def test_the_stylesheet_gives_a_group_s_points_its_radius() -> None:
    css = (Path(__file__).resolve().parents[2] / "docs" / "assets" / "report.css").read_text(encoding="utf-8")
    assert ".rg-svg .rg-r > circle { r: inherit; }" in css


def test_the_svg_fits_a_page(drawn):
    assert drawn.startswith("<svg") and 'aria-hidden="true"' in drawn.split(">", 1)[0]
    assert "aria-label" not in drawn and 'fill="white"' not in drawn
    assert all(i.startswith("rg-demo-") for i in re.findall(r'\sid="([^"]+)"', drawn))
    assert "role-legend" not in drawn  # the arms' legend is the page's HTML
    assert re.search(r'style="max-width:\d+px;min-width:min\(480px,\d+px\)"', drawn)


def test_the_html_legend_lists_the_arms_in_their_site_colours():
    entries = chart_svg.arm_legend(SPEC)
    assert entries == [(a, palette.arm_color(a)) for a in ARMS]
    html = chart_svg.legend_html(entries)
    assert html.count("<li>") == 2 and f"background:{palette.arm_color('A1')}" in html


def test_a_marks_link_stays_relative_and_an_xlink():
    """vl_convert resolves a mark's href against Vega's data sets site; the page keeps the spec's
    relative link, as xlink:href (Material's instant navigation would try to rewrite an SVG href)."""
    svg = (
        '<svg class="marks" width="10" height="10"><g class="mark-symbol role-mark m_marks">'
        f'<a xlink:href="{chart_svg.VEGA_BASE}../../reports/x/"><path aria-label="x: 1" d="M0,0"/></a></g></svg>'
    )
    out = chart_svg.inline(svg, "h")
    assert 'xlink:href="../../reports/x/"' in out and "vega" not in out and 'data-tip="x: 1"' in out


def test_a_warm_build_reads_the_rewritten_svg_from_the_cache(tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    svg = chart_svg.render(SPEC, cache)
    first = chart_svg.inline_cached(svg, "demo", cache)
    assert first == chart_svg.inline(svg, "demo")
    assert chart_svg.inline_cached(svg, "demo", None) == first  # no cache folder: rewritten each time
    (stored,) = (cache / "inline").rglob("*.svg")
    assert stored.read_text(encoding="utf-8") == first
    # A warm call does not rewrite: it returns what the cache holds.
    monkeypatch.setattr(chart_svg, "inline", lambda *_: pytest.fail("rewritten although cached"))
    assert chart_svg.inline_cached(svg, "demo", cache) == first
    monkeypatch.undo()
    # Another name (its ids' prefix), another SVG or another version of this module's code is another entry.

    def entries() -> int:
        return len(list((cache / "inline").rglob("*.svg")))

    chart_svg.inline_cached(svg, "other", cache)
    assert entries() == 2
    chart_svg.inline_cached(svg.replace("</svg>", "<!-- --></svg>"), "demo", cache)
    assert entries() == 3
    monkeypatch.setattr(chart_svg, "_source_hash", lambda: "edited")
    assert chart_svg.inline_cached(svg, "demo", cache) == first
    assert entries() == 4


def test_a_chart_compiled_once_per_shape_draws_as_compiled_alone(tmp_path):
    """Vega-Lite is compiled once per chart shape (`to_vega`: its data sets and the axis top a step
    chart sets are filled in after): every chart draws the same SVG as compiled on its own."""
    import vl_convert

    from reportgen.analyze import analyze_experiment
    from reportgen.render import charts
    from reportgen.render.load import load_experiment
    from tests.analysis.builder import FakeArm, make_experiment

    specs = []
    for i, speed in enumerate((1.3, 1.1)):
        path = make_experiment(tmp_path / f"runs{i}", {"baseline": FakeArm(), "A1": FakeArm(speed=speed)}, repeats=2)
        analyze_experiment(path)
        exp = load_experiment(path)
        specs += [
            charts.step_metric(exp, "perf/step_time", title="step time", unit="s"),
            charts.quality(exp),
        ]
    fixed = [chart_svg.static_spec(s) for s in specs if s is not None]
    assert len(fixed) == 4 and fixed[0]["datasets"] != fixed[2]["datasets"]
    chart_svg._COMPILED.clear()
    for spec in fixed:
        once = chart_svg.numbered(vl_convert.vega_to_svg(chart_svg.to_vega(spec)))  # clip ids counted per chart
        assert once == chart_svg.numbered(vl_convert.vegalite_to_svg(spec))
    assert len(chart_svg._COMPILED) == 2  # one shape per chart kind: the second experiment's reuse them


def test_what_changes_nothing_is_left_out_and_the_font_written_once() -> None:
    svg = (
        '<svg class="marks" width="10" height="10"><g transform="translate(0,0)"><path class="foreground" d="" '
        'display="none"/><path d="M0,0" opacity="1" fill-opacity="1"/>'
        '<text font-family="system-ui, sans-serif" font-size="12px">a</text>'
        '<text font-family="system-ui, sans-serif" font-size="14px">b</text></g></svg>'
    )
    out = chart_svg.shared_once(svg)
    assert out == (
        '<svg font-family="system-ui, sans-serif" class="marks" width="10" height="10"><g><path d="M0,0" '
        'fill-opacity="1"/><text font-size="12px">a</text><text font-size="14px">b</text></g></svg>'
    )
    # texts of two fonts keep their own
    two = svg.replace('font-family="system-ui, sans-serif" font-size="14px"', 'font-family="serif" font-size="14px"')
    assert chart_svg.shared_once(two).count("font-family") == 2


def _fixture_specs(tmp_path, *, breakdown: bool = False) -> list[dict]:
    """The chart specs of a two-arm fixture experiment: a step chart, the quality chart and a GPU chart
    (and the breakdown): the kinds of chart the page draws at build time."""
    from reportgen.analyze import analyze_experiment
    from reportgen.render import charts, machine_charts
    from reportgen.render.load import load_experiment
    from tests.analysis.builder import FakeArm, make_experiment

    path = make_experiment(tmp_path / "runs", {"baseline": FakeArm(), "A1": FakeArm(speed=1.2)}, repeats=2)
    analyze_experiment(path)
    exp = load_experiment(path)
    specs = [
        charts.step_metric(exp, "perf/step_time", title="step time", unit="s"),
        charts.quality(exp),
        machine_charts.gpu_metric(exp, "mem_used_mib", title="GPU memory used", unit="MiB"),
        *([charts.breakdown(exp)] if breakdown else []),
    ]
    assert all(s is not None for s in specs)
    return [s for s in specs if s is not None]


def test_descriptions_the_page_throws_away_are_not_built(tmp_path):
    """`silent` drops the ARIA descriptions of the marks, axes, legends and title that the rewrite for
    the page removes (lines, texts, guides): the page's SVG is the same, Vega builds fewer strings;
    a mark that carries tooltips keeps them."""
    import vl_convert

    for spec in _fixture_specs(tmp_path)[:3]:
        vega = chart_svg.to_vega(chart_svg.static_spec(spec))
        loud = chart_svg.numbered(vl_convert.vega_to_svg(vega))
        quiet = chart_svg.numbered(vl_convert.vega_to_svg(chart_svg.silent(vega)))
        assert quiet.count("aria-label") < loud.count("aria-label")
        assert chart_svg.inline(quiet, "c") == chart_svg.inline(loud, "c")
        assert "data-tip" in chart_svg.inline(quiet, "c")


def test_labels_that_cannot_reach_their_limit_are_measured_once(tmp_path):
    """`uncut` lifts the width limit of labels that cannot reach it (a continuous axis's numbers, an
    explicit domain of short values): vl_convert measures a limited label twice. The page's SVG is the
    same; a long domain value keeps its limit (Vega cuts it with an ellipsis)."""
    import vl_convert

    for spec in _fixture_specs(tmp_path, breakdown=True):
        vega = chart_svg.silent(chart_svg.to_vega(chart_svg.static_spec(spec)))
        lifted = chart_svg.uncut(vega)
        assert any(a.get("labelLimit") == 0 for a in _axes(lifted) if a.get("labels") is not False)
        drawn = chart_svg.inline(chart_svg.numbered(vl_convert.vega_to_svg(vega)), "c")
        assert chart_svg.inline(chart_svg.numbered(vl_convert.vega_to_svg(lifted)), "c") == drawn
    long = {
        "scales": [{"name": "y", "type": "band", "domain": ["a", "x" * 40], "range": [0, 50]}],
        "axes": [{"scale": "y", "orient": "left"}],
    }
    assert "labelLimit" not in chart_svg.uncut(long)["axes"][0]


def _axes(group: dict) -> list[dict]:
    """Every axis of a Vega spec, in groups too (a faceted chart's cells)."""
    found = list(group.get("axes", []))
    for mark in group.get("marks", []):
        if mark.get("type") == "group":
            found += _axes(mark)
    return found


def test_an_attribute_that_changes_nothing_is_removed_as_the_regex_over_every_position_removed_it() -> None:
    # chart_svg._without_attr finds the attribute as a literal; it must remove exactly what
    # re.sub(r"\s" + attr) removed: the whitespace character before it included, only after whitespace.
    attr = 'opacity="1"'
    slow = re.compile(r"\s" + re.escape(attr))
    rng = random.Random(45)
    pieces = [" ", "\n", "\t", "a", '"', "fill-", attr]
    cases = ["", attr, f"a {attr}", f" {attr} {attr}", f"a {attr}{attr}", f"fill-{attr} {attr}", f"a\u00a0{attr}"]
    cases += ["".join(rng.choice(pieces) for _ in range(rng.randint(0, 12))) for _ in range(5000)]
    for text in cases:
        assert chart_svg._without_attr(text, attr) == slow.sub("", text), repr(text)


def test_each_panel_of_the_quality_chart_has_its_own_step_bands(tmp_path):
    """The training-quality chart is faceted (a panel per metric), each panel cut into step bands whose
    tooltips list every run's value at the step as logged: a panel's bands carry its own metric's values
    (the rewrite pairs each panel's hidden rules with its bands, which share their mark names across
    panels), and no hidden point per run and step is drawn."""
    from reportgen.analyze import analyze_experiment
    from reportgen.render import charts
    from reportgen.render.chart_data import metric_columns
    from reportgen.render.load import load_experiment
    from tests.analysis.builder import FakeArm, make_experiment

    path = make_experiment(tmp_path / "runs", {"baseline": FakeArm(), "A1": FakeArm(speed=1.2)}, repeats=2)
    analyze_experiment(path)
    exp = load_experiment(path)
    spec = charts.quality(exp)
    assert spec is not None
    keys = spec["facet"]["sort"]
    page = chart_svg.inline(chart_svg._draw(chart_svg.static_spec(spec)).decode(), "quality")
    panels = re.findall(r'_voronoi"[^>]*>(.*?)</g></g>', page, flags=re.S)
    assert len(panels) == len(keys) >= 2
    assert "<circle" not in page  # no hidden points
    assert len(set(panels)) == len(panels)  # the fixture's metrics differ: a panel given another's bands shows
    for key, panel in zip(keys, panels, strict=True):
        template = re.search(r'data-tips="([^"]*)"', panel)
        first = re.search(r'class="rg-band"[^>]*data-tip="([^"]*)"', panel)
        assert template is not None and first is not None
        tip = html.unescape(chart_svg.fill_template(template.group(1), first.group(1)))
        cols = metric_columns(exp, key)
        at_first = {
            r: v for r, s, v in zip(cols["run"], cols["step"], cols["value"], strict=True) if s == cols["step"].min()
        }
        rows = dict(line.split(": ", 1) for line in tip.split("\n"))
        assert rows.pop("step") == f"{cols['step'].min():g}", (key, tip)
        assert rows == {r: f"{v:.4g}" for r, v in at_first.items()}, (key, tip)

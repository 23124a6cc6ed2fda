"""The recipe page and its chart for a history with a step: the change point in the table, drawn as
a dashed rule between the two campaigns it lies between, each point a link to its report."""

from __future__ import annotations

import numpy as np

from reportgen.history.series import build
from reportgen.render.history_page import recipe_path, render_index, render_recipe
from tests.history.test_series import _campaigns


def _stepped():
    rng = np.random.default_rng(7)
    values = list(1000 * np.where(np.arange(12) >= 6, 0.9, 1.0) * np.exp(0.02 * rng.standard_normal(12)))
    return build(_campaigns(values))


def test_the_change_point_is_in_the_table_with_its_commits_and_experiments() -> None:
    series = _stepped()
    page = render_recipe("r", series, known={"e05", "e06"})
    md = page.markdown
    assert page.path == recipe_path("r") == "history/r/index.md"
    assert "(1 found)" in md and "⚑ regression" in md
    assert "<code>05aaaaa</code> → <code>06aaaaa</code>" in md
    assert "[e05](../../reports/e05/index.md) → [e06](../../reports/e06/index.md)" in md
    assert "<code>e04</code>" in md  # an experiment the site does not have is named, not linked
    assert "6 / 6, p = " in md


def test_the_chart_draws_the_change_as_a_dashed_rule_and_links_the_points() -> None:
    import vl_convert

    spec = render_recipe("r", _stepped(), known=set()).charts["history-1"]
    data = spec["datasets"]["history"]
    assert "change," in data and ",5.5," in data  # between campaigns 5 and 6 of the x axis
    svg = vl_convert.vegalite_to_svg(spec)
    assert 'stroke-dasharray="5,3"' in svg and "href" not in svg.split("<svg", 1)[0]
    assert spec["spec"]["layer"][-1]["encoding"]["href"] == {"field": "href"}
    assert "../../reports/e00/" in data


def test_the_index_lists_every_recipe() -> None:
    page = render_index(_stepped())
    assert "[r](r/index.md): paired history of 0 commits, 0 alarms; 12 campaigns on 1 machine class" in page.markdown
    assert "No experiment yet" in render_index([]).markdown

"""Vega-Lite building blocks that every chart shares, and the store of chart templates (render stage).

A chart's spec is built with Altair once per shape (title, unit, arms, facets): a *template*, the
spec without its data, kept in memory and, when the site sets a store (the build cache), on disk.
`finish` puts a chart's data in, as CSV text in the spec's top-level `datasets` (a third of the size
of JSON records). The blocks here are what the charts share: the arms' colour encoding (colours from
render/palette.py), the repeats' dashes, and the pointer layers whose tooltips render/chart_svg.py
turns into the marks' tooltips when it draws the chart at build time.
"""

from __future__ import annotations

import copy
import hashlib
import json
from collections.abc import Callable
from functools import cache, wraps
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from reportgen.render.palette import NEUTRAL, REPEAT_DASHES
from reportgen.store import atomic

if TYPE_CHECKING:
    import altair as alt


# Chart templates (the spec without data) depend only on their arguments and the chart modules' code.
# Building one with Altair costs about 0.1 s, and importing Altair about 1 s, so templates are kept
# in memory and, when the site sets a store (reportgen.render.site: the build cache), on disk,
# keyed by the arguments, the text of the chart modules (CHART_SOURCES) and Altair's version.
_TEMPLATE_STORE: list[Path | None] = [None]
CHART_SOURCES = ("chart_spec.py", "chart_data.py", "palette.py", "charts.py", "machine_charts.py")


# A cache folder's subfolder of chart templates (`set_template_store`).
TEMPLATE_FOLDER = "templates"


def set_template_store(folder: Path | None) -> None:
    _TEMPLATE_STORE[0] = Path(folder) if folder is not None else None


@cache
def _source_hash() -> str:
    try:
        import importlib.metadata as md

        version = md.version("altair")
    except Exception:  # metadata missing: the file hash alone still tracks template changes
        version = "unknown"
    here = Path(__file__).parent
    text = b"".join((here / name).read_bytes() for name in CHART_SOURCES)
    return hashlib.sha256(text + version.encode()).hexdigest()[:16]


def template(build: Callable[..., dict]) -> Callable[..., dict]:
    memo: dict[tuple, dict] = {}

    @wraps(build)
    def get(*args: Any) -> dict:
        if args in memo:
            return memo[args]
        store = _TEMPLATE_STORE[0]
        path = None
        if store is not None:
            key = hashlib.sha256(json.dumps([build.__name__, _source_hash(), list(args)]).encode()).hexdigest()
            path = store / f"{key}.json"
            if path.is_file():
                try:
                    memo[args] = json.loads(path.read_text(encoding="utf-8"))
                    return memo[args]
                except ValueError:  # a damaged entry is rebuilt below
                    pass
        spec = build(*args)
        memo[args] = spec
        if path is not None:
            atomic.write_text(path, json.dumps(spec))
        return spec

    return get


def named(name: str, frame: pd.DataFrame) -> alt.NamedData:
    import altair as alt  # imported on a template-store miss only (about 1 s)

    parse = {c: ("number" if pd.api.types.is_numeric_dtype(frame[c]) else "string") for c in frame.columns}
    return alt.NamedData(name=name, format=alt.DataFormat(type="csv", parse=parse))


def finish(template: dict, datasets: dict[str, str]) -> dict:
    spec = copy.deepcopy(template)
    spec["datasets"] = datasets
    return spec


def arm_colors(arms: tuple[str, ...]) -> alt.Color:
    """`arms` holds "id=#colour" pairs so an arm keeps its colour on every page."""
    import altair as alt  # imported on a template-store miss only (about 1 s)

    rng = [a.rsplit("=", 1)[1] for a in arms]
    arms = tuple(a.rsplit("=", 1)[0] for a in arms)
    return alt.Color(
        field="arm",
        type="nominal",
        scale=alt.Scale(domain=list(arms), range=rng),
        # symbolOpacity: the lines are drawn faint (raw) or hidden (crosshair dots); the legend is not.
        legend=alt.Legend(title=None, orient="top", symbolOpacity=1, symbolType="circle"),
    )


def to_dict(chart: Any) -> dict:
    spec = chart.to_dict(validate=False)
    spec.pop("datasets", None)
    spec.setdefault("config", {}).update({"view": {"stroke": None}, "font": "system-ui, sans-serif"})
    return spec


def field_ref(name: str) -> str:
    """A data column name as a Vega-Lite field reference (dots and brackets would mean nesting)."""
    return "".join("\\" + ch if ch in ".[]\\" else ch for ch in name)


# Pointer selections: a mouse moves over the chart; a finger taps it (pointerdown), and the tap's own
# pointerout must not clear what it selected (docs/assets/charts.js replays the tap as a move, so the
# tooltip shows on phones too).
HOVER_ON = "pointermove, pointerdown"
HOVER_CLEAR = "pointerout[event.pointerType === 'mouse']"


def with_repeat(chart: alt.Chart) -> alt.Chart:
    """Adds the field `repeat` ("1", "2", ...) from the run id ("A1/2"): repeats of an arm share its
    colour and differ by their dashes."""
    return chart.transform_calculate(repeat="split(datum.run, '/')[1]")


def repeat_dash(repeats: int) -> alt.StrokeDash:
    import altair as alt  # imported on a template-store miss only (about 1 s)

    domain = [str(i) for i in range(1, max(repeats, 1) + 1)]
    dashes = [REPEAT_DASHES[(i - 1) % len(REPEAT_DASHES)] for i in range(1, len(domain) + 1)]
    return alt.StrokeDash(
        field="repeat",
        type="nominal",
        scale=alt.Scale(domain=domain, range=dashes),
        legend=alt.Legend(
            title="repeat", orient="top", symbolType="stroke", symbolStrokeColor=NEUTRAL, symbolStrokeWidth=2
        )
        if repeats > 1
        else None,
    )


def step_crosshair(
    drawn: alt.Chart,
    x: alt.X,
    ycol: str,
    runs: tuple[str, ...],
    label: str,
    unit: str,
) -> list:
    """A vertical rule at the step nearest the pointer (anywhere in the plot) and a tooltip listing, for
    every run, its drawn value (the rolling mean) and its raw value at that step, with the unit.

    The page's chart is drawn at build time (render/chart_svg.py): the rule itself is never shown
    there, its tooltip goes to the step's band (Vega-Lite's Voronoi cell of the `nearest`
    selection), which the page shades under the pointer. A dot on each line at the hovered step was
    drawn too, hidden, one per point (half the items of a step chart, a third of its drawing time),
    and left out of the page: it is no longer drawn.

    The rule layer folds raw and drawn values into one row per step (a column per run and kind), so
    its tooltip has only numeric fields: Vega-Lite's Voronoi copy of a tooltip (how `nearest` works)
    loses nominal fields such as the arm name, so the run is the field's title instead.
    """
    import altair as alt  # imported on a template-store miss only (about 1 s)

    hover = alt.selection_point(name="hover", fields=["step"], nearest=True, on=HOVER_ON, clear=HOVER_CLEAR)
    one_per_arm = len({r.rsplit("/", 1)[0] for r in runs}) == len(runs)
    unit_text = f" ({unit})" if unit else ""
    tooltip = [alt.Tooltip(field="step", type="quantitative", title="step")]
    folds: list[Any] = [ycol] if ycol == "value" else [ycol, "value"]
    for r in runs:
        name = r.rsplit("/", 1)[0] if one_per_arm else r
        for kind in folds:
            what = label if kind == ycol else ", raw"
            tooltip.append(
                alt.Tooltip(
                    field=field_ref(f"{r}|{kind}"),
                    type="quantitative",
                    format=".4~g",
                    title=f"{name}{what}{unit_text}",
                )
            )
    pivoted = (
        drawn.transform_fold(folds, as_=["kind", "v"])
        .transform_calculate(key="datum.run + '|' + datum.kind")
        .transform_pivot("key", value="v", groupby=["step"])
    )
    return [
        pivoted.mark_rule(color=NEUTRAL, strokeWidth=1)
        .encode(x=x, opacity=alt.condition(hover, alt.value(0.8), alt.value(0.0), empty=False), tooltip=tooltip)
        .add_params(hover),
    ]


def hover_points(
    base: alt.Chart,
    x: alt.X,
    y: alt.Y,
    color: alt.Color,
    tooltip: list,
    *,
    size: int,
    fields: list[str] | None = None,
    detail: alt.Detail | None = None,
) -> alt.Chart:
    """Points along the lines, invisible until the pointer (or a finger) is on one, that carry the
    tooltip (a thin line is too thin to point at); `fields`: the hover selects every point of that x."""
    import altair as alt  # imported on a template-store miss only (about 1 s)

    chosen = fields if fields else alt.Undefined
    hover = alt.selection_point(name="hover", fields=chosen, on="pointerover, pointerdown", clear=HOVER_CLEAR)
    return (
        base.mark_point(filled=True, size=size)
        .encode(
            x=x,
            y=y,
            color=color,
            detail=detail if detail is not None else alt.Undefined,
            opacity=alt.condition(hover, alt.value(1.0), alt.value(0.001), empty=False),
            tooltip=tooltip,
        )
        .add_params(hover)
    )


def set_param(spec: dict, name: str, value: Any) -> None:
    for p in spec.get("params", []):
        if p.get("name") == name:
            p["value"] = value

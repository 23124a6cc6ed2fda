"""Vega-Lite specs of the training and decision charts (render stage; pure functions over loaded data).

Each public function takes the loaded experiment and returns a Vega-Lite spec dict (or None when
there is nothing to draw): per-step metrics (`step_metric`), training quality (`quality`), where a
step's time goes (`breakdown`) and the interval look by look (`looks`). The machine's charts (GPU
samples, memory, disturbances) are in render/machine_charts.py; the data shaping in chart_data.py,
the shared Vega-Lite parts in chart_spec.py, the colours in palette.py; the site draws every spec
as SVG at build time (chart_svg.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from reportgen.render.chart_data import (
    PARTS,
    QUALITY_KEYS,
    arm_domain,
    axis_top,
    breakdown_frame,
    csv_text,
    frame_csv,
    metric_columns,
    run_order,
    windows_frame,
)
from reportgen.render.chart_spec import (
    arm_colors,
    finish,
    named,
    repeat_dash,
    set_param,
    step_crosshair,
    template,
    to_dict,
    with_repeat,
)
from reportgen.render.format import fmt_change
from reportgen.render.load import PublishedExperiment
from reportgen.render.palette import NEUTRAL, PART_COLORS

if TYPE_CHECKING:
    import altair as alt  # noqa: F401

ROLLING = 10


STEP_DATA = pd.DataFrame({"arm": ["a"], "run": ["a/1"], "step": [0], "value": [0.0]})
WINDOW_DATA = pd.DataFrame({"window": ["W"], "start": [0.0], "end": [1.0]})


@template
def _step_template(
    title: str,
    ytitle: str,
    arms: tuple[str, ...],
    windows: bool,
    rolling: bool,
    runs: tuple[str, ...] = (),
    unit: str = "",
) -> dict:
    import altair as alt  # imported on a template-store miss only (about 1 s)

    main = named("main", STEP_DATA)
    color = arm_colors(arms)
    repeats = max((int(r.rsplit("/", 1)[1]) for r in runs if r.rsplit("/", 1)[-1].isdigit()), default=1)
    dash = repeat_dash(repeats)
    x = alt.X(field="step", type="quantitative", title="step")
    # The top of the axis is the `ymax` parameter (set per chart by `step_metric`): warm-up steps far
    # above the windows' are cut off there instead of squeezing every curve into the bottom.
    scale = alt.Scale(zero=False, domainMax=alt.ExprRef("ymax"))
    y = alt.Y(field="value", type="quantitative", title=ytitle, scale=scale)
    raw = (
        with_repeat(alt.Chart(main))
        .mark_line(strokeWidth=1, clip=True)
        .encode(
            x=x,
            y=y,
            color=color,
            strokeDash=dash,
            detail=alt.Detail(field="run", type="nominal"),
            opacity=alt.value(0.35 if rolling else 0.9),
        )
    )
    layers: list[Any] = []
    if windows:
        wbase = alt.Chart(named("windows", WINDOW_DATA))
        layers.append(
            wbase.mark_rect(opacity=0.07, color="#1a73e8").encode(
                x=alt.X(field="start", type="quantitative"), x2=alt.X2(field="end")
            )
        )
        layers.append(
            wbase.mark_text(align="left", baseline="top", dx=3, dy=3, color=NEUTRAL).encode(
                x=alt.X(field="start", type="quantitative"),
                y=alt.value(0),
                text=alt.Text(field="window", type="nominal"),
            )
        )
    layers.append(raw)
    drawn = with_repeat(alt.Chart(main))
    if rolling:
        drawn = drawn.transform_window(
            rolling="mean(value)", frame=[-(ROLLING - 1), 0], groupby=["run"], sort=[alt.SortField("step")]
        )
        ycol, label = "rolling", f", mean of {ROLLING}"
        layers.append(
            drawn.mark_line(strokeWidth=2.5, clip=True).encode(
                x=x,
                y=alt.Y(field="rolling", type="quantitative"),
                color=color,
                strokeDash=dash,
                detail=alt.Detail(field="run", type="nominal"),
            )
        )
    else:
        ycol, label = "value", ""
    layers += step_crosshair(drawn, x, ycol, runs, label, unit)
    chart = alt.layer(*layers).properties(width="container", height=260, title=alt.Title(title, anchor="start"))
    spec = to_dict(chart)
    spec.setdefault("params", []).append({"name": "ymax", "value": None})
    return spec


def step_metric(
    exp: PublishedExperiment,
    key: str,
    *,
    title: str,
    unit: str = "",
    arms: Sequence[str] | None = None,
    windows: bool = True,
    rolling: bool = True,
) -> dict | None:
    """A per-step metric for every arm: thin raw lines, a rolling mean, the windows shaded; repeats
    dashed apart; the axis cut above the windows' steps when warm-up would squeeze them
    (`usermeta.cut` then holds the top)."""
    cols = metric_columns(exp, key, arms)
    if not len(cols["value"]):
        return None
    wframe = windows_frame(exp)
    show_windows = windows and not wframe.empty
    shape = _step_template(
        title,
        f"{title} ({unit})" if unit else title,
        arm_domain(exp, pd.unique(cols["arm"])),
        show_windows,
        rolling,
        run_order(exp, cols),
        unit,
    )
    data = {"main": csv_text(cols)}
    if show_windows:
        data["windows"] = frame_csv(wframe)
    spec = finish(shape, data)
    top = axis_top(exp, cols)
    if top is not None:
        set_param(spec, "ymax", top)
        spec["usermeta"] = {"cut": top}
    return spec


QUALITY_DATA = pd.DataFrame({"arm": ["a"], "run": ["a/1"], "step": [0], "key": ["k"], "value": [0.0]})


@template
def _quality_template(
    arms: tuple[str, ...], keys: tuple[str, ...], repeats: int = 1, runs: tuple[str, ...] = ()
) -> dict:
    import altair as alt  # imported on a template-store miss only (about 1 s)

    base = with_repeat(alt.Chart(named("main", QUALITY_DATA)))
    color = arm_colors(arms)
    x = alt.X(field="step", type="quantitative", title="step")
    y = alt.Y(field="value", type="quantitative", title=None, scale=alt.Scale(zero=False))
    lines = base.mark_line(strokeWidth=1.5).encode(
        x=x,
        y=y,
        color=color,
        strokeDash=repeat_dash(repeats),
        detail=alt.Detail(field="run", type="nominal"),
    )
    # The tooltip is the step charts': each panel cut into one band per step, carrying every run's
    # value at that step (the panel's header names the metric). A hidden point per run and step
    # carried it before (issue 45): 2,599 on the r4 report, two thirds of this chart's drawing time and
    # half its bytes, and a reader compared runs by pointing at each line in turn.
    chart = (
        alt.layer(lines, *step_crosshair(base, x, "value", runs, "", ""))
        .properties(width=200, height=120)
        .facet(
            facet=alt.Facet(field="key", type="nominal", sort=list(keys), title=None),
            columns=3,
        )
        .resolve_scale(y="independent")
        .properties(title=alt.Title("Training quality", anchor="start"))
    )
    return to_dict(chart)


def quality(exp: PublishedExperiment) -> dict | None:
    """Training-quality curves as small multiples (one panel per metric, own y scale), each with the
    step charts' tooltip: every run's value at the step under the pointer."""
    present = {k for alts in QUALITY_KEYS for k in alts if len(metric_columns(exp, k)["value"])}
    chosen = tuple(next(k for k in alts if k in present) for alts in QUALITY_KEYS if any(k in present for k in alts))
    if not chosen:
        return None
    parts = [metric_columns(exp, k) for k in chosen]
    cols = {c: np.concatenate([p[c] for p in parts]) for c in ("arm", "run", "step")}
    cols["key"] = np.concatenate(
        [np.full(len(p["value"]), k, dtype=object) for k, p in zip(chosen, parts, strict=False)]
    )
    cols["value"] = np.concatenate([p["value"] for p in parts])
    order = np.lexsort((cols["step"], cols["key"], cols["run"]))  # the long table's (run, key, step) order
    cols = {c: v[order] for c, v in cols.items()}
    runs = run_order(exp, cols)
    repeats = max((int(r.rsplit("/", 1)[1]) for r in runs if r.rsplit("/", 1)[-1].isdigit()), default=1)
    shape = _quality_template(arm_domain(exp, pd.unique(cols["arm"])), chosen, repeats, runs)
    return finish(shape, {"main": csv_text(cols)})


BREAKDOWN_DATA = pd.DataFrame({"arm": ["a"], "part": ["p"], "seconds": [0.0], "o": [0]})


@template
def _breakdown_template(arms: tuple[str, ...]) -> dict:
    import altair as alt  # imported on a template-store miss only (about 1 s)

    chart = (
        alt.Chart(named("main", BREAKDOWN_DATA))
        .mark_bar()
        .encode(
            y=alt.Y(field="arm", type="nominal", sort=[a.rsplit("=", 1)[0] for a in arms], title=None),
            x=alt.X(
                field="seconds", type="quantitative", aggregate="sum", title="mean seconds per step (window steps)"
            ),
            color=alt.Color(
                field="part",
                type="nominal",
                sort=list(PARTS),
                legend=alt.Legend(title=None, orient="top", columns=3),
                scale=alt.Scale(domain=list(PARTS), range=list(PART_COLORS)),
            ),
            order=alt.Order(field="o", type="quantitative"),
            tooltip=[
                alt.Tooltip(field="arm", type="nominal"),
                alt.Tooltip(field="part", type="nominal"),
                alt.Tooltip(field="seconds", type="quantitative", format=".3f"),
            ],
        )
        .properties(
            width="container", height=28 * len(arms) + 20, title=alt.Title("Where a step's time goes", anchor="start")
        )
    )
    return to_dict(chart)


def breakdown(exp: PublishedExperiment) -> dict | None:
    """A per-arm stacked bar of the mean step time (rollout, wait, log-probs, actor, optimizer, train)."""
    frame = breakdown_frame(exp)
    if frame.empty or float(frame["seconds"].sum()) == 0.0:
        return None
    return finish(_breakdown_template(arm_domain(exp, frame["arm"].unique())), {"main": frame_csv(frame)})


LOOKS_DATA = pd.DataFrame(
    {
        "arm": ["a"],
        "pairs": [1],
        "change": [0.0],
        "low": [0.0],
        "high": [0.0],
        "interval": ["i"],
        "outcome": ["o"],
        "against": ["b"],
    }
)
LINES_DATA = pd.DataFrame({"y": [0.0], "line": ["l"]})


@template
def _looks_template(arms: tuple[str, ...], max_pairs: int) -> dict:
    import altair as alt  # imported on a template-store miss only (about 1 s)

    color = arm_colors(arms)
    x = alt.X(
        field="pairs",
        type="quantitative",
        title="pairs of runs",
        scale=alt.Scale(domain=[0.5, max_pairs + 0.5]),
        axis=alt.Axis(tickMinStep=1, format="d"),
    )
    y = alt.Y(field="change", type="quantitative", title="change of the primary metric", axis=alt.Axis(format="+.0%"))
    base = alt.Chart(named("main", LOOKS_DATA))
    # Each candidate's marks are nudged sideways a little so that two intervals at one pair stay apart.
    offset = alt.XOffset(field="arm", type="nominal", scale=alt.Scale(domain=[a.rsplit("=", 1)[0] for a in arms]))
    tooltip = [
        alt.Tooltip(field="arm", type="nominal", title="candidate"),
        alt.Tooltip(field="against", type="nominal"),
        alt.Tooltip(field="pairs", type="quantitative"),
        alt.Tooltip(field="change", type="quantitative", format="+.1%"),
        # the interval in words ("no interval yet: too few pairs" when none is drawn), never a missing bound
        alt.Tooltip(field="interval", type="nominal"),
        alt.Tooltip(field="outcome", type="nominal", title="this look says"),
    ]
    bars = base.mark_rule(strokeWidth=2).encode(
        x=x,
        y=alt.Y(field="low", type="quantitative"),
        y2=alt.Y2(field="high"),
        color=color,
        xOffset=offset,
        tooltip=tooltip,
    )
    points = base.mark_point(filled=True, size=60).encode(x=x, y=y, color=color, xOffset=offset, tooltip=tooltip)
    lines = (
        alt.Chart(named("lines", LINES_DATA))
        .mark_rule(color="#80868b")
        .encode(
            y=alt.Y(field="y", type="quantitative"),
            strokeDash=alt.StrokeDash(
                field="line",
                type="nominal",
                scale=alt.Scale(domain=["no change", "minimum effect"], range=[[1, 0], [4, 3]]),
                legend=alt.Legend(title=None, orient="bottom"),
            ),
            tooltip=[
                alt.Tooltip(field="line", type="nominal"),
                alt.Tooltip(field="y", type="quantitative", format="+.0%"),
            ],
        )
    )
    chart = alt.layer(lines, bars, points).properties(width="container", height=220)
    return to_dict(chart)


def look_interval(low: float | None, high: float | None, *, early: bool) -> str:
    """A look's interval in words for its tooltip: both bounds, or why there is none (a missing bound
    once read "from null")."""
    if early:
        return "none drawn yet: too few pairs to decide"
    if low is None or high is None:
        return "none: " + ("no lower bound" if low is None else "no upper bound")
    return f"{fmt_change(low - 1, digits=1)} to {fmt_change(high - 1, digits=1)}"


def looks(exp: PublishedExperiment) -> dict | None:
    """The interval after each pair of runs, per candidate (of the comparison that decides it),
    with no change and the minimum effect marked: how the verdict came about, look by look."""
    settings = exp.analysis.settings
    fields = ("arm", "pairs", "change", "low", "high", "interval", "outcome", "against")
    rows: dict[str, list[Any]] = {k: [] for k in fields}
    for comp in exp.analysis.comparisons:
        rl = comp.deciding()
        for look in rl.looks:
            if look.estimate is None:
                continue
            # Before the first look that may decide, an interval on one or two pairs is as wide as the
            # chart: the estimate alone is drawn there.
            early = look.outcome == "too_few_pairs"
            rows["arm"].append(comp.candidate)
            rows["pairs"].append(look.pairs)
            rows["change"].append(look.estimate - 1)
            drawn = look.low is not None and look.high is not None and not early
            rows["low"].append(look.low - 1 if drawn and look.low is not None else float("nan"))
            rows["high"].append(look.high - 1 if drawn and look.high is not None else float("nan"))
            rows["interval"].append(look_interval(look.low, look.high, early=early))
            rows["outcome"].append(look.outcome.replace("_", " "))
            rows["against"].append(rl.reference)
    if not rows["arm"]:
        return None
    cols = {k: np.asarray(v, dtype=float if k in ("change", "low", "high") else object) for k, v in rows.items()}
    cols["pairs"] = np.asarray(rows["pairs"], dtype=int)
    e = settings.min_effect
    lines = {
        "y": np.asarray([0.0, e, -e]),
        "line": np.asarray(["no change", "minimum effect", "minimum effect"], dtype=object),
    }
    most = max(max(rows["pairs"]), settings.design.max_pairs)
    shape = _looks_template(arm_domain(exp, pd.unique(cols["arm"])), int(most))
    return finish(shape, {"main": csv_text(cols), "lines": csv_text(lines)})

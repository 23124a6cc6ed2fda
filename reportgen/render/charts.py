"""Vega-Lite chart specs for the report pages (render stage; pure functions over loaded data).

Each public function takes the loaded experiment and returns a Vega-Lite spec dict (or None
when there is nothing to draw). The chart's structure is built with Altair once per shape
(title, unit, arms, facets) and cached; the data goes into the spec's top-level `datasets` as
CSV text (a third of the size of JSON records). Values are rounded to 4 significant digits
for drawing only (tables use the unrounded numbers); GPU samples are binned to at most
MAX_POINTS per series so a long run keeps pages light.
"""

from __future__ import annotations

import copy
import csv
import hashlib
import io
import json
import math
from collections.abc import Callable, Iterable, Sequence
from functools import cache, wraps
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from reportgen import vocab
from reportgen.render.load import ExperimentData, StoredRun
from reportgen.store import atomic

if TYPE_CHECKING:
    import altair as alt

MAX_POINTS = 300
ROLLING = 10
QUALITY_KEYS: tuple[tuple[str, ...], ...] = (
    (vocab.LOSS,),
    (vocab.RAW_REWARD, vocab.REWARDS),
    (vocab.RESPONSE_LEN_MEAN, vocab.RESPONSE_LENGTHS),
    (vocab.PPO_KL, vocab.KL_LOSS),
    (vocab.PG_CLIPFRAC,),
    (vocab.GRAD_NORM,),
)
# Every colour drawn as a mark has at least 3:1 contrast (WCAG 2.1 non-text) against both Material's
# white page and its dark ("slate", #1e2029) one, so one palette serves both schemes: relative
# luminance between 0.15 and 0.29 (tests/render/test_browser_charts.py measures it in Chromium).
ARM_COLORS = ("#80868b", "#1a73e8", "#d93025", "#e37400", "#1e8e3e", "#a142f4", "#00897b", "#e52592")
# Marks that are no arm: a rule for a limit (the memory cap) in near-black, which docs/assets/charts.js
# draws near-white in the dark scheme; labels and the crosshair in a mid grey.
LIMIT_COLOR = "#202124"
NEUTRAL = "#80868b"
REPEAT_DASHES = ([1, 0], [6, 3], [2, 2], [8, 3, 2, 3], [1, 3])  # repeat 1, 2, 3, ... of an arm
# Where a step's time goes (vocab.STEP_PARTS). The workload (reportgen/workloads/grpo/train.py)
# logs: step = wait + train; wait includes the rollout; train includes the log-prob passes (policy
# and reference) and the actor's training, which includes the optimizer steps (perf/optimizer_time,
# the phase optimizer offload changes). Relax logs no optimizer time: that part is then 0 and the
# actor bar is the whole of perf/actor_train_time. Log-prob time is split out only when it fits
# inside train time beside the actor's (else it is counted inside the actor's, as some trainers do).
PART_COLORS = ("#1a73e8", "#12a4af", "#a142f4", "#d93025", "#e37400", "#80868b")
PARTS = ("rollout", "wait (other)", "log-probs", "actor fwd/bwd", "optimizer", "train (other)")


# Chart templates (the spec without data) depend only on their arguments and this module's code.
# Building one with Altair costs about 0.1 s, and importing Altair about 1 s, so templates are kept
# in memory and, when the site sets a store (reportgen.render.site: the build cache), on disk,
# keyed by the arguments, this file's text and Altair's version.
_TEMPLATE_STORE: list[Path | None] = [None]


def set_template_store(folder: Path | None) -> None:
    _TEMPLATE_STORE[0] = Path(folder) if folder is not None else None


@cache
def _source_hash() -> str:
    try:
        import importlib.metadata as md

        version = md.version("altair")
    except Exception:  # metadata missing: the file hash alone still tracks template changes
        version = "unknown"
    return hashlib.sha256(Path(__file__).read_bytes() + version.encode()).hexdigest()[:16]


def _template(build: Callable[..., dict]) -> Callable[..., dict]:
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


def _column_text(values: Any) -> list[str]:
    """One column as CSV cells: floats to 4 significant digits ("%.4g"), NaN/inf as empty (null)."""
    arr = np.asarray(values)
    if arr.dtype.kind == "f":
        return [(f"{v:.4g}") if math.isfinite(v) else "" for v in arr.tolist()]
    return [str(v) for v in arr.tolist()]


def csv_text(columns: dict[str, Any]) -> str:
    """CSV text for a dataset given as column name -> values (numpy arrays or lists).

    Written with the csv module rather than DataFrame.to_csv: a page has a dozen datasets and
    pandas' per-call overhead was most of the chart cost of a build.
    """
    buf = io.StringIO()
    out = csv.writer(buf, lineterminator="\n")
    out.writerow(list(columns))
    out.writerows(zip(*(_column_text(v) for v in columns.values()), strict=False))
    return buf.getvalue()


def _csv(frame: pd.DataFrame) -> str:
    """CSV text for a (small) dataset frame; see `csv_text`."""
    return csv_text({c: frame[c].to_numpy() for c in frame.columns})


def _named(name: str, frame: pd.DataFrame) -> alt.NamedData:
    import altair as alt  # imported on a template-store miss only (about 1 s)

    parse = {c: ("number" if pd.api.types.is_numeric_dtype(frame[c]) else "string") for c in frame.columns}
    return alt.NamedData(name=name, format=alt.DataFormat(type="csv", parse=parse))


def _finish(template: dict, datasets: dict[str, str]) -> dict:
    spec = copy.deepcopy(template)
    spec["datasets"] = datasets
    return spec


def _color(arms: tuple[str, ...]) -> alt.Color:
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


def _to_dict(chart: Any) -> dict:
    spec = chart.to_dict(validate=False)
    spec.pop("datasets", None)
    spec.setdefault("config", {}).update({"view": {"stroke": None}, "font": "system-ui, sans-serif"})
    return spec


def metric_frame(exp: ExperimentData, keys: Sequence[str], arms: Sequence[str] | None = None) -> pd.DataFrame:
    """Long table arm, run, step, key, value for the given metric keys and arms."""
    m = exp.metrics_long
    mask = m["key"].isin(list(keys)).to_numpy().copy()
    if arms is not None:
        mask &= m["arm"].isin(list(arms)).to_numpy()
    return m[mask]


def metric_columns(exp: ExperimentData, key: str, arms: Sequence[str] | None = None) -> dict[str, np.ndarray]:
    """arm, run, step, value of one metric key (finite values only), as arrays, in (run, step) order.

    Built from `ExperimentData.metrics_by_key` (the long table split by key once per
    experiment) so each chart costs a mask, not a scan of every metric of every run.
    """
    cols = exp.metrics_by_key.get(key)
    if cols is None:
        return {
            "arm": np.array([], dtype=object),
            "run": np.array([], dtype=object),
            "step": np.array([], dtype="int64"),
            "value": np.array([], dtype=float),
        }
    mask = np.isfinite(cols["value"])
    if arms is not None:
        mask &= np.isin(cols["arm"], list(arms))
    return {k: v[mask] for k, v in cols.items()}


def _arm_order(exp: ExperimentData, present: Iterable[object]) -> tuple[str, ...]:
    """Arms present, in the experiment's order, each with its colour ("A1=#1a73e8")."""
    have = {str(a) for a in present}
    every = list(exp.arm_ids()) + sorted(have - set(exp.arm_ids()))
    return tuple(f"{a}={ARM_COLORS[i % len(ARM_COLORS)]}" for i, a in enumerate(every) if a in have)


def _run_order(exp: ExperimentData, cols: dict[str, np.ndarray]) -> tuple[str, ...]:
    """Runs present ("A1/1"), arms in the experiment's order, repeats in order."""
    order = {a: i for i, a in enumerate(exp.arm_ids())}
    pairs = {(str(a), str(r)) for a, r in zip(cols["arm"], cols["run"], strict=False)}
    return tuple(r for _a, r in sorted(pairs, key=lambda p: (order.get(p[0], len(order)), p[0], p[1])))


def _windows_frame(exp: ExperimentData) -> pd.DataFrame:
    windows = exp.analysis.settings.windows
    return pd.DataFrame(
        {
            "window": [w.name for w in windows],
            "start": [float(w.start) - 0.5 for w in windows],
            "end": [float(w.end) + 0.5 for w in windows],
        }
    )


STEP_DATA = pd.DataFrame({"arm": ["a"], "run": ["a/1"], "step": [0], "value": [0.0]})
WINDOW_DATA = pd.DataFrame({"window": ["W"], "start": [0.0], "end": [1.0]})


def _shown(arms: tuple[str, ...]) -> alt.Parameter:
    """Clicking an arm in the legend hides it (and clicking again brings it back).

    A point selection bound to the legend starts with every arm selected; with `toggle` always on,
    a click removes the arm from the selection (its legend entry fades, its lines are filtered out).
    """
    import altair as alt  # imported on a template-store miss only (about 1 s)

    ids = [a.rsplit("=", 1)[0] for a in arms]
    return alt.selection_point(
        name="shown", fields=["arm"], bind="legend", toggle="true", value=[{"arm": a} for a in ids]
    )


def _field_ref(name: str) -> str:
    """A data column name as a Vega-Lite field reference (dots and brackets would mean nesting)."""
    return "".join("\\" + ch if ch in ".[]\\" else ch for ch in name)


# Pointer selections: a mouse moves over the chart; a finger taps it (pointerdown), and the tap's own
# pointerout must not clear what it selected (docs/assets/charts.js replays the tap as a move, so the
# tooltip shows on phones too).
HOVER_ON = "pointermove, pointerdown"
HOVER_CLEAR = "pointerout[event.pointerType === 'mouse']"


def _repeat(chart: alt.Chart) -> alt.Chart:
    """Adds the field `repeat` ("1", "2", ...) from the run id ("A1/2"): repeats of an arm share its
    colour and differ by their dashes."""
    return chart.transform_calculate(repeat="split(datum.run, '/')[1]")


def _dash(repeats: int) -> alt.StrokeDash:
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


def _step_crosshair(
    drawn: alt.Chart,
    x: alt.X,
    y: alt.Y,
    color: alt.Color,
    ycol: str,
    runs: tuple[str, ...],
    label: str,
    unit: str,
) -> list:
    """A vertical rule at the step nearest the pointer (anywhere in the plot), a dot on each line
    there, and a tooltip listing, for every run, its drawn value (the rolling mean) and its raw value
    at that step, with the unit.

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
                    field=_field_ref(f"{r}|{kind}"),
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
        # clipped: with the axis cut above the windows' steps, a warm-up dot must not grow the chart
        drawn.mark_point(filled=True, size=45, clip=True).encode(
            x=x,
            y=y,
            color=color,
            detail=alt.Detail(field="run", type="nominal"),
            opacity=alt.condition(hover, alt.value(1.0), alt.value(0.0), empty=False),
        ),
    ]


def _hover_points(
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


def _point_crosshair(base: alt.Chart, xfield: str, x: alt.X, y: alt.Y, color: alt.Color, tooltip: list) -> list:
    """For dense series (GPU samples): points along every line, invisible until the pointer is on
    one, that carry the tooltip (so it shows on the drawn line, not only on its pixels), and a
    vertical rule at the hovered x."""
    import altair as alt  # imported on a template-store miss only (about 1 s)

    hover = alt.selection_point(name="hover", fields=[xfield], on="pointerover, pointerdown", clear=HOVER_CLEAR)
    detail = alt.Detail(field="run", type="nominal")
    return [
        base.transform_aggregate(groupby=[xfield, "gpu"])
        .mark_rule(color=NEUTRAL, strokeWidth=1)
        .encode(x=x, opacity=alt.condition(hover, alt.value(0.8), alt.value(0.0), empty=False)),
        _hover_points(base, x, y, color, tooltip, size=160, fields=[xfield], detail=detail),
    ]


@_template
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

    main = _named("main", STEP_DATA)
    shown = _shown(arms)
    color = _color(arms)
    repeats = max((int(r.rsplit("/", 1)[1]) for r in runs if r.rsplit("/", 1)[-1].isdigit()), default=1)
    dash = _dash(repeats)
    x = alt.X(field="step", type="quantitative", title="step")
    # The top of the axis is the `ymax` parameter (set per chart by `step_metric`): warm-up steps far
    # above the windows' are cut off there instead of squeezing every curve into the bottom.
    scale = alt.Scale(zero=False, domainMax=alt.ExprRef("ymax"))
    y = alt.Y(field="value", type="quantitative", title=ytitle, scale=scale)
    raw = (
        _repeat(alt.Chart(main))
        .mark_line(strokeWidth=1, clip=True)
        .encode(
            x=x,
            y=y,
            color=color,
            strokeDash=dash,
            detail=alt.Detail(field="run", type="nominal"),
            opacity=alt.condition(shown, alt.value(0.35 if rolling else 0.9), alt.value(0.0)),
        )
        .add_params(shown)
    )
    layers: list[Any] = []
    if windows:
        wbase = alt.Chart(_named("windows", WINDOW_DATA))
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
    drawn = _repeat(alt.Chart(main).transform_filter(shown))
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
    layers += _step_crosshair(drawn, x, alt.Y(field=ycol, type="quantitative"), color, ycol, runs, label, unit)
    chart = alt.layer(*layers).properties(width="container", height=260, title=alt.Title(title, anchor="start"))
    spec = _to_dict(chart)
    spec.setdefault("params", []).append({"name": "ymax", "value": None})
    return spec


# An axis is cut at the windows' top only when warm-up would otherwise stretch it this much.
CUT_WHEN = 1.5


def axis_top(exp: ExperimentData, cols: dict[str, np.ndarray]) -> float | None:
    """The top of a step chart's axis when warm-up would squeeze the windows' steps: a little above
    the highest value inside the windows; None (the data's own range) otherwise."""
    windows = exp.analysis.settings.windows
    values, steps = cols["value"], cols["step"]
    if not windows or not len(values):
        return None
    inside = (steps >= windows[0].start) & (steps <= windows[-1].end)
    if not inside.any():
        return None
    top, everything = float(values[inside].max()), float(values.max())
    if top <= 0 or everything <= CUT_WHEN * top:
        return None
    return top * 1.08


def step_metric(
    exp: ExperimentData,
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
    wframe = _windows_frame(exp)
    show_windows = windows and not wframe.empty
    template = _step_template(
        title,
        f"{title} ({unit})" if unit else title,
        _arm_order(exp, pd.unique(cols["arm"])),
        show_windows,
        rolling,
        _run_order(exp, cols),
        unit,
    )
    data = {"main": csv_text(cols)}
    if show_windows:
        data["windows"] = _csv(wframe)
    spec = _finish(template, data)
    top = axis_top(exp, cols)
    if top is not None:
        _set_param(spec, "ymax", top)
        spec["usermeta"] = {"cut": top}
    return spec


def _set_param(spec: dict, name: str, value: Any) -> None:
    for p in spec.get("params", []):
        if p.get("name") == name:
            p["value"] = value


GPU_DATA = pd.DataFrame({"sec": [0.0], "value": [0.0], "total": [0.0], "arm": ["a"], "run": ["a/1"], "gpu": ["GPU 0"]})


def _reduce_bins(values: np.ndarray, starts: np.ndarray, how: str) -> np.ndarray:
    """Mean or max of each bin [starts[i], starts[i+1]), skipping NaN (NaN when a bin has none)."""
    finite = np.isfinite(values)
    if how == "max":
        return np.fmax.reduceat(np.where(finite, values, np.nan), starts)
    n = np.add.reduceat(finite.astype(float), starts)
    total = np.add.reduceat(np.where(finite, values, 0.0), starts)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(n > 0, total / np.maximum(n, 1), np.nan)


def _gpu_run_columns(run: StoredRun, column: str, how: str) -> dict[str, np.ndarray] | None:
    """One run's samples binned to at most MAX_POINTS per GPU: sec, value, total, arm, run, gpu."""
    g = run.gpu
    if g.empty or column not in g:
        return None
    t = g["t"].to_numpy(dtype=float)
    idx = g["index"].to_numpy()
    order = np.lexsort((t, idx))  # by GPU, then time (stable, like a two-key sort)
    t, idx = t[order], idx[order]
    value = g[column].to_numpy(dtype=float)[order]
    total = g["mem_total_mib"].to_numpy(dtype=float)[order] if "mem_total_mib" in g else np.full(len(t), np.nan)
    t0 = float(t.min())
    parts: dict[str, list] = {"sec": [], "value": [], "total": [], "gpu": []}
    bounds = np.flatnonzero(np.diff(idx)) + 1
    for lo, hi in zip(np.r_[0, bounds], np.r_[bounds, len(t)], strict=False):
        width = max(1, math.ceil((hi - lo) / MAX_POINTS))
        starts = np.arange(lo, hi, width)
        parts["sec"].append(t[starts] - t0)
        parts["value"].append(_reduce_bins(value[lo:hi], starts - lo, how))
        parts["total"].append(_reduce_bins(total[lo:hi], starts - lo, "max"))
        parts["gpu"].append(np.full(len(starts), f"GPU {int(idx[lo])}", dtype=object))
    out = {k: np.concatenate(v) for k, v in parts.items()}
    n = len(out["sec"])
    return {
        "sec": out["sec"],
        "value": out["value"],
        "total": out["total"],
        "arm": np.full(n, run.arm, dtype=object),
        "run": np.full(n, f"{run.arm}/{run.repeat}", dtype=object),
        "gpu": out["gpu"],
    }


def _gpu_columns(exp: ExperimentData, runs: Sequence[StoredRun], column: str, how: str) -> dict[str, np.ndarray] | None:
    cache = exp.gpu_series
    parts = []
    for r in runs:
        key = (r.rel, column, how)
        if key not in cache:
            cache[key] = _gpu_run_columns(r, column, how)
        if (series := cache[key]) is not None:
            parts.append(series)
    if not parts:
        return None
    return {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}


# The device total is drawn only when it is within this factor of the data's top (or the cap):
# further above, a rule at the total squashes every curve into the bottom of the chart (150,000 MiB
# on an H200 against a 5 GiB run), so the axis is scaled to the data and the total is said in words.
TOTAL_DRAWN_WITHIN = 1.5


def memory_total_drawn(peak: float | None, cap: float | None, total: float | None) -> bool:
    """Whether a memory chart draws the device total as a rule (see TOTAL_DRAWN_WITHIN)."""
    if total is None or not math.isfinite(total):
        return False
    top = max(v for v in (peak or 0.0, cap or 0.0))
    return top > 0 and total <= TOTAL_DRAWN_WITHIN * top


@_template
def _gpu_template(title: str, unit: str, arms: tuple[str, ...], show_total: bool, gpu_labels: bool = True) -> dict:
    import altair as alt  # imported on a template-store miss only (about 1 s)

    base = alt.Chart(_named("main", GPU_DATA))
    shown = _shown(arms)
    color = _color(arms)
    x = alt.X(field="sec", type="quantitative", title="seconds since the run started")
    y = alt.Y(field="value", type="quantitative", title=unit)
    lines = (
        base.mark_line(strokeWidth=1.2, interpolate="step-after")
        .encode(
            x=x,
            y=y,
            color=color,
            detail=alt.Detail(field="run", type="nominal"),
            opacity=alt.condition(shown, alt.value(1.0), alt.value(0.0)),
        )
        .add_params(shown)
    )
    tooltip = [
        alt.Tooltip(field="arm", type="nominal"),
        alt.Tooltip(field="run", type="nominal"),
        alt.Tooltip(field="sec", type="quantitative", format=".0f", title="seconds"),
        alt.Tooltip(field="value", type="quantitative", format=".4~g", title=unit),
    ]
    layers: list[Any] = [lines, *_point_crosshair(base.transform_filter(shown), "sec", x, y, color, tooltip)]
    if show_total:
        layers.append(
            base.mark_rule(color=NEUTRAL, strokeDash=[6, 3]).encode(
                y=alt.Y(field="total", type="quantitative", aggregate="max"),
                tooltip=[
                    alt.Tooltip(field="total", type="quantitative", aggregate="max", title=f"device total ({unit})")
                ],
            )
        )
    chart = (
        alt.layer(*layers)
        .properties(width=640, height=170)
        .facet(
            # One GPU: no "GPU 0" label beside the only panel (it took a third of a phone's width).
            row=alt.Row(
                field="gpu",
                type="nominal",
                title=None,
                header=alt.Header(labelAngle=0, labelAlign="left") if gpu_labels else alt.Header(labels=False),
            ),
        )
        .properties(title=alt.Title(title, anchor="start"))
    )
    return _to_dict(chart)


def gpu_metric(
    exp: ExperimentData,
    column: str,
    *,
    title: str,
    unit: str,
    arms: Sequence[str] | None = None,
    show_total: bool = False,
    how: str = "mean",
) -> dict | None:
    """A 1 Hz GPU sample column over seconds since the run's start, one panel per GPU.

    With `show_total`, the device total is drawn only when it lies near the data
    (`memory_total_drawn`); otherwise the axis is scaled to the data. No memory cap is drawn here: a
    cap the workload sets bounds PyTorch's allocator, not nvidia-smi's figure (`memory_allocated`)."""
    runs = [r for r in exp.formal_runs() if arms is None or r.arm in arms]
    cols = _gpu_columns(exp, runs, column, how)
    if cols is None or not len(cols["sec"]):
        return None
    if show_total:
        finite = cols["total"][np.isfinite(cols["total"])]
        values = cols["value"][np.isfinite(cols["value"])]
        show_total = memory_total_drawn(
            float(values.max()) if len(values) else None, None, float(finite.max()) if len(finite) else None
        )
    template = _gpu_template(
        title,
        unit,
        _arm_order(exp, pd.unique(cols["arm"])),
        show_total,
        len(pd.unique(cols["gpu"])) > 1,
    )
    return _finish(template, {"main": csv_text(cols)})


UTIL_BIN_S = 5.0  # GPU utilization is averaged over this many seconds: 1 Hz samples of 0 and 100 % alternate


UTIL_DATA = pd.DataFrame({"sec": [0.0], "value": [0.0], "arm": ["a"], "runs": [1]})


@_template
def _util_template(arms: tuple[str, ...]) -> dict:
    import altair as alt  # imported on a template-store miss only (about 1 s)

    base = alt.Chart(_named("main", UTIL_DATA))
    shown = _shown(arms)
    color = _color(arms)
    x = alt.X(field="sec", type="quantitative", title="seconds since the run started")
    y = alt.Y(field="value", type="quantitative", title="GPU utilization (%)", scale=alt.Scale(domain=[0, 100]))
    lines = (
        base.mark_line(strokeWidth=2, interpolate="monotone")
        .encode(x=x, y=y, color=color, opacity=alt.condition(shown, alt.value(1.0), alt.value(0.0)))
        .add_params(shown)
    )
    tooltip = [
        alt.Tooltip(field="arm", type="nominal"),
        alt.Tooltip(field="sec", type="quantitative", format=".0f", title="seconds"),
        alt.Tooltip(field="value", type="quantitative", format=".1f", title="GPU utilization (%)"),
        alt.Tooltip(field="runs", type="quantitative", title="runs averaged"),
    ]
    hits = _hover_points(base.transform_filter(shown), x, y, color, tooltip, size=160, fields=["sec"])
    chart = alt.layer(lines, hits).properties(width="container", height=200)
    return _to_dict(chart)


def gpu_util(exp: ExperimentData) -> dict | None:
    """GPU utilization per arm: the mean over its formal runs and GPUs in 5-second bins since each
    run's start, one line per arm (8 overlapping 1 Hz step lines read as noise)."""
    rows: dict[tuple[str, float], list[float]] = {}
    runs_per: dict[tuple[str, float], set[str]] = {}
    for run in exp.formal_runs():
        g = run.gpu
        if g.empty or "util_gpu" not in g:
            continue
        t = g["t"].to_numpy(dtype=float)
        util = g["util_gpu"].to_numpy(dtype=float)
        ok = np.isfinite(util) & np.isfinite(t)
        if not ok.any():
            continue
        bins = np.floor((t[ok] - t[ok].min()) / UTIL_BIN_S) * UTIL_BIN_S + UTIL_BIN_S / 2
        for b, u in zip(bins.tolist(), util[ok].tolist(), strict=True):
            rows.setdefault((run.arm, b), []).append(u)
            runs_per.setdefault((run.arm, b), set()).add(run.rel)
    if not rows:
        return None
    order = {a: i for i, a in enumerate(exp.arm_ids())}
    keys = sorted(rows, key=lambda k: (order.get(k[0], len(order)), k[0], k[1]))
    cols = {
        "sec": np.asarray([k[1] for k in keys], dtype=float),
        "value": np.asarray([float(np.mean(rows[k])) for k in keys], dtype=float),
        "arm": np.asarray([k[0] for k in keys], dtype=object),
        "runs": np.asarray([len(runs_per[k]) for k in keys], dtype=int),
    }
    return _finish(_util_template(_arm_order(exp, pd.unique(cols["arm"]))), {"main": csv_text(cols)})


ALLOC_DATA = pd.DataFrame({"arm": ["a"], "run": ["a/1"], "step": [0], "value": [0.0]})
LIMIT_DATA = pd.DataFrame({"y": [0.0], "label": ["cap"]})


@_template
def _allocated_template(arms: tuple[str, ...], runs: tuple[str, ...], limit: bool) -> dict:
    import altair as alt  # imported on a template-store miss only (about 1 s)

    main = _repeat(alt.Chart(_named("main", ALLOC_DATA)))
    shown = _shown(arms)
    color = _color(arms)
    repeats = max((int(r.rsplit("/", 1)[1]) for r in runs if r.rsplit("/", 1)[-1].isdigit()), default=1)
    x = alt.X(field="step", type="quantitative", title="step")
    y = alt.Y(field="value", type="quantitative", title="peak allocated so far (MiB)", scale=alt.Scale(zero=True))
    lines = (
        main.mark_line(strokeWidth=2, point=alt.OverlayMarkDef(size=18, filled=True))
        .encode(
            x=x,
            y=y,
            color=color,
            strokeDash=_dash(repeats),
            detail=alt.Detail(field="run", type="nominal"),
            opacity=alt.condition(shown, alt.value(1.0), alt.value(0.0)),
            tooltip=[
                alt.Tooltip(field="run", type="nominal"),
                alt.Tooltip(field="step", type="quantitative"),
                alt.Tooltip(field="value", type="quantitative", format=".0f", title="allocated (MiB)"),
            ],
        )
        .add_params(shown)
    )
    layers: list[Any] = [lines]
    if limit:
        rule = alt.Chart(_named("limit", LIMIT_DATA))
        layers.append(
            rule.mark_rule(color=LIMIT_COLOR, strokeDash=[4, 3], strokeWidth=1.5).encode(
                y=alt.Y(field="y", type="quantitative"),
                tooltip=[alt.Tooltip(field="label", type="nominal", title="limit")],
            )
        )
        layers.append(
            rule.mark_text(align="left", baseline="bottom", dx=4, dy=-3, color=LIMIT_COLOR).encode(
                x=alt.value(0), y=alt.Y(field="y", type="quantitative"), text=alt.Text(field="label", type="nominal")
            )
        )
    return _to_dict(alt.layer(*layers).properties(width="container", height=220))


def memory_allocated(exp: ExperimentData, *, cap_mib: float | None, arms: Sequence[str] | None = None) -> dict | None:
    """The framework's peak allocation per step (`perf/max_memory_allocated_gib`, in MiB) of every run,
    against the cap the workload set: the figure the cap bounds, so the line is drawn where it applies.
    A run that ran out of memory ends at what PyTorch held plus the failing request (analysis.json
    `arms[].memory.allocated_peak_mib`), at the failing step."""
    cols = metric_columns(exp, vocab.MAX_MEMORY_ALLOCATED_GIB, arms)
    if not len(cols["value"]):
        return None
    cols = {**cols, "value": cols["value"] * 1024.0}
    extra: dict[str, list[Any]] = {"arm": [], "run": [], "step": [], "value": []}
    for arm in exp.analysis.arms:
        if arms is not None and arm.id not in arms:
            continue
        for r in arm.runs:
            oom = next((e for e in r.events if e.kind == "oom" and e.step is not None), None)
            held = arm.memory.allocated_peak_mib
            if oom is None or held is None or oom.step is None:
                continue
            extra["arm"].append(arm.id)
            extra["run"].append(f"{arm.id}/{r.repeat}")
            extra["step"].append(oom.step)
            extra["value"].append(held)
    if extra["arm"]:
        cols = {
            "arm": np.concatenate([cols["arm"], np.asarray(extra["arm"], dtype=object)]),
            "run": np.concatenate([cols["run"], np.asarray(extra["run"], dtype=object)]),
            "step": np.concatenate([cols["step"], np.asarray(extra["step"], dtype="int64")]),
            "value": np.concatenate([cols["value"], np.asarray(extra["value"], dtype=float)]),
        }
        order = np.lexsort((cols["step"], cols["run"]))
        cols = {k: v[order] for k, v in cols.items()}
    data = {"main": csv_text(cols)}
    if cap_mib is not None:
        data["limit"] = csv_text(
            {"y": np.asarray([cap_mib]), "label": np.asarray([f"cap {cap_mib / 1024:.2f} GiB"], dtype=object)}
        )
    template = _allocated_template(_arm_order(exp, pd.unique(cols["arm"])), _run_order(exp, cols), cap_mib is not None)
    return _finish(template, data)


QUALITY_DATA = pd.DataFrame({"arm": ["a"], "run": ["a/1"], "step": [0], "key": ["k"], "value": [0.0]})


@_template
def _quality_template(arms: tuple[str, ...], keys: tuple[str, ...], repeats: int = 1) -> dict:
    import altair as alt  # imported on a template-store miss only (about 1 s)

    base = _repeat(alt.Chart(_named("main", QUALITY_DATA)))
    shown = _shown(arms)
    color = _color(arms)
    x = alt.X(field="step", type="quantitative", title="step")
    y = alt.Y(field="value", type="quantitative", title=None, scale=alt.Scale(zero=False))
    detail = alt.Detail(field="run", type="nominal")
    lines = (
        base.mark_line(strokeWidth=1.5)
        .encode(
            x=x,
            y=y,
            color=color,
            strokeDash=_dash(repeats),
            detail=detail,
            opacity=alt.condition(shown, alt.value(1.0), alt.value(0.0)),
        )
        .add_params(shown)
    )
    # Points along each line carry the tooltip (a 1.5-px line is too thin to point at); the one under
    # the pointer (or a finger) is drawn.
    tooltip = [
        alt.Tooltip(field="key", type="nominal", title="metric"),
        alt.Tooltip(field="run", type="nominal"),
        alt.Tooltip(field="step", type="quantitative"),
        alt.Tooltip(field="value", type="quantitative", format=".4~g", title="value (as logged)"),
    ]
    hits = _hover_points(base.transform_filter(shown), x, y, color, tooltip, size=120, detail=detail)
    chart = (
        alt.layer(lines, hits)
        .properties(width=200, height=120)
        .facet(
            facet=alt.Facet(field="key", type="nominal", sort=list(keys), title=None),
            columns=3,
        )
        .resolve_scale(y="independent")
        .properties(title=alt.Title("Training quality", anchor="start"))
    )
    return _to_dict(chart)


def quality(exp: ExperimentData) -> dict | None:
    """Training-quality curves as small multiples (one panel per metric, own y scale)."""
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
    runs = _run_order(exp, cols)
    repeats = max((int(r.rsplit("/", 1)[1]) for r in runs if r.rsplit("/", 1)[-1].isdigit()), default=1)
    template = _quality_template(_arm_order(exp, pd.unique(cols["arm"])), chosen, repeats)
    return _finish(template, {"main": csv_text(cols)})


BREAKDOWN_DATA = pd.DataFrame({"arm": ["a"], "part": ["p"], "seconds": [0.0], "o": [0]})


@_template
def _breakdown_template(arms: tuple[str, ...]) -> dict:
    import altair as alt  # imported on a template-store miss only (about 1 s)

    chart = (
        alt.Chart(_named("main", BREAKDOWN_DATA))
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
    return _to_dict(chart)


def breakdown_frame(exp: ExperimentData) -> pd.DataFrame:
    """Mean seconds per step and arm for each of PARTS (window steps only when windows are set)."""
    frame = metric_frame(exp, vocab.STEP_PARTS)
    windows = exp.analysis.settings.windows
    if windows and not frame.empty:
        step = frame["step"].to_numpy()
        inside = np.zeros(len(frame), dtype=bool)
        for w in windows:
            inside |= (step >= w.start) & (step <= w.end)
        frame = frame[inside]
    rows = []
    if frame.empty:
        return BREAKDOWN_DATA.iloc[0:0]
    means = frame.groupby(["arm", "key"])["value"].mean().unstack("key")
    for arm, m in means.iterrows():
        got = {k: float(m.get(k, float("nan"))) for k in vocab.STEP_PARTS}
        v = {k: x if math.isfinite(x) else 0.0 for k, x in got.items()}
        rollout, wait, train, actor = (
            v[k] for k in (vocab.ROLLOUT_TIME, vocab.TRAIN_WAIT_TIME, vocab.TRAIN_TIME, vocab.ACTOR_TRAIN_TIME)
        )
        logprobs = v[vocab.LOG_PROBS_TIME] + v[vocab.REF_LOG_PROBS_TIME]
        if actor + logprobs > train * 1.02:
            logprobs = 0.0
        optimizer = min(v[vocab.OPTIMIZER_TIME], actor)
        values = (
            rollout,
            max(0.0, wait - rollout),
            logprobs,
            actor - optimizer,
            optimizer,
            max(0.0, train - actor - logprobs),
        )
        rows += [
            {"arm": arm, "part": p, "seconds": x, "o": i} for i, (p, x) in enumerate(zip(PARTS, values, strict=True))
        ]
    return pd.DataFrame(rows)


def breakdown(exp: ExperimentData) -> dict | None:
    """A per-arm stacked bar of the mean step time (rollout, wait, log-probs, actor, optimizer, train)."""
    frame = breakdown_frame(exp)
    if frame.empty or float(frame["seconds"].sum()) == 0.0:
        return None
    return _finish(_breakdown_template(_arm_order(exp, frame["arm"].unique())), {"main": _csv(frame)})


LOOKS_DATA = pd.DataFrame(
    {"arm": ["a"], "pairs": [1], "change": [0.0], "low": [0.0], "high": [0.0], "outcome": ["o"], "against": ["b"]}
)
LINES_DATA = pd.DataFrame({"y": [0.0], "line": ["l"]})


@_template
def _looks_template(arms: tuple[str, ...], max_pairs: int) -> dict:
    import altair as alt  # imported on a template-store miss only (about 1 s)

    color = _color(arms)
    shown = _shown(arms)
    x = alt.X(
        field="pairs",
        type="quantitative",
        title="pairs of runs",
        scale=alt.Scale(domain=[0.5, max_pairs + 0.5]),
        axis=alt.Axis(tickMinStep=1, format="d"),
    )
    y = alt.Y(field="change", type="quantitative", title="change of the primary metric", axis=alt.Axis(format="+.0%"))
    base = alt.Chart(_named("main", LOOKS_DATA)).transform_filter(shown)
    # Each candidate's marks are nudged sideways a little so that two intervals at one pair stay apart.
    offset = alt.XOffset(field="arm", type="nominal", scale=alt.Scale(domain=[a.rsplit("=", 1)[0] for a in arms]))
    tooltip = [
        alt.Tooltip(field="arm", type="nominal", title="candidate"),
        alt.Tooltip(field="against", type="nominal"),
        alt.Tooltip(field="pairs", type="quantitative"),
        alt.Tooltip(field="change", type="quantitative", format="+.1%"),
        alt.Tooltip(field="low", type="quantitative", format="+.1%", title="interval from"),
        alt.Tooltip(field="high", type="quantitative", format="+.1%", title="to"),
        alt.Tooltip(field="outcome", type="nominal", title="this look says"),
    ]
    bars = base.mark_rule(strokeWidth=2).encode(
        x=x, y=alt.Y(field="low", type="quantitative"), y2=alt.Y2(field="high"), color=color, xOffset=offset
    )
    points = (
        base.mark_point(filled=True, size=60)
        .encode(x=x, y=y, color=color, xOffset=offset, tooltip=tooltip)
        .add_params(shown)
    )
    lines = (
        alt.Chart(_named("lines", LINES_DATA))
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
    return _to_dict(chart)


def looks(exp: ExperimentData) -> dict | None:
    """The interval after each pair of runs, per candidate (of the comparison that decides it),
    with no change and the minimum effect marked: how the verdict came about, look by look."""
    settings = exp.analysis.settings
    rows: dict[str, list[Any]] = {k: [] for k in ("arm", "pairs", "change", "low", "high", "outcome", "against")}
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
            rows["low"].append(look.low - 1 if look.low is not None and not early else float("nan"))
            rows["high"].append(look.high - 1 if look.high is not None and not early else float("nan"))
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
    template = _looks_template(_arm_order(exp, pd.unique(cols["arm"])), int(most))
    return _finish(template, {"main": csv_text(cols), "lines": csv_text(lines)})


# What else used the machine during each run (analysis.json runs[].disturbances), on the GPU charts'
# time axis: seconds after the run's first load sample.
DISTURBANCE_KINDS = {
    "other_run": ("another run", "#d93025"),
    "cpu_load": ("CPU load", "#f29900"),
    "gpu_process": ("another GPU process", "#9334e6"),
    "gpu_throttle": ("GPU clock held down", "#1a73e8"),
}
DISTURBANCE_DATA = pd.DataFrame(
    {"run": ["r"], "what": ["w"], "start": [0.0], "end": [1.0], "detail": ["d"], "windows": ["yes"]}
)
SPAN_DATA = pd.DataFrame({"run": ["r"], "start": [0.0], "end": [1.0]})


@_template
def _disturbance_template(runs: tuple[str, ...]) -> dict:
    import altair as alt  # imported on a template-store miss only (about 1 s)

    y = alt.Y(field="run", type="nominal", sort=list(runs), title=None)
    x = alt.X(field="start", type="quantitative", title="seconds since the run started")
    spans = alt.Chart(_named("spans", SPAN_DATA)).mark_bar(color="#e8eaed", height=14).encode(y=y, x=x, x2="end:Q")
    names = [v[0] for v in DISTURBANCE_KINDS.values()]
    hits = (
        alt.Chart(_named("main", DISTURBANCE_DATA))
        .mark_bar(height=10, opacity=0.9)
        .encode(
            y=y,
            x=x,
            x2="end:Q",
            color=alt.Color(
                field="what",
                type="nominal",
                scale=alt.Scale(domain=names, range=[v[1] for v in DISTURBANCE_KINDS.values()]),
                legend=alt.Legend(title=None, orient="top", columns=2),  # four kinds: two lines on a phone
            ),
            tooltip=[
                alt.Tooltip(field="run", type="nominal"),
                alt.Tooltip(field="what", type="nominal"),
                alt.Tooltip(field="start", type="quantitative", format=".0f", title="from (s)"),
                alt.Tooltip(field="end", type="quantitative", format=".0f", title="to (s)"),
                alt.Tooltip(field="windows", type="nominal", title="in the measured windows"),
                alt.Tooltip(field="detail", type="nominal"),
            ],
        )
    )
    chart = alt.layer(spans, hits).properties(
        width="container", height=24 * len(runs) + 20, title=alt.Title("What else ran on the machine", anchor="start")
    )
    return _to_dict(chart)


def disturbances(exp: ExperimentData) -> dict | None:
    """Each formal run as a grey bar over its duration, with what disturbed it on top, when: from the
    analysis (runs[].disturbances); None when nothing disturbed any run."""
    rows, spans = [], []
    for arm in exp.analysis.arms:
        for r in arm.formal_runs():
            label = f"{arm.id}/{r.repeat}"
            spans.append({"run": label, "start": 0.0, "end": float(r.duration_s or 0.0)})
            for d in r.disturbances:
                rows.append(
                    {
                        "run": label,
                        "what": DISTURBANCE_KINDS[d.kind][0],
                        "start": d.start_s,
                        "end": max(d.end_s, d.start_s + 1.0),  # a one-second event stays visible
                        "detail": d.detail,
                        "windows": "yes" if d.in_window else "no (warm-up or after)",
                    }
                )
    if not rows:
        return None
    order = tuple(s["run"] for s in spans)
    return _finish(
        _disturbance_template(order),
        {"main": _csv(pd.DataFrame(rows, columns=list(DISTURBANCE_DATA.columns))), "spans": _csv(pd.DataFrame(spans))},
    )

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
import math
from functools import lru_cache
from typing import Any, Sequence

import altair as alt
import numpy as np
import pandas as pd

from reportgen.render.load import ExperimentData, RunData

MAX_POINTS = 300
ROLLING = 10
QUALITY_KEYS: tuple[tuple[str, ...], ...] = (
    ("train/loss",),
    ("rollout/raw_reward", "rollout/rewards"),
    ("rollout/response_len/mean", "rollout/response_lengths"),
    ("train/ppo_kl", "train/kl_loss"),
    ("train/pg_clipfrac",),
    ("train/grad_norm",),
)
ARM_COLORS = ("#5f6368", "#1a73e8", "#d93025", "#f29900", "#188038", "#9334e6", "#00897b", "#c5221f")
PART_COLORS = ("#1a73e8", "#a8c7fa", "#d93025", "#f4b4ae")
PARTS = ("rollout", "wait (other)", "actor train", "train (other)")


def _round(x: float) -> float | None:
    if x is None or not math.isfinite(x):
        return None
    return float(f"{x:.4g}")


def _csv(frame: pd.DataFrame) -> str:
    """CSV text for a dataset; floats to 4 significant digits, NaN/inf as empty (null)."""
    out = frame.copy()
    for c in out.columns:
        if pd.api.types.is_float_dtype(out[c]):
            v = out[c].to_numpy(dtype=float)
            out[c] = np.where(np.isfinite(v), v, np.nan)
    return out.to_csv(index=False, float_format="%.4g", lineterminator="\n")


def _named(name: str, frame: pd.DataFrame) -> alt.NamedData:
    parse = {c: ("number" if pd.api.types.is_numeric_dtype(frame[c]) else "string") for c in frame.columns}
    return alt.NamedData(name=name, format=alt.DataFormat(type="csv", parse=parse))


def _finish(template: dict, datasets: dict[str, str]) -> dict:
    spec = copy.deepcopy(template)
    spec["datasets"] = datasets
    return spec


def _color(arms: tuple[str, ...]) -> alt.Color:
    """`arms` holds "id=#colour" pairs so an arm keeps its colour on every page."""
    rng = [a.rsplit("=", 1)[1] for a in arms]
    arms = tuple(a.rsplit("=", 1)[0] for a in arms)
    return alt.Color(field="arm", type="nominal", scale=alt.Scale(domain=list(arms), range=rng),
                     legend=alt.Legend(title=None, orient="top"))


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


def _arm_order(exp: ExperimentData, present: Sequence[str]) -> tuple[str, ...]:
    """Arms present, in the experiment's order, each with its colour ("A1=#1a73e8")."""
    have = set(present)
    every = list(exp.arm_ids()) + sorted(have - set(exp.arm_ids()))
    return tuple(f"{a}={ARM_COLORS[i % len(ARM_COLORS)]}" for i, a in enumerate(every) if a in have)


def _windows_frame(exp: ExperimentData) -> pd.DataFrame:
    windows = exp.analysis.get("settings", {}).get("windows") or []
    return pd.DataFrame({"window": [str(w["name"]) for w in windows],
                         "start": [float(w["start"]) - 0.5 for w in windows],
                         "end": [float(w["end"]) + 0.5 for w in windows]})


STEP_DATA = pd.DataFrame({"arm": ["a"], "run": ["a/1"], "step": [0], "value": [0.0]})
WINDOW_DATA = pd.DataFrame({"window": ["W"], "start": [0.0], "end": [1.0]})


@lru_cache(maxsize=256)
def _step_template(title: str, ytitle: str, arms: tuple[str, ...], windows: bool, rolling: bool) -> dict:
    main = _named("main", STEP_DATA)
    base = alt.Chart(main)
    color = _color(arms)
    x = alt.X(field="step", type="quantitative", title="step")
    raw = base.mark_line(strokeWidth=1, opacity=0.35 if rolling else 0.9).encode(
        x=x, y=alt.Y(field="value", type="quantitative", title=ytitle, scale=alt.Scale(zero=False)),
        color=color, detail=alt.Detail(field="run", type="nominal"),
        tooltip=[alt.Tooltip(field="arm", type="nominal"), alt.Tooltip(field="step", type="quantitative"),
                 alt.Tooltip(field="value", type="quantitative", format=".4~g")])
    layers: list[Any] = []
    if windows:
        wbase = alt.Chart(_named("windows", WINDOW_DATA))
        layers.append(wbase.mark_rect(opacity=0.07, color="#1a73e8").encode(
            x=alt.X(field="start", type="quantitative"), x2=alt.X2(field="end")))
        layers.append(wbase.mark_text(align="left", baseline="top", dx=3, dy=3, color="#5f6368").encode(
            x=alt.X(field="start", type="quantitative"), y=alt.value(0), text=alt.Text(field="window", type="nominal")))
    layers.append(raw)
    if rolling:
        layers.append(base.transform_window(
            rolling="mean(value)", frame=[-(ROLLING - 1), 0], groupby=["run"], sort=[alt.SortField("step")]
        ).mark_line(strokeWidth=2.5).encode(
            x=x, y=alt.Y(field="rolling", type="quantitative"), color=color, detail=alt.Detail(field="run", type="nominal")))
    return _to_dict(alt.layer(*layers).properties(width="container", height=260, title=alt.Title(title, anchor="start")))


def step_metric(exp: ExperimentData, key: str, *, title: str, unit: str = "", arms: Sequence[str] | None = None,
                windows: bool = True, rolling: bool = True) -> dict | None:
    """A per-step metric for every arm: thin raw lines, a rolling mean, the windows shaded."""
    frame = metric_frame(exp, [key], arms)
    frame = frame[np.isfinite(frame["value"].to_numpy(dtype=float))]
    if frame.empty:
        return None
    wframe = _windows_frame(exp)
    show_windows = windows and not wframe.empty
    template = _step_template(title, f"{title} ({unit})" if unit else title, _arm_order(exp, frame["arm"].unique()),
                              show_windows, rolling)
    data = {"main": _csv(frame[["arm", "run", "step", "value"]])}
    if show_windows:
        data["windows"] = _csv(wframe)
    return _finish(template, data)


GPU_DATA = pd.DataFrame({"sec": [0.0], "value": [0.0], "total": [0.0], "arm": ["a"], "run": ["a/1"], "gpu": ["GPU 0"]})


def _gpu_frame(runs: Sequence[RunData], column: str, how: str) -> pd.DataFrame:
    parts = []
    for r in runs:
        g = r.gpu
        if g.empty or column not in g:
            continue
        g = g.sort_values(["index", "t"], kind="stable")
        pos = g.groupby("index").cumcount().to_numpy()
        counts = g.groupby("index")["t"].transform("size").to_numpy()
        width = np.maximum(1, np.ceil(counts / MAX_POINTS)).astype(int)
        frame = pd.DataFrame({"index": g["index"].to_numpy(), "bin": pos // width, "sec": g["t"].to_numpy() - float(g["t"].min()),
                              "value": g[column].to_numpy(dtype=float),
                              "total": g["mem_total_mib"].to_numpy(dtype=float) if "mem_total_mib" in g else np.nan})
        agg = frame.groupby(["index", "bin"], sort=True).agg(sec=("sec", "first"), value=("value", how), total=("total", "max")).reset_index()
        agg["arm"] = r.arm
        agg["run"] = f"{r.arm}/{r.repeat}"
        agg["gpu"] = "GPU " + agg["index"].astype(int).astype(str)
        parts.append(agg[["sec", "value", "total", "arm", "run", "gpu"]])
    if not parts:
        return GPU_DATA.iloc[0:0]
    return pd.concat(parts, ignore_index=True)


@lru_cache(maxsize=256)
def _gpu_template(title: str, unit: str, arms: tuple[str, ...], show_total: bool) -> dict:
    base = alt.Chart(_named("main", GPU_DATA))
    lines = base.mark_line(strokeWidth=1.2, interpolate="step-after").encode(
        x=alt.X(field="sec", type="quantitative", title="seconds since the run started"),
        y=alt.Y(field="value", type="quantitative", title=unit), color=_color(arms),
        detail=alt.Detail(field="run", type="nominal"),
        tooltip=[alt.Tooltip(field="arm", type="nominal"), alt.Tooltip(field="sec", type="quantitative", format=".0f"),
                 alt.Tooltip(field="value", type="quantitative", format=".4~g")])
    layers: list[Any] = [lines]
    if show_total:
        layers.append(base.mark_rule(color="#d93025", strokeDash=[6, 3]).encode(
            y=alt.Y(field="total", type="quantitative", aggregate="max"),
            tooltip=[alt.Tooltip(field="total", type="quantitative", aggregate="max", title="device total (MiB)")]))
    chart = alt.layer(*layers).properties(width=640, height=170).facet(
        row=alt.Row(field="gpu", type="nominal", title=None, header=alt.Header(labelAngle=0, labelAlign="left")),
    ).properties(title=alt.Title(title, anchor="start"))
    return _to_dict(chart)


def gpu_metric(exp: ExperimentData, column: str, *, title: str, unit: str, arms: Sequence[str] | None = None,
               show_total: bool = False, how: str = "mean") -> dict | None:
    """A 1 Hz GPU sample column over seconds since the run's start, one panel per GPU."""
    runs = [r for r in exp.formal_runs() if arms is None or r.arm in arms]
    frame = _gpu_frame(runs, column, how)
    if frame.empty:
        return None
    template = _gpu_template(title, unit, _arm_order(exp, frame["arm"].unique()), show_total)
    return _finish(template, {"main": _csv(frame)})


QUALITY_DATA = pd.DataFrame({"arm": ["a"], "run": ["a/1"], "step": [0], "key": ["k"], "value": [0.0]})


@lru_cache(maxsize=256)
def _quality_template(arms: tuple[str, ...], keys: tuple[str, ...]) -> dict:
    chart = alt.Chart(_named("main", QUALITY_DATA)).mark_line(strokeWidth=1.2).encode(
        x=alt.X(field="step", type="quantitative", title="step"),
        y=alt.Y(field="value", type="quantitative", title=None, scale=alt.Scale(zero=False)),
        color=_color(arms), detail=alt.Detail(field="run", type="nominal"),
        tooltip=[alt.Tooltip(field="arm", type="nominal"), alt.Tooltip(field="step", type="quantitative"),
                 alt.Tooltip(field="value", type="quantitative", format=".4~g")],
    ).properties(width=200, height=120).facet(
        facet=alt.Facet(field="key", type="nominal", sort=list(keys), title=None), columns=3,
    ).resolve_scale(y="independent").properties(title=alt.Title("Training quality", anchor="start"))
    return _to_dict(chart)


def quality(exp: ExperimentData) -> dict | None:
    """Training-quality curves as small multiples (one panel per metric, own y scale)."""
    wanted = [k for ks in QUALITY_KEYS for k in ks]
    frame = metric_frame(exp, wanted)
    frame = frame[np.isfinite(frame["value"].to_numpy(dtype=float))]
    if frame.empty:
        return None
    present = set(frame["key"].unique())
    chosen = tuple(next(k for k in alts if k in present) for alts in QUALITY_KEYS if any(k in present for k in alts))
    frame = frame[frame["key"].isin(chosen)]
    template = _quality_template(_arm_order(exp, frame["arm"].unique()), chosen)
    return _finish(template, {"main": _csv(frame[["arm", "run", "step", "key", "value"]])})


BREAKDOWN_DATA = pd.DataFrame({"arm": ["a"], "part": ["p"], "seconds": [0.0], "o": [0]})


@lru_cache(maxsize=256)
def _breakdown_template(arms: tuple[str, ...]) -> dict:
    chart = alt.Chart(_named("main", BREAKDOWN_DATA)).mark_bar().encode(
        y=alt.Y(field="arm", type="nominal", sort=[a.rsplit("=", 1)[0] for a in arms], title=None),
        x=alt.X(field="seconds", type="quantitative", aggregate="sum", title="mean seconds per step (window steps)"),
        color=alt.Color(field="part", type="nominal", sort=list(PARTS), legend=alt.Legend(title=None, orient="top"),
                        scale=alt.Scale(domain=list(PARTS), range=list(PART_COLORS))),
        order=alt.Order(field="o", type="quantitative"),
        tooltip=[alt.Tooltip(field="arm", type="nominal"), alt.Tooltip(field="part", type="nominal"),
                 alt.Tooltip(field="seconds", type="quantitative", format=".3f")],
    ).properties(width="container", height=28 * len(arms) + 20, title=alt.Title("Where a step's time goes", anchor="start"))
    return _to_dict(chart)


def breakdown_frame(exp: ExperimentData) -> pd.DataFrame:
    """Mean seconds per step and arm: rollout, other wait, actor train, other train (window steps)."""
    keys = ["perf/rollout_time", "perf/train_wait_time", "perf/train_time", "perf/actor_train_time"]
    frame = metric_frame(exp, keys)
    windows = exp.analysis.get("settings", {}).get("windows") or []
    if windows and not frame.empty:
        step = frame["step"].to_numpy()
        inside = np.zeros(len(frame), dtype=bool)
        for w in windows:
            inside |= (step >= w["start"]) & (step <= w["end"])
        frame = frame[inside]
    rows = []
    if frame.empty:
        return BREAKDOWN_DATA.iloc[0:0]
    means = frame.groupby(["arm", "key"])["value"].mean().unstack("key")
    for arm, m in means.iterrows():
        def get(k: str) -> float:
            v = m.get(k, float("nan"))
            return float(v) if v is not None and math.isfinite(v) else 0.0
        rollout, wait, train, actor = (get(k) for k in keys)
        values = (rollout, max(0.0, wait - rollout), actor, max(0.0, train - actor))
        rows += [{"arm": arm, "part": p, "seconds": v, "o": i} for i, (p, v) in enumerate(zip(PARTS, values))]
    return pd.DataFrame(rows)


def breakdown(exp: ExperimentData) -> dict | None:
    """A per-arm stacked bar of the mean step time (rollout, wait, train)."""
    frame = breakdown_frame(exp)
    if frame.empty or float(frame["seconds"].sum()) == 0.0:
        return None
    return _finish(_breakdown_template(_arm_order(exp, frame["arm"].unique())), {"main": _csv(frame)})

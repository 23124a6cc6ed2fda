"""Vega-Lite chart specs for the report pages (render stage; pure functions over loaded data).

Each function takes the loaded tables and returns a Vega-Lite spec dict (built with Altair,
data inlined) or None when there is nothing to draw. The page embeds the dict in a data-
attribute; the browser draws it with the vendored Vega bundle, no network. Values are rounded
to 4 significant digits for drawing only (tables use the unrounded numbers), and GPU samples
are binned to at most MAX_POINTS per series so a long run keeps pages light.
"""

from __future__ import annotations

import math
from typing import Any, Sequence

import altair as alt
import numpy as np
import pandas as pd

from reportgen.render.load import ExperimentData, RunData

MAX_POINTS = 400
WIDTH = "container"
ROLLING = 10
QUALITY_KEYS: tuple[tuple[str, ...], ...] = (
    ("train/loss",),
    ("rollout/raw_reward", "rollout/rewards"),
    ("rollout/response_len/mean", "rollout/response_lengths"),
    ("train/ppo_kl", "train/kl_loss"),
    ("train/pg_clipfrac",),
    ("train/grad_norm",),
)
ARM_COLORS = ["#5f6368", "#1a73e8", "#d93025", "#f29900", "#188038", "#9334e6", "#00897b", "#c5221f"]


def _round(x: float) -> float | None:
    if x is None or not math.isfinite(x):
        return None
    if x == 0:
        return 0.0
    return float(f"{x:.4g}")


def _arm_scale(arms: Sequence[str]) -> alt.Scale:
    return alt.Scale(domain=list(arms), range=ARM_COLORS[: len(arms)] + ARM_COLORS[: max(0, len(arms) - len(ARM_COLORS))])


def _spec(chart: alt.TopLevelMixin) -> dict:
    spec = chart.to_dict(validate=False)
    spec.setdefault("config", {}).update({"view": {"stroke": None}, "font": "system-ui, sans-serif"})
    return spec


def _records(frame: pd.DataFrame) -> list[dict]:
    out = frame.to_dict(orient="records")
    for row in out:
        for k, v in row.items():
            if isinstance(v, float):
                row[k] = _round(v)
            elif isinstance(v, np.integer):
                row[k] = int(v)
    return out


def metric_frame(runs: Sequence[RunData], keys: Sequence[str]) -> pd.DataFrame:
    """Long table arm, repeat, step, key, value for the given metric keys (console source first)."""
    parts = []
    for r in runs:
        m = r.metrics
        if m.empty:
            continue
        m = m[m["key"].isin(list(keys))]
        if "source" in m:
            m = m.sort_values("source").drop_duplicates(["step", "key"], keep="first")
        parts.append(pd.DataFrame({"arm": r.arm, "repeat": r.repeat, "step": m["step"].astype(int),
                                   "key": m["key"], "value": m["value"].astype(float)}))
    if not parts:
        return pd.DataFrame(columns=["arm", "repeat", "step", "key", "value"])
    return pd.concat(parts, ignore_index=True).sort_values(["arm", "repeat", "key", "step"])


def _arm_order(exp: ExperimentData, present: Sequence[str]) -> list[str]:
    return [a for a in exp.arm_ids() if a in set(present)] or sorted(set(present))


def _windows_layer(exp: ExperimentData) -> alt.Chart | None:
    windows = exp.analysis.get("settings", {}).get("windows") or []
    if not windows:
        return None
    frame = pd.DataFrame([{"window": w["name"], "start": w["start"] - 0.5, "end": w["end"] + 0.5} for w in windows])
    base = alt.Chart(alt.Data(values=_records(frame)))
    shade = base.mark_rect(opacity=0.07, color="#1a73e8").encode(x="start:Q", x2="end:Q")
    label = base.mark_text(align="left", baseline="top", dx=3, dy=3, color="#5f6368").encode(
        x="start:Q", y=alt.value(0), text="window:N")
    return shade + label


def step_metric(exp: ExperimentData, key: str, *, title: str, unit: str = "", arms: Sequence[str] | None = None,
                windows: bool = True, rolling: bool = True) -> dict | None:
    """A per-step metric for every arm: thin raw lines, a rolling mean, the windows shaded."""
    runs = [r for r in exp.formal_runs() if arms is None or r.arm in arms]
    frame = metric_frame(runs, [key])
    frame = frame[np.isfinite(frame["value"])]
    if frame.empty:
        return None
    order = _arm_order(exp, frame["arm"].unique())
    frame = frame.assign(run=frame["arm"] + "/" + frame["repeat"].astype(str))
    base = alt.Chart(alt.Data(values=_records(frame[["arm", "run", "step", "value"]])))
    color = alt.Color("arm:N", scale=_arm_scale(order), legend=alt.Legend(title=None, orient="top"))
    ytitle = f"{title} ({unit})" if unit else title
    raw = base.mark_line(strokeWidth=1, opacity=0.35 if rolling else 0.9, point=False).encode(
        x=alt.X("step:Q", title="step"), y=alt.Y("value:Q", title=ytitle, scale=alt.Scale(zero=False)),
        color=color, detail="run:N",
        tooltip=[alt.Tooltip("arm:N"), alt.Tooltip("step:Q"), alt.Tooltip("value:Q", format=".4~g")])
    layers: list[Any] = []
    if windows:
        w = _windows_layer(exp)
        if w is not None:
            layers.append(w)
    layers.append(raw)
    if rolling:
        smooth = base.transform_window(
            rolling="mean(value)", frame=[-(ROLLING - 1), 0], groupby=["run"], sort=[alt.SortField("step")]
        ).mark_line(strokeWidth=2.5).encode(x="step:Q", y="rolling:Q", color=color, detail="run:N")
        layers.append(smooth)
    chart = alt.layer(*layers).properties(width=WIDTH, height=260, title=alt.Title(title, anchor="start"))
    return _spec(chart)


def _gpu_frame(runs: Sequence[RunData], column: str, how: str) -> pd.DataFrame:
    parts = []
    for r in runs:
        g = r.gpu
        if g.empty or column not in g:
            continue
        t0 = float(g["t"].min())
        g = g.assign(sec=g["t"] - t0)
        for idx, one in g.groupby("index"):
            one = one.sort_values("sec")
            bins = max(1, math.ceil(len(one) / MAX_POINTS))
            grouped = one.groupby(np.arange(len(one)) // bins)
            agg = grouped.agg(sec=("sec", "first"), value=(column, how), total=("mem_total_mib", "max"))
            parts.append(agg.assign(arm=r.arm, repeat=r.repeat, gpu=f"GPU {int(idx)}"))
    if not parts:
        return pd.DataFrame(columns=["sec", "value", "total", "arm", "repeat", "gpu"])
    return pd.concat(parts, ignore_index=True)


def gpu_metric(exp: ExperimentData, column: str, *, title: str, unit: str, arms: Sequence[str] | None = None,
               show_total: bool = False, how: str = "mean") -> dict | None:
    """A 1 Hz GPU sample column over seconds since the run's start, one panel per GPU."""
    runs = [r for r in exp.formal_runs() if arms is None or r.arm in arms]
    frame = _gpu_frame(runs, column, how)
    if frame.empty:
        return None
    order = _arm_order(exp, frame["arm"].unique())
    frame = frame.assign(run=frame["arm"] + "/" + frame["repeat"].astype(str))
    data = alt.Data(values=_records(frame[["sec", "value", "total", "arm", "run", "gpu"]]))
    base = alt.Chart(data)
    color = alt.Color("arm:N", scale=_arm_scale(order), legend=alt.Legend(title=None, orient="top"))
    lines = base.mark_line(strokeWidth=1.2, interpolate="step-after").encode(
        x=alt.X("sec:Q", title="seconds since the run started"),
        y=alt.Y("value:Q", title=f"{title} ({unit})"), color=color, detail="run:N",
        tooltip=[alt.Tooltip("arm:N"), alt.Tooltip("sec:Q", format=".0f"), alt.Tooltip("value:Q", format=".4~g")])
    layers: list[Any] = [lines]
    if show_total:
        layers.append(base.mark_rule(color="#d93025", strokeDash=[6, 3]).encode(
            y="max(total):Q", tooltip=[alt.Tooltip("max(total):Q", title="device total (MiB)")]))
    chart = alt.layer(*layers).properties(width=640, height=180).facet(
        row=alt.Row("gpu:N", title=None, header=alt.Header(labelAngle=0, labelAlign="left")),
    ).properties(title=alt.Title(title, anchor="start")).resolve_scale(x="shared")
    return _spec(chart)


def quality(exp: ExperimentData) -> dict | None:
    """Training-quality curves as small multiples (one panel per metric, own y scale)."""
    wanted = [k for ks in QUALITY_KEYS for k in ks]
    frame = metric_frame(exp.formal_runs(), wanted)
    frame = frame[np.isfinite(frame["value"])]
    if frame.empty:
        return None
    chosen = []
    for alts in QUALITY_KEYS:
        for k in alts:
            if (frame["key"] == k).any():
                chosen.append(k)
                break
    frame = frame[frame["key"].isin(chosen)]
    order = _arm_order(exp, frame["arm"].unique())
    frame = frame.assign(run=frame["arm"] + "/" + frame["repeat"].astype(str))
    chart = alt.Chart(alt.Data(values=_records(frame[["arm", "run", "step", "key", "value"]]))).mark_line(strokeWidth=1.2).encode(
        x=alt.X("step:Q", title="step"), y=alt.Y("value:Q", title=None, scale=alt.Scale(zero=False)),
        color=alt.Color("arm:N", scale=_arm_scale(order), legend=alt.Legend(title=None, orient="top")),
        detail="run:N", tooltip=["arm:N", "step:Q", alt.Tooltip("value:Q", format=".4~g")],
    ).properties(width=210, height=130).facet(
        facet=alt.Facet("key:N", sort=chosen, title=None), columns=3,
    ).resolve_scale(y="independent").properties(title=alt.Title("Training quality", anchor="start"))
    return _spec(chart)


def breakdown(exp: ExperimentData) -> dict | None:
    """Mean step time per arm split into rollout, other wait, actor train and other train (window steps)."""
    keys = ["perf/rollout_time", "perf/train_wait_time", "perf/train_time", "perf/actor_train_time"]
    frame = metric_frame(exp.formal_runs(), keys)
    windows = exp.analysis.get("settings", {}).get("windows") or []
    if windows:
        inside = np.zeros(len(frame), dtype=bool)
        for w in windows:
            inside |= (frame["step"] >= w["start"]).to_numpy() & (frame["step"] <= w["end"]).to_numpy()
        frame = frame[inside]
    if frame.empty:
        return None
    means = frame.groupby(["arm", "key"])["value"].mean().unstack("key")
    rows = []
    for arm, m in means.iterrows():
        get = lambda k: float(m[k]) if k in m and math.isfinite(m[k]) else 0.0
        rollout, wait, train, actor = get(keys[0]), get(keys[1]), get(keys[2]), get(keys[3])
        parts = [("rollout", rollout), ("wait (other)", max(0.0, wait - rollout)),
                 ("actor train", actor), ("train (other)", max(0.0, train - actor))]
        rows += [{"arm": arm, "part": p, "seconds": _round(v), "o": i} for i, (p, v) in enumerate(parts)]
    order = _arm_order(exp, means.index)
    chart = alt.Chart(alt.Data(values=rows)).mark_bar().encode(
        y=alt.Y("arm:N", sort=order, title=None),
        x=alt.X("sum(seconds):Q", title="mean seconds per step (window steps)"),
        color=alt.Color("part:N", sort=[p for p, _ in parts], legend=alt.Legend(title=None, orient="top"),
                        scale=alt.Scale(range=["#1a73e8", "#a8c7fa", "#d93025", "#f4b4ae"])),
        order=alt.Order("o:Q"),
        tooltip=["arm:N", "part:N", alt.Tooltip("seconds:Q", format=".3f")],
    ).properties(width=WIDTH, height=28 * len(order) + 20, title=alt.Title("Where a step's time goes", anchor="start"))
    return _spec(chart)

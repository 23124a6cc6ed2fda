"""Vega-Lite specs of the machine's charts (render stage; pure functions over loaded data).

GPU samples over time, one panel per GPU (`gpu_metric`), GPU utilization per arm (`gpu_util`), the
framework's memory per step against the cap (`memory_allocated`) and what else ran on the machine
during each run (`disturbances`). The training charts are in render/charts.py.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from reportgen import vocab
from reportgen.render.chart_data import (
    UTIL_BIN_S,
    arm_domain,
    csv_text,
    frame_csv,
    gpu_columns,
    memory_total_drawn,
    metric_columns,
    run_order,
)
from reportgen.render.chart_spec import (
    arm_colors,
    finish,
    hover_points,
    named,
    repeat_dash,
    template,
    to_dict,
    with_repeat,
)
from reportgen.render.load import PublishedExperiment
from reportgen.render.palette import LIMIT_COLOR, NEUTRAL

GPU_DATA = pd.DataFrame({"sec": [0.0], "value": [0.0], "total": [0.0], "arm": ["a"], "run": ["a/1"], "gpu": ["GPU 0"]})


@template
def _gpu_template(title: str, unit: str, arms: tuple[str, ...], show_total: bool, gpu_labels: bool = True) -> dict:
    import altair as alt  # imported on a template-store miss only (about 1 s)

    base = alt.Chart(named("main", GPU_DATA))
    color = arm_colors(arms)
    x = alt.X(field="sec", type="quantitative", title="seconds since the run started")
    y = alt.Y(field="value", type="quantitative", title=unit)
    lines = base.mark_line(strokeWidth=1.2, interpolate="step-after").encode(
        x=x,
        y=y,
        color=color,
        detail=alt.Detail(field="run", type="nominal"),
    )
    tooltip = [
        alt.Tooltip(field="arm", type="nominal"),
        alt.Tooltip(field="run", type="nominal"),
        alt.Tooltip(field="sec", type="quantitative", format=".0f", title="seconds"),
        alt.Tooltip(field="value", type="quantitative", format=".4~g", title=unit),
    ]
    # Points on every line carry the tooltip (so it shows on the drawn line, not only on its pixels); a
    # hover selects every GPU's sample of that second.
    hits = hover_points(
        base, x, y, color, tooltip, size=160, fields=["sec"], detail=alt.Detail(field="run", type="nominal")
    )
    layers: list[Any] = [lines, hits]
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
    return to_dict(chart)


def gpu_metric(
    exp: PublishedExperiment,
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
    cols = gpu_columns(exp, runs, column, how)
    if cols is None or not len(cols["sec"]):
        return None
    if show_total:
        finite = cols["total"][np.isfinite(cols["total"])]
        values = cols["value"][np.isfinite(cols["value"])]
        show_total = memory_total_drawn(
            float(values.max()) if len(values) else None, None, float(finite.max()) if len(finite) else None
        )
    shape = _gpu_template(
        title,
        unit,
        arm_domain(exp, pd.unique(cols["arm"])),
        show_total,
        len(pd.unique(cols["gpu"])) > 1,
    )
    return finish(shape, {"main": csv_text(cols)})


UTIL_DATA = pd.DataFrame({"sec": [0.0], "value": [0.0], "arm": ["a"], "runs": [1]})


@template
def _util_template(arms: tuple[str, ...]) -> dict:
    import altair as alt  # imported on a template-store miss only (about 1 s)

    base = alt.Chart(named("main", UTIL_DATA))
    color = arm_colors(arms)
    x = alt.X(field="sec", type="quantitative", title="seconds since the run started")
    y = alt.Y(field="value", type="quantitative", title="GPU utilization (%)", scale=alt.Scale(domain=[0, 100]))
    lines = base.mark_line(strokeWidth=2, interpolate="monotone").encode(x=x, y=y, color=color)
    tooltip = [
        alt.Tooltip(field="arm", type="nominal"),
        alt.Tooltip(field="sec", type="quantitative", format=".0f", title="seconds"),
        alt.Tooltip(field="value", type="quantitative", format=".1f", title="GPU utilization (%)"),
        alt.Tooltip(field="runs", type="quantitative", title="runs averaged"),
    ]
    hits = hover_points(base, x, y, color, tooltip, size=160, fields=["sec"])
    chart = alt.layer(lines, hits).properties(width="container", height=200)
    return to_dict(chart)


def gpu_util(exp: PublishedExperiment) -> dict | None:
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
    return finish(_util_template(arm_domain(exp, pd.unique(cols["arm"]))), {"main": csv_text(cols)})


ALLOC_DATA = pd.DataFrame({"arm": ["a"], "run": ["a/1"], "step": [0], "value": [0.0]})
LIMIT_DATA = pd.DataFrame({"y": [0.0], "label": ["cap"]})


@template
def _allocated_template(arms: tuple[str, ...], runs: tuple[str, ...], limit: bool) -> dict:
    import altair as alt  # imported on a template-store miss only (about 1 s)

    main = with_repeat(alt.Chart(named("main", ALLOC_DATA)))
    color = arm_colors(arms)
    repeats = max((int(r.rsplit("/", 1)[1]) for r in runs if r.rsplit("/", 1)[-1].isdigit()), default=1)
    x = alt.X(field="step", type="quantitative", title="step")
    y = alt.Y(field="value", type="quantitative", title="peak allocated so far (MiB)", scale=alt.Scale(zero=True))
    lines = main.mark_line(strokeWidth=2, point=alt.OverlayMarkDef(size=18, filled=True)).encode(
        x=x,
        y=y,
        color=color,
        strokeDash=repeat_dash(repeats),
        detail=alt.Detail(field="run", type="nominal"),
        tooltip=[
            alt.Tooltip(field="run", type="nominal"),
            alt.Tooltip(field="step", type="quantitative"),
            alt.Tooltip(field="value", type="quantitative", format=".0f", title="allocated (MiB)"),
        ],
    )
    layers: list[Any] = [lines]
    if limit:
        rule = alt.Chart(named("limit", LIMIT_DATA))
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
    return to_dict(alt.layer(*layers).properties(width="container", height=220))


def memory_allocated(
    exp: PublishedExperiment, *, cap_mib: float | None, arms: Sequence[str] | None = None
) -> dict | None:
    """The framework's peak allocation per step (`perf/max_memory_allocated_gib`, in MiB) of every run,
    against the cap the workload set: the figure the cap bounds, so the line is drawn where it applies.
    A run that ran out of memory ends at what PyTorch held when the allocation failed (analysis.json
    `arms[].memory.allocated_peak_mib`, as PyTorch's message says it), at the failing step."""
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
    shape = _allocated_template(arm_domain(exp, pd.unique(cols["arm"])), run_order(exp, cols), cap_mib is not None)
    return finish(shape, data)


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


@template
def _disturbance_template(runs: tuple[str, ...]) -> dict:
    import altair as alt  # imported on a template-store miss only (about 1 s)

    y = alt.Y(field="run", type="nominal", sort=list(runs), title=None)
    x = alt.X(field="start", type="quantitative", title="seconds since the run started")
    spans = alt.Chart(named("spans", SPAN_DATA)).mark_bar(color="#e8eaed", height=14).encode(y=y, x=x, x2="end:Q")
    names = [v[0] for v in DISTURBANCE_KINDS.values()]
    hits = (
        alt.Chart(named("main", DISTURBANCE_DATA))
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
    return to_dict(chart)


def disturbances(exp: PublishedExperiment) -> dict | None:
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
    return finish(
        _disturbance_template(order),
        {
            "main": frame_csv(pd.DataFrame(rows, columns=list(DISTURBANCE_DATA.columns))),
            "spans": frame_csv(pd.DataFrame(spans)),
        },
    )

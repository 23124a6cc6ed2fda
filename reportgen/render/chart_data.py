"""The data each chart draws, shaped from the loaded experiment (render stage; pure functions).

Values go to the charts as CSV text (`csv_text`), rounded to 4 significant digits for drawing only
(tables use the unrounded numbers); GPU samples are binned to at most MAX_POINTS per series so a long
run keeps pages light. The arms' order and colours (`arm_domain`) and the runs' order are decided
here once for every chart of a page.
"""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import pandas as pd

from reportgen import vocab
from reportgen.render.load import PublishedExperiment, StoredRun
from reportgen.render.palette import arm_color

MAX_POINTS = 300
QUALITY_KEYS: tuple[tuple[str, ...], ...] = (
    (vocab.LOSS,),
    (vocab.RAW_REWARD, vocab.REWARDS),
    (vocab.RESPONSE_LEN_MEAN, vocab.RESPONSE_LENGTHS),
    (vocab.PPO_KL, vocab.KL_LOSS),
    (vocab.PG_CLIPFRAC,),
    (vocab.GRAD_NORM,),
)

PARTS = ("rollout", "wait (other)", "log-probs", "actor fwd/bwd", "optimizer", "train (other)")
UTIL_BIN_S = 5.0  # GPU utilization is averaged over this many seconds: 1 Hz samples of 0 and 100 % alternate


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


def frame_csv(frame: pd.DataFrame) -> str:
    """CSV text for a (small) dataset frame; see `csv_text`."""
    return csv_text({c: frame[c].to_numpy() for c in frame.columns})


def metric_frame(exp: PublishedExperiment, keys: Sequence[str], arms: Sequence[str] | None = None) -> pd.DataFrame:
    """Long table arm, run, step, key, value for the given metric keys and arms."""
    m = exp.metrics_long
    mask = m["key"].isin(list(keys)).to_numpy().copy()
    if arms is not None:
        mask &= m["arm"].isin(list(arms)).to_numpy()
    return m[mask]


def metric_columns(exp: PublishedExperiment, key: str, arms: Sequence[str] | None = None) -> dict[str, np.ndarray]:
    """arm, run, step, value of one metric key (finite values only), as arrays, in (run, step) order.

    Built from `PublishedExperiment.metrics_by_key` (the long table split by key once per
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


def arm_domain(exp: PublishedExperiment, present: Iterable[object]) -> tuple[str, ...]:
    """Arms present, in the experiment's order, each with its colour on every page ("A1=#1a73e8",
    `palette.arm_color`): the colour encoding's domain and range travel as one template argument."""
    have = {str(a) for a in present}
    every = list(exp.arm_ids()) + sorted(have - set(exp.arm_ids()))
    return tuple(f"{a}={arm_color(a, every)}" for a in every if a in have)


def run_order(exp: PublishedExperiment, cols: dict[str, np.ndarray]) -> tuple[str, ...]:
    """Runs present ("A1/1"), arms in the experiment's order, repeats in order."""
    order = {a: i for i, a in enumerate(exp.arm_ids())}
    pairs = {(str(a), str(r)) for a, r in zip(cols["arm"], cols["run"], strict=False)}
    return tuple(r for _a, r in sorted(pairs, key=lambda p: (order.get(p[0], len(order)), p[0], p[1])))


def windows_frame(exp: PublishedExperiment) -> pd.DataFrame:
    windows = exp.analysis.settings.windows
    return pd.DataFrame(
        {
            "window": [w.name for w in windows],
            "start": [float(w.start) - 0.5 for w in windows],
            "end": [float(w.end) + 0.5 for w in windows],
        }
    )


# An axis is cut at the windows' top only when warm-up would otherwise stretch it this much.
CUT_WHEN = 1.5


def axis_top(exp: PublishedExperiment, cols: dict[str, np.ndarray]) -> float | None:
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


def reduce_bins(values: np.ndarray, starts: np.ndarray, how: str) -> np.ndarray:
    """Mean or max of each bin [starts[i], starts[i+1]), skipping NaN (NaN when a bin has none)."""
    finite = np.isfinite(values)
    if how == "max":
        return np.fmax.reduceat(np.where(finite, values, np.nan), starts)
    n = np.add.reduceat(finite.astype(float), starts)
    total = np.add.reduceat(np.where(finite, values, 0.0), starts)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(n > 0, total / np.maximum(n, 1), np.nan)


def gpu_run_columns(run: StoredRun, column: str, how: str) -> dict[str, np.ndarray] | None:
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
        parts["value"].append(reduce_bins(value[lo:hi], starts - lo, how))
        parts["total"].append(reduce_bins(total[lo:hi], starts - lo, "max"))
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


def gpu_columns(
    exp: PublishedExperiment, runs: Sequence[StoredRun], column: str, how: str
) -> dict[str, np.ndarray] | None:
    cache = exp.gpu_series
    parts = []
    for r in runs:
        key = (r.rel, column, how)
        if key not in cache:
            cache[key] = gpu_run_columns(r, column, how)
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


def breakdown_frame(exp: PublishedExperiment) -> pd.DataFrame:
    """Seconds per step and arm for each of PARTS, from each arm's mean of every timer over its
    window steps (analysis.json `arms[].step_parts`): the parts a step's time is split into."""
    rows = []
    for arm in sorted(exp.analysis.arms, key=lambda a: a.id):
        got = {k: arm.step_parts.get(k) for k in vocab.STEP_PARTS}
        if all(x is None for x in got.values()):
            continue
        v = {k: x if x is not None and math.isfinite(x) else 0.0 for k, x in got.items()}
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
            {"arm": arm.id, "part": p, "seconds": x, "o": i} for i, (p, x) in enumerate(zip(PARTS, values, strict=True))
        ]
    if not rows:
        return pd.DataFrame({"arm": [], "part": [], "seconds": [], "o": []})
    return pd.DataFrame(rows)

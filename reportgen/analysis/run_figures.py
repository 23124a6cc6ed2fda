"""Each run's own figures for the performance history: the primary metric and step time with a
within-run interval, and the peak GPU memory in the windows (part of reportgen.analysis; pure).

Computed once, when `reportgen analyze` writes analysis.json (`arms[].runs[].figures`); the history
(reportgen.history.figures) and the site read them there and never open a run's tables.

The within-run interval of a run's figure (the mean of its window means) uses the steps' own noise,
autocorrelation included: per window, the flat-top long-run variance of Politis & White (the
analysis' `dependence`, the same estimator that sizes its bootstrap blocks), so var(mean of window
w) = long-run variance / n_w, and the figure's variance is their sum over W^2. It says how precisely
one run measured itself; it leaves out run-to-run and lease-to-lease variation, which the history's
change-point detector reads from the scatter of the series instead (docs/performance-history.md).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from reportgen import vocab
from reportgen.analysis import document as doc
from reportgen.analysis.gpu import window_span
from reportgen.analysis.inference import z_quantile
from reportgen.analysis.interval import dependence
from reportgen.store.run import StoredRun

CONFIDENCE = 0.95
WITHIN_METHOD = "mean of window means; 95 % interval from each window's flat-top long-run variance (within the run)"
PEAK_METHOD = "max of the 1 Hz GPU samples in the windows' time span, over the GPUs (no interval: a maximum)"
Windows = Sequence[tuple[str, int, int]]


@dataclass(frozen=True)
class Figure:
    value: float
    low: float | None
    high: float | None
    n: int


def within_run(segments: Sequence[np.ndarray], confidence: float = CONFIDENCE) -> Figure | None:
    """The mean of the window means and its within-run interval; None when a window is empty."""
    means, variances, n = [], [], 0
    for seg in segments:
        x = np.asarray(seg, dtype=float)
        x = x[np.isfinite(x)]
        if x.size == 0:
            return None
        means.append(float(x.mean()))
        n += int(x.size)
        if x.size < 2:
            variances.append(math.nan)
            continue
        lrv = dependence([x]).spec0 if x.size >= 4 else 0.0
        # The flat-top estimate can come out non-positive on short or anti-correlated windows;
        # then the plain variance of the mean (independent steps) is the honest fallback.
        lrv = lrv if lrv > 0 else float(x.var(ddof=1))
        variances.append(lrv / x.size)
    value = float(np.mean(means))
    if any(math.isnan(v) for v in variances):
        return Figure(value, None, None, n)
    half = z_quantile(confidence) * math.sqrt(sum(variances)) / len(means)
    return Figure(value, value - half, value + half, n)


def peak_memory(run: StoredRun, first: int, last: int) -> Figure | None:
    """The run's peak GPU memory (MiB) in the windows' time span, over its GPUs."""
    g = run.gpu
    if g.empty or "mem_used_mib" not in g:
        return None
    span = window_span(run, first, last)
    if span is not None:
        g = g[(g["t"] >= span[0]) & (g["t"] <= span[1])]
    values = g["mem_used_mib"].to_numpy(dtype=float)
    values = values[np.isfinite(values)]
    if values.size == 0:
        return None
    return Figure(float(values.max()), None, None, int(values.size))


def run_figures(run: StoredRun, primary: str, overall: float | None, windows: Windows) -> list[doc.RunFigure]:
    """The history's figures of a complete formal run (none for another: a failed, interrupted or
    profiler run measures something else): the primary metric (its value the run's `overall`, as the
    verdict uses it) and step time, each with its within-run interval, and the peak GPU memory."""
    if not windows or run.role != vocab.FORMAL or run.status != vocab.Status.COMPLETE:
        return []
    out = []
    keys = [primary] if primary == vocab.STEP_TIME else [primary, vocab.STEP_TIME]
    for key in keys:
        fig = within_run([np.asarray(run.series(key, s, e)) for _, s, e in windows])
        if fig is None:
            continue
        value = overall if key == primary and overall is not None else fig.value
        out.append(
            doc.RunFigure(
                metric=key,
                value=value,
                low=fig.low,
                high=fig.high,
                confidence=CONFIDENCE if fig.low is not None else None,
                n=fig.n,
                method=WITHIN_METHOD,
            )
        )
    mem = peak_memory(run, windows[0][1], windows[-1][2])
    if mem is not None:
        out.append(doc.RunFigure(metric=vocab.PEAK_GPU_MEMORY, value=mem.value, n=mem.n, method=PEAK_METHOD))
    return out

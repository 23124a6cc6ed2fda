"""Descriptive statistics per window, and the before/after change.

Part of reportgen.analysis (pure). Everything here works on unrounded floats: rounding happens
only in the render layer, so a change computed from two figures here equals the change of the
underlying values, not of their printed forms.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np

from reportgen.analysis.document import WindowStats


def _f(x: float) -> float | None:
    x = float(x)
    return x if math.isfinite(x) else None


Values = Sequence[float] | np.ndarray  # one window's per-step values


def window_stats(values: Values, *, window: str, start: int, end: int) -> WindowStats:
    """Statistics of the finite values of one window. Non-finite values are left out here
    (the finiteness guardrail reports them); an empty window gives n=0 and nulls."""
    arr = np.asarray(values, dtype=float)
    arr = arr[np.isfinite(arr)]
    n = int(arr.size)
    if n == 0:
        return WindowStats(window=window, start=start, end=end, n=0)
    return WindowStats(
        window=window,
        start=start,
        end=end,
        n=n,
        mean=_f(arr.mean()),
        std=_f(arr.std(ddof=1)) if n >= 2 else None,
        median=_f(np.median(arr)),
        p95=_f(np.percentile(arr, 95, method="linear")),
        min=_f(arr.min()),
        max=_f(arr.max()),
    )


def summarize(values_by_window: Mapping[str, tuple[int, int, Values]]) -> list[WindowStats]:
    """Rows for each window (in the given order) plus the pooled row named "all"."""
    rows = [window_stats(v, window=name, start=s, end=e) for name, (s, e, v) in values_by_window.items()]
    if rows:
        pooled = np.concatenate([np.asarray(v, dtype=float) for _, _, v in values_by_window.values()])
        first = min(s for s, _, _ in values_by_window.values())
        last = max(e for _, e, _ in values_by_window.values())
        rows.append(window_stats(pooled, window="all", start=first, end=last))
    return rows


def overall(rows: Sequence[WindowStats]) -> float | None:
    """The protocol's overall figure: the mean of the window means (the pooled row excluded).
    None if any window has no data: a mean over fewer windows would not be comparable."""
    means = [r.mean for r in rows if r.window != "all"]
    known = [m for m in means if m is not None]
    if not means or len(known) < len(means):
        return None
    return float(np.mean(known))


def change(before: float | None, after: float | None) -> float | None:
    """Relative change after/before - 1 as a fraction (0.20682 = +20.682 %), from unrounded values."""
    if before is None or after is None:
        return None
    if not (math.isfinite(before) and math.isfinite(after)) or before == 0:
        return None
    return after / before - 1.0

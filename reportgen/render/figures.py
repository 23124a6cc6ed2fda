"""A figure's text, the same wherever it is shown (render stage; typed document in, strings out).

The rounding rule lives in reportgen/rounding.py; this module applies it to the document's figures
so that every page and the PR body agree (docs/pages.md#numbers-one-rounding-per-figure):

- an arm's value of a metric is rounded to its own standard error (a window's mean: std / sqrt(n)
  of that window; the arm's figure, the mean of its window means: that of its pooled window steps),
  never to the interval of a change it sits beside;
- a change with an interval is the interval's estimate (the run-level figure that decided), rounded
  to the interval; the same metric's change without an interval (ratio of means) is not shown beside
  it, so one change never reads as two;
- a change of a quantity in % (GPU utilization) is a difference in percentage points.
"""

from __future__ import annotations

import math

from reportgen.analysis.document import AnalysisDocument, Comparison, Interval, MetricChange
from reportgen.rounding import (
    change_decimals,
    fmt_change,
    fmt_change_interval,
    fmt_level,
    fmt_pp,
    fmt_value,
)


def standard_error(doc: AnalysisDocument, arm_id: str, key: str, window: str = "all") -> float | None:
    """The standard error of an arm's mean of `key` in `window` ("all": its pooled window steps)."""
    arm = doc.arm(arm_id)
    w = next((w for w in (arm.windows.get(key, []) if arm else []) if w.window == window), None)
    if w is None or w.std is None or w.n < 2 or not math.isfinite(w.std):
        return None
    return w.std / math.sqrt(w.n)


def arm_value(
    doc: AnalysisDocument,
    arm_id: str,
    key: str,
    value: float | int | str | None,
    *,
    unit: str = "",
    window: str = "all",
) -> str:
    """An arm's value of a metric, rounded to its own standard error (three digits without one)."""
    if isinstance(value, (int, float)) and not isinstance(value, bool) and unit == "%":
        return fmt_value(value, unit=unit)
    return fmt_value(value, unit=unit, halfwidth=standard_error(doc, arm_id, key, window))


def bounds(iv: Interval | None) -> tuple[float | None, float | None]:
    """The interval as changes (fractions): (low - 1, high - 1), or Nones."""
    if iv is None or iv.low is None or iv.high is None:
        return None, None
    return iv.low - 1, iv.high - 1


def interval_change(iv: Interval | None) -> float | None:
    """The change an interval stands for: its estimate - 1."""
    return None if iv is None or iv.estimate is None else iv.estimate - 1


def change_text(m: MetricChange) -> str:
    """A metric's change as one figure: the interval's estimate rounded to the interval when there
    is one, else the change of the means with one decimal ("n/a" when none)."""
    if m.interval is not None and m.interval.estimate is not None:
        low, high = bounds(m.interval)
        return fmt_change(interval_change(m.interval), digits=change_decimals(low, high))
    return fmt_change(m.change, digits=1)


def interval_text(iv: Interval) -> str:
    """'+21.4% (95% CI +18.9% to +23.9%)', or '~ no significant change (...)' when it holds no change."""
    if iv.estimate is None:
        return "no interval"
    low, high = bounds(iv)
    text = fmt_change_interval(iv.estimate - 1, low, high, confidence=iv.confidence)
    if not iv.significant:
        head, _, ci = text.partition(" (")
        return f"~ no significant change ({head}, {ci}"
    return text


def ci_text(iv: Interval) -> str:
    """'95% CI +65% to +121%' alone (the change shown apart)."""
    low, high = bounds(iv)
    d = change_decimals(low, high)
    return f"{fmt_level(iv.confidence)} CI {fmt_change(low, digits=d)} to {fmt_change(high, digits=d)}"


def difference_text(before: float | None, after: float | None, unit: str, change: float | None) -> str:
    """A change of a headline value without an interval: in percentage points for a quantity in %,
    else relative with one decimal."""
    if unit == "%":
        if before is None or after is None:
            return "n/a"
        return fmt_pp(after - before)
    return fmt_change(change, digits=1)


def headline_change(comp: Comparison, metric: str) -> MetricChange | None:
    """The MetricChange with an interval that a headline row of `metric` shows, against the baseline:
    the primary metric's run-level comparison, or a phase of `secondary`; None for the others."""
    return next((m for m in comp.secondary if m.metric == metric and m.interval is not None), None)

"""Number formatting for rendered output (render stage). Values stay unrounded until here."""

from __future__ import annotations

import math


def fmt_change(x: float | None) -> str:
    """A fractional change as a signed percentage: 0.20682 -> "+20.68%"."""
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return "n/a"
    pct = x * 100.0
    if abs(pct) < 0.005:
        return "0.00%"
    return f"{pct:+.2f}%"


def fmt_num(x: float | int | str | None, digits: int = 3) -> str:
    """A number with `digits` decimals (integers stay integers); strings pass through."""
    if x is None:
        return "n/a"
    if isinstance(x, str):
        return x
    if isinstance(x, bool):
        return "yes" if x else "no"
    if isinstance(x, int):
        return f"{x:,}".replace(",", " ") if abs(x) >= 100000 else str(x)
    if not math.isfinite(x):
        return "NaN" if math.isnan(x) else ("+inf" if x > 0 else "-inf")
    return f"{x:.{digits}f}"

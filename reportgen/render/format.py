"""Number formatting shared by the render layer (rounding happens here and only here).

Pipeline position: analysis.json -> **render** -> Markdown / site pages / PR body.
"""

from __future__ import annotations

import math

UNKNOWN = "n/a"


def fmt_change(x: float | None, *, significant: bool | None = None, digits: int = 2) -> str:
    """A fractional change as a percentage: 0.20682 -> "+20.68%"; "~" when the interval holds 1
    (`significant=False`, benchstat's "no significant change"); "n/a" when unknown."""
    if significant is False:
        return "~"
    if x is None or not math.isfinite(x):
        return UNKNOWN
    pct = x * 100.0
    if abs(pct) < 0.5 * 10 ** (-digits):
        return f"{0:.{digits}f}%"
    return f"{pct:+.{digits}f}%"


def fmt_num(x: float | int | str | None, digits: int = 3, *, unit: str = "") -> str:
    """A value with `digits` decimals (integers stay integers), followed by its unit."""
    if x is None:
        return UNKNOWN
    if isinstance(x, str):
        return x
    if isinstance(x, bool):
        return "yes" if x else "no"
    if isinstance(x, float) and not math.isfinite(x):
        text = "NaN" if math.isnan(x) else ("+inf" if x > 0 else "-inf")
    elif isinstance(x, int) or (float(x).is_integer() and abs(x) >= 1000):
        text = str(int(x))  # MiB, steps, tokens: whole numbers read as whole numbers
    else:
        text = f"{x:.{digits}f}"
    if not unit:
        return text
    return f"{text}{unit}" if unit == "%" else f"{text} {unit}"


def fmt_ratio_interval(low: float | None, high: float | None) -> str:
    """A ratio interval as a change interval: (1.15, 1.26) -> "[+15.00%, +26.00%]"."""
    if low is None or high is None:
        return UNKNOWN
    return f"[{fmt_change(low - 1)}, {fmt_change(high - 1)}]"

"""Number formatting shared by the render layer (rounding happens here and only here).

Pipeline position: analysis.json -> **render** -> Markdown / site pages.
"""

from __future__ import annotations

import math


def fmt_change(x: float | None, *, significant: bool | None = None, digits: int = 2) -> str:
    """A fractional change as a percentage: 0.20682 -> "+20.68%"; "~" when the interval holds 1
    (`significant=False`, benchstat's "no significant change"); "–" when unknown."""
    if significant is False:
        return "~"
    if x is None or not math.isfinite(x):
        return "–"
    return f"{x * 100:+.{digits}f}%"


def fmt_num(x: float | int | str | None, *, unit: str = "", digits: int = 3) -> str:
    """A value with up to `digits` decimals (integers stay integers), followed by its unit."""
    if x is None:
        return "–"
    if isinstance(x, str):
        return x
    if isinstance(x, float) and not math.isfinite(x):
        return str(x)
    if float(x).is_integer() and abs(x) >= 1000 or isinstance(x, int):
        text = f"{int(x)}"
    else:
        text = f"{x:.{digits}f}"
    return f"{text} {unit}".strip() if unit and unit != "%" else f"{text}{unit}"


def fmt_ratio_interval(low: float | None, high: float | None) -> str:
    """A ratio interval as a change interval: (1.15, 1.26) -> "[+15.00%, +26.00%]"."""
    if low is None or high is None:
        return "–"
    return f"[{fmt_change(low - 1)}, {fmt_change(high - 1)}]"

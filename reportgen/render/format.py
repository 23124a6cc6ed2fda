"""Number formatting of the render layer: the one rounding rule (reportgen/rounding.py) and counts.

Pipeline position: analysis.json -> **render** -> Markdown / site pages / PR body. Every page and
the PR body take their figures' text from here, so a figure reads the same wherever it is shown
(docs/pages.md#numbers-one-rounding-per-figure).
"""

from __future__ import annotations

import math

from reportgen.rounding import (
    CHANGE_MAX_DECIMALS,
    UNKNOWN,
    VALUE_MAX_DECIMALS,
    change_decimals,
    decimals_for,
    fmt_change,
    fmt_change_interval,
    fmt_change_supported,
    fmt_difference,
    fmt_difference_interval,
    fmt_gib,
    fmt_level,
    fmt_mib,
    fmt_num,
    fmt_pp,
    fmt_share,
    fmt_value,
    with_unit,
)

__all__ = [
    "CHANGE_MAX_DECIMALS",
    "UNKNOWN",
    "VALUE_MAX_DECIMALS",
    "change_decimals",
    "decimals_for",
    "fmt_change",
    "fmt_change_interval",
    "fmt_change_supported",
    "fmt_count",
    "fmt_difference",
    "fmt_difference_interval",
    "fmt_gib",
    "fmt_level",
    "fmt_mib",
    "fmt_num",
    "fmt_pp",
    "fmt_share",
    "fmt_value",
    "plural",
    "with_unit",
]


def plural(n: float | int, unit: str, units: str | None = None) -> str:
    """The unit for a count: 1 step, 2 steps, -1 step, 0 steps."""
    return unit if abs(n) == 1 else (units or unit + "s")


def fmt_count(n: int | float | None, unit: str, units: str | None = None, *, signed: bool = False) -> str:
    """A count with its unit: "1 step", "80 steps", signed "-79 steps" / "+1 step"; "n/a" when unknown."""
    if n is None or (isinstance(n, float) and not math.isfinite(n)):
        return UNKNOWN
    value = int(n) if float(n).is_integer() else n
    text = f"{value:+d}" if signed and isinstance(value, int) and value else str(value)
    return f"{text} {plural(value, unit, units)}"

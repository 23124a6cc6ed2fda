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


# --- Precision an interval supports --------------------------------------------------------
# A value is shown with the digits its uncertainty supports: the half-width of the interval to two
# significant digits fixes the last decimal shown (1456.629 tok/s under +-25 % -> half-width 364
# -> tens -> "1460 tok/s"). Without an interval a value keeps three significant digits. The
# unrounded numbers stay in analysis.json; this is presentation only.

CHANGE_MAX_DECIMALS = 2
VALUE_MAX_DECIMALS = 4


def decimals_for(halfwidth: float | None, *, significant: int = 2) -> int | None:
    """Decimals that show `halfwidth` with `significant` digits (negative: round to tens, hundreds);
    None when there is no usable half-width."""
    if halfwidth is None or not math.isfinite(halfwidth) or halfwidth <= 0:
        return None
    return significant - 1 - math.floor(math.log10(halfwidth))


def _decimals_for_value(x: float, halfwidth: float | None, significant: int) -> int:
    d = decimals_for(halfwidth)
    if d is None:
        d = decimals_for(abs(x), significant=significant) if x else 0
        d = 0 if d is None else d
    if x:  # never round the value's own leading digit away
        d = max(d, -math.floor(math.log10(abs(x))))
    return min(d, VALUE_MAX_DECIMALS)


def _fixed(x: float, decimals: int) -> str:
    if decimals >= 0:
        text = f"{round(x, decimals):.{decimals}f}"
    else:
        text = str(int(round(x, decimals)))
    return text[1:] if text.startswith("-") and not text.strip("-0.") else text  # no "-0.0"


def fmt_value(
    x: float | int | str | None, *, unit: str = "", halfwidth: float | None = None, significant: int = 3
) -> str:
    """A measured value rounded to what `halfwidth` (same unit as `x`) supports, else to
    `significant` digits; integers (steps, MiB, tokens) stay whole. Unit after a space, "%" glued."""
    if x is None:
        return UNKNOWN
    if isinstance(x, (str, bool)):
        return fmt_num(x, unit=unit)
    if isinstance(x, float) and not math.isfinite(x):
        return fmt_num(x, unit=unit)
    if isinstance(x, int):
        text = str(x)
    else:
        text = _fixed(x, _decimals_for_value(float(x), halfwidth, significant))
    if not unit:
        return text
    return f"{text}{unit}" if unit == "%" else f"{text} {unit}"


def change_decimals(low: float | None, high: float | None) -> int:
    """Decimals of a percentage change whose interval (fractions) runs from `low` to `high`:
    two significant digits of its half-width in percentage points, between 0 and 2."""
    if low is None or high is None or not (math.isfinite(low) and math.isfinite(high)):
        return 1
    d = decimals_for(abs(high - low) * 50.0)  # half-width in percentage points
    return CHANGE_MAX_DECIMALS if d is None else max(0, min(d, CHANGE_MAX_DECIMALS))


def fmt_change_supported(change: float | None, low: float | None, high: float | None) -> str:
    """A change (fraction) rounded to its interval: +100.80 % under a +-28-point interval -> "+101%"."""
    return fmt_change(change, digits=change_decimals(low, high))


def fmt_change_interval(change: float | None, low: float | None, high: float | None, *, confidence: float) -> str:
    """'+36% (95% CI +11% to +67%)', every figure with the decimals the interval supports."""
    d = change_decimals(low, high)
    ci = f"{confidence * 100:.0f}% CI {fmt_change(low, digits=d)} to {fmt_change(high, digits=d)}"
    return f"{fmt_change(change, digits=d)} ({ci})"


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

"""The one rounding rule of every figure reportgen shows (shared by analysis sentences and pages).

analysis.json keeps every number to `STORED_DIGITS` significant digits (`stored`), far more than
any page shows: the last bits of a float differ between machines and BLAS/libm builds (a look's
boundary found by a root finder differs in the 12th digit), and a document that must read the
same wherever it was re-made cannot keep them. A figure is rounded for reading only where it
becomes text, and always by this module, so one figure reads the same in the answer table, a next
step's cause, a candidate's page and the pull-request body:

- a change (a fraction) with an interval keeps two significant digits of the interval's
  half-width in percentage points, between 0 and 2 decimals (`change_decimals`): +100.80 % under
  a ±28-point interval reads "+101%"; without an interval it keeps one decimal;
- a measured value keeps two significant digits of its own uncertainty (a window mean: its
  standard error; an arm's figure: the standard error of its pooled window steps), else three
  significant digits (`fmt_value`); it never takes the precision of a change it sits beside, so
  the baseline's figure is the same next to every candidate;
- a change of a quantity that is itself a percentage (GPU utilization, a ratio) is a difference
  in percentage points, written "pp" (`fmt_pp`): 18.1% -> 34.3% is "+16.2 pp", not "+89.8%".

Part of no stage: it imports nothing of reportgen, and both reportgen.analysis (the words of a
cause: "-32% (95% CI -43% to -18%)") and reportgen.render (tables) use it.
"""

from __future__ import annotations

import math

UNKNOWN = "n/a"
CHANGE_MAX_DECIMALS = 2
VALUE_MAX_DECIMALS = 4
# Significant digits a stored float keeps: a page shows at most about six (VALUE_MAX_DECIMALS,
# CHANGE_MAX_DECIMALS of a percentage), and jitter between machines sits in the 12th and later.
STORED_DIGITS = 9


def stored(value: object, *, digits: int = STORED_DIGITS) -> object:
    """A JSON-ready value with every float rounded to `digits` significant digits (ints, strings,
    None and non-finite floats as they are), through dicts and lists: what analysis.json keeps."""
    if isinstance(value, float):
        return float(f"{value:.{digits}g}") if math.isfinite(value) else value
    if isinstance(value, dict):
        return {k: stored(v, digits=digits) for k, v in value.items()}
    if isinstance(value, list):
        return [stored(v, digits=digits) for v in value]
    return value


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


def fmt_pp(x: float | None, *, digits: int = 1) -> str:
    """A difference of two percentages (both in %, e.g. 34.3 - 18.1) in percentage points: "+16.2 pp"."""
    if x is None or not math.isfinite(x):
        return UNKNOWN
    if abs(x) < 0.5 * 10 ** (-digits):
        return f"{0:.{digits}f} pp"
    return f"{x:+.{digits}f} pp"


def decimals_for(halfwidth: float | None, *, significant: int = 2) -> int | None:
    """Decimals that show `halfwidth` with `significant` digits (negative: round to tens, hundreds);
    None when there is no usable half-width."""
    if halfwidth is None or not math.isfinite(halfwidth) or halfwidth <= 0:
        return None
    return significant - 1 - math.floor(math.log10(halfwidth))


def change_decimals(low: float | None, high: float | None) -> int:
    """Decimals of a percentage change whose interval (fractions) runs from `low` to `high`:
    two significant digits of its half-width in percentage points, between 0 and 2; 1 without one."""
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
    return f"{fmt_change(change, digits=d)} ({fmt_level(confidence)} CI {fmt_change(low, digits=d)} to {fmt_change(high, digits=d)})"


def fmt_level(confidence: float) -> str:
    """A confidence level: 0.95 -> "95%", 0.98705 -> "98.7%"."""
    pct = confidence * 100.0
    return f"{pct:.0f}%" if abs(pct - round(pct)) < 0.05 else f"{pct:.1f}%"


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
    return with_unit(text, unit)


def with_unit(text: str, unit: str) -> str:
    """A number and its unit: "%" glued, any other unit after a space."""
    if not unit:
        return text
    return f"{text}{unit}" if unit == "%" else f"{text} {unit}"


def fmt_value(
    x: float | int | str | None, *, unit: str = "", halfwidth: float | None = None, significant: int = 3
) -> str:
    """A measured value rounded to what `halfwidth` (its own uncertainty, same unit as `x`)
    supports, else to `significant` digits; integers (steps, MiB, tokens) stay whole."""
    if x is None:
        return UNKNOWN
    if isinstance(x, (str, bool)):
        return fmt_num(x, unit=unit)
    if isinstance(x, float) and not math.isfinite(x):
        return fmt_num(x, unit=unit)
    text = str(x) if isinstance(x, int) else _fixed(x, _decimals_for_value(float(x), halfwidth, significant))
    return with_unit(text, unit)


def fmt_difference(x: float | None, *, halfwidth: float | None = None) -> str:
    """A signed difference in a metric's own units (a reward, a loss), rounded as a measured value is
    (`fmt_value`: two significant digits of `halfwidth`, else three of the value): "-0.012", "+3.1"."""
    if x is None or not math.isfinite(x):
        return UNKNOWN
    text = _fixed(x, _decimals_for_value(x, halfwidth, 3))
    return text if text.startswith("-") or not text.strip("0.") else "+" + text


def fmt_difference_interval(x: float | None, low: float | None, high: float | None, *, confidence: float) -> str:
    """ "-0.012 (95% CI -0.041 to +0.017)", every figure with the decimals the interval supports."""
    if low is None or high is None or not (math.isfinite(low) and math.isfinite(high)):
        return fmt_difference(x)
    hw = (high - low) / 2.0
    return (
        f"{fmt_difference(x, halfwidth=hw)} ({fmt_level(confidence)} CI {fmt_difference(low, halfwidth=hw)} to "
        f"{fmt_difference(high, halfwidth=hw)})"
    )


def fmt_mib(x: float | None) -> str:
    """Memory in whole MiB: "5120 MiB"."""
    return UNKNOWN if x is None or not math.isfinite(x) else f"{round(x)} MiB"


def fmt_gib(mib: float | None) -> str:
    """Memory given in MiB, in GiB with two decimals: 4515 -> "4.41 GiB"."""
    return UNKNOWN if mib is None or not math.isfinite(mib) else f"{mib / 1024:.2f} GiB"


def fmt_share(x: float | None) -> str:
    """A share of a whole (a fraction) as a whole percentage: 0.118 -> "12%"."""
    return UNKNOWN if x is None or not math.isfinite(x) else f"{x * 100:.0f}%"

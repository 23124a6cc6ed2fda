"""Student's t, the normal, chi-square and F: the one home of every quantile, p-value and t interval
reportgen computes (part of reportgen.analysis; pure).

The analysis (interval.py's bootstrap and batch-means intervals, design.py's boundaries and its
simulation of the per-look level, a run's within-run interval in run_figures.py, the warm-up cost's
interval, runlevel.py's pooling test and machine effect, power_plan.py's bound of a spread, warmup.py's
test of the kept steps' slope) and the history
(a campaign's interval over its runs, the change-point test, the paired history's standard errors
and its test across a bridge) call these functions; none computes a quantile of its own. Scalars
or arrays alike where the callers batch (the design's simulations). scipy.special's distribution
functions, imported on first use (the CLI's start-up imports none of it, docs/contributing.md#cli-start-up),
and not scipy.stats, which computes with them the same numbers but takes 1.4 s more to import: a
second of every site build.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np


def per_df(quantile: Callable[[np.ndarray], np.ndarray], df: np.ndarray | float) -> np.ndarray:
    """`quantile` at each df >= 1 (NaN elsewhere), computed once per distinct df: a batch of
    simulated campaigns at one look shares a handful of them."""
    d = np.asarray(df, dtype=float)
    out = np.full(d.shape, np.nan)
    ok = d >= 1
    if ok.any():
        distinct, where = np.unique(d[ok], return_inverse=True)
        out[ok] = np.asarray(quantile(distinct), dtype=float)[where]
    return out


def t_critical(tail: float, df: np.ndarray | float) -> np.ndarray:
    """Student t quantile with a two-sided tail of `tail` (the normal boundary's, Jennison & Turnbull's
    matching of significance levels); NaN where df < 1."""
    from scipy.special import stdtrit

    return per_df(lambda u: stdtrit(u, 1.0 - tail / 2.0), df)


def t_one_sided(level: float, df: np.ndarray | float) -> np.ndarray:
    """One-sided Student t quantile at `level`; NaN where df < 1."""
    from scipy.special import stdtrit

    return per_df(lambda u: stdtrit(u, level), df)


def t_quantile(confidence: float, df: float) -> float:
    """The t quantile of a two-sided interval at `confidence` (0.95 -> t_{0.975, df}); NaN for df < 1."""
    from scipy.special import stdtrit

    return float(per_df(lambda u: stdtrit(u, 0.5 + confidence / 2.0), df))


def t_two_sided_p(stat: np.ndarray | float, df: np.ndarray | float) -> np.ndarray:
    """The two-sided p-value of a t statistic."""
    from scipy.special import stdtr

    return np.asarray(2.0 * stdtr(df, -np.abs(stat)), dtype=float)


def z_quantile(confidence: float) -> float:
    """The normal quantile of a two-sided interval at `confidence` (0.95 -> 1.96)."""
    from scipy.special import ndtri

    return float(ndtri(0.5 + confidence / 2.0))


def normal_quantile(p: float) -> float:
    """The standard normal's quantile at `p` (0.975 -> 1.96)."""
    from scipy.special import ndtri

    return float(ndtri(p))


def normal_sf(x: float) -> float:
    """The standard normal's upper tail beyond `x`."""
    from scipy.special import ndtr

    return float(ndtr(-x))


def chi2_quantile(p: float, df: float) -> float:
    """The chi-square quantile at `p` with `df` degrees of freedom (a variance's confidence bound)."""
    from scipy.special import gammaincinv

    return float(2.0 * gammaincinv(df / 2.0, p))


def f_quantile(q: float, dfn: np.ndarray | float, dfd: np.ndarray | float) -> np.ndarray:
    """The F distribution's quantile at `q` (a ratio of two variances' test)."""
    from scipy.special import fdtri

    return np.asarray(fdtri(dfn, dfd, q), dtype=float)


def f_sf(x: np.ndarray | float, dfn: float, dfd: float) -> np.ndarray:
    """The F distribution's upper tail beyond `x` (an analysis of variance's p-value); NaN for NaN."""
    from scipy.special import fdtrc

    return np.asarray(fdtrc(dfn, dfd, x), dtype=float)


@dataclass(frozen=True)
class Slope:
    """A least-squares line's slope and the two-sided p-value of a zero slope (Student's t on n - 2
    degrees of freedom)."""

    slope: float
    p: float


# scipy.stats.linregress's guard against r = +-1 in its t statistic.
_R_GUARD = 1.0e-20


def slope_test(x: np.ndarray, y: np.ndarray) -> Slope:
    """The slope of y on x and the p-value of a zero slope, computed as scipy.stats.linregress computes
    them (the same operations, so the same numbers to the last digit: tests/analysis/test_inference.py)
    without importing scipy.stats (about half a CPU-second of every process that analyses). At least
    three points and two x values; a constant y gives slope 0 and p NaN or 1, as linregress does."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    n = len(x)
    if n < 3:
        raise ValueError(f"a slope test needs at least 3 points, got {n}")
    cov = np.cov(x, y, bias=True)
    ssxm, ssxym, ssym = float(cov[0, 0]), float(cov[0, 1]), float(cov[1, 1])
    if ssxm == 0.0:  # as linregress refuses it (a float division by zero would raise a bare ZeroDivisionError)
        raise ValueError("a slope test needs x values that are not all identical")
    if ssym == 0.0:
        r = math.nan if ssxym == 0 else 0.0
    else:
        r = min(1.0, max(-1.0, ssxym / math.sqrt(ssxm * ssym)))
    df = n - 2
    t = r * math.sqrt(df / ((1.0 - r + _R_GUARD) * (1.0 + r + _R_GUARD)))
    return Slope(ssxym / ssxm, float(t_two_sided_p(t, df)))


@dataclass(frozen=True)
class TInterval:
    """A t interval of a mean (or of a difference of means): estimate, bounds, standard error,
    degrees of freedom, and the two-sided p-value of `estimate = 0`."""

    estimate: float
    low: float
    high: float
    se: float
    df: float
    p: float


def t_interval(estimate: float, se: float, df: float, confidence: float) -> TInterval:
    """`estimate` +- t_{df} x `se`, with the p-value of a zero estimate. A standard error of zero
    gives a point interval (p 0, or 1 for a zero estimate)."""
    if not se > 0:
        return TInterval(estimate, estimate, estimate, 0.0, df, 0.0 if estimate != 0 else 1.0)
    q = t_quantile(confidence, df)
    p = float(t_two_sided_p(estimate / se, df))
    return TInterval(estimate, estimate - q * se, estimate + q * se, se, df, p)


def mean_interval(x: Sequence[float] | np.ndarray, confidence: float) -> TInterval:
    """The t interval of the mean of `x` (at least two values): the sample's own spread."""
    a = np.asarray(x, dtype=float)
    return t_interval(float(a.mean()), float(a.std(ddof=1)) / math.sqrt(a.size), a.size - 1, confidence)


def pooled_difference(a: np.ndarray, b: np.ndarray, confidence: float) -> TInterval:
    """mean(b) - mean(a) by Student's two-sample t, the variance pooled over both samples (a shift
    of level leaves the noise as it was, so the long stretch before a change judges the few points
    after it)."""
    d = float(b.mean() - a.mean())
    df = a.size + b.size - 2
    pooled = (float(((a - a.mean()) ** 2).sum()) + float(((b - b.mean()) ** 2).sum())) / df if df > 0 else 0.0
    se2 = pooled * (1.0 / a.size + 1.0 / b.size)
    return t_interval(d, math.sqrt(se2) if se2 > 0 else 0.0, df, confidence)


def se_of_interval(low: float, high: float, df: float, confidence: float) -> float:
    """The standard error behind a symmetric t interval [low, high] on the log scale (a ratio's
    interval): ln(high / low) / (2 t); NaN when the interval is not one."""
    t = t_quantile(confidence, df)
    return math.log(high / low) / (2.0 * t) if t > 0 and low > 0 and high > low else math.nan

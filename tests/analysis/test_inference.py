"""The one home of t, normal, chi-square and F quantiles, p-values and t intervals
(analysis/inference.py), against scipy's own functions and the textbook cases."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from reportgen.analysis import inference


def test_quantiles_match_scipy_and_are_nan_below_one_degree_of_freedom() -> None:
    assert inference.t_quantile(0.95, 4) == pytest.approx(stats.t.ppf(0.975, 4))
    assert float(inference.t_critical(0.05, 4)) == pytest.approx(stats.t.ppf(0.975, 4))
    assert float(inference.t_one_sided(0.9, 7)) == pytest.approx(stats.t.ppf(0.9, 7))
    assert math.isnan(inference.t_quantile(0.95, 0.5))
    got = inference.t_critical(0.05, np.array([0.0, 3.0, 3.0, 9.0]))
    assert np.isnan(got[0]) and got[1] == got[2] == pytest.approx(stats.t.ppf(0.975, 3))
    assert inference.z_quantile(0.95) == pytest.approx(1.959963984540054)
    assert float(inference.t_two_sided_p(2.0, 10)) == pytest.approx(2 * stats.t.sf(2.0, 10))


def test_the_normal_chi_square_and_f_are_scipys_to_the_last_digit() -> None:
    """The design's boundaries, the machine effect's bounds and the pooling test computed here give
    the numbers scipy.stats gave them before (the committed analyses do not move)."""
    assert inference.normal_quantile(0.975) == stats.norm.ppf(0.975)
    assert inference.normal_sf(2.1) == stats.norm.sf(2.1)
    assert -inference.normal_quantile(0.01 / 2) == stats.norm.isf(0.01 / 2)
    assert inference.chi2_quantile(0.1, 1) == stats.chi2.ppf(0.1, 1)
    assert inference.chi2_quantile(0.9, 7) == stats.chi2.ppf(0.9, 7)
    dfn, dfd = np.array([1.0, 2.0, 5.0]), np.array([3.0, 8.0, 1.0])
    assert np.array_equal(inference.f_quantile(0.95, dfn, dfd), stats.f.ppf(0.95, dfn, dfd))
    x = np.array([0.5, 3.0, np.inf, np.nan])
    assert np.array_equal(inference.f_sf(x, 2, 9), stats.f.sf(x, 2, 9), equal_nan=True)


def test_the_interval_of_a_mean_and_of_a_pooled_difference() -> None:
    x = np.array([1.0, 2.0, 3.0, 4.0])
    iv = inference.mean_interval(x, 0.95)
    half = stats.t.ppf(0.975, 3) * x.std(ddof=1) / 2
    assert (iv.estimate, iv.low, iv.high) == pytest.approx((2.5, 2.5 - half, 2.5 + half))
    a, b = np.array([1.0, 1.1, 0.9, 1.0]), np.array([1.5, 1.6, 1.4])
    d = inference.pooled_difference(a, b, 0.95)
    res = stats.ttest_ind(b, a, equal_var=True)
    assert d.estimate == pytest.approx(b.mean() - a.mean()) and d.p == pytest.approx(res.pvalue)
    flat = inference.pooled_difference(np.ones(3), np.ones(3) * 2, 0.95)  # no noise: a point interval
    assert (flat.low, flat.high, flat.p) == (1.0, 1.0, 0.0)


def test_the_standard_error_behind_a_ratios_interval() -> None:
    se, df = 0.03, 5
    t = stats.t.ppf(0.975, df)
    low, high = math.exp(0.1 - t * se), math.exp(0.1 + t * se)
    assert inference.se_of_interval(low, high, df, 0.95) == pytest.approx(se)
    assert math.isnan(inference.se_of_interval(1.0, 1.0, df, 0.95))


def test_the_slope_test_is_linregress_to_the_last_digit() -> None:
    """The warm-up's drift check (analysis/warmup.py) asks for a slope's p-value; computed here as
    scipy.stats.linregress computes it, without importing scipy.stats in every analysing process."""
    rng = np.random.default_rng(4)
    series = [rng.normal(size=n) + rng.normal() * np.arange(n) * 0.01 for n in (3, 4, 7, 20, 37, 48)]
    series += [np.ones(9), 2.0 * np.arange(6.0) + 1.0, -np.arange(5.0), np.array([1.0, 1.0, 2.0])]
    series += [1.0 + 0.001 * rng.standard_t(3, size=40) for _ in range(20)]
    for y in series:
        x = np.arange(len(y), dtype=float)
        got, want = inference.slope_test(x, y), stats.linregress(x, y)
        assert got.slope == want.slope and (got.p == want.pvalue or (math.isnan(got.p) and math.isnan(want.pvalue)))
    with pytest.raises(ValueError, match="at least 3 points"):
        inference.slope_test(np.arange(2.0), np.arange(2.0))
    with pytest.raises(ValueError, match="not all identical"):  # linregress refuses it too
        inference.slope_test(np.ones(5), np.arange(5.0))

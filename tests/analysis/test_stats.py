import math

import numpy as np
import pandas as pd
import pytest

from reportgen.analysis.stats import change, overall, summarize, window_stats


def test_window_stats_match_numpy_and_pandas():
    rng = np.random.default_rng(3)
    x = rng.normal(250, 20, size=61)
    s = window_stats(x, window="W1", start=20, end=80)
    ser = pd.Series(x)
    assert s.n == 61
    assert s.mean == pytest.approx(ser.mean(), rel=1e-12)
    assert s.std == pytest.approx(ser.std(), rel=1e-12)  # pandas' default is ddof=1
    assert s.median == pytest.approx(ser.median(), rel=1e-12)
    assert s.p95 == pytest.approx(ser.quantile(0.95, interpolation="linear"), rel=1e-12)
    assert (s.min, s.max) == (ser.min(), ser.max())


def test_p95_is_linear_interpolation():
    s = window_stats([1.0, 2.0, 3.0, 4.0, 5.0], window="W", start=0, end=4)
    assert s.p95 == pytest.approx(4.8)  # position 0.95 * 4 = 3.8 -> 4 + 0.8


def test_non_finite_values_are_left_out_and_empty_window_is_null():
    s = window_stats([1.0, float("nan"), 3.0, float("inf")], window="W", start=0, end=3)
    assert s.n == 2 and s.mean == 2.0
    e = window_stats([], window="W", start=0, end=3)
    assert e.n == 0 and e.mean is None and e.std is None


def test_summarize_adds_pooled_row_and_overall_is_mean_of_window_means():
    rows = summarize({"W1": (20, 22, [1.0, 2.0, 3.0]), "W2": (23, 24, [10.0, 20.0])})
    assert [r.window for r in rows] == ["W1", "W2", "all"]
    assert rows[-1].n == 5 and rows[-1].mean == pytest.approx(36.0 / 5)
    assert overall(rows) == pytest.approx((2.0 + 15.0) / 2)  # not the pooled mean
    assert overall(summarize({"W1": (0, 1, [1.0]), "W2": (2, 3, [])})) is None


@pytest.mark.parametrize(
    "before,after,expected_pct",
    [
        (250.177, 301.918, 20.682),
        (31.989, 25.939, -18.913),
        (430.526, 524.496, 21.827),
    ],
)
def test_protocol_reference_changes(before, after, expected_pct):
    assert round(change(before, after) * 100, 3) == expected_pct


def test_change_is_from_unrounded_values_and_handles_missing():
    a, b = 250.1774, 301.9176
    assert change(a, b) == pytest.approx(b / a - 1, rel=1e-15)
    assert change(round(a, 1), round(b, 1)) != change(a, b)
    assert change(None, 1.0) is None and change(0.0, 1.0) is None and change(1.0, math.nan) is None


def test_rounded_inputs_do_not_reproduce_an_unrounded_change():
    # The protocol's actor-train row says -61.991 %, computed from unrounded times; its rounded
    # figures give -61.989 %. That is why analysis.json keeps unrounded values.
    assert round(change(10.681, 4.060) * 100, 3) == -61.989

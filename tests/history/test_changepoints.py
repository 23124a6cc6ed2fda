"""The change-point detector on series whose truth is known."""

from __future__ import annotations

import numpy as np
import pytest

from reportgen.history.changepoints import DetectorConfig, detect, noise_sigma


def _series(rng: np.random.Generator, n: int, noise: float, step: float, at: int) -> np.ndarray:
    return 1000.0 * np.where(np.arange(n) >= at, 1 - step, 1.0) * np.exp(noise * rng.standard_normal(n))


def test_a_ten_percent_step_is_found_at_its_point_with_its_size() -> None:
    y = _series(np.random.default_rng(3), 24, 0.03, 0.10, 14)
    (s,) = detect(y)
    assert s.index == 14 and (s.n_before, s.n_after) == (14, 10)
    assert s.low < 0.9 < s.high and 0.85 < s.ratio < 0.95 and s.p_value < DetectorConfig().alpha


def test_a_flat_series_has_no_change_point() -> None:
    rng = np.random.default_rng(11)
    found = sum(bool(detect(_series(rng, 30, 0.06, 0.0, 0))) for _ in range(100))
    assert found <= 8  # about 2 % expected (docs/performance-history.md); 8 of 100 is far in its tail


@pytest.mark.parametrize("noise", [0.03, 0.06])
def test_false_alarms_do_not_depend_on_the_noise_level(noise: float) -> None:
    # sigma is read from the series, so the detector is scale-free: the same seeds give the same answer
    a = [detect(_series(np.random.default_rng(s), 20, noise, 0.0, 0)) for s in range(30)]
    b = [detect(_series(np.random.default_rng(s), 20, noise * 3, 0.0, 0)) for s in range(30)]
    assert [[c.index for c in x] for x in a] == [[c.index for c in x] for x in b]


def test_one_odd_point_is_not_a_change() -> None:
    y = _series(np.random.default_rng(5), 20, 0.02, 0.0, 0)
    y[10] *= 0.7  # one slow lease
    assert all(s.index not in (10, 11) for s in detect(y))


def test_too_few_points_and_degenerate_series_give_nothing() -> None:
    assert detect([1.0, 2.0, 3.0]) == []
    assert detect([5.0] * 10) == []
    assert detect([1.0, 1.0, 1.0, -1.0, 1.0, 1.0]) == []  # a log needs positive figures
    assert noise_sigma(np.array([1.0, 2.0])) == 0.0


def test_a_change_between_two_points_of_one_commit_is_not_blamed() -> None:
    y = _series(np.random.default_rng(3), 24, 0.03, 0.10, 14)
    allowed = [True] * 24
    allowed[14] = False
    assert all(s.index != 14 for s in detect(y, allowed=allowed))


def test_the_method_names_the_thresholds() -> None:
    text = DetectorConfig(penalty=3, alpha=0.01, min_size=2).method()
    assert "PELT" in text and "penalty 3" in text and "0.01" in text

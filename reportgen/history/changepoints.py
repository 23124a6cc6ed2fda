"""Change points in a series of run-level figures (pure; part of reportgen.history).

A series is one figure per campaign (or nightly run) in commit order. The detector:

1. works on logs, so a step is a ratio whatever the metric's scale;
2. reads the noise from the series itself: sigma from the median absolute first difference
   (robust to the steps it looks for: one step moves one difference out of n - 1);
3. segments with PELT (ruptures, L2 cost on the logs), penalty `penalty x sigma^2 x log(n)` per
   change and at least `min_size` points a segment, so one odd lease is never a change;
4. keeps a change only if the segments on either side differ by a two-sample t test at `alpha`,
   the variance pooled over both (the least significant failing change is dropped and its
   neighbours tested again), and gives its size as the ratio of the segments' geometric means
   with the matching t interval.

`penalty`, `min_size` and `alpha` were chosen on simulated series with this project's run-to-run
noise (scripts/changepoint_eval.py; docs/performance-history.md has the false alarms and detection delays
that decided them, and the comparison with E-divisive as MongoDB and Apache Otava use it).
The pooled test is Otava's choice too (Hunter's t-test merge step); with Welch's test instead the
same detector needed a median of 4 points after a 10 % step at 3 % noise, not 2.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from reportgen.analysis.inference import pooled_difference
from reportgen.errors import UserError

METHOD = (
    "PELT (ruptures, L2 on logs, penalty {penalty:g} sigma^2 log n, segments of {min_size}+), pooled t at {alpha:g}"
)


@dataclass(frozen=True)
class DetectorConfig:
    """The detector's thresholds, in one place (docs/performance-history.md#the-detector)."""

    penalty: float = 3.0  # x sigma^2 x log(n) per change
    min_size: int = 2  # points a segment needs: a single odd point is never a change
    alpha: float = 0.001  # t test (pooled variance) between the segments either side of a change
    confidence: float = 0.95  # of the size's interval
    min_points: int = 6  # fewer points: no detection at all (the noise read from 4 points misleads)

    def method(self) -> str:
        return METHOD.format(penalty=self.penalty, min_size=self.min_size, alpha=self.alpha)


@dataclass(frozen=True)
class Shift:
    """A change of level: `index` is the first point at the new level."""

    index: int
    ratio: float  # geometric mean after / before, over the neighbouring segments
    low: float
    high: float
    confidence: float
    p_value: float
    n_before: int
    n_after: int


def noise_sigma(logs: np.ndarray) -> float:
    """Robust standard deviation of one point, from first differences (MAD / 0.6745 / sqrt 2)."""
    if logs.size < 3:
        return 0.0
    d = np.diff(logs)
    mad = float(np.median(np.abs(d - np.median(d))))
    sigma = mad / 0.6744897501960817 / math.sqrt(2.0)
    if sigma <= 0:  # more than half the differences equal: fall back to their plain spread
        sigma = float(np.std(d, ddof=1)) / math.sqrt(2.0) if d.size > 1 else 0.0
    return sigma


def _pelt(logs: np.ndarray, pen: float, min_size: int) -> list[int]:
    try:
        import ruptures
    except ImportError as exc:  # the history extra is not installed
        raise UserError(
            "change-point detection needs ruptures: pip install 'reportgen[history]' (or ruptures==1.1.10)"
        ) from exc
    algo = ruptures.Pelt(model="l2", min_size=min_size, jump=1).fit(logs.reshape(-1, 1))
    return [int(b) for b in algo.predict(pen=pen)[:-1]]


def detect(
    values: Sequence[float], config: DetectorConfig = DetectorConfig(), *, allowed: Sequence[bool] | None = None
) -> list[Shift]:
    """Changes of level in `values` (positive figures, in order). `allowed[i]` False forbids a
    change between points i - 1 and i (both measured at one commit: no commit to blame)."""
    x = np.asarray(values, dtype=float)
    n = int(x.size)
    if n < max(config.min_points, 2 * config.min_size) or not np.all(np.isfinite(x) & (x > 0)):
        return []
    y = np.log(x)
    sigma = noise_sigma(y)
    if sigma <= 0:
        return []
    cuts = _pelt(y, config.penalty * sigma**2 * math.log(n), config.min_size)
    if allowed is not None:
        cuts = [c for c in cuts if allowed[c]]
    while True:
        bounds = [0, *cuts, n]
        tested = []
        for i, c in enumerate(cuts):
            a, b = y[bounds[i] : c], y[c : bounds[i + 2]]
            if a.size < 2 or b.size < 2:
                tested.append((1.0, c, 0.0, 0.0, 0.0, a.size, b.size))
                continue
            t = pooled_difference(a, b, config.confidence)
            tested.append((t.p, c, t.estimate, t.low, t.high, a.size, b.size))
        failing = [t for t in tested if t[0] >= config.alpha]
        if not failing:
            return [
                Shift(c, math.exp(d), math.exp(lo), math.exp(hi), config.confidence, p, int(na), int(nb))
                for p, c, d, lo, hi, na, nb in tested
            ]
        cuts.remove(max(failing)[1])

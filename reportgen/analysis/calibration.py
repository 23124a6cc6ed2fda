"""Calibration by simulation: how often does an interval method call a difference that is not
there (A/A false-positive rate), and how often does it find a real +5 % (power)?

Part of reportgen.analysis (pure: returns numbers; scripts/calibrate.py writes them out).
Per-step series are AR(1): x_t = mu * (1 + cv * e_t), e_t = rho * e_{t-1} + sqrt(1 - rho^2) * z_t,
so each step has the stated coefficient of variation and lag-1 autocorrelation `rho`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from reportgen.analysis.interval import ratio_interval


@dataclass(frozen=True)
class SimSettings:
    rho: float = 0.5
    cv: float = 0.10
    steps: int = 180
    windows: int = 3
    sims: int = 1000
    effect: float = 0.05
    confidence: float = 0.95
    seed: int = 20260805


@dataclass(frozen=True)
class Rate:
    """A Monte-Carlo rate: hits / sims with its standard error."""

    method: str
    scenario: str  # "A/A" or "+5%"
    hits: int
    sims: int

    @property
    def rate(self) -> float:
        return self.hits / self.sims

    @property
    def mc_se(self) -> float:
        p = self.rate
        return math.sqrt(max(p * (1 - p), 1e-12) / self.sims)


def ar1(rng: np.random.Generator, n: int, *, rho: float, cv: float, mean: float = 100.0) -> np.ndarray:
    e = np.empty(n)
    z = rng.standard_normal(n)
    e[0] = z[0]  # start in the stationary distribution (unit variance)
    s = math.sqrt(1.0 - rho * rho)
    for t in range(1, n):
        e[t] = rho * e[t - 1] + s * z[t]
    return mean * (1.0 + cv * e)


def mann_whitney_significant(a: np.ndarray, b: np.ndarray, *, confidence: float) -> bool:
    """Two-sided Mann-Whitney U test on raw steps, as if steps were independent."""
    from scipy.stats import mannwhitneyu

    return bool(mannwhitneyu(a, b, alternative="two-sided").pvalue < 1.0 - confidence)


def _split(x: np.ndarray, windows: int) -> list[np.ndarray]:
    return list(np.array_split(x, windows))


def simulate(
    settings: SimSettings,
    methods: tuple[str, ...] = ("block-bootstrap", "batch-means", "mann-whitney"),
    *,
    replicates: int | None = None,
) -> list[Rate]:
    """Rates for each method under A/A (no effect) and under +effect. Deterministic given the seed."""
    rng = np.random.default_rng(settings.seed)
    hits = {(m, sc): 0 for m in methods for sc in ("A/A", f"+{settings.effect:.0%}")}
    for i in range(settings.sims):
        base = ar1(rng, settings.steps, rho=settings.rho, cv=settings.cv)
        same = ar1(rng, settings.steps, rho=settings.rho, cv=settings.cv)
        better = ar1(rng, settings.steps, rho=settings.rho, cv=settings.cv, mean=100.0 * (1 + settings.effect))
        for scenario, cand in (("A/A", same), (f"+{settings.effect:.0%}", better)):
            for m in methods:
                if m == "mann-whitney":
                    sig = mann_whitney_significant(base, cand, confidence=settings.confidence)
                else:
                    iv = ratio_interval(
                        [_split(base, settings.windows)],
                        [_split(cand, settings.windows)],
                        method=m,
                        confidence=settings.confidence,
                        seed=settings.seed + i,
                    )
                    sig = iv.significant
                hits[(m, scenario)] += int(sig)
    return [Rate(m, sc, h, settings.sims) for (m, sc), h in hits.items()]

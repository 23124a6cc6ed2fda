"""The decision design: when a comparison may be decided, and how wide its interval is at each look.

Part of reportgen.analysis (pure). The unit of evidence is the pair of runs (a baseline run and a
candidate run of one interleaved block), so a campaign "looks" at its data once per pair. Looking
after every pair and stopping as soon as an interval clears a threshold is only honest if the
interval is wide enough for all the looks together: a 95 % interval at each of ten looks would
exclude a true zero about a fifth of the time somewhere along the way. So the interval shown and
decided on is a *repeated confidence interval* (Jennison & Turnbull 1989): at every look of the
design it uses the same per-look level, chosen (Pocock 1977) so that the probability that any
look's interval misses the truth is the nominal 1 - confidence. Whatever look the campaign stops
at, for whatever reason (decided, budget, a resumed campaign adding pairs), the interval then
shown keeps its coverage.

- A fixed design (`[run] until = "fixed"`) looks once, at its planned number of pairs: the plain
  interval at `confidence`.
- A sequential design (`[run] until = "decided"`) looks after every pair from `min_pairs` to
  `max_pairs`, each look's t interval at one per-look level. That level is computed for the t
  statistics actually used (n - 1 degrees of freedom at n pairs), not converted from the normal
  Pocock constant: with normal pairs the joint law of the looks' t statistics does not depend on
  the mean or the spread, so the level whose smallest per-look p-value over the looks falls below
  it with probability 1 - confidence is found once per design by simulating that law
  (`t_look_tail`; 400 000 paths, a fixed seed, so every machine gets the same level; the levels of
  the designs met most often are committed in t_levels.json, written by scripts/t_levels.py with
  that same simulation, so a process looks them up instead of spending 0.1-4 s on each). The
  normal Pocock constant converted through t (the rule before) held 94.0 %, not 95 %, over 3-12
  pairs: with 2-11 degrees of freedom the t statistics' tails are not the normal's.

A campaign may not change its looks once one was taken (reportgen.specfile.model.resize_refusal): the looks already taken
spent their error rate at the old design's level (a fixed design spends all of it at its one look),
so continuing with more looks would call differences that are not there more often than the
confidence promises (5.5-6.6 % for "fixed 3, then until decided" or "repeats 3 -> 6" in
simulation). Resuming the same design (a budget or a stop ended a command) adds no look the design
did not plan and is always allowed (the rule lives in reportgen/specfile/model.py, resize_refusal,
which `reportgen run` applies before adding runs).

The levels are checked by simulation on the shipped designs in docs/calibration.md.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path

import numpy as np

from reportgen.analysis import document as doc
from reportgen.analysis.inference import normal_quantile, normal_sf, t_two_sided_p
from reportgen.analysis.inference import t_critical as t_critical
from reportgen.analysis.inference import t_one_sided as t_one_sided

GRID = 401  # points per look of the integration grid: the constant is exact to about 1e-4
T_PATHS = 400_000  # simulated paths behind a design's per-look t level: its error rate is exact to about 3e-4
T_SEED = 20261203
T_METHOD = 1  # the simulation behind t_look_tail: change it with the code, and t_levels.json is no longer used
MIN_PAIRS = 2  # the first look: two pairs decide only when they agree tightly (one degree of freedom, issue 43)
MAX_PAIRS = 16  # the shipped sequential design's last look (docs/calibration.md)
FUTILITY = 0.90  # one-sided level of the futility bound of a sequential design
# The fixed design each calibrated sequential design replaces (same error rates), measured by
# scripts/calibrate.py --fixed-equivalents, which writes this file (docs/calibration.md).
FIXED_EQUIVALENTS = Path(__file__).with_name("fixed_equivalents.json")
# Per-look t levels of the designs met most often, simulated by scripts/t_levels.py (t_look_tail).
T_LEVELS = Path(__file__).with_name("t_levels.json")


def _phi(x: np.ndarray) -> np.ndarray:
    out: np.ndarray = np.exp(-0.5 * x * x) / math.sqrt(2.0 * math.pi)
    return out


def _trapezoid(n: int, h: float) -> np.ndarray:
    w = np.full(n, h)
    w[0] = w[-1] = h / 2.0
    return w


def crossing_probability(looks: Sequence[int], c: float) -> float:
    """P(|S_k| >= c sqrt(n_k) at some look) for a sum S of independent standard normals observed
    after n_1 < n_2 < ... terms: the chance that a constant-level repeated interval misses a true
    zero at some look. Recursive numerical integration of the sub-density of paths still inside."""
    prev_grid: np.ndarray | None = None
    prev_dens: np.ndarray | None = None
    prev_n = 0
    for n in looks:
        half = c * math.sqrt(n)
        grid = np.linspace(-half, half, GRID)
        dn = n - prev_n
        sd = math.sqrt(dn)
        if prev_grid is None or prev_dens is None:
            dens = _phi(grid / sd) / sd
        else:
            w = _trapezoid(prev_grid.size, prev_grid[1] - prev_grid[0])
            kernel = _phi((grid[:, None] - prev_grid[None, :]) / sd) / sd
            dens = kernel @ (w * prev_dens)
        prev_grid, prev_dens, prev_n = grid, dens, n
    assert prev_grid is not None and prev_dens is not None
    inside = float(np.sum(_trapezoid(prev_grid.size, prev_grid[1] - prev_grid[0]) * prev_dens))
    return max(0.0, 1.0 - inside)


@lru_cache(maxsize=64)
def pocock_constant(looks: tuple[int, ...], alpha: float) -> float:
    """The constant c with P(any |Z_k| >= c) = alpha over the looks (two-sided), by bisection.
    One look: the normal quantile (1.95996 for alpha 0.05)."""
    if len(looks) <= 1:
        return normal_quantile(1.0 - alpha / 2.0)
    from scipy.optimize import brentq

    # Between the one-look quantile and the Bonferroni constant, which bounds it from above.
    lo, hi = normal_quantile(1.0 - alpha / 2.0), normal_quantile(1.0 - alpha / (2.0 * len(looks)))
    return float(brentq(lambda c: crossing_probability(looks, c) - alpha, lo, hi, xtol=1e-6))


def look_tail(constant: float) -> float:
    """Two-sided tail probability of one look at the boundary `constant`."""
    return 2.0 * normal_sf(constant)


@lru_cache(maxsize=64)
def t_look_tail(looks: tuple[int, ...], alpha: float, paths: int = T_PATHS) -> float:
    """The two-sided tail p of each look's t interval such that the chance that some look's interval
    misses the true mean is `alpha`, for t statistics on n - 1 degrees of freedom at a look of n
    pairs (a pair's log ratio normal; the law of the t statistics is free of its mean and spread).
    One look: `alpha` itself. Found as the `alpha` quantile of the smallest per-look p-value over
    `paths` simulated campaigns (common seed: deterministic; fewer only for planning): read from
    t_levels.json when that simulation's result is committed there, simulated otherwise."""
    looks = tuple(sorted({n for n in looks if n >= 2}))
    if len(looks) <= 1:
        return float(alpha)
    known = _t_levels().get(t_level_key(looks, alpha, paths))
    return known if known is not None else simulate_t_tail(looks, alpha, paths)


def t_level_key(looks: Sequence[int], alpha: float, paths: int) -> str:
    """How a simulated level is named in t_levels.json: paths, alpha and the looks."""
    return f"{paths} {alpha!r} {','.join(str(n) for n in looks)}"


@lru_cache(maxsize=1)
def _t_levels() -> dict[str, float]:
    """The committed levels, when they were simulated with this module's seed and method."""
    if not T_LEVELS.is_file():
        return {}
    data = json.loads(T_LEVELS.read_text(encoding="utf-8"))
    if data.get("seed") != T_SEED or data.get("method") != T_METHOD:
        return {}
    return {str(k): float(v) for k, v in data.get("levels", {}).items()}


def simulate_t_tail(looks: tuple[int, ...], alpha: float, paths: int) -> float:
    """t_look_tail's simulation for sorted looks of at least 2 pairs (two or more of them)."""
    rng = np.random.default_rng(T_SEED)
    last = looks[-1]
    chunks = []
    left = paths
    while left > 0:
        m = min(left, 50_000)
        left -= m
        z = rng.standard_normal((m, last))
        s1 = np.cumsum(z, axis=1)
        s2 = np.cumsum(z * z, axis=1)
        minp = np.ones(m)
        for n in looks:
            mean = s1[:, n - 1] / n
            var = np.maximum(s2[:, n - 1] - n * mean * mean, 1e-300) / (n - 1)
            stat = np.abs(mean) / np.sqrt(var / n)
            minp = np.minimum(minp, t_two_sided_p(stat, n - 1))
        chunks.append(minp)
    return float(np.quantile(np.concatenate(chunks), alpha))


def make(
    *,
    sequential: bool,
    looks: Sequence[int],
    min_pairs: int,
    confidence: float,
    min_effect: float,
    pool: bool,
    interleaved: bool,
    budget_minutes: float | None = None,
    prior_looks: Sequence[int] = (),
    paths: int = T_PATHS,
) -> doc.Design:
    """The design of a campaign: which looks may decide and at what level. `prior_looks`: pair
    counts at which an earlier design of the same campaign could decide (before it was resized):
    the repeated interval covers them too."""
    looks = sorted({*looks, *(n for n in prior_looks if n >= min_pairs)})
    tail = t_look_tail(tuple(looks), round(1.0 - confidence, 12), paths)
    return doc.Design(
        mode="sequential" if sequential else "fixed",
        min_pairs=min_pairs,
        max_pairs=max(looks),
        looks=looks,
        confidence=confidence,
        boundary=_normal_boundary(tail),
        look_confidence=1.0 - tail,
        futility=FUTILITY if sequential else None,
        min_effect=min_effect,
        pool=pool,
        interleaved=interleaved,
        budget_minutes=budget_minutes,
    )


def at_look(design: doc.Design, n: int) -> doc.Design:
    """The design as it applies to a look at `n` pairs: a look the design did not plan (a fixed
    campaign that got more pairs than planned, a sequential one past its maximum) widens the
    boundary to cover the looks from the first planned one to `n`."""
    if n <= design.max_pairs or n < design.looks[0]:
        return design
    looks = list(range(design.looks[0], n + 1)) if design.mode == "sequential" else [design.looks[0], n]
    tail = t_look_tail(tuple(looks), round(1.0 - design.confidence, 12))
    return design.model_copy(
        update={"looks": looks, "max_pairs": n, "boundary": _normal_boundary(tail), "look_confidence": 1.0 - tail}
    )


def last_look(design: doc.Design) -> int:
    """The pairs of the design's last decision: a sequential design's maximum, a fixed design's
    planned look (its first: a later one is only a look past the plan, which `at_look` covers)."""
    return design.max_pairs if design.mode == "sequential" else design.looks[0]


def is_last_look(design: doc.Design, n: int) -> bool:
    """Whether `n` pairs have reached the design's last decision: the verdict's words ("the design's
    last look came without it") and the next step ("do not merge on this evidence") ask the same."""
    return n >= last_look(design)


def _normal_boundary(tail: float) -> float:
    """The normal-scale constant with the same two-sided tail as a look (shown beside the level)."""
    return -normal_quantile(tail / 2.0)


def label(design: doc.Design) -> str:
    """The design in a few words: "sequential 2-16" (its first and last look), "fixed 3" (its one
    look); what the calibration tables and the re-analysis record call it."""
    if design.mode == "fixed":
        return f"fixed {design.looks[-1]}"
    return f"sequential {design.min_pairs}-{design.max_pairs}"


def design_key(design: doc.Design) -> str:
    """How a sequential design is named in FIXED_EQUIVALENTS: its looks, level, effect and pool."""
    return (
        f"pairs {design.min_pairs}-{design.max_pairs}, confidence {design.confidence:g}, "
        f"min_effect {design.min_effect:g}, pool {'on' if design.pool else 'off'}"
    )


@lru_cache(maxsize=1)
def _equivalents() -> dict[str, int]:
    if not FIXED_EQUIVALENTS.is_file():
        return {}
    data = json.loads(FIXED_EQUIVALENTS.read_text(encoding="utf-8"))
    return {str(k): int(v["fixed_pairs"]) for k, v in data.get("designs", {}).items()}


def fixed_equivalent(design: doc.Design) -> int | None:
    """Pairs per arm of the fixed design with the same false-decisive rate and the same power at
    twice the minimum effect as this sequential design, as calibrated; None for a fixed design or a
    design the calibration did not cover."""
    if design.mode != "sequential":
        return None
    return _equivalents().get(design_key(design))

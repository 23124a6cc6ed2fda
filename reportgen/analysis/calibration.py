"""Calibration by simulation of the designs reportgen ships: how often does a campaign declare a
difference that is not there (A/A false-decisive rate: accepted or rejected), how often does it
accept a real gain (power), and how many pairs does it spend?

Part of reportgen.analysis (pure: returns numbers; scripts/calibrate.py prints and writes them).
Every simulated campaign goes through the code the analysis runs on a real one (runlevel.py:
pooled_variance, look_stats, bounds, outcome; design.py: the boundary), batched over simulations.

The model of one run, as measured on H200 leases: per-step throughput is AR(1),
x_t = mu (1 + cv e_t), e_t = rho e_(t-1) + sqrt(1 - rho^2) z_t, the whole run is scaled by a
run offset (1 + offset z), and the machine may drift linearly over the campaign (`trend`: the
relative change from the first run of a full-length campaign to its last). A run's figure is the
mean of its window means (the GPU profile's 48 steps and windows 8-20, 21-33, 34-47 by default;
the CPU demo's 16 steps and windows 4-9, 10-15 with `CPU_STEPS`/`CPU_WINDOWS`).
The campaign runs as reportgen's runner does: interleaved blocks in alternating order, and in a
sequential design only the baseline and the still-open candidates run another block.

Conditions users meet besides the reference cell: candidates noisier than the baseline (`spread`:
their step noise and run offsets times that factor), heavy-tailed run offsets (`tails = "t3"`:
Student t with 3 degrees of freedom scaled to the same standard deviation), and blocks from several
machines of one class (`machines`: block b runs on machine b mod machines; every machine scales both
arms by its own offset, `machine_offset`, and its run noise by its own factor, spread evenly from 1
to `machine_noise`; `interaction`: the standard deviation of a candidate's gain from machine to
machine).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from reportgen.analysis import design as dz
from reportgen.analysis import document as doc
from reportgen.analysis import runlevel
from reportgen.vocab import Verdicts

GPU_WINDOWS = ((8, 20), (21, 33), (34, 47))
CPU_STEPS = 16  # the CPU demo's runs (scripts/recipes/default.toml): 16 steps, windows 4-9 and 10-15
CPU_WINDOWS = ((4, 9), (10, 15))


@dataclass(frozen=True)
class Scenario:
    """The machine and the truth of one simulated campaign."""

    rho: float = 0.5
    cv: float = 0.10
    offset: float = 0.03  # sd of a run's multiplicative offset
    trend: float = 0.0  # throughput drift from the first to the last run of a max_pairs campaign
    effect: float = 0.0  # true relative gain of every candidate (0: A/A)
    candidates: int = 1  # candidates against the baseline (the shipped default spec has 3)
    steps: int = 48
    windows: tuple[tuple[int, int], ...] = GPU_WINDOWS
    spread: float = 1.0  # the first candidate's run noise (steps and offsets) relative to the other arms'
    tails: str = "normal"  # run offsets: "normal" or "t3" (heavy-tailed, same standard deviation)
    machines: int = 1  # machines the blocks come from, in turn
    machine_offset: float = 0.0  # sd of a machine's multiplicative offset on every arm
    machine_noise: float = 1.0  # the noisiest machine's run noise relative to the quietest's
    interaction: float = 0.0  # sd of a candidate's gain from machine to machine (log scale)


@dataclass(frozen=True)
class Result:
    """Outcomes of the first candidate's comparison over `sims` campaigns."""

    design: str
    scenario: Scenario
    sims: int
    counts: dict[str, int] = field(default_factory=dict)  # final outcome name -> campaigns
    mean_pairs: float = 0.0  # pairs the first candidate's comparison ran
    mean_runs: float = 0.0  # formal runs the whole campaign made

    def rate(self, *outcomes: str) -> float:
        return sum(self.counts.get(o, 0) for o in outcomes) / self.sims

    def mc_se(self, *outcomes: str) -> float:
        p = self.rate(*outcomes)
        return math.sqrt(max(p * (1 - p), 1e-12) / self.sims)

    @property
    def false_decisive(self) -> float:
        """Accepted or rejected: a decision that is false when the truth is no change."""
        return self.rate(Verdicts.ACCEPTED, Verdicts.REJECTED)

    @property
    def power(self) -> float:
        return self.rate(Verdicts.ACCEPTED)

    @property
    def reject_power(self) -> float:
        return self.rate(Verdicts.REJECTED)


def ar1(rng: np.random.Generator, shape: tuple[int, ...], *, rho: float) -> np.ndarray:
    """Unit-variance AR(1) series along the last axis, started in the stationary distribution."""
    z = rng.standard_normal(shape)
    e = np.empty(shape)
    e[..., 0] = z[..., 0]
    s = math.sqrt(1.0 - rho * rho)
    for t in range(1, shape[-1]):
        e[..., t] = rho * e[..., t - 1] + s * z[..., t]
    return e


def campaign_data(rng: np.random.Generator, sc: Scenario, sims: int, blocks: int) -> tuple[np.ndarray, np.ndarray]:
    """(log run figures, window means) of every arm and block: shapes (sims, arms, blocks) and
    (sims, arms, blocks, windows). Arm 0 is the baseline."""
    arms = sc.candidates + 1
    machine = np.arange(blocks) % max(sc.machines, 1)
    noise = np.ones((arms, blocks))
    noise[1] *= sc.spread  # the counted candidate only: the others stay as quiet as the baseline
    if sc.machines > 1:
        noise *= np.linspace(1.0, sc.machine_noise, sc.machines)[machine][None, :]
    x = 1.0 + sc.cv * noise[None, :, :, None] * ar1(rng, (sims, arms, blocks, sc.steps), rho=sc.rho)
    mu = np.full(arms, 1.0 + sc.effect)
    mu[0] = 1.0
    if sc.tails == "t3":
        z = rng.standard_t(3, (sims, arms, blocks)) / math.sqrt(3.0)
    else:
        z = rng.standard_normal((sims, arms, blocks))
    offset = np.maximum(1.0 + sc.offset * noise[None] * z, 0.05)
    if sc.machines > 1:
        m_off = 1.0 + sc.machine_offset * rng.standard_normal((sims, sc.machines))
        offset = offset * np.maximum(m_off, 0.05)[:, None, machine]
        if sc.interaction > 0:
            inter = np.exp(sc.interaction * rng.standard_normal((sims, arms, sc.machines)))
            inter[:, 0] = 1.0
            offset = offset * inter[:, :, machine]
    # The runner's order: block b runs the arms forward when b is odd, backward when even.
    pos = np.zeros((arms, blocks))
    for b in range(blocks):
        order = range(arms) if b % 2 == 0 else range(arms - 1, -1, -1)
        for k, a in enumerate(order):
            pos[a, b] = b * arms + k
    drift = 1.0 + sc.trend * pos / max(arms * blocks - 1, 1)
    scale = mu[None, :, None] * offset * drift[None]
    wm = np.stack([x[..., s : e + 1].mean(axis=-1) for s, e in sc.windows], axis=-1) * scale[..., None]
    return np.log(wm.mean(axis=-1)), wm


def simulate(
    design: doc.Design,
    sc: Scenario,
    *,
    sims: int = 2000,
    seed: int = 20261201,
    before: doc.Design | None = None,
    machine_model: bool = True,
) -> Result:
    """Run `sims` campaigns of `design` under `sc` through the analysis' rules; the first
    candidate's comparison is counted (the others only shape the pool and the runs made).
    `before`: a resized campaign: the looks up to before.max_pairs are taken under `before` (its
    level, its outcomes stop a comparison), the later ones under `design`. `machine_model`: carry
    a flagged machine effect into the interval (runlevel.with_machines), as the analysis does;
    False shows what the plain paired t interval would do."""
    rng = np.random.default_rng(seed)
    blocks = design.max_pairs
    logs, wm = campaign_data(rng, sc, sims, blocks)
    arms = sc.candidates + 1
    final = np.full((sims, arms), -1, dtype=int)  # decided outcome per candidate (-1: open)
    stop = np.full((sims, arms), blocks, dtype=int)  # blocks each arm ran
    higher = True
    for n in range(1, blocks + 1):
        dsg = before if (before is not None and n <= before.max_pairs) else design
        sequential = dsg.mode == "sequential"
        at_look = n >= runlevel.first_look(dsg) and (sequential or n == dsg.looks[-1]) and n in dsg.looks
        if not at_look:
            continue
        for j in range(1, arms):
            open_ = final[:, j] < 0
            if not open_.any():
                continue
            d = logs[:, j, :n] - logs[:, 0, :n]
            pool_v = pool_df = None
            others = [k for k in range(1, arms) if k != j]
            if dsg.pool and len(others) >= 2:
                present = np.arange(n)[None, None, :] < stop[:, others][:, :, None]
                pool_v, pool_df = runlevel.pooled_variance(logs[:, others, :n], present)
            s = runlevel.look_stats(d, pool_v, pool_df)
            if sc.machines > 1 and machine_model:
                s, _ = runlevel.with_machines(s, runlevel.machine_stats(d, np.arange(n) % sc.machines))
            look_design = dz.at_look(dsg, n)
            b = runlevel.bounds(s, look_design)
            ch = wm[:, j, :n].mean(axis=1) / wm[:, 0, :n].mean(axis=1) - 1.0
            o = runlevel.outcome(
                s,
                b,
                look_design,
                higher=higher,
                windows_better=(ch > 0).all(axis=1),
                windows_worse=(ch < 0).all(axis=1),
            )
            decided = np.isin(o, runlevel.DECIDED) | (n == design.looks[-1])
            newly = open_ & decided
            final[newly, j] = o[newly]
            if design.mode == "sequential":
                stop[newly, j] = n
    still = final[:, 1] < 0
    final[still, 1] = runlevel.OPEN
    names = [runlevel.OUTCOME_NAMES[int(v)] for v in final[:, 1]]
    counts: dict[str, int] = {}
    for name in names:
        counts[name] = counts.get(name, 0) + 1
    # The baseline runs while any candidate does; every arm runs at least one block.
    stop[:, 0] = stop[:, 1:].max(axis=1)
    return Result(
        design=label(design),
        scenario=sc,
        sims=sims,
        counts=counts,
        mean_pairs=float(stop[:, 1].mean()),
        mean_runs=float(stop.sum(axis=1).mean()),
    )


def label(design: doc.Design) -> str:
    if design.mode == "fixed":
        return f"fixed {design.looks[-1]}"
    return f"sequential {design.min_pairs}-{design.max_pairs}"


def fixed_design(
    pairs: int, *, min_pairs: int = dz.MIN_PAIRS, min_effect: float = 0.05, pool: bool = False, confidence: float = 0.95
) -> doc.Design:
    return dz.make(
        sequential=False,
        looks=[pairs],
        min_pairs=min_pairs,
        confidence=confidence,
        min_effect=min_effect,
        pool=pool,
        interleaved=True,
    )


def sequential_design(
    min_pairs: int = 3, max_pairs: int = 12, *, min_effect: float = 0.05, pool: bool = False, confidence: float = 0.95
) -> doc.Design:
    return dz.make(
        sequential=True,
        looks=list(range(min_pairs, max_pairs + 1)),
        min_pairs=min_pairs,
        confidence=confidence,
        min_effect=min_effect,
        pool=pool,
        interleaved=True,
    )


def fixed_equivalent(
    seq: doc.Design,
    reference: Scenario,
    *,
    candidates: Sequence[int] = tuple(range(2, 21)),
    sims: int = 2000,
    seed: int = 20261201,
) -> tuple[int, Result, Result]:
    """The fixed design with the same error rates as `seq`: the fewest pairs whose power at twice
    the minimum effect reaches the sequential design's, in the reference scenario (the A/A rates
    of both are reported beside it). Returns (pairs, the sequential result, the fixed result)."""
    effect = 2 * seq.min_effect
    target = simulate(seq, Scenario(**{**reference.__dict__, "effect": effect}), sims=sims, seed=seed)
    last: Result | None = None
    for n in candidates:
        fixed = fixed_design(n, min_effect=seq.min_effect, pool=seq.pool, confidence=seq.confidence)
        last = simulate(fixed, Scenario(**{**reference.__dict__, "effect": effect}), sims=sims, seed=seed)
        if last.power >= target.power:
            return n, target, last
    assert last is not None
    return candidates[-1], target, last

"""Calibration by simulation of the designs reportgen ships: how often does a campaign declare a
difference that is not there (A/A false-decisive rate: accepted or rejected), how often does it
accept a real gain (power), and how many pairs does it spend?

Part of reportgen.analysis (pure: returns numbers; scripts/calibrate.py prints and writes them).
Every simulated campaign goes through the code the analysis runs on a real one (runlevel.py:
look_stats, bounds, outcome, machine_stats; design.py: the per-look level), batched over
simulations.

The model of one run, as measured on H200 leases: per-step throughput is AR(1),
x_t = mu (1 + cv e_t), e_t = rho e_(t-1) + sqrt(1 - rho^2) z_t, the whole run is scaled by a
run offset (1 + offset z), and the machine may drift linearly over the campaign (`trend`: the
relative change from the first run of a full-length campaign to its last). A run's figure is the
mean of its window means (the GPU profile's 48 steps and its declared windows after the burn-in,
24-35 and 36-47, by default; the CPU demo's 16 steps and windows with `CPU_STEPS`/`CPU_WINDOWS`).
The campaign runs as reportgen's runner does: interleaved blocks in alternating order, and in a
sequential design only the baseline and the still-open candidates run another block.

Conditions users meet besides the reference cell: candidates noisier than the baseline (`spread`:
their step noise and run offsets times that factor), heavy-tailed run offsets (`tails = "t3"`:
Student t with 3 degrees of freedom scaled to the same standard deviation), a seed per block (the
workload draws its data from a seed that is the same for every arm of a block: `block_effect`, a
throughput offset common to the arms of a block, which a pair cancels; `block_response`: a candidate
whose throughput moves more with the seed's work than the baseline's, which a pair does not), and
blocks from several machines of one class
(`machines`: block b runs on machine b mod machines, or on leases of `lease` blocks in turn; every
machine scales both arms by its own offset, `machine_offset`, and its run noise by its own factor,
spread evenly from 1 to `machine_noise`; the candidates' gain may differ by machine: fixed offsets
spread evenly over `ratio_offsets` (log scale), or random ones of standard deviation `interaction`).
`noise` scales every arm's step noise and run offset, to set the pairs' spread (0.05 % to 8 % in the
machine cells).

One campaign loop (`simulate`) with its stopping rule in one place (`_stops`): a comparison stops
at a look whose outcome is decided, or at the design's last look.
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

GPU_WINDOWS = (
    (24, 35),
    (36, 47),
)  # the GPU profile's declared windows after its burn-in (scripts/recipes/default.toml)
OLD_GPU_WINDOWS = ((8, 20), (21, 33), (34, 47))  # the windows before the burn-in was declared (issue 43)
CPU_STEPS = 16  # the CPU demo's runs (scripts/recipes/default.toml): 16 steps, windows 4-9 and 10-15
CPU_WINDOWS = ((4, 9), (10, 15))
WARMUP_FROM = 0.6  # a warming arm's first step runs at this share of its steady speed, rising linearly


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
    noise: float = 1.0  # every arm's step noise and run offset times this (the pairs' spread scales with it)
    block_effect: float = 0.0  # sd of a block's offset common to its arms (a seed per block)
    block_response: float = 1.0  # the counted candidate's throughput moves this many times the block's offset
    warmup: tuple[int, int] = (0, 0)  # steps the baseline and the candidates warm up over (from WARMUP_FROM)
    machines: int = 1  # machines the blocks come from, in turn
    lease: int = 0  # blocks per machine lease, machines in turn (0: block b on machine b mod machines)
    machine_offset: float = 0.0  # sd of a machine's multiplicative offset on every arm
    machine_noise: float = 1.0  # the noisiest machine's run noise relative to the quietest's
    ratio_offsets: float = 0.0  # the candidates' gains differ between machines by this (log), evenly spread
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
    pair_sd: float = 0.0  # the spread of the first candidate's pairs' log ratios (root mean variance)
    # Accepted when the true gain on the machines its pairs ran on (their pair-weighted mean) is not
    # positive, or rejected when it is not negative: a false decision for the claim the verdict makes.
    false_for_measured: float = 0.0
    machine_warned: float = 0.0  # share of campaigns accepted or rejected with a machine warning (machine_warning)

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


def machine_of(sc: Scenario, blocks: int) -> np.ndarray:
    """The machine each block runs on: in turn, or on leases of `sc.lease` blocks in turn."""
    k = max(sc.machines, 1)
    b = np.arange(blocks)
    return (b // sc.lease) % k if sc.lease > 0 else b % k


def campaign_data(
    rng: np.random.Generator, sc: Scenario, sims: int, blocks: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(log run figures, window means, the counted candidate's true log gain in each block) of every
    arm and block: shapes (sims, arms, blocks), (sims, arms, blocks, windows) and (sims, blocks).
    Arm 0 is the baseline; the true gain is log(1 + effect) plus its machine's own part."""
    arms = sc.candidates + 1
    machine = machine_of(sc, blocks)
    noise = np.full((arms, blocks), sc.noise)
    noise[1] *= sc.spread  # the counted candidate only: the others stay as quiet as the baseline
    if sc.machines > 1:
        noise *= np.linspace(1.0, sc.machine_noise, sc.machines)[machine][None, :]
    x = 1.0 + sc.cv * noise[None, :, :, None] * ar1(rng, (sims, arms, blocks, sc.steps), rho=sc.rho)
    if any(sc.warmup):
        ramp = np.ones((arms, sc.steps))
        for a in range(arms):
            w = sc.warmup[0 if a == 0 else 1]
            ramp[a, :w] = np.linspace(WARMUP_FROM, 1.0, w + 1)[:-1]
        x = x * ramp[None, :, None, :]
    mu = np.full(arms, 1.0 + sc.effect)
    mu[0] = 1.0
    if sc.tails == "t3":
        z = rng.standard_t(3, (sims, arms, blocks)) / math.sqrt(3.0)
    else:
        z = rng.standard_normal((sims, arms, blocks))
    offset = np.maximum(1.0 + sc.offset * noise[None] * z, 0.05)
    if sc.block_effect > 0:  # one seed per block: the same draw on every arm of the block
        seed = np.repeat(sc.block_effect * rng.standard_normal((sims, 1, blocks)), arms, axis=1)
        seed[:, 1] *= sc.block_response  # a candidate whose speed depends more (or less) on the seed's work
        offset = offset * np.maximum(1.0 + seed, 0.05)
    truth = np.full((sims, blocks), math.log1p(sc.effect))
    if sc.machines > 1:
        m_off = 1.0 + sc.machine_offset * rng.standard_normal((sims, sc.machines))
        offset = offset * np.maximum(m_off, 0.05)[:, None, machine]
        gain = np.zeros((sims, arms, sc.machines))
        if sc.ratio_offsets > 0:
            gain[:, 1:] += np.linspace(-sc.ratio_offsets / 2, sc.ratio_offsets / 2, sc.machines)
        if sc.interaction > 0:
            gain[:, 1:] += sc.interaction * rng.standard_normal((sims, arms - 1, sc.machines))
        offset = offset * np.exp(gain)[:, :, machine]
        truth = truth + gain[:, 1, machine]
    # The runner's order: block b runs the arms forward when b is odd, backward when even.
    pos = np.zeros((arms, blocks))
    for b in range(blocks):
        order = range(arms) if b % 2 == 0 else range(arms - 1, -1, -1)
        for k, a in enumerate(order):
            pos[a, b] = b * arms + k
    drift = 1.0 + sc.trend * pos / max(arms * blocks - 1, 1)
    scale = mu[None, :, None] * offset * drift[None]
    wm = np.stack([x[..., s : e + 1].mean(axis=-1) for s, e in sc.windows], axis=-1) * scale[..., None]
    return np.log(wm.mean(axis=-1)), wm, truth


MachineRule = str  # "plain": the analysis' rule since issue 44; "anova": issue 33's, the comparator


def issue33_rule(s: runlevel.LookStats, m: runlevel.MachineStats | None) -> runlevel.LookStats:
    """The machine rule before issue 44, kept as the calibration's comparator only: where a one-way
    ANOVA of the log ratios by machine flags (p < runlevel.MACHINE_LEVEL) and the random-effect
    variance is the larger, that variance with Satterthwaite's degrees of freedom (near 1 with two
    machines, however many pairs follow)."""
    if m is None:
        return s
    flagged = np.isfinite(m.p) & (m.p < runlevel.MACHINE_LEVEL)
    wider = flagged & np.isfinite(m.var) & (m.var > s.var)
    return runlevel.LookStats(
        s.n, s.mean, np.where(wider, m.var, s.var), np.where(wider, m.df, s.df), s.pooled & ~wider
    )


def _stops(outcome: np.ndarray, n: int, design: doc.Design) -> np.ndarray:
    """Where a comparison stops at a look of `n` pairs: its outcome is decided, or it is the
    design's last look. The one stopping rule of the simulated campaign."""
    stops: np.ndarray = np.isin(outcome, runlevel.DECIDED) | (n == design.looks[-1])
    return stops


def simulate(
    design: doc.Design,
    sc: Scenario,
    *,
    sims: int = 2000,
    seed: int = 20261201,
    before: doc.Design | None = None,
    machine_rule: MachineRule = "plain",
) -> Result:
    """Run `sims` campaigns of `design` under `sc` through the analysis' rules; the first
    candidate's comparison is counted (the others only shape the runs made).
    `before`: a resized campaign: the looks up to before.max_pairs are taken under `before` (its
    level, its outcomes stop a comparison), the later ones under `design`. `machine_rule`: "plain",
    the analysis' (the interval for the machines measured), or "anova", issue 33's rule, to compare."""
    rng = np.random.default_rng(seed)
    blocks = design.max_pairs
    logs, wm, truth = campaign_data(rng, sc, sims, blocks)
    machine = machine_of(sc, blocks)
    arms = sc.candidates + 1
    final = np.full((sims, arms), -1, dtype=int)  # decided outcome per candidate (-1: open)
    stop = np.full((sims, arms), blocks, dtype=int)  # blocks each arm ran
    warned = np.zeros(sims, dtype=bool)
    for n in range(1, blocks + 1):
        dsg = before if (before is not None and n <= before.max_pairs) else design
        if n < runlevel.first_look(dsg) or n not in dsg.looks:
            continue
        for j in range(1, arms):
            open_ = final[:, j] < 0
            if not open_.any():
                continue
            d = logs[:, j, :n] - logs[:, 0, :n]
            s = runlevel.look_stats(d)
            m = runlevel.machine_stats(d, machine[:n]) if sc.machines > 1 else None
            if machine_rule == "anova":
                s = issue33_rule(s, m)
            look_design = dz.at_look(dsg, n)
            ch = wm[:, j, :n].mean(axis=1) / wm[:, 0, :n].mean(axis=1) - 1.0
            o = runlevel.outcome(
                s,
                runlevel.bounds(s, look_design),
                look_design,
                higher=True,
                windows_better=(ch > 0).all(axis=1),
                windows_worse=(ch < 0).all(axis=1),
            )
            newly = open_ & _stops(o, n, design)
            final[newly, j] = o[newly]
            if j == 1 and m is not None:
                warned[newly] = runlevel.machine_warning(m, design.min_effect)[newly]
            if design.mode == "sequential":
                stop[newly, j] = n
    still = final[:, 1] < 0
    final[still, 1] = runlevel.OPEN
    counts: dict[str, int] = {}
    for v in final[:, 1]:
        name = runlevel.OUTCOME_NAMES[int(v)]
        counts[name] = counts.get(name, 0) + 1
    # The baseline runs while any candidate does; every arm runs at least one block.
    stop[:, 0] = stop[:, 1:].max(axis=1)
    d_all = logs[:, 1, :] - logs[:, 0, :]
    upto = np.arange(blocks)[None, :] < stop[:, 1:2]  # the pairs the counted comparison ran
    measured = (truth * upto).sum(axis=1) / upto.sum(axis=1)
    wrong = ((final[:, 1] == runlevel.ACCEPTED) & (measured <= 0)) | (
        (final[:, 1] == runlevel.REJECTED) & (measured >= 0)
    )
    return Result(
        design=dz.label(design),
        scenario=sc,
        sims=sims,
        counts=counts,
        mean_pairs=float(stop[:, 1].mean()),
        mean_runs=float(stop.sum(axis=1).mean()),
        pair_sd=float(np.sqrt(np.mean(d_all.var(axis=1, ddof=1)))) if blocks > 1 else float("nan"),
        false_for_measured=float(wrong.mean()),
        machine_warned=float((warned & np.isin(final[:, 1], (runlevel.ACCEPTED, runlevel.REJECTED))).mean()),
    )


def fixed_design(
    pairs: int, *, min_pairs: int = dz.MIN_PAIRS, min_effect: float = 0.05, pool: bool = False, confidence: float = 0.95
) -> doc.Design:
    return dz.make(
        sequential=False,
        looks=[pairs],
        min_pairs=min(min_pairs, pairs),
        confidence=confidence,
        min_effect=min_effect,
        pool=pool,
        interleaved=True,
    )


def sequential_design(
    min_pairs: int = dz.MIN_PAIRS,
    max_pairs: int = dz.MAX_PAIRS,
    *,
    min_effect: float = 0.05,
    pool: bool = False,
    confidence: float = 0.95,
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

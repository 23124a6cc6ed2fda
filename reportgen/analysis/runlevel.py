"""Run-level evidence: pairs of runs, the run-to-run variance, the interval at each look, and what
it says under the design's rules.

Part of reportgen.analysis (pure). What varies independently between two measurements of the same
configuration is the run: a run's steps share its rollouts, caches, clocks and the machine's state,
so on one H200 two runs of one arm differed by 5-10 % while their steps' noise promised a fraction
of that. The unit of evidence is therefore the run's figure (the mean of its window means of the
primary metric), and with interleaved blocks the *pair* of a reference run and a candidate run
made one after the other: their log ratio cancels whatever the machine did to both (fishtest
scores game pairs for the same reason). The interval is a t interval over the pairs' log ratios at
the design's per-look level (reportgen/analysis/design.py).

Each comparison's variance is its own pairs' (the plain paired t interval, n - 1 degrees of
freedom). Borrowing it from the campaign's other arms (`[analysis] pool = true`) is refused by the
spec: with a candidate three times noisier than the baseline it decided falsely 9.1-9.8 % of the
time behind the old F gate at 0.10 and still 5.3-5.4 % behind a gate at 0.5, for about one point of
power (docs/calibration.md). The pool's code below stays only as the record of that measurement.
Without the pool, the law of the looks' t statistics is known exactly, which is what makes the
per-look level exact (design.t_look_tail).

Pairs may come from several machines of one class (blocks on other leases or nodes). A block's
pair cancels what its machine adds to both arms, and the pairs' own variance already holds whatever
the gain differs from machine to machine as it shows in these pairs: the paired t over every pair
is an interval for the gain on *the machines measured* (the pair-weighted mean of their gains), and
that is the claim the verdict makes (`RunLevel.claim`). Whether every machine of the class gains as
much is another claim, which two or three machines cannot decide: it is reported beside the verdict,
never deciding it (`machine_effect`): the between-machine spread of the gain by its variance-
component estimate (one-way analysis of the log ratios by machine, moments estimate) with its
one-sided 90 % upper bound (Graybill and Wang's modified large-sample bound), and a warning when the
machines differ significantly by a spread that is large against the minimum effect. The rule before
(issue 33: a significant one-way ANOVA switched the interval to the random-effect variance with
Satterthwaite's degrees of freedom, which stay near 1 with two machines however many pairs follow)
widened a 0.5 % difference between two H100s to +53 % .. +106 % around +78 %; it is kept in
reportgen/analysis/calibration.py only as the comparator of the calibration tables.

The core functions take numpy arrays with any leading batch shape, so that scripts/calibrate.py
simulates thousands of campaigns through exactly the code the analysis runs on one.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from reportgen.analysis import design as dz
from reportgen.analysis import document as doc
from reportgen.analysis import inference
from reportgen.vocab import IntervalOutcome, Verdicts

HETEROGENEITY = 0.50  # level of the F test that refuses the pool when the pairs vary more than it allows
MACHINE_LEVEL = 0.10  # level of the test of a machine effect (the ratio differing between machines)
SPREAD_LEVEL = 0.90  # one-sided level of the upper bound on the gain's spread between machines

# Outcomes of a look, as integers for the vectorised rules, and their names in analysis.json.
TOO_FEW, OPEN, ACCEPTED, REJECTED, NO_CHANGE, FUTILITY, WINDOWS = range(7)
OUTCOME_NAMES: tuple[IntervalOutcome, ...] = (
    "too_few_pairs",
    "open",
    Verdicts.ACCEPTED,
    Verdicts.REJECTED,
    Verdicts.NO_CHANGE,
    "futility",
    "windows",
)
DECIDED = (ACCEPTED, REJECTED, NO_CHANGE, FUTILITY)


# ---------------------------------------------------------------- the variance


def pooled_variance(logs: np.ndarray, mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Residual variance of one run's log figure, and its degrees of freedom, under the additive
    model log y[arm, block] = arm effect + block effect + noise, fitted by least squares to the
    cells where `mask` is true. `logs` and `mask` have shape (..., arms, blocks); the results the
    leading shape. NaN variance where the model leaves no degree of freedom."""
    logs = np.asarray(logs, dtype=float)
    mask = np.asarray(mask, dtype=bool) & np.isfinite(logs)
    *lead, n_arms, n_blocks = logs.shape
    cells = n_arms * n_blocks
    arm_of = np.repeat(np.arange(n_arms), n_blocks)
    block_of = np.tile(np.arange(n_blocks), n_arms)
    design = np.zeros((cells, n_arms + n_blocks))
    design[np.arange(cells), arm_of] = 1.0
    design[np.arange(cells), n_arms + block_of] = 1.0
    m = mask.reshape(*lead, cells).astype(float)
    y = np.where(mask, logs, 0.0).reshape(*lead, cells)
    x = design * m[..., :, None]
    xtx = np.swapaxes(x, -1, -2) @ x
    beta = np.linalg.pinv(xtx) @ (np.swapaxes(x, -1, -2) @ y[..., :, None])
    resid = (y - (x @ beta)[..., 0]) * m
    rss = np.sum(resid * resid, axis=-1)
    rank = np.linalg.matrix_rank(xtx)
    df = m.sum(axis=-1) - rank
    with np.errstate(invalid="ignore", divide="ignore"):
        var = np.where(df >= 1, rss / np.maximum(df, 1), np.nan)
    return var, df.astype(float)


@dataclass(frozen=True)
class LookStats:
    """Mean log ratio of the pairs, the variance of one pair's log ratio and its degrees of freedom
    (arrays of the batch shape); `pooled` says where the pool's variance was used."""

    n: int
    mean: np.ndarray
    var: np.ndarray
    df: np.ndarray
    pooled: np.ndarray


def look_stats(d: np.ndarray, pool_var: np.ndarray | None = None, pool_df: np.ndarray | None = None) -> LookStats:
    """The statistics of pairs' log ratios `d` (shape (..., n)). `pool_var`/`pool_df`: the run
    variance (log scale) of the campaign's *other* arms and its degrees of freedom, independent of
    these pairs; a pair's log ratio has twice it. The two are combined, weighted by their degrees
    of freedom, unless the pairs vary more than the pool allows (a one-sided F test at
    HETEROGENEITY): then the pairs' own variance stands (the plain paired t interval). The test is
    one-sided on purpose: choosing the pairs' own variance because it came out *small* would pick
    the narrow intervals exactly when the pairs happen to agree, and call differences that are not
    there."""
    d = np.asarray(d, dtype=float)
    n = d.shape[-1]
    mean = d.mean(axis=-1)
    own = d.var(axis=-1, ddof=1) if n >= 2 else np.full(mean.shape, np.nan)
    own_df = np.full(mean.shape, float(n - 1))
    if pool_var is None or pool_df is None:
        return LookStats(n, mean, own, own_df, np.zeros(mean.shape, dtype=bool))
    pv = 2.0 * np.asarray(pool_var, dtype=float)
    pdf = np.asarray(pool_df, dtype=float)
    usable = np.isfinite(pv) & (pv > 0) & (pdf >= 1)
    with np.errstate(invalid="ignore", divide="ignore"):
        ratio = own / pv
        upper = inference.f_quantile(1.0 - HETEROGENEITY, np.maximum(own_df, 1), np.maximum(pdf, 1))
    disagree = (n >= 2) & np.isfinite(ratio) & (ratio > upper)
    use = usable & ~disagree
    own_ss = np.where(n >= 2, own * own_df, 0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        combined = (own_ss + pv * pdf) / (own_df + pdf)
    return LookStats(n, mean, np.where(use, combined, own), np.where(use, own_df + pdf, own_df), use)


@dataclass(frozen=True)
class MachineStats:
    """One-way analysis of variance of pairs' log ratios by machine (arrays of the batch shape):
    the F statistic and its p-value; the between-machine spread of the gain (the standard deviation
    of a machine's log gain about the class's, moments estimate floored at 0) with its one-sided
    SPREAD_LEVEL upper bound; and the random-effect variance of one pair's log ratio (n x the
    variance of the mean with machine as a random effect) with Satterthwaite's degrees of freedom,
    which only the calibration's comparator (the rule before issue 44) uses."""

    machines: int
    f: np.ndarray
    p: np.ndarray
    var: np.ndarray
    df: np.ndarray
    spread: np.ndarray
    spread_upper: np.ndarray


def machine_stats(d: np.ndarray, groups: Sequence[int] | np.ndarray) -> MachineStats | None:
    """The machine effect of pairs' log ratios `d` (shape (..., n)) whose machines are `groups`
    (length n, integer labels); None with fewer than two machines or no degree of freedom within
    them. Moments estimate (Searle): between-machine variance (MSB - MSW) / n0, floored at 0; its
    upper bound is Graybill and Wang's modified large-sample bound, which counts the uncertainty of
    both mean squares (with two machines MSB has one degree of freedom, so the bound is wide: the
    class is what two machines cannot pin down)."""
    d = np.asarray(d, dtype=float)
    g = np.asarray(groups)
    labels = sorted(set(g.tolist()))
    n = d.shape[-1]
    k = len(labels)
    if k < 2 or n - k < 1:
        return None
    mean = d.mean(axis=-1)
    ssb = np.zeros(mean.shape)
    ssw = np.zeros(mean.shape)
    sizes = []
    for lab in labels:
        idx = np.flatnonzero(g == lab)
        sizes.append(len(idx))
        sub = d[..., idx]
        mg = sub.mean(axis=-1)
        ssb = ssb + len(idx) * (mg - mean) ** 2
        ssw = ssw + ((sub - mg[..., None]) ** 2).sum(axis=-1)
    msb = ssb / (k - 1)
    msw = ssw / (n - k)
    with np.errstate(invalid="ignore", divide="ignore"):
        fstat = msb / msw
        p = inference.f_sf(fstat, k - 1, n - k)
    nn = np.asarray(sizes, dtype=float)
    n0 = (n - (nn * nn).sum() / n) / (k - 1)
    # The spread: sigma_u^2 = (MSB - MSW) / n0, and its MLS upper bound (Burdick & Graybill 1992, 3.2).
    alpha = 1.0 - SPREAD_LEVEL
    h1 = (k - 1) / inference.chi2_quantile(alpha, k - 1) - 1.0
    g2 = 1.0 - (n - k) / inference.chi2_quantile(1.0 - alpha, n - k)
    su2 = (msb - msw) / n0
    upper = su2 + np.sqrt((h1 * msb / n0) ** 2 + (g2 * msw / n0) ** 2)
    c = float(((nn / n) ** 2).sum())
    a = c / n0  # weight of MSB in the mean's variance
    b = 1.0 / n - c / n0  # weight of MSW (may be negative)
    su2_pos = msb > msw
    var_mean = np.where(su2_pos, a * msb + b * msw, msw / n)
    with np.errstate(invalid="ignore", divide="ignore"):
        df = np.where(
            su2_pos,
            var_mean**2 / ((a * msb) ** 2 / (k - 1) + (b * msw) ** 2 / (n - k)),
            float(n - k),
        )
    return MachineStats(
        k,
        fstat,
        p,
        n * var_mean,
        np.clip(df, 1.0, float(n - 1)),
        np.sqrt(np.maximum(su2, 0.0)),
        np.sqrt(np.maximum(upper, 0.0)),
    )


def machine_warning(m: MachineStats, min_effect: float) -> np.ndarray:
    """Where the gain differs between machines by a spread that matters: the one-way test flags it
    (p < MACHINE_LEVEL) and the estimated spread is at least half the minimum effect (log scale), so
    that a machine of the class one or two spreads away would gain less than the minimum effect, or
    more. A significant difference that is small against the minimum effect (0.3 % between two H100s
    whose pairs agree to 0.05 %) is reported, not warned about."""
    flagged = np.isfinite(m.p) & (m.p < MACHINE_LEVEL)
    result: np.ndarray = flagged & (m.spread >= 0.5 * math.log1p(min_effect))
    return result


# ---------------------------------------------------------------- the rules


@dataclass(frozen=True)
class Bounds:
    """The interval of the mean log ratio at one look (arrays), and the half-width of the one-sided
    futility bounds of the gain (log scale): the gain is at most g + futility_high and at least
    g - futility_high at the design's futility level."""

    low: np.ndarray
    high: np.ndarray
    futility_high: np.ndarray


def bounds(s: LookStats, design: doc.Design) -> Bounds:
    se = np.sqrt(s.var / s.n)
    t = dz.t_critical(1.0 - design.look_confidence, s.df)
    tf = dz.t_one_sided(design.futility if design.futility is not None else dz.FUTILITY, s.df)
    return Bounds(s.mean - t * se, s.mean + t * se, tf * se)


def outcome(
    s: LookStats,
    b: Bounds,
    design: doc.Design,
    *,
    higher: bool,
    windows_better: np.ndarray,
    windows_worse: np.ndarray,
) -> np.ndarray:
    """What the look says, by the rules of docs/analysis.md#verdicts, on the gain g (the log ratio,
    negated when lower is better) with interval [L, U] and minimum effect d = log(1 + min_effect):

    - accepted: L > 0, g >= d and every window better;
    - rejected: U < 0, g <= -d and every window worse (the mirror image);
    - no_change: -d < L and U < d (equivalence: the interval inside the minimum effect both ways);
    - futility (sequential designs): neither a gain nor a loss of d is still within reach: the
      one-sided futility bounds of g are inside (-d, d). A true loss is never stopped as futile: it
      goes on to be rejected;
    - windows: accepted or rejected but for a window going the other way;
    - open: none of these; too_few_pairs below design.min_pairs."""
    g = s.mean if higher else -s.mean
    lo, hi = (b.low, b.high) if higher else (-b.high, -b.low)
    d = math.log1p(design.min_effect)
    ok = np.isfinite(lo) & np.isfinite(hi)
    better = ok & (lo > 0) & (g >= d)
    worse = ok & (hi < 0) & (g <= -d)
    futile = ok & (g + b.futility_high < d) & (g - b.futility_high > -d)
    out = np.full(np.shape(g), OPEN, dtype=int)
    out = np.where(futile, FUTILITY, out)
    out = np.where(ok & (lo > -d) & (hi < d), NO_CHANGE, out)
    out = np.where(better & ~windows_better, WINDOWS, out)
    out = np.where(worse & ~windows_worse, WINDOWS, out)
    out = np.where(worse & windows_worse, REJECTED, out)
    out = np.where(better & windows_better, ACCEPTED, out)
    return np.where(s.n >= first_look(design), out, TOO_FEW)


def first_look(design: doc.Design) -> int:
    """The first pair count that may decide: design.min_pairs, or a fixed design's planned pairs."""
    return max(design.min_pairs, design.looks[0])


# ---------------------------------------------------------------- one comparison


@dataclass(frozen=True)
class RunFigure:
    """One finished run's figure: the mean of its window means, and the window means."""

    arm: str
    repeat: int
    path: str
    value: float
    windows: tuple[float | None, ...]
    started_utc: str | None = None
    machine: str | None = None  # the machine's fingerprint id (manifest.fingerprint_id), when recorded


def _pairs(ref: Mapping[int, RunFigure], cand: Mapping[int, RunFigure]) -> list[doc.Pair]:
    out = []
    for rep in sorted(set(ref) & set(cand)):
        r, c = ref[rep], cand[rep]
        first = None
        if r.started_utc and c.started_utc and r.started_utc != c.started_utc:
            first = c.started_utc < r.started_utc
        out.append(
            doc.Pair(
                repeat=rep,
                reference_run=r.path,
                candidate_run=c.path,
                reference=r.value,
                candidate=c.value,
                ratio=c.value / r.value,
                candidate_first=first,
                machine=r.machine if (c.machine is None or c.machine == r.machine) else None,
            )
        )
    return out


def _window_changes(
    pairs: Sequence[doc.Pair], ref: Mapping[int, RunFigure], cand: Mapping[int, RunFigure], n_windows: int
) -> list[float | None]:
    out: list[float | None] = []
    for w in range(n_windows):
        rv = [ref[p.repeat].windows[w] for p in pairs]
        cv = [cand[p.repeat].windows[w] for p in pairs]
        if any(v is None for v in (*rv, *cv)) or not pairs:
            out.append(None)
            continue
        out.append(float(np.mean(cv)) / float(np.mean(rv)) - 1.0)  # type: ignore[arg-type]
    return out


def _better(changes: Sequence[float | None], higher: bool) -> tuple[bool, bool]:
    known = [c for c in changes if c is not None]
    if not known or len(known) < len(changes):
        return False, False
    up = all(c > 0 for c in known)
    down = all(c < 0 for c in known)
    return (up, down) if higher else (down, up)


def pool_of(
    figures: Mapping[str, Mapping[int, RunFigure]], upto: int | None = None, *, leave_out: Sequence[str] = ()
) -> tuple[float, float] | None:
    """The run variance (log scale) and its degrees of freedom from the finished runs of every arm
    but `leave_out` (the comparison's own two arms, so that the pool is independent of its pairs),
    in blocks up to `upto` (all when None); None without a degree of freedom."""
    arms = [a for a, f in figures.items() if f and a not in leave_out]
    blocks = sorted({rep for a in arms for rep in figures[a] if upto is None or rep <= upto})
    if len(arms) < 2 or len(blocks) < 2:
        return None
    logs = np.full((len(arms), len(blocks)), np.nan)
    for i, a in enumerate(arms):
        for j, rep in enumerate(blocks):
            if rep in figures[a]:
                logs[i, j] = math.log(figures[a][rep].value)
    var, df = pooled_variance(logs, np.isfinite(logs))
    if not np.isfinite(var) or df < 1:
        return None
    return float(var), float(df)


def paired_look(
    d: Sequence[float] | np.ndarray,
    design: doc.Design,
    pool: tuple[float, float] | None = None,
) -> tuple[LookStats, Bounds, doc.Design]:
    """One look at the pairs' values `d` (one per pair, in block order; on the scale the interval is
    built on: log ratios for throughput, differences for a quality metric): the statistics, the
    interval at the design's level for a look at len(d) pairs, and that design. The one place a
    run-level interval is made, for every half of a verdict. It needs no machine labels: the
    interval is for the machines measured, each pair cancels its machine's offset, and the pairs'
    own variance (n - 1 degrees of freedom) holds how the gain differs between those machines, so
    the machines do not widen it (issue 44); how much they differ is `machine_effect`'s figure
    beside it."""
    row = np.asarray(d, dtype=float)[None, :]
    n = row.shape[-1]
    dsg = dz.at_look(design, n)
    if pool is not None:
        s = look_stats(row, np.array([pool[0]]), np.array([pool[1]]))
    else:
        s = look_stats(row)
    return s, bounds(s, dsg), dsg


def _look(
    pairs: Sequence[doc.Pair],
    n: int,
    pool: tuple[float, float] | None,
    design: doc.Design,
) -> tuple[LookStats, Bounds, doc.Design]:
    return paired_look(np.log([p.ratio for p in pairs[:n]]), design, pool)


def machine_groups(pairs: Sequence[doc.Pair]) -> list[int]:
    """Integer labels of the pairs' machines (an unrecorded machine is one label of its own)."""
    names = list(dict.fromkeys(p.machine or "" for p in pairs))
    return [names.index(p.machine or "") for p in pairs]


def claim_of(pairs: Sequence[doc.Pair]) -> str:
    """What an interval over `pairs` speaks for, in words: the machine or the machines measured."""
    k = len({p.machine or "" for p in pairs})
    return "the machine measured" if k <= 1 else f"the {k} machines measured"


def _machine_effect(pairs: Sequence[doc.Pair], min_effect: float, warnings: list[str]) -> doc.MachineEffect | None:
    """How the gain differs between the machines of the pairs, for the document (None from one
    machine): the one-way test, the spread with its upper bound, and a warning when the spread is
    large against the minimum effect (machine_warning)."""
    counts: dict[str, int] = {}
    for p in pairs:
        key = p.machine or "unrecorded"
        counts[key] = counts.get(key, 0) + 1
    if len(counts) < 2:
        return None
    d = np.log([p.ratio for p in pairs])[None, :]
    m = machine_stats(d, machine_groups(pairs))
    if m is None:
        return doc.MachineEffect(
            pairs_per_machine=counts,
            note=f"pairs from {len(counts)} machines, but none gave two pairs: how much the gain differs between "
            "them cannot be told from the pairs' own noise; the interval holds both (the machines measured)",
        )
    p_value = float(m.p[0])
    spread, upper = math.expm1(float(m.spread[0])), math.expm1(float(m.spread_upper[0]))
    flagged = bool(machine_warning(m, min_effect)[0])
    said = (
        f"the gain differs between the {len(counts)} machines by about {spread:.1%} (sd; at most {upper:.1%} at "
        f"{SPREAD_LEVEL:.0%}; one-way ANOVA p = {p_value:.3f})"
    )
    if flagged:
        warnings.append(
            f"{said}, large against the {min_effect:.0%} minimum effect: the interval speaks for these machines, and "
            "another machine of the class may gain less or more"
        )
        note = f"{said}: large against the minimum effect; the verdict holds for the machines measured"
    elif p_value < MACHINE_LEVEL:
        note = f"{said}: significant, but small against the {min_effect:.0%} minimum effect"
    else:
        note = f"{said}: no machine effect at the {MACHINE_LEVEL:.0%} level"
    return doc.MachineEffect(
        pairs_per_machine=counts,
        f=float(m.f[0]) if np.isfinite(m.f[0]) else None,
        p_value=p_value if np.isfinite(p_value) else None,
        spread=spread if math.isfinite(spread) else None,
        spread_upper=upper if math.isfinite(upper) else None,
        flagged=flagged,
        note=note,
    )


def _interval(
    s: LookStats, b: Bounds, design: doc.Design, n_ref: int, n_cand: int, warnings: list[str]
) -> doc.Interval:
    mean = float(s.mean[0])
    lo, hi = float(b.low[0]), float(b.high[0])
    finite = math.isfinite(lo) and math.isfinite(hi)
    looks = len(design.looks)
    method = "paired-t over pairs of runs" + (
        f", repeated interval over {looks} looks (one exact t level per look)" if looks > 1 else ""
    )
    return doc.Interval(
        estimate=math.exp(mean) if math.isfinite(mean) else None,
        low=math.exp(lo) if finite else None,
        high=math.exp(hi) if finite else None,
        confidence=design.confidence,
        method=method,
        n_baseline=n_ref,
        n_candidate=n_cand,
        pairs=s.n,
        df=float(s.df[0]) if math.isfinite(float(s.df[0])) and s.df[0] >= 1 else None,
        look_confidence=design.look_confidence,
        significant=finite and (lo > 0 or hi < 0),
        warnings=warnings,
    )


def _more_pairs(s: LookStats, design: doc.Design, *, higher: bool, windows: tuple[bool, bool]) -> int | None:
    """Pairs still needed if the mean and the spread stay as seen (degrees of freedom growing
    with the pairs); None beyond the design's maximum (a fixed design: 4 x min_pairs)."""
    if not np.isfinite(s.var[0]) or s.var[0] <= 0:
        return None
    last = design.max_pairs if design.mode == "sequential" else max(4 * design.min_pairs, s.n + 1)
    per_pair_df = float(s.df[0]) / max(s.n - 1, 1)
    for n in range(max(s.n + 1, design.min_pairs), last + 1):
        proj = LookStats(n, s.mean, s.var, np.array([max(1.0, per_pair_df * (n - 1))]), s.pooled)
        dsg = dz.at_look(design, n)
        o = outcome(
            proj,
            bounds(proj, dsg),
            dsg,
            higher=higher,
            windows_better=np.array([windows[0]]),
            windows_worse=np.array([windows[1]]),
        )
        if int(o[0]) in DECIDED:
            return n - s.n
    return None


def compare(
    ref: Mapping[int, RunFigure],
    cand: Mapping[int, RunFigure],
    *,
    reference: str,
    candidate: str,
    metric: str,
    design: doc.Design,
    higher: bool,
    n_windows: int,
    pool: Mapping[str, Mapping[int, RunFigure]] | None = None,
) -> doc.RunLevel:
    """The candidate's finished runs against the reference's, pair by pair (pairs matched by block),
    with the interval after each pair. `pool`: every arm's run figures, to borrow the variance from
    (design.pool); the looks use only the blocks seen by then."""
    pairs = _pairs(ref, cand)
    warnings: list[str] = []
    if not design.interleaved and pairs:
        warnings.append(
            "runs were not made in interleaved blocks: pairs are matched by repeat number, not by time, so "
            "drift between the arms is not cancelled"
        )
    window_changes = _window_changes(pairs, ref, cand, n_windows)
    wb, ww = _better(window_changes, higher)
    if len(pairs) == 0:
        return doc.RunLevel(reference=reference, metric=metric, window_changes=window_changes)
    looks: list[doc.Look] = []
    last: tuple[LookStats, Bounds, doc.Design] | None = None
    note = None
    for n in range(1, len(pairs) + 1):
        upto = pairs[n - 1].repeat
        pv = pool_of(pool, upto, leave_out=(reference, candidate)) if (pool is not None and design.pool) else None
        s, b, dsg = _look(pairs, n, pv, design)
        per_window = _window_changes(pairs[:n], ref, cand, n_windows)
        lb, lw = _better(per_window, higher)
        o = int(outcome(s, b, dsg, higher=higher, windows_better=np.array([lb]), windows_worse=np.array([lw]))[0])
        fh = float(b.futility_high[0])
        futility_ratio = futility_low = None
        if math.isfinite(fh):
            g = float(s.mean[0]) if higher else -float(s.mean[0])
            futility_ratio = math.exp(g + fh if higher else -(g + fh))
            futility_low = math.exp(g - fh if higher else -(g - fh))
        finite = bool(np.isfinite(b.low[0]) and np.isfinite(b.high[0]))
        looks.append(
            doc.Look(
                pairs=n,
                estimate=math.exp(float(s.mean[0])),
                low=math.exp(float(b.low[0])) if finite else None,
                high=math.exp(float(b.high[0])) if finite else None,
                futility_high=futility_ratio,
                futility_low=futility_low,
                outcome=OUTCOME_NAMES[o],
            )
        )
        last = (s, b, dsg)
        if n == len(pairs):
            if pv is None:
                note = None if design.pool is False else "no two other arms' runs to borrow the variance from"
            elif bool(s.pooled[0]):
                note = (
                    f"combined with the other arms' runs ({float(s.df[0]):.0f} degrees of freedom instead of {n - 1})"
                )
            else:
                note = "these pairs vary more than the other arms' runs: their own variance is used"
    assert last is not None
    s, b, dsg = last
    n_ref, n_cand = len(ref), len(cand)
    machine_effect = _machine_effect(pairs, design.min_effect, warnings)
    interval = _interval(s, b, dsg, n_ref, n_cand, warnings)
    variance: str = "none" if not np.isfinite(s.var[0]) else ("pooled" if bool(s.pooled[0]) else "pairs")
    final = looks[-1].outcome
    more = (
        None
        if final not in ("open", "too_few_pairs", "windows")
        else _more_pairs(s, dsg, higher=higher, windows=(wb, ww))
    )
    return doc.RunLevel(
        reference=reference,
        metric=metric,
        pairs=pairs,
        interval=interval,
        variance=variance,  # type: ignore[arg-type]
        variance_note=note if variance != "none" else None,
        looks=looks,
        window_changes=window_changes,
        outcome=final,
        more_pairs=more,
        machine_effect=machine_effect,
        claim=claim_of(pairs),
    )

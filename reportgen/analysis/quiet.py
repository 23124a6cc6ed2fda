"""Was the machine quiet while a run was measured? (part of reportgen.analysis, pure)

The sampler records, beside each run, CPU load outside the run's processes (host.parquet), and per
GPU the processes on it that are not the run's and its clock-event (throttle) reasons (gpu.parquet):
reportgen.capture.host and reportgen.capture.gpu. Run-to-run differences of 5-10 % are measured on
shared GPU leases; a disturbed run is one of their causes that can be seen and named.

A sample (tick) is disturbed by

* `cpu_load`: cores busy outside the run of at least max(`cpu_cores`, `cpu_machine_share` x the
  machine's cores);
* `gpu_process`: a process that is not the run's on a GPU the run can see;
* `gpu_throttle`: a GPU the run can see reporting a clock held down by power cap, hardware
  slowdown, sync boost, thermal slowdown (software or hardware) or power brake.

Only samples inside the measured windows' time span count. A run is flagged, with a warning, when a
kind disturbed at least `run_share` of its samples (and `min_samples` of them). One arm hit much more
than the other biases the comparison itself: when one arm's share of disturbed samples, in all or by
any one kind, exceeds the other's by `imbalance` or more (on `min_samples` disturbed samples at
least), the `quiet_machine` guardrail fails and the verdict is `invalid`.
The thresholds sit in `THRESHOLDS` (docs/analysis.md#quiet-machine).
"""

from __future__ import annotations

import functools
import weakref
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Final

import numpy as np
import pandas as pd

from reportgen.analysis import document as doc
from reportgen.analysis.check import FAIL, NA, PASS, GuardrailInput, Span, guardrail, which_runs
from reportgen.analysis.gpu import window_span
from reportgen.analysis.overlap import overlaps
from reportgen.store.run import StoredRun, parse_utc

ID = "quiet_machine"
TITLE = "Machine quiet during the runs (no other CPU load, GPU process or throttling)"
CPU: Final = "cpu_load"
GPU_PROCESS: Final = "gpu_process"
THROTTLE: Final = "gpu_throttle"
OTHER_RUN: Final = "other_run"
KINDS: tuple[doc.DisturbanceKind, ...] = (CPU, GPU_PROCESS, THROTTLE)
WORDS = {
    CPU: "CPU load outside the run",
    GPU_PROCESS: "another process on its GPU",
    THROTTLE: "a throttled GPU clock",
    OTHER_RUN: "another run on the machine",
}
# NVML clock-event reasons that hold a clock down (idle, application and display clocks do not count).
THROTTLE_REASONS = {
    0x4: "power cap",
    0x8: "hardware slowdown",
    0x10: "sync boost",
    0x20: "thermal slowdown (software)",
    0x40: "thermal slowdown (hardware)",
    0x80: "power brake",
}
THROTTLE_MASK = sum(THROTTLE_REASONS)


@dataclass(frozen=True)
class Thresholds:
    cpu_cores: float = 0.5  # cores busy outside the run that disturb a sample...
    cpu_machine_share: float = 0.05  # ...or this share of the machine's cores, whichever is more
    run_share: float = 0.10  # a kind that disturbed this share of a run's samples flags the run (a warning)
    min_samples: int = 2  # and at least this many
    imbalance: float = 0.20  # one arm's disturbed share above the other's by this much: invalid


THRESHOLDS = Thresholds()


def throttle_words(mask: int) -> str:
    return ", ".join(w for bit, w in THROTTLE_REASONS.items() if mask & bit) or "none"


@dataclass(frozen=True)
class Load:
    """One run's load samples: per tick which kinds disturbed it, inside the measured span or not."""

    t0: float | None  # time zero: the first sample (the GPU charts' zero)
    interval: float
    ticks: pd.DataFrame  # index t; columns in_span (bool), one bool per kind, cpu_other, and a detail per kind
    sampled: bool  # any load data at all (host rows, or GPU process/throttle columns)
    cpu_peak: float | None = None
    kinds: tuple[doc.DisturbanceKind, ...] = field(default=KINDS)

    # The figures below are read several times per run (its disturbances, each comparison's guardrail,
    # the warnings): each is computed once from the ticks, which nothing changes after `_load`.
    @functools.cached_property
    def _span_hits(self) -> np.ndarray:
        """[ticks in the span, kinds]: which kinds disturbed each tick of the span."""
        inside = self.ticks["in_span"].astype(bool).to_numpy()
        return np.column_stack([self.ticks[k].to_numpy(dtype=bool)[inside] for k in self.kinds]).reshape(
            int(inside.sum()), len(self.kinds)
        )

    def samples(self) -> int:
        """Ticks inside the span."""
        return int(self._span_hits.shape[0])

    def counts(self) -> dict[str, int]:
        per_kind = self._span_hits.sum(axis=0)
        return {k: int(c) for k, c in zip(self.kinds, per_kind, strict=True) if int(c)}

    def disturbed(self) -> int:
        return int(self._span_hits.any(axis=1).sum())

    def flagged(self, th: Thresholds = THRESHOLDS) -> list[str]:
        n = self.samples()
        return [k for k, c in self.counts().items() if n and c >= th.min_samples and c / n >= th.run_share]


def _visible(run: StoredRun) -> set[int] | None:
    """GPU indices the run could see (the sampler's header, kept in the manifest); None: all."""
    return run.manifest.gpu.visible_indices() or None


# Each run's Load per (first, last, thresholds), for as long as the run object lives: one analysis asks
# for the same run's load up to five times (its disturbances, the quiet-machine guardrail of each
# comparison it is in, the warnings), and a run's tables do not change once read.
_LOADS: weakref.WeakKeyDictionary[StoredRun, dict[tuple[int, int, Thresholds], Load]] = weakref.WeakKeyDictionary()


def load(run: StoredRun, first: int, last: int, th: Thresholds = THRESHOLDS) -> Load:
    """The run's ticks, each marked with what disturbed it (see the module docstring); computed once
    per run object, span and thresholds (callers only read it)."""
    memo = _LOADS.setdefault(run, {})
    key = (first, last, th)
    if key not in memo:
        memo[key] = _load(run, first, last, th)
    return memo[key]


def _load(run: StoredRun, first: int, last: int, th: Thresholds) -> Load:
    # Built as numpy columns and made a frame once: assigning into a frame by labels, column by
    # column, was most of an analysis' time per run.
    host = run.host if not run.host.empty else None
    gpu = run.gpu if not run.gpu.empty else None
    has_gpu_cols = gpu is not None and ("other_procs" in gpu or "throttle" in gpu)
    times = [f["t"].to_numpy(dtype=float) for f in (host, gpu) if f is not None]
    ts = np.unique(np.concatenate(times)) if times else np.empty(0)
    ts = ts[~np.isnan(ts)]
    if not len(ts):
        return Load(None, 1.0, pd.DataFrame(columns=["in_span", *KINDS, "cpu_other"]), sampled=False)
    interval = float(np.median(np.diff(ts))) if len(ts) > 1 else 1.0
    span = window_span(run, first, last)
    in_span = np.ones(len(ts), dtype=bool) if span is None else (ts >= span[0] - interval / 2) & (ts <= span[1])
    hit: dict[str, np.ndarray] = {k: np.zeros(len(ts), dtype=bool) for k in KINDS}
    detail: dict[str, np.ndarray] = {k: np.full(len(ts), None, dtype=object) for k in KINDS}
    cpu_other = np.full(len(ts), np.nan)
    peak = None
    if host is not None and "cpu_other" in host:
        other = host["cpu_other"].to_numpy(dtype=float)
        t = host["t"].to_numpy(dtype=float)
        rows = np.flatnonzero(~np.isnan(other) & ~np.isnan(t))
        _, first_of = np.unique(t[rows], return_index=True)  # a tick's first row, as the sampler wrote it
        rows = rows[np.sort(first_of)]
        count = host["cpu_count"].to_numpy(dtype=float)[rows] if "cpu_count" in host else np.ones(len(rows))
        busy = other[rows] >= np.maximum(th.cpu_cores, th.cpu_machine_share * np.where(np.isnan(count), 1.0, count))
        at = np.searchsorted(ts, t[rows])
        cpu_other[at] = other[rows]
        hit[CPU][at[busy]] = True
        tops = host["top_other"].to_numpy(dtype=object)[rows[busy]] if "top_other" in host else [None] * int(busy.sum())
        detail[CPU][at[busy]] = [
            f"{cores:.2f} cores busy outside the run{_heaviest_named(top)}"
            for cores, top in zip(other[rows[busy]], tops, strict=True)
        ]
        peak = float(other[rows].max()) if len(rows) else None
    if gpu is not None and has_gpu_cols:
        visible = _visible(run)
        g = gpu if visible is None else gpu[gpu["index"].isin(visible)]
        g = g[g["t"].notna()]
        at = np.searchsorted(ts, g["t"].to_numpy(dtype=float))
        gpu_index = g["index"].to_numpy()
        if "other_procs" in g:
            procs = g["other_procs"].to_numpy(dtype=float)
            busy = np.nan_to_num(procs, nan=0.0) > 0
            descs = g["other_desc"].to_numpy(dtype=object) if "other_desc" in g else np.full(len(g), None, dtype=object)
            _mark(
                hit[GPU_PROCESS],
                detail[GPU_PROCESS],
                at[busy],
                [
                    f"GPU {int(i)}: {d or str(int(n)) + ' process(es)'}"
                    for i, d, n in zip(gpu_index[busy], descs[busy], procs[busy], strict=True)
                ],
            )
        if "throttle" in g:
            masks = g["throttle"].fillna(0).astype("int64").to_numpy() & THROTTLE_MASK
            held = masks > 0
            words = [
                f"GPU {int(i)}: {throttle_words(int(m))}" for i, m in zip(gpu_index[held], masks[held], strict=True)
            ]
            _mark(hit[THROTTLE], detail[THROTTLE], at[held], words)
    index = pd.Index(ts, name="t")
    columns: dict[str, np.ndarray | pd.Series] = {"in_span": in_span}
    for k in KINDS:
        columns[k] = hit[k]
        columns[f"{k}:detail"] = pd.Series(detail[k], index=index, dtype=object)  # None where none: not a str column
    columns["cpu_other"] = cpu_other
    ticks = pd.DataFrame(columns, index=index)
    return Load(float(ts[0]), interval, ticks, sampled=host is not None or has_gpu_cols, cpu_peak=peak)


def _heaviest_named(top: object) -> str:
    """ "; heaviest: pid 4242 stress" from the sampler's `top_other`, or nothing when it named none."""
    return f"; heaviest: {top}" if isinstance(top, str) and not top.startswith("not ") else ""


def _mark(hit: np.ndarray, detail: np.ndarray, at: np.ndarray, details: list[str]) -> None:
    """Mark the ticks at positions `at` as disturbed (`hit`), each tick's `detail` its rows' details
    joined in row order (one row per GPU)."""
    joined: dict[int, list[str]] = {}
    for pos, text in zip(at.tolist(), details, strict=True):
        joined.setdefault(pos, []).append(text)
    for pos, texts in joined.items():
        hit[pos] = True
        detail[pos] = "; ".join(texts)


def episodes(ld: Load) -> list[doc.Disturbance]:
    """Consecutive disturbed ticks of one kind as one disturbance, in seconds after time zero."""
    out: list[doc.Disturbance] = []
    if ld.t0 is None:
        return out
    for k in KINDS:
        hit = ld.ticks.loc[ld.ticks[k].astype(bool).to_numpy()]
        if hit.empty:
            continue
        ts = hit.index.to_numpy(dtype=float)
        breaks = np.flatnonzero(np.diff(ts) > 1.5 * ld.interval) + 1
        for lo, hi in zip(np.r_[0, breaks], np.r_[breaks, len(ts)], strict=True):
            part = hit.iloc[lo:hi]
            details = [d for d in part[f"{k}:detail"] if isinstance(d, str)]
            if k == CPU:
                peak = part["cpu_other"].max()
                detail = f"up to {peak:.2f} cores busy outside the run" + _heaviest(details)
            else:
                detail = max(set(details), key=details.count) if details else WORDS[k]
            out.append(
                doc.Disturbance(
                    kind=k,
                    start_s=round(ts[lo] - ld.t0, 3),
                    end_s=round(ts[hi - 1] - ld.t0 + ld.interval, 3),
                    samples=int(hi - lo),
                    in_window=bool(part["in_span"].any()),
                    detail=detail,
                )
            )
    return sorted(out, key=lambda d: (d.start_s, d.kind))


def _heaviest(details: Sequence[str], most: int = 3) -> str:
    """ "; heaviest: pid 4242 stress (12 samples), cc1plus (2 samples)": the processes (or, several of
    one command, the command) a CPU episode's samples named, most often named first."""
    seen: dict[str, int] = {}
    for d in details:
        if "; heaviest: " in d:
            for named in d.split("; heaviest: ", 1)[1].split(", "):
                words = named.split()
                # "pid 4242 stress" or, for several processes of one command, "cc1plus" (the count varies)
                who = " ".join(words[:3]) if words[:1] == ["pid"] else (words[0] if words else named)
                seen[who] = seen.get(who, 0) + 1
    if not seen:
        return ""
    ranked = sorted(seen.items(), key=lambda kv: (-kv[1], kv[0]))[:most]
    if len(seen) == 1 and len(details) == 1:
        return f"; heaviest: {ranked[0][0]}"
    return "; heaviest: " + ", ".join(f"{who} ({n} sample{'s' if n > 1 else ''})" for who, n in ranked)


def disturbances(
    run: StoredRun, experiment: str, spans: Sequence[Span], first: int, last: int, th: Thresholds = THRESHOLDS
) -> tuple[list[doc.Disturbance], doc.RunLoad | None]:
    """The run's `disturbances` and `load` blocks of analysis.json: sampled load and overlapping runs."""
    ld = load(run, first, last, th)
    found = episodes(ld)
    zero = ld.t0 if ld.t0 is not None else parse_utc(run.manifest.started_utc)
    window = window_span(run, first, last)
    for o in overlaps(run, experiment, spans):
        if zero is None:
            break
        inside = window is None or (o.start < window[1] and window[0] < o.end)
        who = (
            f"{o.other.path} of this experiment" if o.other.experiment == experiment and o.other.path else o.other.label
        )
        found.append(
            doc.Disturbance(
                kind=OTHER_RUN,
                start_s=round(o.start - zero, 3),
                end_s=round(o.end - zero, 3),
                in_window=inside,
                detail=who,
            )
        )
    summary = None
    if ld.sampled:
        summary = doc.RunLoad(
            samples=ld.samples(),
            disturbed=ld.disturbed(),
            by_kind=ld.counts(),
            flagged=ld.flagged(th),
            cpu_other_peak=ld.cpu_peak,
        )
    return sorted(found, key=lambda d: (d.start_s, d.kind)), summary


def _share(
    runs: Sequence[StoredRun], first: int, last: int, th: Thresholds
) -> tuple[float | None, int, dict[str, int]]:
    """(disturbed share, samples, disturbed samples per kind) over an arm's runs."""
    n = hit = 0
    kinds: dict[str, int] = {}
    for r in runs:
        ld = load(r, first, last, th)
        if not ld.sampled:
            continue
        n += ld.samples()
        hit += ld.disturbed()
        for k, c in ld.counts().items():
            kinds[k] = kinds.get(k, 0) + c
    return (hit / n if n else None), n, kinds


def _what(kinds: dict[str, int]) -> str:
    return ", ".join(f"{WORDS[k]} in {c}" for k, c in sorted(kinds.items(), key=lambda kv: -kv[1])) or "nothing"


def check(ctx: GuardrailInput, th: Thresholds = THRESHOLDS) -> doc.GuardrailResult:
    """Pass (with a warning naming disturbed runs), fail when one arm was disturbed much more than the
    other, over the measured windows' span (first window's start to last window's end)."""
    baseline, candidate = ctx.baseline, ctx.candidate
    first, last = ctx.windows[0][1], ctx.windows[-1][2]
    (b_share, b_n, b_kinds), (c_share, c_n, c_kinds) = (_share(x, first, last, th) for x in (baseline, candidate))
    arms = (baseline[0].arm if baseline else "baseline", candidate[0].arm if candidate else "the candidate")
    if b_share is None or c_share is None:
        missing = [a for a, share in zip(arms, (b_share, c_share), strict=True) if share is None]
        return guardrail(
            ID,
            TITLE,
            NA,
            f"not checkable: no load samples for {' and '.join(missing)} (runs made before reportgen sampled load, "
            "or ingested from logs)",
        )
    shares = f"{arms[0]} disturbed in {b_share:.0%} of {b_n} samples ({_what(b_kinds)}), {arms[1]} in {c_share:.0%} of {c_n} ({_what(c_kinds)})"
    # One arm far more disturbed, on at least `min_samples` disturbed samples (not one stray tick): in
    # all, or by one kind. By kind, because a kind both arms share must not hide one that hits one arm
    # only: on an H200 both arms of a heavy workload ran at the GPU's power cap in every sample, and
    # only the candidate had another process on its GPU (docs/provenance.md#quiet-machine-on-a-gpu).
    b_hits, c_hits = {"": round(b_share * b_n)}, {"": round(c_share * c_n)}
    b_hits.update(b_kinds)
    c_hits.update(c_kinds)
    for kind in ("", *KINDS):
        b, c = b_hits.get(kind, 0), c_hits.get(kind, 0)
        if abs(b / b_n - c / c_n) < th.imbalance or max(b, c) < th.min_samples:
            continue
        worse = arms[0] if b / b_n > c / c_n else arms[1]
        runs = baseline if worse == arms[0] else candidate
        named = [
            f"{r.rel}: {d.detail}"
            for r in runs
            for d in episodes(load(r, first, last, th))
            if d.in_window and (not kind or d.kind == kind)
        ][:2]
        by = f" by {WORDS[kind]}" if kind else ""
        return guardrail(
            ID,
            TITLE,
            FAIL,
            f"{shares}: {worse} was disturbed{by} far more than the other arm, which biases the comparison"
            + (f" ({'; '.join(named)})" if named else ""),
            f"{runs[0].rel}/{'gpu' if kind in (GPU_PROCESS, THROTTLE) else 'host'}.parquet",
        )
    flagged = [
        f"{r.rel} ({', '.join(WORDS[k] for k in fl)})"
        for r in (*baseline, *candidate)
        if (fl := load(r, first, last, th).flagged(th))
    ]
    if flagged:
        return guardrail(
            ID,
            TITLE,
            PASS,
            f"warning: disturbed beyond {th.run_share:.0%} of their samples: {', '.join(flagged)}; both arms alike "
            f"({shares}), so the comparison stands but is noisier",
        )
    both = which_runs([*baseline, *candidate])
    if not (b_kinds or c_kinds):
        return guardrail(ID, TITLE, PASS, f"{both}: quiet in all {b_n + c_n} load samples of the measured span")
    return guardrail(ID, TITLE, PASS, f"{both}: {shares}; below the {th.run_share:.0%} of its samples that flags a run")


def warnings(runs: Sequence[StoredRun], first: int, last: int, th: Thresholds = THRESHOLDS) -> list[str]:
    """One line per formal run flagged as disturbed, for the document's warnings."""
    out = []
    for r in runs:
        ld = load(r, first, last, th)
        fl = ld.flagged(th)
        if not fl:
            continue
        n = ld.samples()
        counts = ld.counts()
        parts = [f"{WORDS[k]} in {counts[k]} of {n} samples" for k in fl]
        worst = [d for d in episodes(ld) if d.in_window and d.kind in fl]
        when = (
            f" (e.g. {worst[0].start_s:.0f}-{worst[0].end_s:.0f} s after its start: {worst[0].detail})" if worst else ""
        )
        out.append(f"{r.rel} was measured on a busy machine: {'; '.join(parts)}{when}")
    return out

"""What a candidate's warm-up costs per launch, against the arm its verdict is decided against, as
its own paired figure beside the steady-state verdict (issue 43).

Part of reportgen.analysis (pure). The verdict compares steady states: the declared windows start
after a burn-in that covers every arm's warm-up (docs/analysis.md#burn-in). What the burn-in leaves
out is still a cost of the arm, paid once per launch: on every GPU campaign A3 (smaller micro-batches)
runs at 62-76 % of its steady speed until step 22-23 while A1 settles by step 11-12. Folded into the
counted steps it would overstate the cost for a long run and hide it in the throughput figure; left
out it would not be said at all. So it is its own figure, measured as the throughput is, per pair of
runs:

- a run's **warm-up time** is the time its steps before the burn-in ends (the steps before the first
  window) took beyond what they would have taken at the run's own steady step time (the mean step
  time over its windows' steps): sum(step_time[s] for s < start) - start_count x steady. It is on the
  trainer's own step clock, the clock the verdict's throughput is measured on, and it counts what
  the arm does differently while it warms up (compilation, allocator growth, micro-batch shapes).
  The time from the process' start to its first step (model loading, the framework's set-up) is not
  in the step log and is left out: the manifest's wall-clock time holds it together with the
  runner's own set-up and teardown, which no arm's code changes;
- per pair (one block's reference run and candidate run), candidate minus reference, in seconds;
- the mean over the pairs with a plain t interval at the campaign's confidence (a descriptive
  figure beside the verdict: it decides nothing, so no per-look level is spent on it).

A user with runs of N steps adds it up: the candidate's total time per launch changes by about
warm-up difference + (N - burn-in) x the steady step time's change.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from reportgen.analysis import document as doc
from reportgen.analysis import inference
from reportgen.store.run import StoredRun, by_block
from reportgen.vocab import STEP_TIME

METHOD = (
    "per pair of runs, candidate minus reference: each run's step times before the first window, beyond its own "
    "mean step time over the windows; mean with a paired t interval"
)


def run_warmup_s(run: StoredRun, windows: Sequence[tuple[str, int, int]], key: str = STEP_TIME) -> float | None:
    """One run's warm-up time in seconds (module docstring); None without step times before the
    first window or inside the windows."""
    if not windows or key not in run.steps.columns:
        return None
    start = min(s for _, s, _ in windows)
    col = run.steps[key].dropna()
    early = col[col.index < start].to_numpy(dtype=float)
    steady = np.concatenate([np.asarray(run.series(key, s, e), dtype=float) for _, s, e in windows])
    early, steady = early[np.isfinite(early)], steady[np.isfinite(steady)]
    if not len(early) or not len(steady):
        return None
    return float(early.sum() - len(early) * steady.mean())


def compare(
    ref: Sequence[StoredRun],
    cand: Sequence[StoredRun],
    windows: Sequence[tuple[str, int, int]],
    *,
    reference: str,
    confidence: float,
) -> doc.WarmupCost | None:
    """The candidate's warm-up time per launch against `reference`'s, pair by pair (runs matched by
    block); None when no pair has step times on both sides."""
    if not windows:
        return None
    pairs = []
    for r, c in by_block(ref, cand):
        rs, cs = run_warmup_s(r, windows), run_warmup_s(c, windows)
        if rs is None or cs is None:
            continue
        pairs.append(doc.WarmupPair(repeat=c.repeat, reference_s=rs, candidate_s=cs, difference_s=cs - rs))
    if not pairs:
        return None
    diffs = np.array([p.difference_s for p in pairs])
    mean = float(diffs.mean())
    low = high = None
    if len(diffs) >= 2:
        iv = inference.mean_interval(diffs, confidence)
        low, high = iv.low, iv.high
    start = min(s for _, s, _ in windows)
    return doc.WarmupCost(
        reference=reference,
        burn_in=start,
        estimate_s=mean,
        low_s=low,
        high_s=high,
        confidence=confidence,
        pairs=pairs,
        method=METHOD,
    )

"""Do the declared windows hold every run's steps? If not, say which run, which steps, which window.

Part of reportgen.analysis (pure). A window that holds no step of some run leaves that arm
without a value there, and the interval cannot be computed: "no finite values in some window of
an arm" names neither the run nor the cause. The usual cause is a run whose steps are elsewhere:
a run resumed from a checkpoint (`--load`: steps 120-149 against windows 6-29), or a run shorter
than the windows. `missed_windows` names the runs, their step ranges and the windows they miss,
and offers windows inside the steps every run has, so the next step is a spec edit, not more
repeats.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from reportgen.store.run import StoredRun

Windows = Sequence[tuple[str, int, int]]


@dataclass(frozen=True)
class RunSpan:
    """The steps of one run where the primary metric has a value."""

    path: str  # "A1/1"
    first: int
    last: int
    resumed_from: int | None = None  # the checkpoint iteration the run resumed from, when it did

    def steps_text(self) -> str:
        """ "steps 120-149 (resumed from iteration 119)"."""
        resumed = f" (resumed from iteration {self.resumed_from})" if self.resumed_from is not None else ""
        return f"steps {self.first}-{self.last}{resumed}"


@dataclass(frozen=True)
class Gap:
    """Windows that miss runs: the cause in words and windows that would hold every run's steps
    (empty when the runs share no steps at all)."""

    cause: str
    suggested: tuple[tuple[str, int, int], ...]

    def toml(self) -> str:
        """The suggested windows as the spec's `[analysis] windows` line."""
        items = ", ".join(f'{{name = "{n}", start = {s}, end = {e}}}' for n, s, e in self.suggested)
        return f"windows = [{items}]"


def resumed_from(run: StoredRun) -> int | None:
    """The checkpoint iteration a run resumed from, from its manifest's lifecycle (ingest)."""
    return next((a.resumed_from_iteration for a in run.manifest.attempts if a.resumed_from_iteration is not None), None)


def spans(runs: Sequence[StoredRun], key: str) -> list[RunSpan]:
    """Each run's steps with a finite `key` value (runs without any are left out: a metric never
    logged is another cause, `verdict.missing_metric_cause`'s)."""
    out = []
    for r in runs:
        if key not in r.steps.columns:
            continue
        col = r.steps[key]
        finite = col[np.isfinite(col.to_numpy(dtype=float))]
        steps = [int(i) for i in finite.index]
        if steps:
            out.append(RunSpan(r.rel, min(steps), max(steps), resumed_from(r)))
    return out


def _and(parts: Sequence[str]) -> str:
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + f" and {parts[-1]}"


def _words(missed: Sequence[tuple[str, int, int]]) -> str:
    return _and([f"{n} (steps {s}-{e})" for n, s, e in missed])


def _split(first: int, last: int, n: int) -> tuple[tuple[str, int, int], ...]:
    """`n` windows of (nearly) equal length over first..last, W1..Wn (fewer if there are fewer steps)."""
    n = max(1, min(n, last - first + 1))
    size = (last - first + 1) / n
    bounds = [first + round(i * size) for i in range(n + 1)]
    return tuple((f"W{i + 1}", bounds[i], bounds[i + 1] - 1) for i in range(n))


def missed_windows(runs: Sequence[RunSpan], windows: Windows, warmup: int) -> Gap | None:
    """None when every window holds at least one step of every run; else the `Gap`. The
    suggested windows start `warmup` steps after the latest first step (a run's first steps
    after a start or a resume warm up as step 0 does) and end at the earliest last step, split
    into as many windows as were declared."""
    grouped: dict[tuple[str, str], list[str]] = {}  # runs with the same steps missing the same windows: one phrase
    for r in runs:
        missed = [(n, s, e) for n, s, e in windows if r.last < s or r.first > e]
        if missed:
            grouped.setdefault((r.steps_text(), _words(missed)), []).append(r.path)
    if not grouped:
        return None
    misses = [f"{_and(paths)} ran {steps}: no step in window {missed}" for (steps, missed), paths in grouped.items()]
    first = max(r.first for r in runs) + warmup
    last = min(r.last for r in runs)
    if first <= last:
        suggested = _split(first, last, len(windows))
        offer = f"windows inside the steps every run has: {', '.join(f'{n} {s}-{e}' for n, s, e in suggested)}"
    else:
        suggested = ()
        ranges = ", ".join(f"{r.path} {r.first}-{r.last}" for r in runs)
        warm = f" past {warmup} warm-up step(s)" if warmup else ""
        offer = f"the runs share no step{warm} ({ranges}): no window can hold them all; run them over the same steps"
    return Gap("; ".join(misses) + f"; {offer}", suggested)

"""GPU utilization and peak memory inside the windows' time span.

Part of reportgen.analysis (pure). The 1 Hz samples carry wall-clock time, the metrics carry step
numbers; a step's end time is placed by anchoring the last logged step at the run's end and
walking back by `perf/step_time` (start-up and warm-up sit before the first window, so anchoring
at the end keeps them out). Without step times, every sample of the run is used, with a note.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

import numpy as np
import pandas as pd

from reportgen.store.run import StoredRun, parse_utc
from reportgen.vocab import STEP_TIME


def window_span(run: StoredRun, first: int, last: int) -> tuple[float, float] | None:
    """(start, end) in epoch seconds of steps first..last, or None if it cannot be placed."""
    end = parse_utc(run.manifest.ended_utc)
    if end is None or STEP_TIME not in run.steps.columns:
        return None
    col = run.steps[STEP_TIME].sort_index()
    values = col.to_numpy(dtype=float)
    finite = np.isfinite(values)
    st, steps = values[finite], col.index.to_numpy()[finite]
    if not len(st):
        return None
    # Cumulative time from each step's start to the end of the last logged step (numpy arrays, not
    # Series: the analysis asks this for every run several times, and the sum is the same sequential one).
    tail = np.cumsum(st[::-1])[::-1]
    ends = end - (tail - st)
    starts = ends - st
    inside = (steps >= first) & (steps <= last)
    if not inside.any():
        return None
    return float(starts[inside].min()), float(ends[inside].max())


def summarize_gpu(runs: Sequence[StoredRun], first: int, last: int) -> dict[str, Any]:
    """The arm's `gpu` block of analysis.json."""
    frames, notes = [], []
    for r in runs:
        g = r.gpu
        if g.empty:
            continue
        span = window_span(r, first, last)
        if span is None:
            notes.append(f"{r.rel}: no step times, all samples used")
            frames.append(g)
        else:
            frames.append(g[(g["t"] >= span[0]) & (g["t"] <= span[1])])
    frames = [f for f in frames if not f.empty]
    if not frames:
        return {"available": False, "util_mean": None, "per_gpu": [], "samples": 0, "notes": notes}
    g = pd.concat(frames, ignore_index=True)
    per_gpu = []
    for idx, part in g.groupby("index", sort=True):
        per_gpu.append(
            {
                "index": int(cast(int, idx)),
                "uuid": str(part["uuid"].iloc[0]) if "uuid" in part else None,
                "name": str(part["name"].iloc[0]) if "name" in part else None,
                "util_mean": float(part["util_gpu"].mean()),
                "mem_peak_mib": float(part["mem_used_mib"].max()),
                "mem_total_mib": float(part["mem_total_mib"].max()) if "mem_total_mib" in part else None,
            }
        )
    return {
        "available": True,
        "util_mean": float(g["util_gpu"].mean()),
        "per_gpu": per_gpu,
        "samples": len(g),
        "notes": notes,
    }

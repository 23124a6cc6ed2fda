"""Each run's own figures for the history (analysis/run_figures.py): computed by the analysis from the
run's steps and GPU samples and stored in analysis.json, so the history never opens a run's tables."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from reportgen import vocab
from reportgen.analysis.run_figures import PEAK_METHOD, WITHIN_METHOD, peak_memory, run_figures, within_run
from reportgen.store.run import Manifest, StoredRun

WINDOWS = (("W1", 2, 5), ("W2", 6, 9))


def _run(values: list[float], *, status: str = "complete", role: str = "formal", gpu: pd.DataFrame | None = None):
    steps = np.arange(len(values))
    metrics = pd.concat(
        [
            pd.DataFrame({"step": steps, "key": vocab.STEP_RESP_TOKEN_PER_S, "value": values, "source": "console"}),
            pd.DataFrame({"step": steps, "key": vocab.STEP_TIME, "value": 1.0, "source": "console"}),
        ],
        ignore_index=True,
    )
    manifest = Manifest.create({"status": status, "role": role, "ended_utc": "2026-12-01T10:00:10Z"})
    return StoredRun("A1", 1, manifest, metrics, gpu=gpu if gpu is not None else pd.DataFrame())


def test_the_within_run_interval_is_the_mean_of_window_means_with_each_windows_variance() -> None:
    rng = np.random.default_rng(4)
    w1, w2 = rng.normal(100, 2, 40), rng.normal(104, 2, 40)
    fig = within_run([w1, w2])
    assert fig is not None and fig.value == pytest.approx((w1.mean() + w2.mean()) / 2) and fig.n == 80
    assert fig.low is not None and fig.high is not None and fig.low < fig.value < fig.high
    # white noise: about 1.96 x sqrt(var/40 + var/40) / 2 either side
    assert (fig.high - fig.low) / 2 == pytest.approx(1.96 * math.sqrt(2 * 4 / 40) / 2, rel=0.5)
    assert within_run([w1, np.array([])]) is None  # an empty window: no figure
    assert within_run([np.array([3.0])]).low is None  # one step: a value, no interval


def test_a_complete_formal_run_gets_its_primary_step_time_and_peak_memory() -> None:
    t0 = pd.Timestamp("2026-12-01T10:00:00Z").timestamp()
    gpu = pd.DataFrame({"t": t0 + np.arange(11.0), "index": 0, "mem_used_mib": [100.0] * 5 + [900.0] + [100.0] * 5})
    run = _run([float(v) for v in range(10, 20)], gpu=gpu)
    figs = {f.metric: f for f in run_figures(run, vocab.STEP_RESP_TOKEN_PER_S, 14.25, WINDOWS)}
    assert list(figs) == [vocab.STEP_RESP_TOKEN_PER_S, vocab.STEP_TIME, vocab.PEAK_GPU_MEMORY]
    primary = figs[vocab.STEP_RESP_TOKEN_PER_S]
    assert primary.value == 14.25 and primary.method == WITHIN_METHOD and primary.confidence == 0.95 and primary.n == 8
    assert figs[vocab.STEP_TIME].value == 1.0
    mem = figs[vocab.PEAK_GPU_MEMORY]
    assert (mem.value, mem.low, mem.method) == (900.0, None, PEAK_METHOD)
    assert peak_memory(_run([1.0] * 10), 2, 9) is None  # no GPU samples


def test_failed_interrupted_and_profiler_runs_have_none() -> None:
    values = [float(v) for v in range(10)]
    for run in (_run(values, status="failed"), _run(values, status="interrupted"), _run(values, role="profile")):
        assert run_figures(run, vocab.STEP_RESP_TOKEN_PER_S, None, WINDOWS) == []
    assert run_figures(_run(values), vocab.STEP_RESP_TOKEN_PER_S, None, ()) == []

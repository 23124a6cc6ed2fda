"""Windows that miss a run say which run, which steps and which window, and offer windows that fit."""

from __future__ import annotations

import numpy as np
import pandas as pd

from reportgen.analysis.coverage import Gap, RunSpan, missed_windows, spans
from reportgen.store.run import Manifest, StoredRun

WINDOWS = [("W1", 6, 15), ("W2", 16, 29)]


def test_windows_holding_every_run_are_no_gap() -> None:
    assert missed_windows([RunSpan("baseline/1", 0, 29), RunSpan("A1/1", 2, 29)], WINDOWS, 2) is None
    # One step of a run inside a window is enough: a short window holds what it holds.
    assert missed_windows([RunSpan("A1/1", 0, 6)], [("W1", 6, 15)], 0) is None


def test_resumed_runs_are_named_with_their_steps_and_windows_offered() -> None:
    runs = [RunSpan("baseline/1", 120, 149, 119), RunSpan("A1/1", 120, 149, 119)]
    gap = missed_windows(runs, WINDOWS, 6)
    assert gap == Gap(
        "baseline/1 and A1/1 ran steps 120-149 (resumed from iteration 119): no step in window W1 (steps 6-15) and "
        "W2 (steps 16-29); windows inside the steps every run has: W1 126-137, W2 138-149",
        (("W1", 126, 137), ("W2", 138, 149)),
    )
    assert gap.toml() == 'windows = [{name = "W1", start = 126, end = 137}, {name = "W2", start = 138, end = 149}]'


def test_a_short_run_misses_the_late_window() -> None:
    gap = missed_windows([RunSpan("baseline/1", 0, 29), RunSpan("A1/1", 0, 13)], WINDOWS, 2)
    assert gap is not None
    assert gap.cause.startswith("A1/1 ran steps 0-13: no step in window W2 (steps 16-29); ")
    assert gap.suggested == (("W1", 2, 7), ("W2", 8, 13))


def test_runs_that_share_no_step_get_no_windows() -> None:
    gap = missed_windows([RunSpan("baseline/1", 0, 29), RunSpan("A1/1", 120, 149, 119)], WINDOWS, 2)
    assert gap is not None and gap.suggested == ()
    assert gap.cause.endswith(
        "the runs share no step past 2 warm-up step(s) (baseline/1 0-29, A1/1 120-149): no window can hold them "
        "all; run them over the same steps"
    )


def test_spans_are_the_steps_with_a_primary_value() -> None:
    k = pd.DataFrame(
        {"step": range(120, 125), "key": "k", "value": [np.nan, 1.0, 2.0, np.inf, np.nan], "source": "console"}
    )
    other = pd.DataFrame({"step": [0], "key": "other", "value": [1.0], "source": "console"})  # never logged k
    resumed = {"ingest": {"lifecycle": {"attempts": [{"resumed_from_iteration": 119, "start_step": 120}]}}}
    runs = [StoredRun("A1", 1, Manifest.create(resumed), k), StoredRun("A1", 2, metrics=other)]
    assert spans(runs, "k") == [RunSpan("A1/1", 121, 122, 119)]

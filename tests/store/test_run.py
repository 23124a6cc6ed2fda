"""The one type of a run as read (store.run.StoredRun): its steps table derived from the stored long
table, the values logged non-finite, the analysis' added columns, and a run folder with files
missing read into it (store.run_folder)."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import numpy as np
import pandas as pd

from reportgen.store import layout
from reportgen.store.run import StoredRun, by_block, parse_utc, wide_table
from reportgen.store.run_folder import read_run_folder
from tests.analysis.builder import FakeArm, make_experiment


def _long(rows: list[tuple[int, str, float, str]]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=["step", "key", "value", "source"])


def test_wide_table_prefers_console_values() -> None:
    wide = wide_table(_long([(0, "t", 2.0, "tensorboard"), (0, "t", 9.0, "console"), (1, "t", 3.0, "tensorboard")]))
    assert wide.loc[0, "t"] == 9.0 and wide.loc[1, "t"] == 3.0


def test_wide_table_breaks_ties_by_row_order_and_ranks_a_missing_source_as_an_unlisted_one() -> None:
    """Sources not in the priority, and a row without one, all rank after the listed ones; among equal
    ranks the first row logged wins. Steps come sorted, keys in sorted order, a key missing at a step is NaN."""
    rows = [
        (3, "b", 1.0, "other"),
        (3, "b", 2.0, None),
        (3, "b", 3.0, "tensorboard"),
        (1, "a", 4.0, None),
        (1, "a", 5.0, "zzz"),
        (1, "b", 6.0, "zzz"),
        (1, "b", 7.0, None),
        (5, "a", 8.0, "console"),  # a listed source seen last: a missing source must not take its rank
    ]
    wide = wide_table(_long(rows))  # type: ignore[arg-type]
    assert list(wide.index) == [1, 3, 5] and list(wide.columns) == ["a", "b"] and wide.index.dtype == "int64"
    assert wide.loc[3, "b"] == 3.0  # tensorboard is listed: it beats both unlisted rows before it
    assert wide.loc[1, "a"] == 4.0 and wide.loc[1, "b"] == 6.0  # unlisted or missing alike: the first row
    assert math.isnan(wide.loc[3, "a"])


def test_steps_are_the_metrics_wide_and_added_columns_leave_the_stored_tables() -> None:
    metrics = _long([(1, "b", 1.0, "console"), (0, "a", math.nan, "console"), (1, "a", math.inf, "tensorboard")])
    run = StoredRun("A1", 2, metrics=metrics)
    assert run.rel == "A1/2" and run.status == "unknown" and run.steps_completed == 2
    assert list(run.steps.columns) == ["a", "b"] and run.steps.index.tolist() == [0, 1]
    assert run.nonfinite[0][:2] == ("a", 0) and run.nonfinite[1] == ("a", 1, math.inf)
    added = run.with_columns({"c": run.steps["b"] * 2})
    assert added.steps["c"].tolist()[1] == 2.0 and "c" not in run.steps.columns
    assert added.metrics is run.metrics and added.nonfinite[1:] == run.nonfinite[1:] == (("a", 1, math.inf),)
    # A copy with other metrics derives its steps from them (the history keeps only the keys it plots).
    only_b = dataclasses.replace(added, metrics=metrics[metrics["key"] == "b"])
    assert list(only_b.steps.columns) == ["b"] and only_b.series("b", 0, 5) == [1.0]


def test_window_means_are_over_finite_values_and_none_when_a_window_has_none() -> None:
    rows = [(s, "r", float(s), "console") for s in range(6)] + [(6, "r", math.nan, "console")]
    run = StoredRun("A1", 1, metrics=_long(rows))
    assert run.window_means("r", [("W1", 0, 1), ("W2", 4, 6)]) == (0.5, 4.5)  # step 6's NaN left out
    assert run.window_means("r", [("W1", 0, 1), ("W2", 6, 9)]) is None  # W2 holds no finite value
    assert run.window_means("r", []) is None and run.window_means("other", [("W1", 0, 5)]) is None


def test_runs_pair_by_block_in_block_order_and_a_run_without_its_mate_is_left_out() -> None:
    ref = [StoredRun("baseline", rep) for rep in (1, 2, 3)]
    cand = [StoredRun("A1", rep) for rep in (4, 3, 1)]
    assert [(r.rel, c.rel) for r, c in by_block(ref, cand)] == [("baseline/1", "A1/1"), ("baseline/3", "A1/3")]


def test_a_run_folder_without_its_files_reads_empty_and_says_which(tmp_path: Path) -> None:
    exp = make_experiment(tmp_path / "runs", {"baseline": FakeArm()}, repeats=1)
    folder = exp / "baseline" / "1"
    for name in (layout.MANIFEST, layout.METRICS, layout.GPU_PARQUET):
        (folder / name).unlink()
    run = read_run_folder(folder, "baseline", 1)
    assert {layout.MANIFEST, layout.METRICS, layout.GPU_PARQUET} <= run.missing
    assert run.manifest.status is None and run.metrics.empty and run.steps.empty and run.gpu.empty
    assert run.notes == () and run.run_dir == folder and layout.EVENTS not in run.missing


def test_manifest_times_read_as_seconds() -> None:
    assert parse_utc("1970-01-01T00:01:00Z") == 60.0
    assert parse_utc(None) is None and parse_utc("yesterday") is None
    assert np.isfinite(parse_utc("2026-12-01T10:00:00Z") or math.nan)

"""history.parquet: the typed table, its versioned metadata and the refusals."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from reportgen.errors import UserError
from reportgen.history import store
from reportgen.history.model import FORMAT, SCHEMA_VERSION, Point
from reportgen.history.paired_model import PairedPoint
from reportgen.history.table import column_types


def point(**kw: object) -> Point:
    base: dict = {
        "recipe": "r",
        "profile": "gpu",
        "machine_class": "1 x NVIDIA H200, driver 580.159.04",
        "class_id": "8fbecfa2" + "0" * 56,
        "setup": "48 steps; windows 8-20",
        "experiment": "e1",
        "arm": "baseline",
        "run": "baseline/1",
        "commit": "a" * 40,
        "dirty": False,
        "started_utc": "2026-12-01T00:00:00Z",
        "metric": "perf/step_resp_token_per_s",
        "primary": True,
        "label": "response tokens/s",
        "unit": "tok/s",
        "better": "higher",
        "value": 1000.0,
        "low": 990.0,
        "high": 1010.0,
        "confidence": 0.95,
        "method": "m",
        "n": 40,
    }
    base.update(kw)
    return Point.model_validate(base)


def test_the_table_round_trips_through_parquet(tmp_path: Path) -> None:
    pts = [point(), point(run="baseline/2", commit=None, dirty=None, low=None, high=None, confidence=None)]
    path = store.write(tmp_path / "history.parquet", pts)
    assert store.read(path) == pts
    frame = pd.read_parquet(path)
    assert tuple(frame.columns) == FORMAT.columns


def test_an_empty_table_keeps_its_columns(tmp_path: Path) -> None:
    path = store.write(tmp_path / "h.parquet", [])
    assert store.read(path) == []


def test_the_column_types_are_the_models_annotations() -> None:
    """Floats (nullable or not) are float64, ints and bools that cannot be null int64 and bool, even
    in an empty table; a nullable bool (`dirty`) keeps what pandas gives it, so a null stays null."""
    assert column_types(Point) == {
        "value": "float64",
        "low": "float64",
        "high": "float64",
        "confidence": "float64",
        "primary": "bool",
        "n": "int64",
    }
    for rows in ([], [point()], [point(dirty=None, low=None)]):
        types = FORMAT.to_frame(rows).dtypes
        assert (types["value"], types["low"], types["n"], types["primary"]) == ("float64", "float64", "int64", "bool")
    assert FORMAT.to_frame([point(dirty=None)]).dtypes["dirty"] == "object"
    assert column_types(PairedPoint) == {
        "log_ratio": "float64",
        "se": "float64",
        "df": "float64",
        "pairs": "int64",
        "anchor_value": "float64",
    }


def test_another_version_or_a_foreign_file_is_one_line(tmp_path: Path) -> None:
    frame = FORMAT.to_frame([point()])
    with pytest.raises(UserError, match="not a reportgen history table"):
        FORMAT.from_frame(frame, None, "x.parquet")
    old = {b"reportgen.history": b'{"kind": "reportgen.history", "schema_version": 0}'}
    with pytest.raises(
        UserError, match=f"has schema 0, this reportgen reads {SCHEMA_VERSION}; run `reportgen history`"
    ):
        FORMAT.from_frame(frame, old, "x.parquet")
    with pytest.raises(UserError, match="column\\(s\\) value missing"):
        FORMAT.from_frame(frame.drop(columns=["value"]), FORMAT.metadata(), "x.parquet")
    bad = frame.assign(better="sideways")
    with pytest.raises(UserError, match="row 0: better"):
        FORMAT.from_frame(bad, FORMAT.metadata(), "x.parquet")
    (tmp_path / "junk.parquet").write_text("not parquet")
    with pytest.raises(UserError, match="not a Parquet file"):
        store.read(tmp_path / "junk.parquet")
    with pytest.raises(UserError, match="missing; run `reportgen history`"):
        store.read(tmp_path / "none.parquet")


def test_unknown_fields_are_refused() -> None:
    with pytest.raises(ValueError):
        point(colour="red")


def test_the_format_page_lists_every_column_with_the_models_meaning() -> None:
    text = (Path(__file__).resolve().parents[2] / "docs" / "formats" / "history.md").read_text()
    rows = [line for line in text.splitlines() if line.startswith("| `")]
    assert [r.split("`")[1] for r in rows] == list(FORMAT.columns)
    for r in rows:
        name = r.split("`")[1]
        assert r.rstrip(" |").endswith(Point.model_fields[name].description or ""), name

"""traces.parquet: round trip, kind and schema version checked."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from reportgen.traces import model
from reportgen.traces.model import TraceRow


def test_round_trip(tmp_path):
    rows = [
        TraceRow("train", "traces/x.gz", 0, -1, 3, "gpu", "compute", "GEMM", "", 12.5, 3, 0),
        TraceRow(
            "memory", "traces/m.pickle", 1, -1, -1, "gpu", "mem_live", "optimizer", "optim.py:9 step", 0, 2, 1 << 30
        ),
    ]
    path = model.write(tmp_path, rows)
    assert path.name == model.FILENAME
    assert model.read(path) == rows
    meta = pq.read_schema(path).metadata
    assert meta[b"schema_version"] == b"1" and meta[b"kind"] == b"reportgen.traces"


def test_other_versions_and_kinds_are_refused(tmp_path):
    path = model.write(tmp_path, [])
    table = pq.read_table(path)
    pq.write_table(table.replace_schema_metadata({b"kind": b"reportgen.traces", b"schema_version": b"2"}), path)
    with pytest.raises(model.SummaryFormatError, match="schema 2"):
        model.read(path)
    pq.write_table(pa.table({"a": [1]}), path)
    with pytest.raises(model.SummaryFormatError, match="not a reportgen traces summary"):
        model.read(path)


def test_format_page_lists_every_column_and_kind():
    """docs/formats/traces.md and the model agree (the page is the format's reference)."""
    import re
    from pathlib import Path

    page = (Path(__file__).resolve().parents[2] / "docs" / "formats" / "traces.md").read_text()
    columns = re.findall(r"^\| `(\w+)` \| (?:string|int32|int64|float64) \|", page, flags=re.M)
    assert columns == [f.name for f in model.SCHEMA]
    kinds = re.findall(r"^\| `(\w+)` \|", page, flags=re.M)
    assert [k for k in kinds if k in model.KINDS] == list(model.KINDS)
    assert f"(schema {model.SCHEMA_VERSION})" in page

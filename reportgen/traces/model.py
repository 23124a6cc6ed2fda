"""`traces.parquet`: the stored summary of a run's profiler outputs (schema 1). Owns the format.

One long table, one row per (file, rank, step, kind, category[, name]). The pages read only
this table; the traces themselves may be gone (a committed showcase keeps only the summary).

kind          category                                   time_us / bytes / count
wall          step                                       the step's wall time (CPU step span)
compute       GEMM|attention|elementwise/norm|optimizer|  GPU kernel time (view gpu) or CPU operator
              communication|other                        self time (view cpu); count = kernels/ops
memcpy        H2D|D2H|D2D                                GPU copy time, bytes copied, count
idle          gpu_idle                                   step wall time with no kernel or copy running
cpu_span      optimizer_step|data_movement|python_overhead  host time (union of spans, main thread
                                                         for python_overhead)
top_op        a compute category or a memcpy direction   one operator (name): time, count
mem_peak      allocated|reserved|cpu_peak_rss            bytes (memory snapshots; step -1)
mem_live      a code area (optimizer|backward|forward|   live bytes at the peak by area; name = the
              other|before_recording)                    allocating frame (file:line function)
mem_oom       requested|device_free|live                 an OOM snapshot: the failed request, free
                                                         device memory, what was live (by frame)
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from reportgen.store import atomic, layout

SCHEMA_VERSION = 1
FILENAME = layout.TRACES_PARQUET
KIND = "reportgen.traces"

SOURCES = ("train", "sglang", "memory")
VIEWS = ("gpu", "cpu")
KINDS = ("wall", "compute", "memcpy", "idle", "cpu_span", "top_op", "mem_peak", "mem_live", "mem_oom")
WHOLE_TRACE = -1  # `step` of a trace without ProfilerStep spans (and of memory rows)


# A column's Arrow type: its field's Python type's, unless the field's metadata names another ("arrow").
_ARROW_OF = {"str": pa.string(), "int": pa.int64(), "float": pa.float64()}
_INT32 = {"arrow": pa.int32()}


@dataclasses.dataclass(frozen=True)
class TraceRow:
    """One row of traces.parquet; its fields are the table's columns, in order (`SCHEMA`)."""

    source: str  # train | sglang | memory
    file: str  # path relative to the run folder
    rank: int = dataclasses.field(metadata=_INT32)  # global rank (train, memory) or TP rank (sglang)
    engine: int = dataclasses.field(metadata=_INT32)  # SGLang engine index; -1 otherwise
    step: int  # profiled step (ProfilerStep#N), or WHOLE_TRACE
    view: str  # gpu: kernels ran on a GPU; cpu: a CPU-only trace, CPU operators stand in
    kind: str
    category: str
    name: str = ""
    time_us: float = 0.0
    count: int = 0
    bytes: int = 0


SCHEMA = pa.schema(
    [(f.name, f.metadata.get("arrow") or _ARROW_OF[str(f.type)]) for f in dataclasses.fields(TraceRow)],
    metadata={b"kind": KIND.encode(), b"schema_version": str(SCHEMA_VERSION).encode()},
)
_FIELDS = [f.name for f in dataclasses.fields(TraceRow)]


class SummaryFormatError(ValueError):
    """A traces.parquet this version cannot read (named in the message)."""


def to_table(rows: list[TraceRow]) -> pa.Table:
    cols = {f: [getattr(r, f) for r in rows] for f in _FIELDS}
    return pa.Table.from_pydict(cols, schema=SCHEMA)


def write(run_dir: Path, rows: list[TraceRow]) -> Path:
    """Write `<run_dir>/traces.parquet` atomically."""
    path = Path(run_dir) / FILENAME
    sink = pa.BufferOutputStream()
    pq.write_table(to_table(rows), sink)
    return atomic.write_bytes(path, sink.getvalue().to_pybytes())


def read(path: Path) -> list[TraceRow]:
    """Rows of a stored summary; refuses another kind or schema version."""
    return _rows(pq.read_table(path), path)


def read_bytes(data: bytes, name: str) -> list[TraceRow]:
    """Rows of a stored summary read into memory (`name` names it in an error)."""
    return _rows(pq.read_table(pa.BufferReader(data)), name)


def _rows(table: pa.Table, path: Path | str) -> list[TraceRow]:
    meta = table.schema.metadata or {}
    if meta.get(b"kind") != KIND.encode():
        raise SummaryFormatError(f"{path}: not a reportgen traces summary")
    version = meta.get(b"schema_version", b"?").decode()
    if version != str(SCHEMA_VERSION):
        raise SummaryFormatError(f"{path}: traces summary schema {version}; this reportgen reads {SCHEMA_VERSION}")
    data = table.select(_FIELDS).to_pydict()
    return [TraceRow(**{f: data[f][i] for f in _FIELDS}) for i in range(table.num_rows)]

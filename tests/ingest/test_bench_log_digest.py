"""The ingest of the benchmark's generated log is pinned by digest, so a speed-up cannot change
what is read.

The log is `scripts/bench_ingest.py`'s generator at 2,000 steps (coloured and plain prefixes, Ray
prefixes, nested dicts with quoted strings, nan grad norms, inf values, garbled lines, noise); the
digests of the metrics table, events.json and the parser's records were taken with the ingest of
revision b44b724 (before the block-wise JSON batch decoding) and must not change:
`scripts/check_ingest_same.py --rev b44b724` checks the same at 10,000 steps. The manifest
section's digest changed once by design, with the lifecycle of issue 22 (`ingest.lifecycle`,
`rollout_only_steps`, `unreadable_lines`; `steps` counts trained steps); what it holds is also
asserted in words below.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
from pathlib import Path
from types import ModuleType

import numpy as np
import pyarrow.parquet as pq

from reportgen.ingest.console import ConsoleParser, iter_chunks
from reportgen.ingest.run_dir import ingest_run

ROOT = Path(__file__).resolve().parents[2]
STEPS = 2000


def _bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_ingest", ROOT / "scripts" / "bench_ingest.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _table_digest(path: Path) -> str:
    t = pq.read_table(path)
    h = hashlib.sha256(str(t.schema).encode())
    for name in t.column_names:
        col = t[name].to_numpy()
        if col.dtype == object:
            h.update("\x00".join(col.tolist()).encode())
        else:
            h.update(np.ascontiguousarray(col).tobytes())
    return h.hexdigest()


def _records_digest(log: Path, chunk: int) -> str:
    h = hashlib.sha256()
    parser = ConsoleParser("stdout")
    for text in iter_chunks(log, chunk):
        for r in parser.feed(text):
            h.update(repr((r.kind, r.index, r.line_no, r.stream, list(r.values.items()))).encode())
    for r in parser.close():
        h.update(repr((r.kind, r.index, r.line_no, r.stream, list(r.values.items()))).encode())
    h.update(repr((parser.lines, parser.skipped, parser.records)).encode())
    return h.hexdigest()


def test_bench_log_ingest_is_unchanged(tmp_path: Path) -> None:
    log = tmp_path / "stdout.log"
    _bench().generate(log, STEPS)
    ingested = ingest_run(tmp_path, invariants=["--global-batch-size"], exit_code=1)
    got = {
        "metrics": _table_digest(tmp_path / "metrics.parquet"),
        "events": hashlib.sha256((tmp_path / "events.json").read_bytes()).hexdigest(),
        "section": hashlib.sha256(json.dumps(ingested.manifest_fields(), sort_keys=True).encode()).hexdigest(),
        # Chunk boundaries anywhere (inside lines and dicts) give the same records.
        "records": _records_digest(log, 1 << 20),
        "records_small_chunks": _records_digest(log, 4093),
    }
    ing = ingested.ingest
    assert ing["records"] == 8000 and ing["skipped_lines"] == 4
    assert (ing["steps"], ing["last_step"], ing["rollout_only_steps"]) == (2000, 1999, [])
    assert [(a["kind"], a["steps"]) for a in ing["lifecycle"]["attempts"]] == [("job", [0, 1999])]
    assert ing["unreadable_lines"] == {"stdout": [2641, 7879, 13166, 18419]}  # the garbled lines, never joined
    assert got == EXPECTED


EXPECTED = {
    "events": "2043916ce7623183c70121f7bacd16315abc263b3bfe0a816010596e65c82983",
    "metrics": "8f0a42ac015b24b41879233f526762f7855a030a63e9b98820a99d4074c5c742",
    "records": "1416ee17a14b30a6d3af167c5887f0e4f260beae6735ea8628df8c1c9d80171f",
    "records_small_chunks": "1416ee17a14b30a6d3af167c5887f0e4f260beae6735ea8628df8c1c9d80171f",
    "section": "22dba1e2e1d217613cdd6abffbe71c0fcffd890f3b3bf54c2640595bcc45a2c6",
}

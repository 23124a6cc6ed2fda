"""Profiler artifacts of a run (traces, memory snapshots): listed with size and SHA-256.

The list goes into the run's manifest when the run ends, so reports can name the artifacts
(and their hashes) even where the large files themselves are not kept, e.g. a committed showcase.
"""

from __future__ import annotations

from pathlib import Path

from reportgen.store.digest import file_sha256
from reportgen.store.layout import TRACES


def list_artifacts(run_dir: Path) -> list[dict]:
    traces = Path(run_dir) / TRACES
    if not traces.is_dir():
        return []
    return [
        {"path": str(p.relative_to(run_dir)), "bytes": p.stat().st_size, "sha256": file_sha256(p)}
        for p in sorted(traces.rglob("*"))
        if p.is_file()
    ]

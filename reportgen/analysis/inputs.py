"""What the analysis reads of a run beyond its fields: a flag's value, the reader's notes in words.

Part of reportgen.analysis (pure). A run is the store's `StoredRun` (store.run), which the I/O
edge (reportgen.analyze) reads from runs/ and hands over as it is.
"""

from __future__ import annotations

from typing import Any

from reportgen.store.run import StoredRun

# The files a run's notes are ordered by, as they matter to its verdict; git.json's notes are
# the experiment's context (its commit), not the run's.
_NOTED = ("manifest.json", "metrics.parquet", "events.json", "gpu.parquet", "host.parquet")
_MISSING = {
    "manifest.json": "manifest.json missing",
    "metrics.parquet": "metrics.parquet missing: run `reportgen ingest`",
}


def run_notes(run: StoredRun) -> list[str]:
    """The reader's notes on the files the analysis uses, each file's followed by what its absence
    means where a run cannot do without it, in the order of `_NOTED`, then any other."""
    by_file: dict[str, list[str]] = {}
    for note in run.notes:
        by_file.setdefault(note.split(":", 1)[0], []).append(note)
    by_file.pop("git.json", None)
    out: list[str] = []
    for name in _NOTED:
        out += by_file.pop(name, [])
        if name in _MISSING and name in run.missing:
            out.append(_MISSING[name])
    return out + [n for rest in by_file.values() for n in rest]


def argv_value(argv: dict[str, Any], flag: str) -> str | None:
    """Effective value of a flag as one string ("16"; "a b" for several; "true" for a switch)."""
    if flag not in argv:
        return None
    v = argv[flag]
    if v is True or v is None:
        return "true"
    if isinstance(v, (list, tuple)):
        return " ".join(str(x) for x in v)
    return str(v)

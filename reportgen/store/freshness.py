"""Is runs/<experiment>/analysis.json current? (store stage: reads files, writes nothing).

An analysis is current when it exists, has the schema this reportgen reads, and was made from
the files that are there now: its `inputs_sha256` is one digest over every file the analysis
reads (relative path and content). By content, not modification time: a fresh `git clone` gives
every file a new mtime, and a committed analysis must not count as stale just for that.

Both the analysis stage (to skip work and to stamp the digest) and the site build (to refuse a
stale document rather than re-analyse behind the user's back) ask this module.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from reportgen.store import atomic, layout
from reportgen.store.digest import file_sha256

# Files of a run the analysis reads.
READ_FILES = (
    layout.MANIFEST,
    layout.METRICS,
    layout.EVENTS,
    layout.GPU_PARQUET,
    layout.HOST_PARQUET,
    layout.RECIPE_PATCH,
)


def input_files(exp_dir: Path) -> list[Path]:
    """Every file the analysis of one experiment reads."""
    exp_dir = Path(exp_dir)
    files = [exp_dir / layout.EXPERIMENT_SPEC, exp_dir / layout.CAMPAIGN]
    for _, _, run_dir in layout.iter_runs(exp_dir):
        files.extend(run_dir / f for f in READ_FILES)
    return [f for f in files if f.is_file()]


def inputs_sha256(exp_dir: Path) -> str:
    """One digest over every file the analysis reads (relative path and content)."""
    exp_dir = Path(exp_dir)
    h = hashlib.sha256()
    for f in sorted(input_files(exp_dir)):
        h.update(f.relative_to(exp_dir).as_posix().encode() + b"\0" + file_sha256(f).encode() + b"\n")
    return h.hexdigest()


def stale_reason(exp_dir: Path, schema_version: int) -> str | None:
    """Why analysis.json is not current ("missing", "schema 1, this reportgen reads 3",
    "its runs changed since it was written"), or None when it is current."""
    path = Path(exp_dir) / layout.ANALYSIS
    if not path.is_file():
        return "missing"
    try:
        doc = atomic.read_json(path)
    except (OSError, ValueError):
        return "unreadable"
    if not isinstance(doc, dict):
        return "not an analysis document"
    if doc.get("schema_version") != schema_version:
        return f"schema {doc.get('schema_version')}, this reportgen reads {schema_version}"
    if doc.get("inputs_sha256") != inputs_sha256(exp_dir):
        return "its runs changed since it was written"
    return None

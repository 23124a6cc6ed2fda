"""Is runs/<experiment>/analysis.json current? (store stage: reads files, writes nothing).

An analysis is current when it exists, has the schema this reportgen reads, and was made from
the files that are there now: its `inputs_sha256` is the digest `store.run_folder` computes over
exactly the bytes it read for the analysis (relative path and content of each file), and the check
reads the folder again with the same reader, so no input the analysis uses can go stale unseen. By content, not modification time: a fresh `git clone` gives
every file a new mtime, and a committed analysis must not count as stale just for that.

Both the analysis stage (to skip work: a current analysis.json is left as it is, so re-analysing
a committed experiment never rewrites it; and to stamp the digest) and the site build (to refuse a
stale document rather than re-analyse behind the user's back) ask this module.
"""

from __future__ import annotations

from pathlib import Path

from reportgen.store import atomic, layout
from reportgen.store.run_folder import RunsIndex, read_experiment


def input_files(exp_dir: Path) -> list[Path]:
    """Every file the analysis of one experiment reads (store.run_folder reads them)."""
    exp_dir = Path(exp_dir)
    return [exp_dir / rel for rel in sorted(read_experiment(exp_dir, tables=False).read_sha256)]


def inputs_sha256(exp_dir: Path, index: RunsIndex | None = None) -> str:
    """The digest of every file the analysis reads, as the one reader reads them (relative path and
    content): what analyze stamps into analysis.json. `index`: the runs folder's manifests read once
    for many experiments (store.run_folder.RunsIndex)."""
    return read_experiment(exp_dir, tables=False, index=index).digest


def stale_reason(
    exp_dir: Path, schema_version: int, *, digest: str | None = None, index: RunsIndex | None = None
) -> str | None:
    """Why analysis.json is not current ("missing", "schema 1, this reportgen reads 3",
    "its runs changed since it was written"), or None when it is current. `digest`: the inputs'
    digest when the caller has just read them (the site's scan); else they are read here, through
    `index` when the caller checks many experiments of one runs folder."""
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
    if doc.get("inputs_sha256") != (digest if digest is not None else inputs_sha256(exp_dir, index)):
        return "its runs changed since it was written"
    return None


def older_schema(exp_dir: Path, schema_version: int) -> str | None:
    """ "schema 7, this reportgen reads 8" when analysis.json exists with another schema than
    `schema_version`; None otherwise. Reads the one file only (for listings: no digest of the runs)."""
    path = Path(exp_dir) / layout.ANALYSIS
    if not path.is_file():
        return None
    try:
        doc = atomic.read_json(path)
    except (OSError, ValueError):
        return None
    version = doc.get("schema_version") if isinstance(doc, dict) else None
    return None if version == schema_version else f"schema {version}, this reportgen reads {schema_version}"

"""Content hashes of files: what provenance records and what decides whether analysis.json is current."""

from __future__ import annotations

import hashlib
from pathlib import Path

CHUNK = 8 * 1024 * 1024


def file_sha256(path: Path) -> str:
    """SHA-256 of a file's bytes, read in 8 MiB chunks (constant memory)."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        while chunk := fh.read(CHUNK):
            digest.update(chunk)
    return digest.hexdigest()

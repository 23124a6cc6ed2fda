"""Atomic file writes: a reader sees either the old file or the whole new one, never half.

Write to a temporary file in the same folder, flush and fsync, then `os.replace`.
`exclusive=True` refuses to replace an existing file (used where something complete must
never be overwritten).
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any


class AlreadyExists(FileExistsError):
    """Raised by an exclusive write whose target already exists."""


def write_bytes(path: Path, data: bytes, *, exclusive: bool = False) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    if exclusive and path.exists():
        raise AlreadyExists(str(path))
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        if exclusive:
            # link() fails if the target exists: no window where a complete file is replaced.
            try:
                os.link(tmp, path)
            except FileExistsError as exc:
                raise AlreadyExists(str(path)) from exc
            os.unlink(tmp)
        else:
            os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return path


def write_text(path: Path, text: str, *, exclusive: bool = False) -> Path:
    return write_bytes(path, text.encode("utf-8"), exclusive=exclusive)


def write_lines(path: Path, lines: Iterable[str]) -> Path:
    """Stream text lines into `path` atomically (for files too large to hold in memory). The
    lines may be read from `path` itself: the old file stays in place until the rename."""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as fh:
            for line in lines:
                fh.write(line)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return path


def write_json(path: Path, obj: Any, *, exclusive: bool = False) -> Path:
    text = json.dumps(obj, indent=2, sort_keys=False, ensure_ascii=False, default=_default) + "\n"
    return write_text(path, text, exclusive=exclusive)


def read_json(path: Path) -> Any:
    with open(path, encoding="utf-8") as fh:
        return json.load(fh)


def write_parquet(path: Path, frame: Any) -> Path:
    """Write a pandas DataFrame to Parquet atomically."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    try:
        frame.to_parquet(tmp, index=False)
        with open(tmp, "rb") as fh:
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return path


def _default(obj: Any) -> Any:
    if isinstance(obj, Path):
        return str(obj)
    if hasattr(obj, "item"):  # numpy scalars
        return obj.item()
    if isinstance(obj, (set, frozenset)):
        return sorted(obj)
    raise TypeError(f"not JSON serialisable: {type(obj).__name__}")

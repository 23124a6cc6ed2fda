"""Atomic file writes: a reader sees either the old file or the whole new one, never half.

Write to a temporary file in the same folder, fsync, then `os.replace` (`replacing`).
`exclusive=True` refuses to replace an existing file (used where something complete must
never be overwritten).
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any


class AlreadyExists(FileExistsError):
    """Raised by an exclusive write whose target already exists."""


@contextmanager
def replacing(path: Path, *, exclusive: bool = False) -> Iterator[Path]:
    """A temporary file beside `path` for the block to write; when the block ends without error it
    is synced to disk and takes `path`'s place; on error it is removed and `path` is untouched.

    The one write-then-rename of the project: every atomic write goes through here. With
    `exclusive`, `path` must not exist (checked again at the rename: link() fails if it does).
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    if exclusive and path.exists():
        raise AlreadyExists(str(path))
    fd, name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    tmp = Path(name)
    try:
        yield tmp
        with open(tmp, "rb") as fh:
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
        if tmp.exists():
            tmp.unlink()
        raise


def write_bytes(path: Path, data: bytes, *, exclusive: bool = False) -> Path:
    with replacing(path, exclusive=exclusive) as tmp:
        tmp.write_bytes(data)
    return Path(path)


def write_text(path: Path, text: str, *, exclusive: bool = False) -> Path:
    return write_bytes(path, text.encode("utf-8"), exclusive=exclusive)


def write_lines(path: Path, lines: Iterable[str]) -> Path:
    """Stream text lines into `path` atomically (for files too large to hold in memory). The
    lines may be read from `path` itself: the old file stays in place until the rename."""
    with replacing(path) as tmp, open(tmp, "w", encoding="utf-8", newline="") as fh:
        for line in lines:
            fh.write(line)
    return Path(path)


def publish_dir(staging: Path, final: Path) -> Path:
    """Move a folder assembled aside (in the same parent) into place: it appears whole or not at
    all. Refuses to replace anything already at `final`."""
    if final.exists():
        raise AlreadyExists(str(final))
    os.rename(staging, final)
    return final


def write_json(path: Path, obj: Any, *, exclusive: bool = False) -> Path:
    text = json.dumps(obj, indent=2, sort_keys=False, ensure_ascii=False, default=_default) + "\n"
    return write_text(path, text, exclusive=exclusive)


def read_json(path: Path) -> Any:
    with open(path, encoding="utf-8") as fh:
        return json.load(fh)


def write_parquet(path: Path, frame: Any) -> Path:
    """Write a pandas DataFrame (or anything with its `to_parquet(path, index=)`) atomically."""
    with replacing(path) as tmp:
        frame.to_parquet(tmp, index=False)
    return Path(path)


def _default(obj: Any) -> Any:
    if isinstance(obj, Path):
        return str(obj)
    if hasattr(obj, "item"):  # numpy scalars
        return obj.item()
    if isinstance(obj, (set, frozenset)):
        return sorted(obj)
    raise TypeError(f"not JSON serialisable: {type(obj).__name__}")

"""Model manifest and data hashes (execute+capture stage).

A model manifest lists every file under the model folder with its relative path, size and
SHA-256, plus one SHA-256 over the whole list, so two runs can prove they used the same
weights. Hashing gigabytes takes minutes, so results are cached in a JSON file keyed by the
file's absolute path, size and mtime_ns: the second arm of an experiment reads the cache.
A file rewritten in place changes its mtime (or size) and is hashed again.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from reportgen.errors import UserError
from reportgen.store import atomic
from reportgen.store.digest import file_sha256

CACHE_SCHEMA_VERSION = 1


class HashCache:
    """{absolute path: (size, mtime_ns, sha256)} persisted as JSON; counts hits and misses."""

    def __init__(self, path: Path | None) -> None:
        self.path = Path(path) if path is not None else None
        self.entries: dict[str, dict[str, Any]] = {}
        self.hits = 0
        self.hashed = 0
        self._dirty = False
        if self.path is not None and self.path.exists():
            try:
                data = atomic.read_json(self.path)
            except (OSError, json.JSONDecodeError):
                data = {}  # a damaged cache only costs a rehash
            if isinstance(data, dict) and data.get("schema_version") == CACHE_SCHEMA_VERSION:
                self.entries = dict(data.get("entries", {}))

    def sha256(self, path: Path) -> tuple[str, int]:
        """(sha256, size) of a file, from the cache when path, size and mtime_ns all match."""
        key = str(Path(path).resolve())
        st = os.stat(key)
        hit = self.entries.get(key)
        if hit and hit.get("size") == st.st_size and hit.get("mtime_ns") == st.st_mtime_ns:
            self.hits += 1
            return hit["sha256"], st.st_size
        sha = file_sha256(Path(key))
        self.hashed += 1
        self.entries[key] = {"size": st.st_size, "mtime_ns": st.st_mtime_ns, "sha256": sha}
        self._dirty = True
        return sha, st.st_size

    def save(self) -> None:
        if self.path is None or not self._dirty:
            return
        atomic.write_json(self.path, {"schema_version": CACHE_SCHEMA_VERSION, "entries": self.entries})
        self._dirty = False


def _walk_files(root: Path) -> list[Path]:
    """Every regular file under root, following symlinks (HF snapshots link into blobs/), once."""
    out: list[Path] = []
    seen_dirs: set[str] = set()
    for dirpath, dirnames, filenames in os.walk(root, followlinks=True):
        real = os.path.realpath(dirpath)
        if real in seen_dirs:  # a symlink loop or a second link to the same folder
            dirnames[:] = []
            continue
        seen_dirs.add(real)
        dirnames.sort()
        for name in filenames:
            p = Path(dirpath) / name
            if p.is_file():
                out.append(p)
    return sorted(out, key=lambda p: p.relative_to(root).as_posix())


def manifest_lines(files: Iterable[dict[str, Any]]) -> str:
    """The manifest as `sha256sum` lines ("<sha256>  <path>"), sorted by path."""
    return "".join(f"{f['sha256']}  {f['path']}\n" for f in sorted(files, key=lambda f: f["path"]))


def _manifest(model_dir: Path, cache: HashCache) -> dict[str, Any]:
    root = Path(model_dir)
    if not root.is_dir():
        raise UserError(f"model folder {root} does not exist or is not a folder; fix the spec's model path")
    files = []
    for p in _walk_files(root):
        sha, size = cache.sha256(p)
        files.append({"path": p.relative_to(root).as_posix(), "size": size, "sha256": sha})
    return {
        "root": str(root.resolve()),
        "files": files,
        "file_count": len(files),
        "total_bytes": sum(f["size"] for f in files),
        "sha256": hashlib.sha256(manifest_lines(files).encode("utf-8")).hexdigest(),
    }


def model_manifest(model_dir: Path, *, cache_path: Path | None = None) -> dict[str, Any]:
    """{root, files: [{path, size, sha256}], file_count, total_bytes, sha256, cache: {hits, hashed}}.

    `sha256` is the SHA-256 of `manifest_lines(files)`, so it depends only on the files'
    relative paths and contents, never on where the folder lives or on the cache.
    """
    cache = HashCache(cache_path)
    out = _manifest(Path(model_dir), cache)
    cache.save()
    out["cache"] = {"hits": cache.hits, "hashed": cache.hashed}
    return out


def data_hashes(paths: Iterable[Path], *, cache_path: Path | None = None) -> dict[str, str]:
    """{path as given: sha256}. A folder (e.g. a Parquet dataset) hashes as its manifest's sha256."""
    cache = HashCache(cache_path)
    out: dict[str, str] = {}
    try:
        for p in paths:
            p = Path(p)
            if p.is_dir():
                out[str(p)] = _manifest(p, cache)["sha256"]
            elif p.is_file():
                out[str(p)] = cache.sha256(p)[0]
            else:
                raise UserError(f"data file {p} does not exist; fix the spec's data paths")
    finally:
        cache.save()
    return out

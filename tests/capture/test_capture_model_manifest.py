"""Model manifest and data hashes against hashlib, and the path+size+mtime cache."""

from __future__ import annotations

import hashlib
import os

import pytest

from reportgen.capture.model_manifest import data_hashes, file_sha256, manifest_lines, model_manifest
from reportgen.errors import UserError


def _model(tmp_path):
    root = tmp_path / "model"
    (root / "sub").mkdir(parents=True)
    (root / "config.json").write_text('{"hidden_size": 8}')
    (root / "sub" / "weights.bin").write_bytes(os.urandom(3 * 1024 * 1024 + 17))
    (root / "empty.txt").write_bytes(b"")
    return root


def test_manifest_matches_hashlib(tmp_path):
    root = _model(tmp_path)
    m = model_manifest(root, cache_path=None)
    assert [f["path"] for f in m["files"]] == ["config.json", "empty.txt", "sub/weights.bin"]
    for f in m["files"]:
        data = (root / f["path"]).read_bytes()
        assert f["sha256"] == hashlib.sha256(data).hexdigest()
        assert f["size"] == len(data)
    assert m["total_bytes"] == sum(f["size"] for f in m["files"])
    lines = "".join(f"{f['sha256']}  {f['path']}\n" for f in m["files"])
    assert (
        m["sha256"]
        == hashlib.sha256(lines.encode()).hexdigest()
        == hashlib.sha256(manifest_lines(m["files"]).encode()).hexdigest()
    )


def test_manifest_sha_independent_of_location_and_sensitive_to_content(tmp_path):
    a = _model(tmp_path / "a")
    b = tmp_path / "b"
    b.mkdir()
    os.rename(a, b / "model")
    first = model_manifest(b / "model", cache_path=None)["sha256"]
    (b / "model" / "config.json").write_text('{"hidden_size": 9}')
    assert model_manifest(b / "model", cache_path=None)["sha256"] != first


def test_cache_hit_avoids_rehash_and_mtime_change_rehashes(tmp_path):
    root = _model(tmp_path)
    cache = tmp_path / "hash-cache.json"
    first = model_manifest(root, cache_path=cache)
    assert first["cache"] == {"hits": 0, "hashed": 3}
    assert cache.exists()
    second = model_manifest(root, cache_path=cache)
    assert second["cache"] == {"hits": 3, "hashed": 0}
    assert second["sha256"] == first["sha256"]
    # Same size, new mtime: the cache must not trust the old hash.
    w = root / "sub" / "weights.bin"
    size = w.stat().st_size
    w.write_bytes(b"\0" * size)
    os.utime(w, ns=(w.stat().st_atime_ns, w.stat().st_mtime_ns + 10_000_000))
    third = model_manifest(root, cache_path=cache)
    assert third["cache"] == {"hits": 2, "hashed": 1}
    assert third["sha256"] != first["sha256"]


def test_damaged_cache_is_rebuilt(tmp_path):
    root = _model(tmp_path)
    cache = tmp_path / "c.json"
    cache.write_text("{not json")
    assert model_manifest(root, cache_path=cache)["cache"]["hashed"] == 3
    assert model_manifest(root, cache_path=cache)["cache"]["hits"] == 3


def test_symlinked_files_are_hashed_by_content(tmp_path):
    root = _model(tmp_path)
    blob = tmp_path / "blob"
    blob.write_bytes(b"linked content")
    (root / "linked.safetensors").symlink_to(blob)
    (root / "loop").symlink_to(root)  # a loop must not recurse forever
    files = {f["path"]: f for f in model_manifest(root, cache_path=None)["files"]}
    assert files["linked.safetensors"]["sha256"] == hashlib.sha256(b"linked content").hexdigest()


def test_data_hashes_files_and_folders(tmp_path):
    data = tmp_path / "train.parquet"
    data.write_bytes(b"PAR1 fake bytes")
    root = _model(tmp_path)
    out = data_hashes([data, root], cache_path=tmp_path / "c.json")
    assert out[str(data)] == file_sha256(data) == hashlib.sha256(b"PAR1 fake bytes").hexdigest()
    assert out[str(root)] == model_manifest(root, cache_path=None)["sha256"]


def test_missing_paths_are_user_errors(tmp_path):
    with pytest.raises(UserError, match="model folder"):
        model_manifest(tmp_path / "nope", cache_path=None)
    with pytest.raises(UserError, match="data file"):
        data_hashes([tmp_path / "missing.parquet"], cache_path=None)

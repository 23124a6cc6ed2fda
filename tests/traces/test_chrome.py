"""The Chrome-trace reader: streamed batches equal a whole decode, whatever the layout."""

from __future__ import annotations

import gzip

import pytest

from reportgen.traces import chrome
from reportgen.traces.chrome import TraceError, iter_batches, read_whole

from .synth import offload_trace


def _all(path):
    out, restarts = [], 0
    for restart, batch in iter_batches(path):
        if restart:
            out, restarts = [], restarts + 1
        out += batch
    return out, restarts


def test_streamed_batches_equal_whole_decode(tmp_path, monkeypatch):
    monkeypatch.setattr(chrome, "CHUNK_BYTES", 512)  # many chunks, cut between events
    path = offload_trace(tmp_path / "t.pt.trace.json.gz", offload=True, steps=tuple(range(20)))
    events, restarts = _all(path)
    assert restarts == 0
    whole = read_whole(path)
    assert events == whole
    assert len(events) > 300
    kernel = next(e for e in events if e.cat == "kernel")
    assert kernel.args is not None and kernel.args.correlation is not None and kernel.args.stream == 7
    copy = next(e for e in events if e.cat == "gpu_memcpy")
    assert copy.args is not None and copy.args.bytes == 64 << 20


@pytest.mark.parametrize("array", [False, True])
def test_minified_trace_is_read_whole(tmp_path, monkeypatch, array):
    monkeypatch.setattr(chrome, "CHUNK_BYTES", 256)
    path = offload_trace(tmp_path / "t.json.gz", offload=False, compact=True, array=array)
    events, _ = _all(path)
    assert events == read_whole(path)
    assert any(e.name == "ProfilerStep#3" for e in events)


def test_plain_json_array_form(tmp_path):
    path = offload_trace(tmp_path / "t.trace.json", offload=False, array=True)
    events, restarts = _all(path)
    assert restarts == 0 and len(events) == len(read_whole(path))


def test_nested_line_that_looks_like_an_event_start_falls_back(tmp_path, monkeypatch):
    """A file indented unlike Kineto (nested objects at two spaces) must not be cut inside one."""
    monkeypatch.setattr(chrome, "CHUNK_BYTES", 64)
    text = '{"traceEvents": [{"ph": "X", "name": "a", "ts": 1, "dur": 2, "args":\n  {\n"correlation": 5}}]}'
    path = tmp_path / "odd.json"
    path.write_text(text)
    events, _ = _all(path)
    assert [(e.name, e.args.correlation if e.args else None) for e in events] == [("a", 5)]


def test_inflated_size_from_trailer(tmp_path):
    path = offload_trace(tmp_path / "t.json.gz", offload=True)
    with gzip.open(path, "rb") as fh:
        assert chrome.inflated_size(path) == len(fh.read())
    assert bytes(chrome.read_bytes(path)) == gzip.decompress(path.read_bytes())


def test_errors_name_the_file(tmp_path):
    bad = tmp_path / "broken.pt.trace.json.gz"
    bad.write_bytes(gzip.compress(b'{"traceEvents": [{"ph": "X", "ts": ')[:-10])
    with pytest.raises(TraceError, match=r"broken\.pt\.trace\.json\.gz"):
        _all(bad)
    text = tmp_path / "notjson.json"
    text.write_text("hello")
    with pytest.raises(TraceError, match=r"notjson\.json"):
        _all(text)

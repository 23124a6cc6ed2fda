"""Chrome trace reader (torch.profiler / Kineto `*.pt.trace.json.gz`, SGLang `*.trace.json.gz`).

Why not `json.load`: a 220 MB trace becomes several GB of Python dicts. The file is inflated
once into a buffer sized from the gzip trailer, then decoded by msgspec into small typed
structs that keep only the fields a summary needs (the rest of each event is skipped while
parsing, never materialised). Peak memory is about the inflated size plus the structs.

Field sources (Kineto's `ChromeTraceLogger`, as written by `export_chrome_trace` and
`tensorboard_trace_handler`): every event has `ph`, `name`, `pid`, `tid`, `ts` (us); complete
events (`ph: "X"`) have `dur` (us) and `cat` (`cpu_op`, `user_annotation`, `python_function`,
`cuda_runtime`, `cuda_driver`, `kernel`, `gpu_memcpy`, `gpu_memset`, `gpu_user_annotation`);
GPU events carry `args.device`, `args.stream` and `args.correlation` (equal to the launching
`cuda_runtime` event's), memcpy/memset events `args.bytes`.
"""

from __future__ import annotations

import gzip
import struct
from collections.abc import Iterator
from pathlib import Path

import msgspec


class Args(msgspec.Struct, gc=False):
    """The `args` fields a summary reads; all others are skipped by the decoder."""

    correlation: int | None = None
    device: int | None = None
    stream: int | None = None
    bytes: int | None = None


class TraceEvent(msgspec.Struct, gc=False):
    ph: str = ""
    name: str = ""
    cat: str = ""
    pid: int | str = 0
    tid: int | str = 0
    ts: float = 0.0
    dur: float = 0.0
    args: Args | None = None


class TraceFile(msgspec.Struct, gc=False):
    traceEvents: list[TraceEvent] = []


class TraceError(ValueError):
    """The file is not a readable Chrome trace (named in the message)."""


class _Unsplittable(Exception):
    """A chunk cut at a line that looked like an event start did not decode on its own."""


_FILE = msgspec.json.Decoder(TraceFile | list[TraceEvent])
_BATCH = msgspec.json.Decoder(list[TraceEvent])
CHUNK_BYTES = 8 << 20
# Kineto writes each event of `traceEvents` starting on its own line, indented by two spaces;
# nested objects (`args`) are indented deeper. Chunks are cut there; a cut that is not at the
# top level leaves unbalanced braces, so the chunk fails to decode and the whole file is
# decoded at once instead (still correct, only less lean).
_EVENT_START = b"\n  {"


def _inflate(path: Path) -> Iterator[bytes]:
    with open(path, "rb") as probe:
        gz = probe.read(2) == b"\x1f\x8b"
    opener = gzip.open if gz else open
    with opener(path, "rb") as fh:
        while chunk := fh.read(CHUNK_BYTES):
            yield chunk


def _head(buf: bytes) -> tuple[bytes, int] | None:
    """(prefix that reopens the event array, offset of its first event) once known."""
    key = buf.find(b'"traceEvents"')
    if key >= 0:
        bracket = buf.find(b"[", key)
        return (b'{"traceEvents":[', bracket + 1) if bracket >= 0 else None
    first = buf.lstrip()[:1]
    if first == b"[":
        return b"[", buf.index(b"[") + 1
    if first and first != b"{":
        raise TraceError("not JSON")
    return None


def _split_batches(path: Path) -> Iterator[list[TraceEvent]]:
    pending = b""
    reopen: bytes | None = None
    for chunk in _inflate(path):
        pending += chunk
        if reopen is None:
            head = _head(pending[: 1 << 20] if len(pending) > 1 << 20 else pending)
            if head is None:
                if len(pending) > 1 << 20:
                    raise _Unsplittable
                continue
            reopen, offset = head
            pending = pending[offset:]
        cut = pending.rfind(_EVENT_START)
        if cut <= 0:
            continue
        body = pending[:cut].rstrip()
        if body.endswith(b","):
            body = body[:-1]
        pending = pending[cut:]
        if not body.strip():
            continue
        try:
            yield _BATCH.decode(b"[" + body + b"]")
        except msgspec.DecodeError as exc:
            raise _Unsplittable from exc
    if reopen is None:
        raise _Unsplittable
    try:
        last = _FILE.decode(reopen + pending)
    except msgspec.DecodeError as exc:
        raise TraceError(f"{path}: not a Chrome trace ({exc})") from exc
    yield last.traceEvents if isinstance(last, TraceFile) else last


def inflated_size(path: Path) -> int | None:
    """Uncompressed size from the gzip trailer (ISIZE, modulo 2**32), or None if not gzip."""
    with open(path, "rb") as fh:
        if fh.read(2) != b"\x1f\x8b":
            return None
        fh.seek(-4, 2)
        return int(struct.unpack("<I", fh.read(4))[0])


def read_bytes(path: Path) -> bytearray:
    """The trace's JSON text, inflated into one preallocated buffer (no doubling copies)."""
    path = Path(path)
    hint = inflated_size(path)
    if hint is None:
        return bytearray(path.read_bytes())
    compressed = path.stat().st_size
    # ISIZE wraps at 4 GiB: grow in steps when it lies.
    buf = bytearray(max(hint, compressed))
    n = 0
    with gzip.open(path, "rb") as fh:
        while True:
            if n == len(buf):
                buf.extend(bytes(max(compressed, 1 << 24)))
            with memoryview(buf) as view:
                got = fh.readinto(view[n:])
            if not got:
                break
            n += got
    del buf[n:]
    return buf


def read_whole(path: Path) -> list[TraceEvent]:
    """Every event, decoded from the whole inflated text at once (the fallback)."""
    try:
        data = read_bytes(path)
    except (OSError, EOFError, gzip.BadGzipFile) as exc:
        raise TraceError(f"{path}: not a readable gzip file ({exc})") from exc
    try:
        decoded = _FILE.decode(data)
    except msgspec.DecodeError as exc:
        raise TraceError(f"{path}: not a Chrome trace ({exc})") from exc
    finally:
        del data
    return decoded.traceEvents if isinstance(decoded, TraceFile) else decoded


def iter_batches(path: Path) -> Iterator[tuple[bool, list[TraceEvent]]]:
    """Events in batches of a few MB of text: (restart, batch). `restart` is True on the first
    batch after the file turned out not to split, when the caller must drop what it gathered
    (the whole file then comes as one batch)."""
    path = Path(path)
    try:
        for batch in _split_batches(path):
            yield False, batch
    except _Unsplittable:
        yield True, read_whole(path)
    except (OSError, EOFError, gzip.BadGzipFile) as exc:
        raise TraceError(f"{path}: not a readable gzip file ({exc})") from exc
    except TraceError as exc:
        if str(exc).startswith(str(path)):
            raise
        raise TraceError(f"{path}: {exc}") from exc

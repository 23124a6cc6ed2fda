"""CUDA memory snapshots (`torch.cuda.memory._dump_snapshot` pickles) read safely and summarised.

A snapshot is a pickle, and unpickling runs whatever callable the pickle names. Runs may come
from anywhere (a colleague's folder, a CI artifact), so `load` admits only what a snapshot is
made of - dicts, lists, tuples, strings, bytes, numbers, booleans, None (pickle encodes these
without naming any callable) and the few builtin containers named in `_ALLOWED` - and refuses
anything else (os.system, builtins.eval, torch classes, ...) before it is called.

Format (torch/_utils.py `_Snapshot`, torch/cuda/_memory_viz.py): `segments` (each with
`device`, `total_size`, `blocks` of `size`, `state`, `frames`) is the allocator state at the
dump; `device_traces[d]` is the recorded history (`action` alloc / free_requested /
free_completed / segment_alloc / segment_free / oom, `addr`, `size`, `frames`, and for `oom`
`device_free`). reportgen's CPU workload writes `{"device": "cpu", "peak_rss_kib": N, ...}`.
"""

from __future__ import annotations

import dataclasses
import io
import pickle
from collections import defaultdict
from pathlib import Path
from typing import Any

from reportgen.traces.model import WHOLE_TRACE, TraceRow

# Protocols 2-3 write sets, bytes and complex numbers as calls to these; none has side effects, and
# each builds from arguments held in the file, so none allocates more than the file holds
# (bytearray is not admitted: `bytearray(2**31)` in a 30-byte pickle would allocate 2 GiB).
_ALLOWED = {
    ("builtins", "set"),
    ("builtins", "frozenset"),
    ("builtins", "complex"),
    ("_codecs", "encode"),
}
TOP_FRAMES = 12
# A pickle's memo lets a small file repeat one list of entries many times; torch keeps at most
# `max_entries` (default 100 000) per device, so far more than this is no snapshot of torch's.
MAX_ENTRIES = 20_000_000


class UnsafePickle(pickle.UnpicklingError):
    """The pickle names a callable that a memory snapshot never holds."""


class TooLarge(ValueError):
    """The snapshot holds more entries or blocks than any snapshot of torch's (a memo bomb)."""


def _bounded(items: Any, what: str) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for item in items:
        if isinstance(item, dict):
            out.append(item)
            if len(out) > MAX_ENTRIES:
                raise TooLarge(f"more than {MAX_ENTRIES:,} {what}")
    return out


class _Restricted(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        if module == "__builtin__":  # protocols 0-2 name Python 2's module
            module = "builtins"
        if (module, name) in _ALLOWED:
            return super().find_class(module, name)
        raise UnsafePickle(f"{module}.{name}")

    def persistent_load(self, pid: Any) -> Any:
        raise UnsafePickle("a persistent id")


def load(path: Path) -> Any:
    """The snapshot's data; raises UnsafePickle (nothing was called) for a hostile pickle."""
    with open(path, "rb") as fh:
        data = fh.read()
    return _Restricted(io.BytesIO(data)).load()


def _frame_label(frames: list[dict[str, Any]]) -> str:
    """The innermost frame outside torch's own code: the line that asked for the memory."""
    for f in frames or []:
        file = str(f.get("filename", ""))
        if "/torch/" in file or file.startswith("??") or not file.endswith(".py"):
            continue
        return f"{file.rsplit('/', 1)[-1]}:{f.get('line', '?')} {f.get('name', '?')}"
    return "(no Python frame recorded)"


def _area(frames: list[dict[str, Any]]) -> str:
    """Code area that allocated: a heuristic over the frames' function and file names."""
    text = " ".join(f"{f.get('filename', '')} {f.get('name', '')}" for f in frames or []).lower()
    for area, needles in (
        ("optimizer", ("optim", "adam", ".step")),
        ("backward", ("backward", "autograd")),
        ("forward", ("forward",)),
    ):
        if any(n in text for n in needles):
            return area
    return "other"


def summarize(snap: Any, *, file: str, rank: int) -> list[TraceRow]:
    """Peak allocated/reserved, what was live at the peak (by area and by frame), and for an
    OOM snapshot the failed request and what was live when it failed."""
    base = TraceRow(
        source="memory", file=file, rank=rank, engine=-1, step=WHOLE_TRACE, view="gpu", kind="", category=""
    )
    if not isinstance(snap, dict):
        return []
    if snap.get("device") == "cpu":
        kib = int(snap.get("peak_rss_kib") or 0)
        return [dataclasses.replace(base, view="cpu", kind="mem_peak", category="cpu_peak_rss", bytes=kib * 1024)]
    segments = [s for s in snap.get("segments") or [] if isinstance(s, dict)]
    reserved_now = sum(int(s.get("total_size", 0)) for s in segments)
    live_now: dict[int, tuple[int, list]] = {}
    blocks = _bounded((b for s in segments for b in s.get("blocks") or []), "allocator blocks")
    for b in blocks:
        if b.get("state") == "active_allocated":
            live_now[int(b.get("address", id(b)))] = (int(b.get("size", 0)), b.get("frames") or [])
    allocated_now = sum(size for size, _ in live_now.values())
    entries = _bounded((e for trace in snap.get("device_traces") or [] for e in trace or []), "trace entries")

    # Replay the history from a baseline that makes it end at the dump's allocator state.
    net_alloc = sum(_delta(e) for e in entries)
    net_reserved = sum(_seg_delta(e) for e in entries)
    allocated, reserved = allocated_now - net_alloc, reserved_now - net_reserved
    peak_alloc, peak_reserved, peak_at = allocated, reserved, -1
    for i, e in enumerate(entries):
        allocated += _delta(e)
        reserved += _seg_delta(e)
        if allocated > peak_alloc:
            peak_alloc, peak_at = allocated, i
        peak_reserved = max(peak_reserved, reserved)
    if not entries:
        live = dict(live_now)
        before = 0
    else:
        live = {}
        for e in entries[: peak_at + 1]:
            if e.get("action") == "alloc":
                live[int(e.get("addr", 0))] = (int(e.get("size", 0)), e.get("frames") or [])
            elif e.get("action") == "free_completed":
                live.pop(int(e.get("addr", 0)), None)
        before = max(peak_alloc - sum(s for s, _ in live.values()), 0)
    rows = [
        dataclasses.replace(base, kind="mem_peak", category="allocated", bytes=peak_alloc),
        dataclasses.replace(base, kind="mem_peak", category="reserved", bytes=max(peak_reserved, reserved_now)),
    ]
    rows += _live_rows(base, "mem_live", live, before)
    ooms = [e for e in entries if e.get("action") == "oom"]
    if ooms:
        oom = ooms[-1]
        rows.append(dataclasses.replace(base, kind="mem_oom", category="requested", bytes=int(oom.get("size", 0))))
        rows.append(
            dataclasses.replace(base, kind="mem_oom", category="device_free", bytes=int(oom.get("device_free", 0)))
        )
        by_frame: dict[str, list[int]] = defaultdict(lambda: [0, 0])
        for size, frames in live_now.values():
            slot = by_frame[_frame_label(frames)]
            slot[0] += size
            slot[1] += 1
        for label, (size, n) in sorted(by_frame.items(), key=lambda kv: -kv[1][0])[:TOP_FRAMES]:
            rows.append(dataclasses.replace(base, kind="mem_oom", category="live", name=label, bytes=size, count=n))
    return rows


def _live_rows(base: TraceRow, kind: str, live: dict[int, tuple[int, list]], before: int) -> list[TraceRow]:
    by_area: dict[str, int] = defaultdict(int)
    by_frame: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0])
    for size, frames in live.values():
        area = _area(frames)
        by_area[area] += size
        slot = by_frame[(area, _frame_label(frames))]
        slot[0] += size
        slot[1] += 1
    if before:
        by_area["before_recording"] += before
    rows = [dataclasses.replace(base, kind=kind, category=a, bytes=b) for a, b in sorted(by_area.items())]
    for (area, label), (size, n) in sorted(by_frame.items(), key=lambda kv: -kv[1][0])[:TOP_FRAMES]:
        rows.append(dataclasses.replace(base, kind=kind, category=area, name=label, bytes=size, count=n))
    return rows


def _delta(e: dict[str, Any]) -> int:
    a = e.get("action")
    return int(e.get("size", 0)) if a == "alloc" else -int(e.get("size", 0)) if a == "free_completed" else 0


def _seg_delta(e: dict[str, Any]) -> int:
    a = e.get("action")
    return int(e.get("size", 0)) if a == "segment_alloc" else -int(e.get("size", 0)) if a == "segment_free" else 0

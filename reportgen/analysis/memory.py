"""Peak GPU memory against the limit a run had: the framework's own peak, the device's, headroom.

Part of reportgen.analysis (pure). nvidia-smi's "memory used" counts everything on the device:
memory in use before the run started (another process, the driver's reservations), the CUDA
context, and the caching allocator's reserve. A limit the workload set itself
(`--gpu-memory-cap-gib`, `torch.cuda.set_per_process_memory_fraction`) bounds only what PyTorch's
allocator holds, so a 5 GiB cap sits *below* an nvidia-smi peak of 6 GiB without being broken.
So each arm gets:

- `allocated_peak_mib`: the framework's own peak allocation (`perf/max_memory_allocated_gib`, the
  embedded workload's; Relax logs none), over every step of every formal run;
- `device_peak_mib` and `device_before_mib`: nvidia-smi's peak over the whole run and what was in
  use on that GPU at the run's first sample; `device_peak_net_mib` is the difference, this run's own
  footprint;
- `device_total_mib` and `device_share`: the GPU's capacity and nvidia-smi's peak against it (a cap
  emulates a smaller GPU; the pages show the peak against the real one, the cap marked as a cap);
- `beyond_allocated_mib`: the run's own nvidia-smi peak less the framework's allocated peak, the gap a
  reader sees when nvidia-smi's peak stands above the cap (the CUDA context and libraries, and the
  allocator's reserve beyond what it handed out);
- the limit and the headroom left under it, on the figure that limit bounds: under a declared cap,
  the allocator's peak (the device's net peak when the workload logs no allocator figure, an upper
  bound of it); without one, the device's net peak against what the card had free at the start.

An out-of-memory failure is put in words from the event PyTorch printed (`oom_sentence`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from reportgen.analysis import document as doc
from reportgen.analysis.inputs import argv_value
from reportgen.failures import oom_details
from reportgen.store.run import LogEvent, StoredRun
from reportgen.vocab import ALLOCATED_MEMORY_KEYS, MEMORY_CAP_FLAG

LOW_HEADROOM = 0.15  # below this share of the limit left, the next step names the memory cost


def declared_cap_mib(runs: Sequence[StoredRun]) -> float | None:
    """The cap the workload set on its own GPU memory (`--gpu-memory-cap-gib N`), in MiB."""
    for r in runs:
        value = argv_value(r.argv, MEMORY_CAP_FLAG)
        if value is None:
            continue
        try:
            gib = float(value)
        except ValueError:
            continue
        if math.isfinite(gib) and gib > 0:
            return gib * 1024.0
    return None


def allocated_peak(runs: Sequence[StoredRun]) -> tuple[float | None, str | None]:
    """(MiB, key) of the framework's peak allocation over every step of `runs`; (None, None) when
    no run logged one of ALLOCATED_MEMORY_KEYS."""
    for key in ALLOCATED_MEMORY_KEYS:
        values = [
            float(v)
            for r in runs
            if key in r.steps.columns
            for v in r.steps[key].to_numpy(dtype=float)
            if math.isfinite(v)
        ]
        if values:
            return max(values) * 1024.0, key
    return None, None


def held_at_oom(runs: Sequence[StoredRun]) -> float | None:
    """MiB PyTorch had allocated when an allocation failed, as its message says ("4.94 GiB is
    allocated by PyTorch"), at the worst out-of-memory event of `runs` (the logged peak of a run that
    died mid-step misses that step). The request that failed is not counted: it was never held, and
    a figure above PyTorch's own would not match the message a reader checks it against."""
    worst = None
    for r in runs:
        for e in r.events:
            if e.kind != "oom":
                continue
            d = _said(e)
            held = d.get("allocated_gib")
            if isinstance(held, (int, float)):
                worst = held * 1024.0 if worst is None else max(worst, held * 1024.0)
    return worst


def device_peak(runs: Sequence[StoredRun]) -> tuple[float | None, float | None, float | None]:
    """(peak, in use before the run, device total) in MiB, from the run and GPU whose nvidia-smi
    peak net of its first sample is largest; Nones without GPU samples."""
    best: tuple[float, float, float, float | None] | None = None  # (net, peak, before, total)
    for r in runs:
        g = r.gpu
        if g.empty or "mem_used_mib" not in g.columns:
            continue
        for _, part in g.sort_values("t").groupby("index", sort=True):
            used = part["mem_used_mib"].to_numpy(dtype=float)
            used = used[np.isfinite(used)]
            if not len(used):
                continue
            before, peak = float(used[0]), float(used.max())
            total = float(part["mem_total_mib"].max()) if "mem_total_mib" in part.columns else None
            if best is None or peak - before > best[0]:
                best = (peak - before, peak, before, total if total is not None and math.isfinite(total) else None)
    if best is None:
        return None, None, None
    return best[1], best[2], best[3]


def use(runs: Sequence[StoredRun]) -> doc.MemoryUse:
    """One arm's memory against its limit (module docstring)."""
    allocated, key = allocated_peak(runs)
    at_oom = held_at_oom(runs)
    if at_oom is not None and (allocated is None or at_oom > allocated):
        allocated = at_oom
    peak, before, total = device_peak(runs)
    net = peak - before if peak is not None and before is not None else None
    cap = declared_cap_mib(runs)
    limit_kind: str = "none"
    limit = used = None
    source = "none"
    if cap is not None:
        limit_kind, limit = "cap", cap
        used, source = (allocated, "allocator") if allocated is not None else (net, "device")
    elif total is not None and net is not None:
        limit_kind, limit = "device", total - (before or 0.0)
        used, source = net, "device"
    if used is None:
        source = "none"
    headroom = limit - used if limit is not None and used is not None else None
    return doc.MemoryUse(
        allocated_peak_mib=allocated,
        allocated_metric=key,
        device_peak_mib=peak,
        device_before_mib=before,
        device_peak_net_mib=net,
        device_total_mib=total,
        device_share=peak / total if peak is not None and total else None,
        beyond_allocated_mib=net - allocated if net is not None and allocated is not None else None,
        cap_mib=cap,
        limit=limit_kind,  # type: ignore[arg-type]
        limit_mib=limit,
        used_mib=used,
        used_source=source,  # type: ignore[arg-type]
        headroom_mib=headroom,
        headroom=headroom / limit if headroom is not None and limit else None,
    )


def low_headroom(m: doc.MemoryUse) -> bool:
    """Less than LOW_HEADROOM of the limit left at the peak."""
    return m.headroom is not None and m.headroom < LOW_HEADROOM


def _gib(x: float) -> str:
    return f"{x:.2f}"


def _said(event: LogEvent) -> dict[str, Any]:
    """What an OOM event says: its message read by ingest's rule, and the details ingest recorded."""
    return {**oom_details(event.message), **event.details}


def _held(event: LogEvent, cap_mib: float | None) -> str | None:
    """ "PyTorch already held 4.94 of the 5.00 GiB allowed (--gpu-memory-cap-gib 5)" from what PyTorch
    printed (the event's message, read again by ingest's rule); None when it does not say."""
    d = _said(event)
    held, allowed = d.get("allocated_gib"), d.get("allowed_gib")
    if not isinstance(held, (int, float)):
        return None
    if isinstance(allowed, (int, float)):  # PyTorch names the per-process limit only when one is set
        cap = f" ({MEMORY_CAP_FLAG} {cap_mib / 1024:g})" if cap_mib is not None else ""
        return f"PyTorch already held {_gib(held)} of the {_gib(allowed)} GiB allowed{cap}"
    return f"PyTorch already held {_gib(held)} GiB" + _under_cap(cap_mib)


def _under_cap(cap_mib: float | None) -> str:
    return f", under a {cap_mib / 1024:g} GiB memory cap ({MEMORY_CAP_FLAG} {cap_mib / 1024:g})" if cap_mib else ""


def oom_cause(label: str, event: LogEvent, cap_mib: float | None) -> str:
    """The cause of an OOM failure: ingest's label for the event (the same words as the run's status
    reason) and where the allocator stood: "OOM at step 1, tried to allocate 20.00 MiB: PyTorch already
    held 4.94 of the 5.00 GiB allowed (--gpu-memory-cap-gib 5)"."""
    held = _held(event, cap_mib)
    return f"{label}: {held}" if held else label + _under_cap(cap_mib)


def oom_sentence(event: LogEvent, cap_mib: float | None) -> str | None:
    """An out-of-memory event as a plain sentence for the write-up: "ran out of GPU memory at step 1:
    PyTorch already held 4.94 of the 5.00 GiB allowed (--gpu-memory-cap-gib 5) when it asked for
    20.00 MiB more"; None for another event or when the message gives too little."""
    if event.kind != "oom":
        return None
    held = _held(event, cap_mib)
    if held is None:
        return None
    d = _said(event)
    step = event.step
    at = f" at step {step}" if step is not None else ""
    asked = d.get("tried_to_allocate")
    return f"ran out of GPU memory{at}: {held}" + (f" when it asked for {asked} more" if asked else "")

"""Memory in words for the pages (render stage; formatting only).

The figures are the analysis's (analysis.json `arms[].memory`, reportgen/analysis/memory.py). What
the words keep straight: the peak is shown against the GPU's capacity; a cap the workload set itself
(`--gpu-memory-cap-gib`) emulates a smaller GPU and is named as a cap, never as the GPU; and when
nvidia-smi's peak stands above the framework's (above the cap, even), the page says what the
difference is, with its numbers, instead of leaving a reader to think the cap was broken.
"""

from __future__ import annotations

from reportgen.analysis.document import MemoryUse
from reportgen.rounding import fmt_gib, fmt_mib, fmt_share


def limit_text(m: MemoryUse) -> str:
    """The limit the headroom is taken under: "5.00 GiB cap (emulated)", "139.80 GiB free", "n/a"."""
    if m.limit_mib is None:
        return "n/a"
    return f"{fmt_gib(m.limit_mib)} cap (emulated)" if m.limit == "cap" else f"{fmt_gib(m.limit_mib)} free"


def gpu_share(m: MemoryUse) -> str:
    """nvidia-smi's peak against the GPU's capacity: "4% of 140.40 GiB"; "" when either is unknown."""
    if m.device_share is None or m.device_total_mib is None:
        return ""
    return f"{fmt_share(m.device_share)} of {fmt_gib(m.device_total_mib)}"


def gap_sentence(arm: str, m: MemoryUse) -> str:
    """Why nvidia-smi's peak is more than the framework's, in numbers that add up to it: "A1's nvidia-smi
    peak, 6032 MiB, stands above the 5120 MiB (5.00 GiB) cap without breaking it: 615 MiB in use on the GPU
    before the run, the 4515 MiB the framework allocated at its peak, and 902 MiB beyond that (...)";
    "" when a figure is missing or the framework's peak is the larger (they may come from two runs)."""
    peak, alloc, beyond = m.device_peak_mib, m.allocated_peak_mib, m.beyond_allocated_mib
    if peak is None or alloc is None or beyond is None or beyond < 0:
        return ""
    if m.cap_mib is not None and peak > m.cap_mib:
        head = (
            f"{arm}'s nvidia-smi peak, {fmt_mib(peak)}, stands above the {fmt_mib(m.cap_mib)} ({fmt_gib(m.cap_mib)}) cap "
            "without breaking it"
        )
    else:
        head = f"{arm}'s nvidia-smi peak, {fmt_mib(peak)}, is more than the framework's {fmt_mib(alloc)}"
    before = f"{fmt_mib(m.device_before_mib)} in use on the GPU before the run, " if m.device_before_mib else ""
    cap = (
        "; the cap bounds PyTorch's allocator alone (what it allocates and reserves), not the CUDA context nor "
        "what was in use before"
        if m.cap_mib is not None
        else ""
    )
    return (
        f"{head}: {before}the {fmt_mib(alloc)} the framework allocated at its peak, and {fmt_mib(beyond)} beyond "
        f"that, the CUDA context and libraries and what PyTorch's caching allocator reserved but had not handed "
        f"out{cap}"
    )


def headline_note(arm: str, m: MemoryUse, *, shown_peak_mib: float | None) -> str:
    """Under a headline table whose nvidia-smi peak (`shown_peak_mib`, the row's figure) stands above
    the memory cap: which row the cap bounds, and what nvidia-smi counts besides; with the numbers
    that add up to the row's figure when it is the run's peak that the Memory section parts (the row
    is the peak inside the windows, which may be lower). "" without a cap or below it."""
    cap, peak = m.cap_mib, shown_peak_mib
    if cap is None or peak is None or peak <= cap:
        return ""
    head = (
        f"The {fmt_gib(cap)} cap bounds what PyTorch allocates, not what nvidia-smi shows: {arm}'s nvidia-smi "
        f"peak of {fmt_gib(peak)} is"
    )
    alloc, beyond, run_peak = m.allocated_peak_mib, m.beyond_allocated_mib, m.device_peak_mib
    if (
        alloc is not None
        and beyond is not None
        and beyond >= 0
        and run_peak is not None
        and fmt_gib(run_peak) == fmt_gib(peak)
    ):
        before = f"{fmt_gib(m.device_before_mib)} in use on the GPU before the run, " if m.device_before_mib else ""
        return f"{head} {before}{fmt_gib(alloc)} allocated by PyTorch and {fmt_gib(beyond)} of CUDA context and allocator cache"
    return (
        f"{head} what PyTorch allocated plus the CUDA context, the allocator's cache and what was in use before the run"
    )

"""Failure events in words, and which one names a run's failure: the rules that ingest (a run's status
reason, reportgen.ingest.status) and the analysis (the verdict's cause, the guardrails) share, so
both name one event in one wording; and what PyTorch's out-of-memory message says.

It sits low in the import graph (it imports only the vocabulary), so the analysis reads events
without importing ingest. An event is anything with an event's attributes (`FailureEvent`): ingest's
`Event` while it reads a log, the store's `LogEvent` (one entry of events.json) after.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping, Sequence
from typing import Any, Protocol, TypeVar

from reportgen.vocab import FAILURE_KINDS, RECOVERED

_INT = r"\d{1,18}"  # as many digits as ingest reads in an index (reportgen.ingest.console.MAX_INDEX_DIGITS)
_DEC = rf"{_INT}(?:\.{_INT})?"
ALLOC = re.compile(rf"Tried to allocate ({_DEC}) ?(GiB|MiB|KiB|GB|MB|KB|B)\b")
CAPACITY = re.compile(
    rf"GPU ({_INT}) has a total capacity of ({_DEC}) ?(GiB|MiB)(?: of which ({_DEC}) ?(GiB|MiB) is free)?"
)
# PyTorch's caching allocator adds, when a per-process limit is set or the device is full:
# "... this process has 5.80 GiB memory in use. 5.00 GiB allowed; Of the allocated memory 4.94 GiB is
# allocated by PyTorch, ..." (c10/cuda/CUDACachingAllocator.cpp, torch 2.x).
IN_USE = re.compile(rf"this process has ({_DEC}) ?(GiB|MiB) memory in use")
ALLOWED = re.compile(rf"({_DEC}) ?(GiB|MiB) allowed")
BY_PYTORCH = re.compile(rf"({_DEC}) ?(GiB|MiB) is allocated by PyTorch")


class FailureEvent(Protocol):
    """What the rules here read of an event (ingest's `Event` and the store's `LogEvent` have it)."""

    @property
    def kind(self) -> str: ...
    @property
    def step(self) -> int | None: ...
    @property
    def stream(self) -> str: ...
    @property
    def line(self) -> int | None: ...
    @property
    def message(self) -> str: ...
    @property
    def details(self) -> Mapping[str, Any]: ...


E = TypeVar("E", bound=FailureEvent)
_UNIT = {"B": 1 / 2**30, "KiB": 1 / 2**20, "KB": 1 / 2**20, "MiB": 1 / 1024, "MB": 1 / 1024, "GiB": 1.0, "GB": 1.0}


def _gib(num: str, unit: str) -> float:
    return round(float(num) * _UNIT[unit], 6)


def oom_details(text: str) -> dict[str, Any]:
    """What PyTorch's out-of-memory message says, in GiB: the request, the device, and where the
    allocator stood (in use by the process, allowed under a per-process limit, held by PyTorch).
    The analysis applies it to a stored event's message too, so events ingested before a field
    was read still give it."""
    d: dict[str, Any] = {}
    m = ALLOC.search(text)
    if m:
        d["tried_to_allocate_gib"] = _gib(m.group(1), m.group(2))
        d["tried_to_allocate"] = f"{m.group(1)} {m.group(2)}"  # as PyTorch said it
    m = CAPACITY.search(text)
    if m:
        d["gpu"] = int(m.group(1))
        d["total_capacity_gib"] = _gib(m.group(2), m.group(3))
        if m.group(4):
            d["free_gib"] = _gib(m.group(4), m.group(5))
    for key, pattern in (("in_use_gib", IN_USE), ("allowed_gib", ALLOWED), ("allocated_gib", BY_PYTORCH)):
        m = pattern.search(text)
        if m:
            d[key] = _gib(m.group(1), m.group(2))
    return d


def is_handled(event: FailureEvent, clean_end: Mapping[str, int]) -> bool:
    """A traceback that the same stream's clean end (`Main func successfully`) follows: logged
    and survived (Relax logs some recoverable errors with their traceback)."""
    if event.kind != "traceback":
        return False
    end = clean_end.get(str(event.stream))
    return end is not None and event.line is not None and int(event.line) < int(end)


_RANK = {kind: i for i, kind in enumerate(FAILURE_KINDS)}


def _attempt(event: FailureEvent) -> int:
    """The attempt of the log an event belongs to (0 when the log holds one: no such detail)."""
    value = event.details.get("attempt")
    return value if isinstance(value, int) else 0


def first_failure(
    events: Sequence[E],
    clean_end: Mapping[str, int] | None = None,
    kinds: Collection[str] = FAILURE_KINDS,
) -> E | None:
    """The event that names a run's failure, or None: of the failure events of `kinds` (tracebacks
    the run survived are none), the first of the most specific kind in `vocab.FAILURE_KINDS` order,
    not the first in the log (an OOM explains the traceback logged before it and the exit after it);
    in a log of several attempts, the last attempt's (it ended the run). The one rule for the run's
    status reason and the report's verdict cause, so both name one event."""
    ends = clean_end or {}
    best: E | None = None
    best_rank = (0, len(FAILURE_KINDS))
    for e in events:
        rank = (-_attempt(e), _RANK.get(str(e.kind), len(FAILURE_KINDS)))
        if (best is None or rank < best_rank) and e.kind in kinds and not is_handled(e, ends):
            best, best_rank = e, rank
    return best


_EVENT_NAMES = {
    "nan": "NaN/Inf",
    "traceback": "exception",
    "fatal": "fatal error",
    "abnormal_exit": "abnormal exit",
}


def event_label(event: FailureEvent) -> str:
    """A failure event in words ("OOM at step 9, tried to allocate 2.46 GiB", "NaN/Inf at step 3"):
    the one wording for a run's status reason and the report's verdict cause. A `recovered` event
    names the failure it got past and how ("recovered from OOM at step 14 by global restart #1,
    steps 10-14 redone")."""
    return _label(str(event.kind), event.step, event.details)


def _label(kind: str, step: int | None, d: Mapping[str, Any]) -> str:
    at = f" at step {step}" if step is not None else ""
    if kind == RECOVERED:
        failure = _label(str(d.get("failure")), step, d)
        redone = d.get("redone")
        return f"recovered from {failure} by {d.get('by') or 'a later attempt'}" + (
            f", steps {redone} redone" if redone else ""
        )
    if kind == "traceback" and d.get("cut"):
        return f"exception{at} (the log ends inside its traceback)"
    if kind == "oom":
        said = d.get("tried_to_allocate")
        gib = d.get("tried_to_allocate_gib")
        if not said and isinstance(gib, (int, float)):
            said = f"{gib * 1024:.2f} MiB" if gib < 1 else f"{gib:.2f} GiB"
        return f"OOM{at}" + (f", tried to allocate {said}" if said else "")
    return f"{_EVENT_NAMES.get(kind, kind)}{at}"

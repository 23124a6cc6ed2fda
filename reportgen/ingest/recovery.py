"""What a run's attempts mean for its events, metrics and manifest (ingest).

Pipeline position: ingest. `ingest_run` reads each stream once (`EventScanner`, which keeps the
stream's `LifecycleTracker`); this module then takes the attempts of the stream that shows the
lifecycle (`lifecycle_stream`) and

- turns each failure that a later attempt got past into a `recovered` event (`recover`): a
  restart that trained past the failed step, or a retried job that did, or one that ended clean.
  The run's status then rests on what came after, not on a failure it survived;
- builds the manifest's `ingest.lifecycle` (`section`): one entry per attempt with the steps it
  trained, the steps it redid, how many of its values a later attempt replaced, its failure and
  how it ended, and the warnings that say so.

Pure: data in (attempts, events, counts), data out.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from reportgen.failures import event_label, first_failure
from reportgen.ingest import lifecycle as lc
from reportgen.ingest.events import Event
from reportgen.vocab import INTERRUPTED, LOG_FAILURE_KINDS, RECOVERED

# What a later attempt can get past: a failure the log shows, or a stop.
RECOVERABLE = frozenset({*LOG_FAILURE_KINDS, INTERRUPTED})


def lifecycle_stream(attempts: Mapping[str, Sequence[lc.Attempt]]) -> str:
    """The stream whose attempts are the run's: the one with the most (Relax under `ray job
    submit` prints everything on one stream); on a tie the first (stdout)."""
    return max(attempts, key=lambda name: len(attempts[name]))


def _how(a: lc.Attempt) -> str:
    """How an attempt came about, in words: "global restart #1", "a new job (attempt 2)"."""
    if a.kind == lc.RESTART:
        return a.started_by
    return f"a new job (attempt {a.number})"


def _redone(past: lc.Attempt, attempts: Sequence[lc.Attempt]) -> set[int]:
    """The steps `past` trained that an earlier attempt had logged already."""
    before: set[int] = set()
    for a in attempts:
        if a.number >= past.number:
            break
        before |= a.indices
    return past.trained & before


def recover(events: Sequence[Event], attempts: Sequence[lc.Attempt], stream: str) -> list[Event]:
    """`events` with every failure of `stream` that a later attempt got past turned into a
    `recovered` event: same line, message and excerpt; `details.failure` is the kind it was,
    `details.by` the attempt that got past it, `details.redone` the steps that attempt trained
    again. Got past: it trained the failed step or a later one, or it ended clean."""
    if len(attempts) < 2:
        return list(events)
    out = []
    for ev in events:
        number = ev.details.get("attempt")
        if ev.stream != stream or ev.kind not in RECOVERABLE or not isinstance(number, int):
            out.append(ev)
            continue
        past = next(
            (
                a
                for a in attempts
                if a.number > number
                and (a.end == lc.CLEAN or (a.trained and (ev.step is None or max(a.trained) >= ev.step)))
            ),
            None,
        )
        if past is None:
            out.append(ev)
            continue
        redone = _redone(past, attempts)
        details = {
            **ev.details,
            "failure": ev.kind,
            "by": _how(past),
            "recovered_in": past.number,
            "redone": lc.ranges_text(redone) if redone else None,
        }
        if past.resumed:
            details["resumed_from_iteration"] = past.loaded_iteration
        out.append(dataclasses.replace(ev, kind=RECOVERED, details=details))
    return out


def _failure(events: Sequence[Event], a: lc.Attempt, several: bool) -> str | None:
    """The failure of attempt `a` in words (before `recover` renamed it); a traceback of an
    attempt that ended clean was handled, no failure."""
    mine = [e for e in events if not several or e.details.get("attempt") == a.number]
    kinds = RECOVERABLE - {"traceback"} if a.end == lc.CLEAN else RECOVERABLE
    e = first_failure(mine, kinds=kinds)
    return event_label(e) if e is not None else None


def section(
    attempts: Sequence[lc.Attempt],
    events: Sequence[Event],
    *,
    stream: str,
    replaced_by: Mapping[int, int],
    last_end: str | None,
) -> tuple[dict[str, Any], list[str]]:
    """The manifest's `ingest.lifecycle` and its warnings. `events` are the stream's events before
    `recover`; `replaced_by` maps an attempt number to how many of its values a later attempt
    replaced; `last_end` is how the last attempt ended when the log does not say (the status
    rule's "cut", or None)."""
    several = len(attempts) > 1
    entries = []
    warnings: list[str] = []
    for a in attempts:
        failure = _failure(events, a, several)
        end = a.end or ("failed" if failure else None)
        if end is None and a is not attempts[-1]:
            end = "restarted" if attempts[a.number].kind == lc.RESTART else "cut"
        if a is attempts[-1] and end is None:
            end = last_end
        redone = _redone(a, attempts)
        replaced = replaced_by.get(a.number, 0)
        entries.append(lc.attempt_json(a, redone, replaced, failure, end))
        if replaced:
            later = next((b for b in attempts if b.number > a.number and b.trained & a.indices), None)
            who = f"attempt {later.number}" if later else "a later attempt"
            warnings.append(
                f"{who} replaced {replaced} value(s) that attempt {a.number} had logged at steps "
                f"{lc.ranges_text(a.indices & (later.trained if later else a.indices))}: the metrics hold the "
                "last attempt's value of each step"
            )
    restarts = sum(1 for a in attempts if a.kind == lc.RESTART)
    jobs = sum(1 for a in attempts if a.kind == lc.JOB)
    resumed = [a for a in attempts if a.kind == lc.JOB and a.resumed]
    if jobs > 1:
        warnings.append(f"the log holds {jobs} jobs (a retried or resumed run appended to one file): see its lifecycle")
    if restarts:
        warnings.append(
            f"the run restarted {restarts} time(s) inside its job (Relax's health check): see its lifecycle"
        )
    for a in resumed:
        warnings.append(
            f"attempt {a.number} resumed from a checkpoint (iteration {a.loaded_iteration}): its steps start at "
            f"{a.start_step}"
        )
    out = {
        "stream": stream,
        "attempts": entries,
        "jobs": jobs,
        "restarts": restarts,
        "replaced_values": sum(replaced_by.values()),
    }
    return out, warnings

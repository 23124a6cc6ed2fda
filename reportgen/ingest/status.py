"""A run's final status from its events and how its process ended: the one rule for every entry.

Pipeline position: ingest. `ingest_run` calls `decide_status` for `reportgen run` (the runner
passes the exit code, signal, time-out and interruption it saw) and for `reportgen ingest` (none
known), so the same log gets the same status either way.

The rule is evidence first: a run is `failed` only when something says so, and the reason names
that line (`stdout.log:57: torch.OutOfMemoryError: ...`) or the exit. In order:

1. `interrupted` when the runner stopped it (Ctrl-C, a lost machine): it is unfinished, not failed.
2. `failed` on a failure event (OOM, NaN/Inf, fatal loop message, an unhandled traceback); a
   traceback that Relax's clean end (`Main func successfully`) follows was handled, not fatal.
   The reason names `first_failure`'s event: the most specific kind first (`vocab.FAILURE_KINDS`:
   an OOM before the NaN or traceback around it), the report's verdict cause names the same one.
3. `failed` when the runner's time limit stopped it.
4. `failed` when fp16's loss scaler skipped the update of every training step.
5. `interrupted` when the log says a stop signal arrived (`Graceful shutdown triggered (SIGTERM)`)
   or the process ended by a stop signal (or with 128 + its number, as Relax's handler exits).
6. `failed` on any other non-zero exit code or signal.
7. `interrupted` when nothing says how the run ended: no exit code or signal is known (a log given
   to `reportgen ingest`) and the log's last attempt shows neither Relax's clean end (`Main func
   successfully`, Ray's `Job '...' succeeded`) nor a stop nor a failure. A log cut by SIGKILL, or by
   Relax's own `os._exit(1)`, ends like that; the reason names where it ends.
8. otherwise `complete`.

A run that recovered (Relax's in-run restart, or a retried job in the same log, see
reportgen.ingest.lifecycle) is judged by what came after: the failures it got past are `recovered`
events, not failures, and of the failures that remain the last attempt's name the run's end.
"""

from __future__ import annotations

import signal as signal_mod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from reportgen.failures import FailureEvent, event_label, first_failure
from reportgen.ingest.events import STOP_SIGNALS
from reportgen.ingest.lifecycle import STOPPED
from reportgen.vocab import LOG_FAILURE_KINDS, Status

COMPLETE, FAILED, INTERRUPTED = Status.COMPLETE, Status.FAILED, Status.INTERRUPTED
CUT = "cut"  # RunStatus.process_event of a log that ends with no word of how: the ingest records where
_STOP_CODES = frozenset(128 + int(getattr(signal_mod, name)) for name in STOP_SIGNALS if hasattr(signal_mod, name))


@dataclass(frozen=True)
class RunStatus:
    """`status` with the one-line `reason` (None when complete) and, when the decision rests on how
    the process ended rather than on a logged line, the process event kind to record."""

    status: str
    reason: str | None
    process_event: str | None = None


def _where(event: FailureEvent) -> str:
    line = event.line
    stream = event.stream or "stdout"
    msg = str(event.message or "").strip()
    if len(msg) > 200:
        msg = msg[:197] + "..."
    at = f"{stream}.log:{line}" if line is not None else stream
    return f"{at}: {msg}" if msg else at


def decide_status(
    events: Sequence[FailureEvent],
    *,
    exit_code: int | None = None,
    signal: str | None = None,
    timed_out: bool = False,
    interrupted: bool = False,
    clean_end: Mapping[str, int] | None = None,
    train_steps: int = 0,
    loss_scale_skipped_steps: int = 0,
    log_end: str | None = None,
    cut_at: str | None = None,
) -> RunStatus:
    """The status of a run: see the module docstring for the rule. `events` are the logs' events
    (ingest's `Event`s, or events.json's `LogEvent`s); `clean_end` maps a stream to the line
    of its `Main func successfully`; `train_steps` counts `step N` records and
    `loss_scale_skipped_steps` those whose update the loss scaler skipped. `log_end` is how the
    log's last attempt says it ended (reportgen.ingest.lifecycle: "clean", "stopped", "failed",
    None for nothing) and `cut_at` where the log ends ("cut at line 412, mid-line"), for rule 7."""
    clean_end = clean_end or {}
    if interrupted:
        return RunStatus(INTERRUPTED, "the run was interrupted before it finished", "interrupted")
    failure = first_failure(events, clean_end, LOG_FAILURE_KINDS)
    if failure is not None:
        return RunStatus(FAILED, f"{event_label(failure)} ({_where(failure)})")
    if timed_out:
        return RunStatus(FAILED, "the workload ran past its time limit and was stopped", "timeout")
    if train_steps and loss_scale_skipped_steps >= train_steps:
        return RunStatus(
            FAILED,
            f"fp16 loss scaling skipped the parameter update of every training step ({loss_scale_skipped_steps} of "
            f"{train_steps}): the model never trained",
        )
    stop = next((e for e in events if e.kind == "interrupted"), None)
    if stop is not None and (exit_code in (None, 0) or exit_code in _STOP_CODES) and not _bad_signal(signal):
        return RunStatus(INTERRUPTED, f"stopped by {stop.details.get('signal')} ({_where(stop)})")
    if signal in STOP_SIGNALS:
        return RunStatus(INTERRUPTED, f"stopped by {signal}", "interrupted")
    if signal:
        return RunStatus(FAILED, f"the workload process was killed by {signal}", "abnormal_exit")
    if exit_code not in (None, 0):
        return RunStatus(FAILED, f"the workload process exited with code {exit_code}", "abnormal_exit")
    if exit_code is None and log_end == STOPPED:
        return RunStatus(INTERRUPTED, "stopped (the log says the job was stopped)")
    if exit_code is None and log_end is None and cut_at is not None:
        return RunStatus(INTERRUPTED, f"the log ends without Relax's end-of-run lines ({cut_at})", CUT)
    return RunStatus(COMPLETE, None)


def _bad_signal(signal: str | None) -> bool:
    return signal is not None and signal not in STOP_SIGNALS

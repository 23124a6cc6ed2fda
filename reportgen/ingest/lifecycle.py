"""A run's lifecycle read from its console log: attempts, in-run restarts and resumes.

Pipeline position: ingest. `EventScanner` (events.py) hands every line that can mark a lifecycle
change to one `LifecycleTracker` per stream; `ingest_run` turns the trackers' attempts into the
manifest's `ingest.lifecycle` and into `recovered` events (`summarize`).

Why: a real log comes in pieces. A Ray job retried with its output appended (`tee -a`) holds two
jobs; Relax's health check restarts the whole controller inside one job after an actor failure
and re-runs steps from the last checkpoint; a run resumed with `--load` starts at a later step.
Read as one flat log, the first attempt's failure fails a run that completed, its values are
silently replaced, and its time and steps are added to the next attempt's. The markers, each with
the file and line of the code that prints it, are in tests/ingest/relax_sources.md:

| marker | starts | source row |
|---|---|---|
| `Job '...' submitted successfully` | a new job (attempt) | `ray-job-submitted` |
| Megatron's `---- arguments ----` dump | a new job: printed by the driver's `parse_args` | `arg-dump` |
| `Ray initialized successfully` | a new job: the driver's first line after `ray.init` | `main-start` |
| `Restarting service 'X'...` | an in-run restart (a new segment of the job) | `restart-service` |
| `=== Starting GLOBAL restart #N ...` | marks that restart global (or starts one) | `global-restart` |

A job marker starts a new attempt only when the current one already showed the same marker, or
logged a metric record, or ended (a job's own start-up prints all three once). Inside Ray's
re-print of a failed job's tail (`last available logs ...`) nothing starts: it repeats lines
already read. The loaded checkpoint (`successfully loaded checkpoint ... at iteration N`) and the
actor's `Actor initialized with starting step S` say where a segment resumed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

TIMESTAMP = re.compile(r"(\d{4}-\d{2}-\d{2})[ T](\d{2}:\d{2}:\d{2})")

JOB_SUBMITTED = re.compile(r"Job '[^']*' submitted successfully")  # ray/dashboard/modules/job/cli.py
JOB_SUCCEEDED = re.compile(r"Job '[^']*' succeeded")
JOB_STOPPED = re.compile(r"Job '[^']*' was stopped")
RAY_INITIALIZED = "Ray initialized successfully"  # relax/entrypoints/train.py:93
DUMP_HEAD = "arguments --"  # Megatron's `------------------------ arguments ------------------------`
DUMP_END = "end of arguments"
# relax/core/controller.py:638, :705-707; relax/utils/health_system.py:305, :316
RESTART_SERVICE = re.compile(r"Restarting service '([^']*)'\.\.\.")
GLOBAL_RESTART = re.compile(r"=== Starting GLOBAL restart #(\d+)")
# relax/core/controller.py:561-563: the main thread's task failed because the restart killed it.
RESTART_WAIT = "Training loop interrupted by ongoing restart"
UNHEALTHY = re.compile(r"Service (\S+) (?:is unhealthy: (.*), triggering restart|heartbeat stale \(timeout\))")
# Megatron's load_checkpoint (quoted at relax/backends/megatron/checkpoint.py:237) and
# relax/components/actor.py:75.
CKPT_LOADED = re.compile(r"successfully loaded checkpoint from (\S+).*? at iteration (\d{1,18})")
START_STEP = re.compile(r"initialized with starting step (\d{1,18})")

JOB, RESTART = "job", "restart"
CLEAN, STOPPED, FAILED = "clean", "stopped", "failed"


def _iso(m: re.Match[str] | None) -> str | None:
    if m is None:
        return None
    try:
        t = datetime.fromisoformat(f"{m.group(1)}T{m.group(2)}")
    except ValueError:
        return None
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


def timestamp(line: str) -> str | None:
    """The logger timestamp of `line` as ISO 8601 UTC (Relax prints no zone), or None."""
    return _iso(TIMESTAMP.search(line)) if "-" in line else None


@dataclass
class Attempt:
    """One stretch of a log between two lifecycle boundaries: a job (the first, or a retry / a
    resumed run appended to the same file) or an in-run restart of that job."""

    number: int  # 1-based, in log order
    kind: str  # JOB | RESTART
    started_by: str  # what marked its start, in words
    line: int  # its first line in the stream
    markers: set[str] = field(default_factory=set)  # job markers seen in it (see the module docstring)
    # Filled by EventScanner._count, record by record (inlined there: it runs on every metric line).
    indices: set[int] = field(default_factory=set)  # every metric index it logged
    trained: set[int] = field(default_factory=set)  # indices the actor trained (see EventScanner._count)
    critic: set[int] = field(default_factory=set)  # indices a critic trained (`critic-step N`)
    loaded_iteration: int | None = None
    start_step: int | None = None
    restart_role: str | None = None
    global_restart: int | None = None
    cause: str | None = None  # the health checker's message that triggered the restart
    end: str | None = None  # CLEAN | STOPPED | FAILED, from the log; None: nothing said how it ended
    started_utc: str | None = None
    ended_utc: str | None = None
    last_line: int | None = None

    @property
    def resumed(self) -> bool:
        """It started past step 0: from a checkpoint (a restart, or a run launched with --load)."""
        return bool(self.start_step) or bool(self.loaded_iteration)


class LifecycleTracker:
    """The attempts of one stream. `EventScanner` calls `line` for every line that holds a marker
    word and fills the current attempt's step sets for every metric record, in log order. Times
    are the scanner's to set (it knows where the timestamps around a boundary are): `line`
    returning True means a new attempt started at that line."""

    def __init__(self) -> None:
        self.attempts: list[Attempt] = [Attempt(1, JOB, "log start", 1)]
        self.in_replay = False  # inside Ray's re-print of a failed job's last 20,000 characters
        self._cause: str | None = None  # an unhealthy service's message, until its restart starts

    @property
    def current(self) -> Attempt:
        return self.attempts[-1]

    def line(self, n: int, text: str) -> bool:
        """Read one line that may mark a lifecycle change; True if a new attempt started here."""
        if JOB_SUBMITTED.search(text):
            self.in_replay = False  # a new job's output is not the old one's re-print
            return self._job_marker(n, "submitted", "job submission")
        if self.in_replay:
            return False
        if RAY_INITIALIZED in text:
            return self._job_marker(n, "ray-init", "Ray initialized")
        if DUMP_HEAD in text and DUMP_END not in text:
            return self._job_marker(n, "dump", "argument dump")
        cur = self.current
        m = UNHEALTHY.search(text)
        if m:
            role, why = m.group(1), m.group(2)
            self._cause = f"service {role} unhealthy: {why}" if why else f"service {role}: heartbeat timed out"
            return False
        m = RESTART_SERVICE.search(text)
        if m:
            self._start(n, RESTART, f"restart of service {m.group(1)}")
            self.current.restart_role, self.current.cause, self._cause = m.group(1), self._cause, None
            return True
        m = GLOBAL_RESTART.search(text)
        if m:
            number = int(m.group(1))
            if cur.kind == RESTART and cur.global_restart is None and not cur.indices:
                cur.global_restart, cur.started_by = number, f"global restart #{number}"
                return False
            self._start(n, RESTART, f"global restart #{number}")
            self.current.global_restart, self.current.cause, self._cause = number, self._cause, None
            return True
        m = CKPT_LOADED.search(text)
        if m:
            cur.loaded_iteration = int(m.group(2))
            if cur.start_step is None and cur.loaded_iteration:
                cur.start_step = cur.loaded_iteration + 1  # relax/backends/megatron/actor.py:204
            return False
        m = START_STEP.search(text)
        if m:
            cur.start_step = int(m.group(1))
        return False

    def _job_marker(self, n: int, marker: str, label: str) -> bool:
        cur = self.current
        if marker in cur.markers or cur.indices or cur.end is not None:
            self._start(n, JOB, label)
            self.current.markers.add(marker)
            return True
        if not cur.markers and cur.number == 1:
            cur.started_by = label
        cur.markers.add(marker)
        return False

    def _start(self, n: int, kind: str, label: str) -> None:
        self.current.last_line = n - 1
        self.attempts.append(Attempt(len(self.attempts) + 1, kind, label, n))

    def ended(self, how: str) -> None:
        """The log said how the current attempt ended (CLEAN, STOPPED, FAILED)."""
        self.current.end = how

    def replay(self) -> None:
        """Ray's job-failure summary: what follows re-prints the job's tail."""
        self.in_replay = True
        if self.current.end is None:
            self.current.end = FAILED

    def finish(self, last_line: int) -> list[Attempt]:
        self.current.last_line = last_line
        return self.attempts


def span(steps: set[int]) -> list[int] | None:
    """[lowest, highest] of a set of steps, or None when empty."""
    return [min(steps), max(steps)] if steps else None


def ranges(steps: set[int]) -> list[list[int]]:
    """Consecutive runs of `steps` as [first, last] pairs ({1, 2, 3, 7} -> [[1, 3], [7, 7]])."""
    out: list[list[int]] = []
    for s in sorted(steps):
        if out and s == out[-1][1] + 1:
            out[-1][1] = s
        else:
            out.append([s, s])
    return out


def ranges_text(steps: set[int]) -> str:
    """`ranges` in words: "0-6, 9"."""
    return ", ".join(f"{a}-{b}" if b > a else str(a) for a, b in ranges(steps)) or "none"


def _seconds(a: str | None, b: str | None) -> float | None:
    if not a or not b:
        return None
    fmt = "%Y-%m-%dT%H:%M:%SZ"
    return max(0.0, (datetime.strptime(b, fmt) - datetime.strptime(a, fmt)).total_seconds())


def attempt_json(a: Attempt, redone: set[int], replaced: int, failure: str | None, end: str | None) -> dict[str, Any]:
    """One attempt as the manifest records it (docs/formats/runs.md, `ingest.lifecycle`)."""
    return {
        "attempt": a.number,
        "kind": a.kind,
        "started_by": a.started_by,
        "first_line": a.line,
        "last_line": a.last_line,
        "started_utc": a.started_utc,
        "ended_utc": a.ended_utc,
        "duration_s": _seconds(a.started_utc, a.ended_utc),
        "resumed_from_iteration": a.loaded_iteration if a.resumed else None,
        "start_step": a.start_step if a.resumed else None,
        "steps": span(a.trained),
        "trained_steps": len(a.trained),
        "rollout_only_steps": sorted(a.indices - a.trained - a.critic)[:100],
        "redone_steps": ranges(redone),
        "redone": ranges_text(redone) if redone else None,
        "replaced_values": replaced,
        "cause": a.cause,
        "end": end,
        "failure": failure,
    }

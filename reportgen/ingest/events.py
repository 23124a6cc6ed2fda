"""Failure events found in a console log: OOM, NaN/Inf, tracebacks, fatal loop errors.

Pipeline position: ingest. `EventScanner.push` is hooked into `ConsoleParser` (one read of a log
gives records and events); `find_events` wraps both for callers holding lines. Each event is
located (stream, 1-based line, step) and quoted exactly (the line and ~8 lines either side,
ANSI codes stripped). Memory stays bounded: a ring of recent lines plus the open excerpts.

Step: the number in a `... failed at step N` message on, just before or just after the line;
else the step after the last one whose training finished (`step N` record, or a `perf N` record
carrying a training timer); else the last metric index seen; else unknown (None).

What is and is not a failure (the facts are in tests/ingest/relax_sources.md, read from Relax's
code): Relax logs `Graceful shutdown triggered (atexit)` after a clean end as well as after a failed
loop, so that line is no event; with a signal name (`SIGTERM` from `ray job stop`) it is an
`interrupted` event. One failure is one event: the lines that report it again (the fatal loop
messages that quote it, the tracebacks of the callers it propagated through, Ray's job-failure
summary that re-prints the last 20,000 characters of the log) are attached to it as `repeats` /
`also_at_lines`, not counted again. fp16's `Inf found in gradients ... skipping parameter update` is
the dynamic loss scaler at work: counted (`loss_scale_skips`), and the NaN grad norm Relax logs
for a skipped update is part of it, not an event. A warning marks the next actor `step N` as skipped
only if that step's grad norm is nan: a critic (PPO) logs the same warning for its own skips, and
marks the next `critic-step N` alike. Otherwise a critic's non-finite loss or grad norm is a NaN
event as the actor's is (a bf16 critic that diverges); its line is no actor train step.
"""

from __future__ import annotations

import math
import re
from bisect import bisect_left
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from reportgen.failures import oom_details
from reportgen.ingest import lifecycle as lc
from reportgen.ingest.console import CRITIC_STEP, MAX_INDEX_DIGITS, ConsoleParser, Record
from reportgen.vocab import CRITIC_GRAD_NORM, GRAD_NORM, TRAIN_DONE_KEYS

CONTEXT = 8
MAX_EVENTS = 2000
MAX_ALSO_AT = 20  # the most lines an event's `also_at_lines` lists (its `repeats` counts them all)
# How far back a `failed at step N` message still names the step of a later event line.
STEP_MESSAGE_REACH = 200
# A traceback with no exception line after this many lines is abandoned.
MAX_TRACEBACK = 2000

RAY_PREFIX = re.compile(r"^\([^()]*pid=\d+[^()]*\) ?")
# What may stand before a traceback's lines: a Ray prefix, and a paste's `> ` quoting.
LINE_PREFIX = re.compile(r"^(?:> ?)*(?:\([^()]*pid=\d+[^()]*\) ?)?")
OOM = re.compile(r"out of memory|OutOfMemoryError|OUT_OF_MEMORY|Observe OOM")
NAN = re.compile(r"found NaN|found nan|NaN found|found Inf|NaN or Inf")
# A component's loop giving up (relax/entrypoints/train.py, relax/core/controller.py,
# relax/components/*.py: `... failed at step N: Type: msg`, `SFT producer crashed at step N: ...`).
FATAL = re.compile(
    r"Training loop failed with error|Training loop failed: |Global restart failed"
    r"|[A-Za-z_-]+ (?:training |generation |computation )?failed at step \d+: |crashed at step \d+: "
    # relax/core/controller.py:710-715 (restarts exhausted, then os._exit(1)); health_system.py:294-297
    r"|Refusing to restart|reported FATAL error"
)
# Ray's exception for an error raised in a remote call (ray/exceptions.py:249, :285): its class
# name carries the cause, wherever the line stands (a traceback's last line, a caller's message,
# a pasted banner).
RAY_TASK_ERROR = re.compile(r"RayTaskError\((\w+)\)")
# ray/_private/worker.py:438-440: an error no caller fetched, printed as a RayTaskError's text
# (the remote traceback's frames, then the exception line).
RAY_UNHANDLED = "Unhandled error (suppress with"
# relax/entrypoints/train.py `_graceful_shutdown`: `(atexit)` on every exit, a signal name when stopped.
SHUTDOWN = re.compile(r"Graceful shutdown triggered \((\w+)\)")
CLEAN_END = "Main func successfully"  # relax/entrypoints/train.py, logged only when the loop returned
# relax/backends/megatron/model.py, fp16 dynamic loss scaling: routine, the scaler lowers the scale.
LOSS_SCALE_SKIP = re.compile(r"Inf found in gradients(?: \(step_id=(\d+)(?:, loss_scale=([^)]*))?\))?")
# Ray's job-failure summary (ray/dashboard/modules/job/job_supervisor.py): what follows re-prints
# the end of the job's log.
RAY_SUMMARY = "last available logs (truncated to 20,000 chars)"
STOP_SIGNALS = frozenset({"SIGTERM", "SIGINT", "SIGHUP", "SIGQUIT"})
# Numbers read from a log are bounded (`MAX_INDEX_DIGITS`, as a metric head's N): int() of more than
# 4,300 digits raises ValueError, so a longer run of digits is no number here (a `failed at step
# <5000 digits>` names no step).
_INT = rf"\d{{1,{MAX_INDEX_DIGITS}}}"
_DEC = rf"{_INT}(?:\.{_INT})?"
# Ray's log deduplicator (ray/_private/ray_logging/__init__.py): one line standing for N.
RAY_REPEATED = re.compile(rf"\[repeated ({_INT})x across cluster\]")
RAY_EXIT_CODE = re.compile(rf"exit code (-?{_INT})(?!\d)")  # in Ray's job-failure summary
FAILED_AT_STEP = re.compile(rf"failed at step ({_INT})(?!\d)")
_LOSS_KINDS = ("step", "perf", "rollout", CRITIC_STEP)  # records whose non-finite losses are an event
# An actor `perf N` line holds one of these once its step trained (vocab.TRAIN_DONE_KEYS).
_TRAIN_TIME, _STEP_TIME, _ACTOR_TRAIN_TIME = TRAIN_DONE_KEYS


@dataclass(frozen=True)
class Event:
    kind: str
    step: int | None
    stream: str
    line: int | None
    message: str
    excerpt: tuple[str, ...] = ()
    details: dict[str, Any] = field(default_factory=dict, hash=False)

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "step": self.step,
            "stream": self.stream,
            "line": self.line,
            "message": self.message,
            "excerpt": list(self.excerpt),
            "details": self.details,
        }


# A line holding none of these words cannot start an event: `push_block` looks for them at memchr
# speed, `_maybe_trigger` line by line.
TRIGGER_WORDS = (
    "memory",  # also `torch.OutOfMemoryError: CUDA out of memory`
    "OOM",
    "RayTaskError",  # also `RayTaskError(OutOfMemoryError)` outside a traceback
    "Unhandled error",
    "NaN",
    "nan",
    "Inf",
    "Traceback",
    "failed",
    "Graceful",
    "crashed",
    "truncated to",
    # The lifecycle's markers (reportgen.ingest.lifecycle), folded into few words because each word
    # is one more pass over a block's text: "succe" (`Main func successfully`, `Ray initialized
    # successfully`, `submitted successfully`, `successfully loaded checkpoint`, `Job ... succeeded`),
    # "estart" (`Restarting service`, `GLOBAL restart`, `Refusing to restart`, a fatal report's
    # `Skipping restart`), Megatron's dump head, Relax's starting step, Ray's stopped job.
    "succe",
    "estart",
    "arguments --",
    "starting step",
    "was stopped",
)


def _maybe_trigger(text: str) -> bool:
    # Substring tests are ~10x cheaper than one alternation regex; most lines stop here.
    return any(map(text.__contains__, TRIGGER_WORDS))


def lines_with(text: str, needles: tuple[str, ...]) -> list[int]:
    """Sorted 0-based numbers of the `\n`-separated lines of `text` that hold any of `needles`
    (a needle may start with `\n`: its line is the one its last character is on). str.find
    loops run at memchr speed, far faster than one alternation regex over the block."""
    hits: list[int] = []
    for needle in needles:
        back = len(needle) - 1
        at = text.find(needle)
        while at >= 0:
            hits.append(at + back)
            nl = text.find("\n", at + back + 1)
            if nl < 0:
                break
            at = text.find(needle, nl + 1 - back)
    if not hits:
        return []
    hits.sort()
    out: list[int] = []
    idx, pos = 0, 0
    for h in hits:
        idx += text.count("\n", pos, h)
        pos = h
        if not out or out[-1] != idx:
            out.append(idx)
    return out


def _nonfinite_losses(rec: Record) -> dict[str, str]:
    bad = {}
    for k, v in rec.values.items():
        # The value test first: most records with a non-finite value (an `inf` MFU) have no
        # non-finite loss, and it is cheaper than splitting every key.
        if isinstance(v, float) and not math.isfinite(v):
            leaf = k.rsplit("/", 1)[-1]
            if "loss" in leaf or "grad_norm" in leaf:
                bad[k] = repr(v)
    return bad


def _finite_grad_norm(values: dict[str, Any], key: str = GRAD_NORM) -> bool:
    v = values.get(key)
    return isinstance(v, float) and math.isfinite(v)


def _all_finite(values: dict[str, Any]) -> bool:
    """True if every value is a finite number (one C-speed sum; False also means "look closer")."""
    try:
        return math.isfinite(sum(values.values()))
    except (TypeError, OverflowError):
        return False


class EventScanner:
    """Streaming failure scan of one stream. Call `push` per line (or `push_block`), then `finish()`.

    It also keeps the stream's lifecycle (`lifecycle`: attempts, restarts, resumes; see
    reportgen.ingest.lifecycle): events and step bookkeeping are per attempt, so a failure of a
    retried job is not merged with the retry's, and a restarted segment's steps start afresh."""

    def __init__(self, stream: str, *, context: int = CONTEXT) -> None:
        self.stream = stream
        self.context = context
        self.metric_lines = 0
        self.done_step: int | None = None
        self.any_index: int | None = None
        self.dropped = 0
        self._before: deque[str] = deque(maxlen=context)
        self._open: list[dict[str, Any]] = []  # events still collecting after-context
        self._events: list[dict[str, Any]] = []
        self._seen: dict[tuple, dict[str, Any]] = {}
        self._step_msg: tuple[int, int] | None = None  # (step, line) of the last `failed at step N`
        self._tb_start: int | None = None
        self._tb_prefix = ""
        self._tb_files = 0
        self.train_steps: set[int] = set()  # indices of `step N` records
        self.critic_steps: set[int] = set()  # indices of `critic-step N` records (PPO)
        self.critic_skipped: set[int] = set()  # ... whose update the fp16 loss scaler skipped (grad norm nan)
        self.clean_end: int | None = None  # line of `Main func successfully`
        self.replay_from: int | None = None  # line of Ray's job-failure summary header
        self.loss_scale: dict[str, Any] = {
            "warnings": 0,
            "steps": 0,
            "first_line": None,
            "last_loss_scale": None,
            "skipped_steps": [],
        }
        self._skip_pending = False  # a loss-scale skip was logged; the next `step N` record is that step
        self._critic_skip_pending = False  # ... and the next `critic-step N` record, if it was the critic's
        self._skipped_record = False
        # The step the actor is in: the highest index of its records (`rollout N` starts its train,
        # `step N`, its `perf N`), while the rollout manager's lines may run ahead (fully async).
        self._actor_step: int | None = None
        self._perf_done = False  # an actor `perf N` with a training timer was seen: it, not `step N`, ends a step
        self.lifecycle = lc.LifecycleTracker()
        self.last_line = 0
        # Timestamps for the attempts' start and end times (see `_ts_*`): the last one before the
        # current block (line mode: before the current line), and from which line the current
        # attempt still wants its first.
        self._ts_last: str | None = None
        self._ts_want: int | None = 1
        self._block: tuple[int, list[str]] | None = None
        self._carry: int | None = None  # the step a restarted job was at, until the restart logs one

    # -- per line ---------------------------------------------------------------------------
    def push(self, n: int, text: str, record: Record | None) -> None:
        if self._open:
            for ev in self._open:
                ev["after"].append(text)
                ev["left"] -= 1
            if self._open[0]["left"] <= 0:  # opened in line order, so the first closes first
                self._open = [e for e in self._open if e["left"] > 0]
        if record is not None:
            self._on_record(n, text, record)
        elif self._tb_start is not None:
            self._in_traceback(n, text)
        elif _maybe_trigger(text):
            self._on_text(n, text)
        self._before.append(text)
        self.last_line = n
        if self._block is None:  # line by line: every line passes here, its timestamp too
            ts = lc.timestamp(text)
            if ts is not None:
                if self._ts_want is not None and n >= self._ts_want:
                    self.lifecycle.current.started_utc, self._ts_want = ts, None
                self._ts_last = ts

    def push_block(self, first: int, text: str, lines: list[str], records: list[Record]) -> None:
        """The same as `push` for each of `lines` (numbered from `first`; `text` is them joined
        by `\n`), but lines that cannot start or end an event are passed over in bulk: only
        lines holding a trigger word, records with a non-finite loss and lines inside a
        traceback cost a `push`; other records only update the step bookkeeping."""
        rec_at = {r.line_no - first: r for r in records}  # the last record of a line, as `push` sees it
        loud = [
            i for i, r in rec_at.items() if r.kind in _LOSS_KINDS and not _all_finite(r.values) and _nonfinite_losses(r)
        ]
        # `push` reads a record line as its record whatever words it holds, so only the other
        # lines are scanned for trigger words (most of a log's bytes are metric lines).
        if rec_at:
            others = [i for i in range(len(lines)) if i not in rec_at]
            wordy = [others[j] for j in lines_with("\n".join([lines[i] for i in others]), TRIGGER_WORDS)]
        else:
            wordy = lines_with(text, TRIGGER_WORDS)
        todo_set = set(loud).union(wordy)
        todo = sorted(todo_set)
        quiet = [i for i in rec_at if i not in todo_set]
        self._block = (first, lines)
        try:
            cur = 0
            for i in todo:
                self._advance(first, lines, cur, i, rec_at, quiet)
                self.push(first + i, lines[i], rec_at.get(i))
                cur = i + 1
            self._advance(first, lines, cur, len(lines), rec_at, quiet)
        finally:
            self._block = None
        self.last_line = first + len(lines) - 1
        # The attempt's first timestamp, if it still has none; then the block's last one.
        if self._ts_want is not None:
            ts = self._first_ts(lines, max(0, self._ts_want - first), len(lines))
            if ts is not None:
                self.lifecycle.current.started_utc, self._ts_want = ts, None
        self._ts_last = self._last_ts(lines, len(lines)) or self._ts_last

    def _advance(
        self, first: int, lines: list[str], cur: int, stop: int, rec_at: dict[int, Record], quiet: list[int]
    ) -> None:
        """Push lines[cur:stop]: none holds a trigger word; records among them (line numbers in
        the sorted `quiet`) have no non-finite loss, so they cannot raise an event."""
        while cur < stop and self._tb_start is not None:
            self.push(first + cur, lines[cur], rec_at.get(cur))
            cur += 1
        if cur >= stop:
            return
        for i in quiet[bisect_left(quiet, cur) : bisect_left(quiet, stop)]:
            self._count(rec_at[i])
            self._skipped_record = False  # as `_on_record` leaves it: the flag is for this record only
        if self._open:
            for ev in self._open:
                take = lines[cur : min(stop, cur + ev["left"])]
                ev["after"].extend(take)
                ev["left"] -= len(take)
            self._open = [e for e in self._open if e["left"] > 0]
        self._before.extend(lines[max(cur, stop - self.context) : stop])

    # -- timestamps of the attempts' boundaries ------------------------------------------------
    @staticmethod
    def _first_ts(lines: list[str], a: int, b: int) -> str | None:
        for line in lines[a:b]:
            ts = lc.timestamp(line)
            if ts is not None:
                return ts
        return None

    @staticmethod
    def _last_ts(lines: list[str], b: int) -> str | None:
        for i in range(b - 1, -1, -1):
            ts = lc.timestamp(lines[i])
            if ts is not None:
                return ts
        return None

    def _new_attempt(self, n: int) -> None:
        """A new attempt starts at line `n`: close the previous one's times, reset what is per
        attempt (the step it is at, the failure messages naming a step)."""
        prev = self.lifecycle.attempts[-2]
        if self._block is not None:
            first, lines = self._block
            if self._ts_want is not None and prev.started_utc is None:
                prev.started_utc = self._first_ts(lines, max(0, self._ts_want - first), n - first)
            prev.ended_utc = self._last_ts(lines, n - first) or self._ts_last
        else:
            prev.ended_utc = self._ts_last
        self._ts_want = n
        # A restart re-runs the job's steps: until it logs one, its failures are at the step the
        # job was at. A new job starts from scratch (or from a checkpoint it names).
        self._carry = self._step_for(n, "")[0] if self.lifecycle.current.kind == lc.RESTART else None
        self.done_step = self.any_index = self._actor_step = None
        self._step_msg = None
        self._perf_done = False
        self._skip_pending = self._critic_skip_pending = False

    def _count(self, rec: Record) -> None:
        """The step bookkeeping of one record (every metric line passes here: kept lean)."""
        self.metric_lines += 1
        index = rec.index
        if self.any_index is None or index > self.any_index:
            self.any_index = index
        kind = rec.kind
        att = self.lifecycle.attempts[-1]
        att.indices.add(index)
        if kind == "perf":
            v = rec.values
            if _TRAIN_TIME in v or _STEP_TIME in v or _ACTOR_TRAIN_TIME in v:  # the actor's: its step trained
                att.trained.add(index)
                if not self._perf_done:
                    self._perf_done = True
                    self.done_step = None  # from now on the actor's perf line says a step finished
                if self.done_step is None or index > self.done_step:
                    self.done_step = index
                if self._actor_step is None or index > self._actor_step:
                    self._actor_step = index
            return
        if kind == "step":
            self.train_steps.add(index)
            att.trained.add(index)
            # The step whose update the loss scaler skipped: Relax logs its grad norm as nan. A finite
            # one means the warning was another model's (a critic's: same message, no role in it).
            if self._skip_pending and not _finite_grad_norm(rec.values):
                self._skipped_record = True
                self.loss_scale["steps"] += 1
                if len(self.loss_scale["skipped_steps"]) < MAX_EVENTS:
                    self.loss_scale["skipped_steps"].append(index)
            self._skip_pending = False
            if not self._perf_done and (self.done_step is None or index > self.done_step):
                self.done_step = index  # no actor perf line yet: `step N` is the best sign the step trained
        elif kind == CRITIC_STEP:
            self.critic_steps.add(index)
            att.critic.add(index)
            # The critic's own skip (the warning names no model): its grad norm nan after a warning.
            # Without one, a nan grad norm is a diverged critic (a NaN event, `_on_record`).
            if self._critic_skip_pending and not _finite_grad_norm(rec.values, CRITIC_GRAD_NORM):
                self._skipped_record = True
                self.critic_skipped.add(index)
            self._critic_skip_pending = False
            return
        elif kind != "rollout":
            return
        if self._actor_step is None or index > self._actor_step:  # `step N`, or `rollout N` (the actor's data)
            self._actor_step = index

    def _on_record(self, n: int, text: str, rec: Record) -> None:
        self._count(rec)
        skipped, self._skipped_record = self._skipped_record, False
        if rec.kind in _LOSS_KINDS and not _all_finite(rec.values):
            bad = _nonfinite_losses(rec)
            if skipped:  # Relax logs grad_norm = nan for an update the loss scaler skipped (actor's or critic's)
                bad = {k: v for k, v in bad.items() if "grad_norm" not in k}
            if bad:
                self._emit(
                    "nan",
                    n,
                    text,
                    rec.index,
                    "metric",
                    {"nonfinite": bad, "record": f"{rec.kind} {rec.index}"},
                    sig=tuple(sorted(bad)),
                )

    def _on_text(self, n: int, text: str) -> None:
        if self._on_marker(n, text):
            return
        m = FAILED_AT_STEP.search(text)
        if m:
            self._step_msg = (int(m.group(1)), n)
            for ev in self._open:  # a message right after an event names its step (a metric's is its record's)
                if ev["step_source"] not in ("message", "metric"):
                    ev["step"], ev["step_source"] = int(m.group(1)), "message"
        body = text[LINE_PREFIX.match(text).end() :]  # type: ignore[union-attr]  # matches every string
        if body.startswith(("Traceback (most recent call last)", RAY_UNHANDLED)):
            self._tb_start, self._tb_prefix, self._tb_files = n, text[: len(text) - len(body)], 0
            return
        kind, details, sig = self._classify(text)
        if kind:
            self._emit(kind, n, text, None, None, details, sig)

    def _on_marker(self, n: int, text: str) -> bool:
        """Lines that are facts about the run rather than failures; True if `text` was one."""
        m = LOSS_SCALE_SKIP.search(text)
        if m:
            ls = self.loss_scale
            rep = RAY_REPEATED.search(text)
            # Ray's deduplicated copy of other ranks' lines stands for N of them and may come
            # after the step's own line: counted, but it names no step of its own.
            ls["warnings"] += int(rep.group(1)) if rep else 1
            ls["last_loss_scale"] = m.group(2) or ls["last_loss_scale"]
            if ls["first_line"] is None:
                ls["first_line"] = n
            self._skip_pending = self._skip_pending or rep is None
            self._critic_skip_pending = self._critic_skip_pending or rep is None
            return True
        if CLEAN_END in text:
            self.clean_end = n
            if not self.lifecycle.in_replay:
                self.lifecycle.ended(lc.CLEAN)
            return True
        m = SHUTDOWN.search(text)
        if m:
            if m.group(1) != "atexit":  # stopped by a signal; `atexit` ends clean and failed runs alike
                sig = m.group(1)
                self._emit("interrupted", n, text, None, None, {"signal": sig, "signature": m.group(0)}, sig)
                if not self.lifecycle.in_replay:
                    self.lifecycle.ended(lc.STOPPED)
            return True
        if RAY_SUMMARY in text:
            self.replay_from = n
            self.lifecycle.replay()
            code = RAY_EXIT_CODE.search(text)
            d = {"signature": "Ray job failure summary", "exit_code": int(code.group(1)) if code else None}
            self._emit("fatal", n, text, None, None, d, "Ray job failure summary")
            return True
        if lc.RESTART_WAIT in text:  # the main thread waiting for a restart: the failure is the one before
            return True
        if lc.JOB_SUCCEEDED.search(text):
            self.lifecycle.ended(lc.CLEAN)
            return True
        if lc.JOB_STOPPED.search(text):
            self.lifecycle.ended(lc.STOPPED)
            return True
        if self.lifecycle.line(n, text):
            self._new_attempt(n)
            if lc.JOB_SUBMITTED.search(text):
                self.replay_from = None  # a new job: no longer Ray's re-print of the last one
            return True
        if self.lifecycle.current.start_step and self.done_step is None and not self.lifecycle.current.indices:
            self.done_step = self.lifecycle.current.start_step - 1  # resumed: the steps before it are done
        return False

    def _classify(self, text: str) -> tuple[str | None, dict[str, Any], Any]:
        # A fatal loop message often repeats its cause (`failed at step 9: OutOfMemoryError:
        # CUDA out of memory...`): then it is that failure (an `oom` or `nan` event), which the
        # traceback's last line and the callers' messages report again (one event, repeats).
        m = FATAL.search(text)
        if m:
            d: dict[str, Any] = {"signature": m.group(0)}
            if OOM.search(text):
                d = {**oom_details(text), "signature": m.group(0), "cause": "oom"}
                return "oom", d, d.get("tried_to_allocate_gib")
            if NAN.search(text):
                d["cause"] = "nan"
                return "nan", d, d["signature"]
            return "fatal", d, m.group(0)
        if OOM.search(text):
            d = oom_details(text)
            return "oom", d, d.get("tried_to_allocate_gib")
        m = NAN.search(text)
        if m:
            return "nan", {"signature": m.group(0)}, m.group(0)
        m = RAY_TASK_ERROR.search(text)
        if m:  # a remote call's error whose cause is no OOM or NaN: fatal, named by its exception
            sig = m.group(0)
            return "fatal", {"signature": sig, "exception": m.group(1)}, sig
        return None, {}, None

    def _in_traceback(self, n: int, text: str) -> None:
        assert self._tb_start is not None
        if self._tb_prefix and not text.startswith(self._tb_prefix):
            if _maybe_trigger(text):  # another process's line, interleaved
                self._on_text(n, text)
            return
        body = text[len(self._tb_prefix) :]
        if body.startswith((" ", "\t")) or not body.strip():
            if body.lstrip().startswith("File "):
                self._tb_files += 1
            if n - self._tb_start > MAX_TRACEBACK:
                self._tb_start = None
            return
        if body.startswith("Traceback (most recent call last)"):
            self._tb_start, self._tb_files = n, 0
            return
        if self._tb_files == 0:  # not a traceback after all
            self._tb_start = None
            if _maybe_trigger(text):
                self._on_text(n, text)
            return
        start, self._tb_start = self._tb_start, None
        kind, details, sig = self._classify(text)
        exc = body.split(":", 1)[0].strip()
        m = FAILED_AT_STEP.search(text)
        if m:
            self._step_msg = (int(m.group(1)), n)
        if kind is None or kind == "fatal":
            kind, details, sig = "traceback", {}, body.strip()
        details = {**details, "exception": exc, "traceback_line": start}
        self._emit(kind, n, text, None, None, details, sig)

    # -- event bookkeeping ------------------------------------------------------------------
    def _step_for(self, n: int, text: str) -> tuple[int | None, str]:
        m = FAILED_AT_STEP.search(text)
        if m:
            return int(m.group(1)), "message"
        if self._step_msg is not None and n - self._step_msg[1] <= STEP_MESSAGE_REACH:
            return self._step_msg[0], "message"
        # The step the actor is in, if it has not finished it; else the one after the last finished.
        if self._actor_step is not None and (self.done_step is None or self._actor_step > self.done_step):
            return self._actor_step, "metrics"
        if self.done_step is not None:
            return self.done_step + 1, "metrics"
        if self.any_index is not None:
            return self.any_index, "metrics"
        if self._carry is not None:
            return self._carry, "metrics"
        return None, "unknown"

    def _emit(
        self, kind: str, n: int, text: str, step: int | None, step_source: str | None, details: dict[str, Any], sig: Any
    ) -> None:
        if step is None:
            step, step_source = self._step_for(n, text)
        attempt = self.lifecycle.current.number
        key = (attempt, kind, step, sig)
        prev = self._seen.get(key)
        if prev is None and step_source != "metric":
            prev = self._same_failure(kind, step, sig, n)
        if prev is not None:  # the same failure again (another rank, the traceback's last line, a caller)
            prev["details"]["repeats"] = prev["details"].get("repeats", 1) + 1
            also = prev["details"].setdefault("also_at_lines", [])
            if len(also) < MAX_ALSO_AT:
                also.append(n)
            if prev["kind"] in ("fatal", "traceback") and kind in ("oom", "nan"):
                prev["kind"] = kind  # the generic report of a failure whose cause this line names
                self._rehome(prev, n, text, details, sig)
            elif (
                prev["kind"] == kind == "oom"
                and "tried_to_allocate" in details
                and "tried_to_allocate" not in prev["details"]
            ):
                self._rehome(prev, n, text, details, sig)
            return
        if len(self._events) >= MAX_EVENTS:
            self.dropped += 1
            return
        ev = {
            "kind": kind,
            "step": step,
            "step_source": step_source,
            "line": n,
            "message": text,
            "before": list(self._before),
            "after": [],
            "left": self.context,
            "details": dict(details),
            "sig": sig,
            "attempt": attempt,
        }
        self._seen[key] = ev
        self._events.append(ev)
        self._open.append(ev)

    def _rehome(self, ev: dict[str, Any], n: int, text: str, details: dict[str, Any], sig: Any) -> None:
        """Move an OOM event onto a later line that says more (the exception line with the
        allocation, after a fatal message that named only the error type): the event sits on the
        line a reader needs, its first line is kept in `also_at_lines`."""
        also = ev["details"].setdefault("also_at_lines", [])
        if n in also:
            also.remove(n)
        also.insert(0, ev["line"])
        del also[MAX_ALSO_AT:]
        ev["details"] = {**ev["details"], **details}
        ev.update(
            line=n,
            message=text,
            before=list(self._before),
            after=[],
            left=self.context,
            sig=sig,
        )
        if ev not in self._open:
            self._open.append(ev)
            self._open.sort(key=lambda e: e["line"])

    def _same_failure(self, kind: str, step: int | None, sig: Any, n: int) -> dict[str, Any] | None:
        """The earlier event of this attempt a text event reports again, if any: the same OOM/NaN
        at the same step (an OOM also by the same allocation), or, for a fatal message or a
        traceback, the failure or stop already found at that step. Inside Ray's re-print of the
        log's end every repeat is the same. A handled exception logged again at another step is
        another event (only an OOM's allocation names one failure across steps)."""
        replay = self.replay_from is not None and n >= self.replay_from
        attempt = self.lifecycle.current.number
        mine = [ev for ev in self._events if ev["attempt"] == attempt and ev["step_source"] != "metric"]
        for ev in mine:
            if ev["kind"] == kind and (
                replay or ev["step"] == step or (kind == "oom" and sig is not None and ev["sig"] == sig)
            ):
                return ev
        # A fatal message or traceback at this step is the same failure: a later line names its
        # cause (the fatal line said `RayTaskError(RuntimeError)`, the remote traceback `found NaN`).
        generic = kind in ("fatal", "traceback")
        if not generic and kind not in ("oom", "nan"):
            return None
        for ev in mine:
            if not (replay or ev["step"] == step):
                continue
            if generic or ev["kind"] in ("fatal", "traceback"):
                return ev
        return None

    def finish(self) -> list[Event]:
        """The stream's events. A log that ends inside a traceback (cut before its exception line)
        holds an unfinished exception: a `traceback` event at its last line, `details.cut`."""
        if self._tb_start is not None and self._tb_files > 0 and self._before:
            start, self._tb_start = self._tb_start, None
            last = self._before[-1]
            step, source = self._step_for(self.last_line, last)
            self._open = []
            ev: dict[str, Any] = {
                "kind": "traceback",
                "step": step,
                "step_source": source,
                "line": self.last_line,
                "message": last,
                "before": list(self._before)[:-1],
                "after": [],
                "left": 0,
                "details": {"exception": None, "traceback_line": start, "cut": True},
                "sig": None,
                "attempt": self.lifecycle.current.number,
            }
            if not any(e["attempt"] == ev["attempt"] and e["step"] == step for e in self._events):
                self._events.append(ev)
        self._open = []
        self.lifecycle.finish(self.last_line)
        self.lifecycle.current.ended_utc = self._ts_last
        several = len(self.lifecycle.attempts) > 1
        out = []
        for ev in self._events:
            details = {**ev["details"], "step_source": ev["step_source"]}
            if several:
                details["attempt"] = ev["attempt"]
            out.append(
                Event(
                    kind=ev["kind"],
                    step=ev["step"],
                    stream=self.stream,
                    line=ev["line"],
                    message=ev["message"],
                    excerpt=(*ev["before"], ev["message"], *ev["after"]),
                    details=details,
                )
            )
        return out


def find_events(lines: Iterable[str], stream: str) -> list[Event]:
    """Failure events of one stream, given its lines (with or without trailing newlines)."""
    scanner = EventScanner(stream)
    parser = ConsoleParser(stream, on_line=scanner.push)
    for line in lines:
        parser.feed_line(line)
    return scanner.finish()

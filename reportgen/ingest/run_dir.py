"""Ingest one run folder: logs + TensorBoard -> metrics.parquet, events.json, manifest section.

Pipeline position: called by the runner once the workload process has ended (and by
`reportgen ingest` for outside logs); analysis reads what this writes. Each log is read once
(reportgen.ingest.log_stream): `ConsoleParser` yields the metric records and hands every line to
the failure scan and to the collectors of `set -x` trace lines and the argument dump; here the two
streams become the run's status, events, tables and manifest fields (`IngestedRun`). Malformed logs
never raise; only I/O errors do.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from reportgen.capture.redact import redact_argv_mapping
from reportgen.ingest import argv as argv_mod
from reportgen.ingest import lifecycle as lc
from reportgen.ingest import recovery
from reportgen.ingest.events import Event
from reportgen.ingest.log_stream import LogStream, read_stream
from reportgen.ingest.metrics import (
    ATTEMPT_BITS,
    ConsoleMetrics,
    merge_sources,
    write_metrics,
    write_metrics_table,
)
from reportgen.ingest.status import CUT, RunStatus, decide_status
from reportgen.ingest.tensorboard import has_events, read_scalars
from reportgen.store.layout import EVENTS, STDERR, STDOUT, TENSORBOARD
from reportgen.store.models import Events

EVENTS_SCHEMA_VERSION = Events.SCHEMA_VERSION
MAX_DISAGREEMENTS = 1000
MAX_LISTED = 1000  # step indices a manifest lists (rollout-only steps)


def _process_event(kind: str, message: str, step: int | None, tail: list[str], details: dict[str, Any]) -> Event:
    return Event(
        kind=kind, step=step, stream="process", line=None, message=message, excerpt=tuple(tail), details=details
    )


def _cut_at(s: LogStream) -> str:
    """Where a log that says nothing of its end ends: "cut at line 412, mid-line" or "after line 412"."""
    return f"cut at line {s.lines}, mid-line" if s.unterminated else f"after line {s.lines}"


def _log_end(streams: list[LogStream], life: LogStream) -> str | None:
    """How the log's last attempt says the run ended ("clean", "stopped", "failed"), from the
    lifecycle stream, else from another stream's last attempt (Relax's logger lines on stderr,
    Megatron's prints on stdout); None when no stream says."""
    for s in [life, *streams]:
        if s.present and s.attempts[-1].end is not None:
            return s.attempts[-1].end
    return None


@dataclasses.dataclass(frozen=True)
class IngestedRun:
    """What ingest makes of a run folder: the manifest fields it decides, each field named as its
    key. The status is `decide_status`'s, the one rule `reportgen run` and `reportgen ingest` share."""

    status: str
    status_reason: str | None  # the evidence for failed / interrupted; None when complete
    # Flag -> value as the workload saw it; a credential passed as a flag value (`--wandb-key`) is
    # not kept: the manifest is published.
    effective_argv: dict[str, Any]
    argv_source: str  # "trace" (what was launched), "argument-dump" (what Megatron parsed) or "none"
    invariants: dict[str, Any]  # the fixed-workload flags checked and the violations found
    ingest: dict[str, Any]  # the manifest's `ingest` section: counts, lifecycle, warnings
    # The trainer's lines about itself (reportgen.ingest.workload_lines): its version and warm start;
    # None when the log printed neither (Relax, the v1 embedded workload).
    workload: dict[str, Any] | None = None

    def manifest_fields(self) -> dict[str, Any]:
        """The fields as the manifest's keys, in the manifest's order; `workload` only when the log
        said something about the trainer (a Relax manifest has no such section)."""
        fields = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        if fields["workload"] is None:
            del fields["workload"]
        return fields


@dataclasses.dataclass
class _Logs:
    """A run's two streams, each read once, and the one whose attempts are the run's lifecycle."""

    streams: list[LogStream]
    life: LogStream

    @property
    def next_step(self) -> int | None:
        """The step after the last one completed in any stream: the step of process-level events
        and of stream events whose stream printed no metrics (e.g. tracebacks on stderr, metrics on
        stdout)."""
        done = [s.scan.done_step for s in self.streams if s.scan.done_step is not None]
        return max(done) + 1 if done else None

    @property
    def tail(self) -> list[str]:
        """The last lines of the last stream that has any: the excerpt of a process-level event."""
        return list(next((s.collector.tail for s in reversed(self.streams) if s.present and s.collector.tail), []))

    @property
    def clean_end(self) -> dict[str, int]:
        return {s.name: s.scan.clean_end for s in self.streams if s.scan.clean_end is not None}

    @property
    def train_steps(self) -> set[int]:
        return set().union(*(s.scan.train_steps for s in self.streams))

    @property
    def skipped_steps(self) -> int:
        """Training steps whose update fp16 loss scaling skipped."""
        return sum(s.scan.loss_scale["steps"] for s in self.streams)


def _read_logs(run_dir: Path, metrics: ConsoleMetrics) -> _Logs:
    streams = [
        read_stream(run_dir / STDOUT, "stdout", 0, metrics),
        read_stream(run_dir / STDERR, "stderr", 1, metrics),
    ]
    present = [s for s in streams if s.present] or streams[:1]
    life = next(s for s in present if s.name == recovery.lifecycle_stream({s.name: s.attempts for s in present}))
    return _Logs(streams, life)


def _stream_events(logs: _Logs) -> list[Event]:
    """Every stream's events in stream order, an event without a step given the next one when its
    stream printed no metrics."""
    next_step = logs.next_step
    raw: list[Event] = []
    for s in logs.streams:
        for ev in s.events:
            if ev.step is None and s.scan.metric_lines == 0 and next_step is not None:
                ev = dataclasses.replace(ev, step=next_step, details={**ev.details, "step_source": "end-of-run"})
            raw.append(ev)
    return raw


def _end_event(
    decided: RunStatus, logs: _Logs, *, exit_code: int | None, signal: str | None, timed_out: bool, interrupted: bool
) -> Event | None:
    """The event that records how the process ended, when the status rule says one is due."""
    next_step, tail, end = logs.next_step, logs.tail, {"step_source": "end-of-run"}
    # A time-out is recorded whatever decided the status (a logged failure may have, first).
    if decided.process_event == "timeout" or (timed_out and decided.process_event is None):
        return _process_event("timeout", "the workload ran past its time limit and was stopped", next_step, tail, end)
    if decided.process_event == "interrupted":
        why = "the run was interrupted" if interrupted else f"the workload process ended by {signal}"
        return _process_event("interrupted", why, next_step, tail, {**end, "signal": signal})
    if decided.process_event == "abnormal_exit":
        how = f"signal {signal}" if signal else f"exit code {exit_code}"
        details = {**end, "exit_code": exit_code, "signal": signal}
        return _process_event("abnormal_exit", f"the workload process ended with {how}", next_step, tail, details)
    if decided.process_event == CUT:
        # Nothing says how the run ended: the event sits on the log's last line.
        life = logs.life
        last = list(life.collector.tail)
        return Event(
            kind="interrupted",
            step=next_step,
            stream=life.name,
            line=life.lines,
            message=last[-1] if last else "",
            excerpt=tuple(last),
            details={**end, "cut": True, "mid_line": life.unterminated},
        )
    return None


@dataclasses.dataclass(frozen=True)
class _Tables:
    """What writing metrics.parquet and events.json found: where the metrics came from, the
    console's and TensorBoard's disagreements, and a TensorBoard file that could not be read."""

    sources: list[str]
    disagreements: list[dict[str, Any]]
    tensorboard_error: str | None


def _write_tables(run_dir: Path, metrics: ConsoleMetrics, events: list[Event]) -> _Tables:
    """metrics.parquet (the console's values, merged with TensorBoard's when there are any) and
    events.json."""
    # TensorBoard: a corrupt event file is a finding about the run, not a crash of the ingest.
    tb_df, tb_error = None, None
    tb_dir = run_dir / TENSORBOARD
    if has_events(tb_dir):
        try:
            tb_df = read_scalars(tb_dir)
        except OSError:
            raise
        except Exception as exc:  # tbparse/tensorboard raise assorted types on corrupt records
            tb_error = f"{type(exc).__name__}: {exc}".splitlines()[0]

    rows, disagreements = metrics.long_rows()
    if tb_df is None:
        write_metrics_table(run_dir, rows)
        sources = ["console"] if rows.num_rows else []
    else:
        # The console's rows (one value per step and key, the latest attempt's) against TensorBoard's.
        long_df, tb_notes = merge_sources(rows.table().to_pandas(), tb_df)
        disagreements = sorted([*disagreements, *tb_notes], key=lambda n: (n["step"], n["key"]))
        write_metrics(run_dir, long_df)
        sources = sorted(set(long_df["source"])) if len(long_df) else []
    Events.create(
        {
            "events": [e.to_json() for e in events],
            "disagreements": disagreements[:MAX_DISAGREEMENTS],
            "disagreements_total": len(disagreements),
            **(
                {"replaced": metrics.replaced, "replaced_total": metrics.replaced_total}
                if metrics.replaced_total
                else {}
            ),
        },
    ).write(run_dir / EVENTS)
    return _Tables(sources, disagreements, tb_error)


def _effective_argv(logs: _Logs, entrypoint: str | None) -> tuple[dict[str, Any], str]:
    """(flag -> value, its source): the trace (what was launched) wins over the dump (what Megatron parsed)."""
    trace_text = "\n".join(line for s in logs.streams for line in s.collector.trace)
    dump_text = "\n".join(line for s in logs.streams for line in s.collector.dump)
    argv = argv_mod.parse_trace(trace_text, entrypoint) if trace_text else None
    if argv:
        return argv_mod.argv_to_mapping(argv), "trace"
    dump = argv_mod.parse_argument_dump(dump_text) if dump_text else {}
    return (argv_mod.dump_to_mapping(dump), "argument-dump") if dump else ({}, "none")


def _steps(logs: _Logs) -> tuple[set[int], list[int]]:
    """(the steps the actor trained, the indices only the rollout side logged). Steps are the
    actor's `step N` lines, or a `perf N` with a training timer; indices only the rollout side
    logged (a fully-async rollout manager running ahead, its final backfill step, the step a failure
    stopped) are reported apart."""
    all_attempts = [a for s in logs.streams for a in s.attempts]
    trained = set().union(*(a.trained for a in all_attempts))
    logged = set().union(*(a.indices for a in all_attempts))
    return trained, sorted(logged - trained - set().union(*(a.critic for a in all_attempts)))


def _lifecycle(
    logs: _Logs, raw: list[Event], metrics: ConsoleMetrics, decided: RunStatus
) -> tuple[dict[str, Any], list[str]]:
    """The manifest's `ingest.lifecycle` and its warnings, from the lifecycle stream's attempts."""
    life = logs.life
    number = logs.streams.index(life)
    return recovery.section(
        life.attempts,
        [e for e in raw if e.stream == life.name],
        stream=life.name,
        replaced_by={
            tag & ((1 << ATTEMPT_BITS) - 1): n
            for tag, n in metrics.replaced_by.items()
            if tag >> ATTEMPT_BITS == number
        },
        last_end="cut" if decided.process_event == CUT else None,
    )


def _joined_lines(logs: _Logs) -> tuple[dict[str, Any] | None, list[str]]:
    """Metric messages wrapped over several lines and read joined: the section and its warnings."""
    wrapped = [s for s in logs.streams if s.joined]
    if not wrapped:
        return None, []
    return {s.name: {"count": s.joined, "lines": s.joined_at} for s in wrapped}, [
        f"{s.name}.log: {s.joined} metric message(s) wrapped over several lines (a terminal's copy) were read "
        f"joined (first at line {s.joined_at[0]})"
        for s in wrapped
    ]


def _loss_scale_skips(logs: _Logs) -> tuple[dict[str, Any] | None, list[str]]:
    """The updates fp16 loss scaling skipped: the section and its warning (None, [] without any)."""
    streams = logs.streams
    warns = sum(s.scan.loss_scale["warnings"] for s in streams)
    if not warns:
        return None, []
    first = next(
        f"{s.name}.log:{s.scan.loss_scale['first_line']}"
        for s in streams
        if s.scan.loss_scale["first_line"] is not None
    )
    skipped = sorted({i for s in streams for i in s.scan.loss_scale["skipped_steps"]})
    skipped_steps = logs.skipped_steps
    skips: dict[str, Any] = {"warnings": warns, "steps": skipped_steps, "first": first, "skipped_steps": skipped}
    # A critic (PPO) logs the same warning for its own skips, and its grad norm as nan: say whose.
    critic_steps = set().union(*(s.scan.critic_steps for s in streams))
    critic = ""
    if critic_steps:
        skips["critic_skipped_steps"] = sorted(set().union(*(s.scan.critic_skipped for s in streams)))
        critic = f" and of {len(skips['critic_skipped_steps'])} of the critic's {len(critic_steps)}"
    return skips, [
        f"fp16 loss scaling skipped the parameter update of {skipped_steps} of {len(logs.train_steps)} training "
        f"step(s){critic} ({warns} `Inf found in gradients` warning(s), first at {first}); routine while the "
        "scale settles"
    ]


def _undecodable(logs: _Logs) -> tuple[dict[str, Any] | None, list[str]]:
    """Undecodable regions skipped in each log: the section and its warnings."""
    debris = {s.name: s.debris.as_dict() for s in logs.streams if s.debris.regions}
    if not debris:
        return None, []
    return debris, [
        f"{name}.log: {d['regions']} undecodable region(s) ({d['chars']} characters: NUL bytes or bytes that "
        "are not UTF-8) were skipped; the text around them was read"
        for name, d in debris.items()
    ]


def _summary(
    logs: _Logs, raw: list[Event], events: list[Event], tables: _Tables, metrics: ConsoleMetrics, decided: RunStatus
) -> dict[str, Any]:
    """The manifest's `ingest` section: counts, steps, lifecycle, what could not be read, warnings."""
    streams = logs.streams
    trained, rollout_only = _steps(logs)
    ingest: dict[str, Any] = {
        "steps": len(trained),
        "last_step": max(trained) if trained else None,
        "records": sum(s.records for s in streams),
        "skipped_lines": sum(s.skipped for s in streams),
        "events": len(events),
        "disagreements": len(tables.disagreements),
        "sources": tables.sources,
        "lines": {s.name: s.lines for s in streams if s.present},
    }
    if tables.tensorboard_error:
        ingest["tensorboard_error"] = tables.tensorboard_error
    ingest["train_steps"] = len(logs.train_steps)
    ingest["rollout_only_steps"] = rollout_only[:MAX_LISTED]
    ingest["clean_end"] = [{"stream": k, "line": v} for k, v in logs.clean_end.items()]
    warnings: list[str] = []
    if rollout_only:
        warnings.append(
            f"{len(rollout_only)} step index(es) logged only by the rollout side, never trained by the actor "
            f"({lc.ranges_text(set(rollout_only))}): not counted as steps"
        )
    ingest["lifecycle"], life_warnings = _lifecycle(logs, raw, metrics, decided)
    warnings += life_warnings
    unreadable = {s.name: s.skipped_at for s in streams if s.skipped_at}
    if unreadable:
        ingest["unreadable_lines"] = unreadable
    for key, found in (
        ("joined_lines", _joined_lines(logs)),
        ("loss_scale_skips", _loss_scale_skips(logs)),
        ("undecodable", _undecodable(logs)),
    ):
        section, said = found
        if section is not None:
            ingest[key] = section
        warnings += said
    ingest["warnings"] = warnings
    return ingest


def ingest_run(
    run_dir: Path,
    *,
    invariants: list[str],
    expected: dict[str, Any] | None = None,
    entrypoint: str | None = None,
    exit_code: int | None = None,
    signal: str | None = None,
    timed_out: bool = False,
    interrupted: bool = False,
) -> IngestedRun:
    """Read a run folder's logs and TensorBoard events; write metrics.parquet and events.json;
    return the manifest fields ingest decides (status, status_reason, effective_argv, argv_source,
    invariants, ingest)."""
    run_dir = Path(run_dir)
    metrics = ConsoleMetrics()
    logs = _read_logs(run_dir, metrics)
    raw = _stream_events(logs)
    # Failures a later attempt got past (a restart, a retried job) are `recovered`, not the run's end.
    events = recovery.recover(raw, logs.life.attempts, logs.life.name)
    decided = decide_status(
        events,
        exit_code=exit_code,
        signal=signal,
        timed_out=timed_out,
        interrupted=interrupted,
        clean_end=logs.clean_end,
        train_steps=len(logs.train_steps),
        loss_scale_skipped_steps=logs.skipped_steps,
        log_end=_log_end(logs.streams, logs.life),
        cut_at=_cut_at(logs.life) if logs.life.present else None,
    )
    end = _end_event(decided, logs, exit_code=exit_code, signal=signal, timed_out=timed_out, interrupted=interrupted)
    if end is not None:
        events.append(end)
    tables = _write_tables(run_dir, metrics, events)
    mapping, source = _effective_argv(logs, entrypoint)
    return IngestedRun(
        status=decided.status,
        status_reason=decided.reason,
        effective_argv=redact_argv_mapping(mapping),
        argv_source=source,
        invariants=argv_mod.check_invariants(mapping, list(invariants), expected),
        ingest=_summary(logs, raw, events, tables, metrics, decided),
        workload=_workload(logs),
    )


def _workload(logs: _Logs) -> dict[str, Any] | None:
    """The first stream's record of the trainer's version and warm start that has one."""
    return next((r for s in logs.streams if s.present and (r := s.collector.workload.record()) is not None), None)

"""One log stream of a run (stdout.log or stderr.log), read once (ingest stage).

`read_stream` feeds the console parser chunk by chunk: the metric records go to the run's
`ConsoleMetrics`, tagged with the attempt they belong to; every block of lines goes to the failure
scan (`EventScanner`, which also keeps the step bookkeeping and the lifecycle) and to the
`Collector` of the lines argv parsing needs; undecodable regions are cut out first (`Debris`).
What it found is one `LogStream`; reportgen.ingest.run_dir puts a run's two together.
"""

from __future__ import annotations

import dataclasses
import re
from collections import deque
from pathlib import Path

from reportgen.ingest import argv as argv_mod
from reportgen.ingest import lifecycle as lc
from reportgen.ingest.console import ConsoleParser, iter_chunks
from reportgen.ingest.events import CONTEXT, EventScanner, lines_with
from reportgen.ingest.metrics import ConsoleMetrics, attempt_tag
from reportgen.ingest.workload_lines import NEEDLES as WORKLOAD_NEEDLES
from reportgen.ingest.workload_lines import WorkloadLines

MAX_TRACE_LINES = 200
MAX_DUMP_LINES = 5000


def _may_trace(line: str) -> bool:
    """A possible `set -x` trace line: `+ ...` at the line start or behind a Ray prefix
    `(... pid=N) `; `Collector._line` decides exactly."""
    return line.startswith("+") or ") +" in line or ")+" in line


@dataclasses.dataclass
class Collector:
    """Keeps the few lines argv parsing needs (trace lines and argument-dump blocks) and the
    trainer's lines about itself (its workload version, its warm start: `WorkloadLines`)."""

    trace: deque = dataclasses.field(default_factory=lambda: deque(maxlen=MAX_TRACE_LINES))
    dump: list = dataclasses.field(default_factory=list)
    in_dump: bool = False
    tail: deque = dataclasses.field(default_factory=lambda: deque(maxlen=CONTEXT))
    workload: WorkloadLines = dataclasses.field(default_factory=WorkloadLines)

    def push(self, text: str) -> None:
        self.tail.append(text)
        self.workload.push(text)
        self._line(text)

    def push_block(self, text: str, lines: list[str]) -> None:
        """`push` for each of `lines` (`text` is them joined by `\n`); only trace-line and
        argument-dump candidates, and the lines of an open dump, are looked at one by one."""
        self.tail.extend(lines[-CONTEXT:])
        for i in lines_with(text, WORKLOAD_NEEDLES):
            self.workload.push(lines[i])
        # A trace line holds a `+`, an argument dump's start `arguments --`: two cheap scans (`+` is
        # one character, found at memchr speed, and rare in a log), then the test on the few lines found.
        plus = [i for i in lines_with(text, ("+",)) if _may_trace(lines[i])]
        dump = lines_with(text, ("arguments --",))
        todo = sorted(set(plus).union(dump)) if dump else plus
        cur = 0
        for i in todo:
            while self.in_dump and cur < i:
                self._line(lines[cur])
                cur += 1
            if i >= cur:
                self._line(lines[i])
                cur = i + 1
        while self.in_dump and cur < len(lines):
            self._line(lines[cur])
            cur += 1

    def _line(self, text: str) -> None:
        body = argv_mod._clean(text)
        if body.startswith("+"):
            self.trace.append(body)
        if self.in_dump:
            if len(self.dump) < MAX_DUMP_LINES:
                self.dump.append(body)
            if "end of arguments" in body:
                self.in_dump = False
        elif "arguments --" in body and "end of" not in body:
            if len(self.dump) >= MAX_DUMP_LINES:
                self.dump = []
            self.dump.append(body)
            self.in_dump = True


_DEBRIS = re.compile("[\ufffd\x00]+")


@dataclasses.dataclass
class Debris:
    """Undecodable regions of a log (a crash leaves NUL bytes, a binary write random bytes): each
    run of NULs and U+FFFD replacement characters is one region, removed before parsing so the
    text around it reads as it would have."""

    regions: int = 0
    chars: int = 0
    _open: bool = False  # the previous chunk ended inside a region

    def clean(self, chunk: str) -> str:
        """`chunk` without its debris, counted (a region cut by a chunk boundary counts once)."""
        if "\ufffd" not in chunk and "\x00" not in chunk:  # nearly every chunk: two C-speed scans
            self._open = False
            return chunk
        runs = _DEBRIS.findall(chunk)
        self.regions += len(runs) - (1 if self._open and chunk[0] in "\ufffd\x00" else 0)
        self.chars += sum(map(len, runs))
        self._open = chunk[-1] in "\ufffd\x00"
        return _DEBRIS.sub("", chunk)

    def as_dict(self) -> dict[str, int]:
        return {"regions": self.regions, "chars": self.chars}


@dataclasses.dataclass
class LogStream:
    name: str
    present: bool
    scan: EventScanner  # its step bookkeeping (done_step, train_steps, loss_scale, lifecycle, ...) once read
    lines: int = 0
    records: int = 0
    skipped: int = 0
    skipped_at: list = dataclasses.field(default_factory=list)
    joined: int = 0
    joined_at: list = dataclasses.field(default_factory=list)
    unterminated: bool = False  # the log's last line has no newline: it was cut mid-line
    events: list = dataclasses.field(default_factory=list)
    collector: Collector = dataclasses.field(default_factory=Collector)
    debris: Debris = dataclasses.field(default_factory=Debris)

    @property
    def attempts(self) -> list[lc.Attempt]:
        return self.scan.lifecycle.attempts


def read_stream(path: Path, name: str, number: int, metrics: ConsoleMetrics) -> LogStream:
    scanner = EventScanner(name)
    res = LogStream(name=name, present=path.is_file(), scan=scanner)
    if not res.present:
        return res
    col = res.collector

    def on_block(first: int, text: str, recs: list) -> None:
        lines = text.split("\n")
        if "\r" in text:  # the parser reads each line without one trailing \r
            lines = [x[:-1] if x.endswith("\r") else x for x in lines]
        scanner.push_block(first, text, lines, recs)
        col.push_block(text, lines)

    parser = ConsoleParser(name, on_block=on_block)
    attempts = scanner.lifecycle.attempts
    tagged = 0  # index of the attempt the metrics are tagged with; records carry their attempt's tag
    metrics.set_tag(attempt_tag(number, 1))

    def take(recs: list) -> None:
        nonlocal tagged
        if tagged + 1 == len(attempts):  # no attempt started since the last tag: the common case
            for r in recs:
                metrics.add(r)
            return
        for r in recs:
            while tagged + 1 < len(attempts) and r.line_no >= attempts[tagged + 1].line:
                tagged += 1
                metrics.set_tag(attempt_tag(number, attempts[tagged].number))
            metrics.add(r)

    for chunk in iter_chunks(path):
        take(parser.feed(res.debris.clean(chunk)))
    res.unterminated = parser.unterminated
    take(parser.close())
    res.lines, res.records, res.skipped = parser.lines, parser.records, parser.skipped
    res.skipped_at, res.joined, res.joined_at = parser.skipped_at, parser.joined, parser.joined_at
    res.events = scanner.finish()
    return res

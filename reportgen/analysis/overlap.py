"""Runs that overlapped another measurement on the same machine (part of reportgen.analysis, pure).

Two measurements at once on one machine share its cores, memory bandwidth and GPUs: each slows
the other by an amount neither log shows. It happened: a second `reportgen run` of a campaign ran
the baseline and A1 together on two cores, and A1 read -15.7 % with every guardrail passing. The
runner's locks (reportgen.store.lock) prevent that; this check finds it anyway, whatever made the
runs and whoever opted out: each run's time span is compared with every other run recorded on the
same machine fingerprint under the runs folder (other experiments, archived campaigns, this
experiment's own runs and profiler runs), as the I/O edge gathered them (`Span`).

Times are the manifests' (whole seconds, UTC): a run that starts in the second the one before it
ended does not count, so back-to-back runs never do. A run without an end (in progress, or its
runner died) lasts until its files were last written (`end_estimated`). A run without a machine
fingerprint (ingested from logs: their times have no zone, their machine is unknown) is not
checkable.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from reportgen.analysis.check import FAIL, NA, PASS, GuardrailInput, Span, guardrail, which_runs
from reportgen.analysis.document import GuardrailResult
from reportgen.store.run import StoredRun, parse_utc

ID = "no_overlap"
TITLE = "No other measurement on the machine at the same time"
NAMED = 3  # overlaps named in a reason; the rest are counted


@dataclass(frozen=True)
class Overlap:
    run: str  # the run checked, "A1/1"
    other: Span
    start: float  # the time they shared
    end: float

    @property
    def seconds(self) -> float:
        return self.end - self.start


def own_span(run: StoredRun, experiment: str, spans: Sequence[Span]) -> Span | None:
    """The run's span as the I/O edge recorded it (its end estimated when it has none), else from its manifest."""
    for s in spans:
        if s.experiment == experiment and s.path == run.rel:
            return s
    m = run.manifest
    start, end = parse_utc(m.started_utc), parse_utc(m.ended_utc)
    if start is None or end is None:
        return None
    return Span(f"{experiment}/{run.rel}", experiment, run.rel, m.fingerprint_id, start, end)


def overlaps(run: StoredRun, experiment: str, spans: Sequence[Span]) -> list[Overlap]:
    """Every other run on the same machine whose span shares time with this run's."""
    mine = own_span(run, experiment, spans)
    if mine is None or mine.machine is None:
        return []
    out = []
    for other in spans:
        if other.label == mine.label or other.machine != mine.machine:
            continue
        start, end = max(mine.start, other.start), min(mine.end, other.end)
        if start < end:
            out.append(Overlap(run.rel, other, start, end))
    return sorted(out, key=lambda o: (o.start, o.other.label))


def _clock(t: float) -> str:
    return datetime.fromtimestamp(t, UTC).strftime("%H:%M:%S")


def describe(o: Overlap, experiment: str) -> str:
    """ "A1/1 shared 11 s (14:45:21-14:45:32 UTC) with baseline/1 of this experiment"."""
    other = o.other
    who = f"{other.path} of this experiment" if other.experiment == experiment and other.path else other.label
    note = " (still running or stopped without an end: until its last write)" if other.end_estimated else ""
    return f"{o.run} shared {o.seconds:.0f} s ({_clock(o.start)}-{_clock(o.end)} UTC) with {who}{note}"


def check(ctx: GuardrailInput) -> GuardrailResult:
    """Fails, naming the runs, when a run of either arm overlapped another measurement on its machine."""
    runs, experiment, spans = ctx.runs, ctx.experiment, ctx.spans
    mine = {r.rel: own_span(r, experiment, spans) for r in runs}
    checkable = [r for r in runs if (s := mine[r.rel]) is not None and s.machine is not None]
    if not checkable:
        return guardrail(ID, TITLE, NA, "not checkable: no run has a machine fingerprint and a start and end time")
    found = [o for r in checkable for o in overlaps(r, experiment, spans)]
    if found:
        named = "; ".join(describe(o, experiment) for o in found[:NAMED])
        more = f"; and {len(found) - NAMED} more" if len(found) > NAMED else ""
        return guardrail(
            ID,
            TITLE,
            FAIL,
            f"{named}{more}: both ran on the same machine at once, so neither measured it alone",
            f"{found[0].run}/manifest.json",
        )
    machines = {s.machine for s in mine.values() if s is not None and s.machine is not None}
    labels = {s.label for s in mine.values() if s is not None}
    recorded = sum(1 for s in spans if s.machine in machines and s.label not in labels)
    unchecked = [r.rel for r in runs if r not in checkable]
    tail = f"; not checkable (no fingerprint or times): {', '.join(unchecked)}" if unchecked else ""
    return guardrail(
        ID,
        TITLE,
        PASS,
        f"{which_runs(checkable)}: none overlapped any of the {recorded} other runs recorded on their machine "
        f"while the campaign ran, under the runs folder{tail}",
    )

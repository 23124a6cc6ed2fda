"""`reportgen ingest`: turn a log made outside `reportgen run` into a run folder.

Pipeline position: ingest (an alternative entry to execute+capture). A console log (a run made
by hand, a CI artifact), optionally its stderr and TensorBoard folder, becomes
runs/<experiment>/<arm>/<repeat>/ with the same files `reportgen run` leaves, so analysis and
the site accept it. The run is assembled in a hidden staging folder next to its final place and
renamed into place once complete (manifest.json written last): a failure leaves nothing behind.
"""

from __future__ import annotations

import datetime as dt
import os
import re
import shutil
import tempfile
from pathlib import Path
from typing import Any

from reportgen.errors import UserError
from reportgen.ingest.console import MAX_INDEX_DIGITS, iter_chunks
from reportgen.ingest.run_dir import IngestedRun, ingest_run
from reportgen.specfile.load import load_spec
from reportgen.store import atomic
from reportgen.store.layout import (
    EXPERIMENT_SPEC,
    MANIFEST,
    STDERR,
    STDOUT,
    TENSORBOARD,
    TRACES,
)
from reportgen.store.lock import hold_for_ingest
from reportgen.store.models import Manifest
from reportgen.traces.store import summarize_run

TIMESTAMP = re.compile(r"(\d{4}-\d{2}-\d{2})[ T](\d{2}:\d{2}:\d{2})(?:[.,](\d+))?")
PROBE_BYTES = 1 << 20


# A line a console log holds: a logger line (either of Relax's formats, any logger's timestamp), a
# metric message, a Ray-prefixed line or a `set -x` trace line; or what a failed run's paste holds
# alone: a Python traceback's head, Ray's error banner or an error no caller fetched. Binary debris
# holds none.
_CONSOLE_LINE = re.compile(
    r"\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}:\d{2}|\b[a-z_]+ \d+: \{|^\([^()\n]*pid=\d+|^\++ \S"
    r"|^(?:> ?)*Traceback \(most recent call last\):|RayTaskError\(\w+\)|Unhandled error \(suppress with",
    re.MULTILINE,
)


def _check_log(path: Path, what: str) -> None:
    """Refuse a file that holds no console line at all, and no traceback or failure banner either
    (a paste of a traceback alone is the console log of a failed run: ingest reads it as one). A
    log with binary debris (NUL bytes a crash left at its end, random bytes in its middle) is
    still a log: ingest reads its text and reports the undecodable regions."""
    if not path.is_file():
        raise UserError(f"{path}: {what} not found; pass the path of a Relax console log")
    for chunk in iter_chunks(path):
        if _CONSOLE_LINE.search(chunk.replace("\x00", "")):
            return
    raise UserError(
        f"{path}: {what} holds no console line (no logger line, metric message, traceback or Ray error); "
        "pass the text log Relax printed"
    )


def _nothing_read(log: Path, ingest: dict[str, Any]) -> str:
    """Why a log with neither a metric record nor a failure is refused, naming what was found."""
    unreadable = [n for lines in (ingest.get("unreadable_lines") or {}).values() for n in lines]
    if unreadable:
        n = ingest.get("skipped_lines", len(unreadable))
        where = ", ".join(map(str, unreadable[:10])) + (", ..." if n > 10 else "")
        return (
            f"{log}: {n} metric line(s), unreadable: line {where}; and no failure found. Pass the log as Relax "
            "printed it (a copy from a terminal may have broken or cut its lines)"
        )
    return f"{log}: no Relax metric lines (`perf N: {{...}}`) and no failure found; is this the run's console log?"


def log_times(path: Path) -> tuple[str | None, str | None]:
    """First and last logger timestamps of a log (read from its head and tail). Relax logs
    carry no zone: they are taken as UTC and marked so in the manifest."""
    size = path.stat().st_size
    with open(path, "rb") as fh:
        head = fh.read(PROBE_BYTES).decode("utf-8", "replace")
        fh.seek(max(0, size - PROBE_BYTES))
        tail = fh.read().decode("utf-8", "replace")
    first = TIMESTAMP.search(head)
    matches = list(TIMESTAMP.finditer(tail))
    last = matches[-1] if matches else None
    return _iso(first), _iso(last)


def _iso(m: re.Match | None) -> str | None:
    if m is None:
        return None
    try:
        t = dt.datetime.fromisoformat(f"{m.group(1)}T{m.group(2)}")
    except ValueError:
        return None
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


def _repeat_name(name: str) -> bool:
    """A repeat folder's name: ASCII digits (isdigit alone also takes `²`, which int() cannot read),
    few enough for int() (more than 4,300 digits raise ValueError)."""
    return name.isascii() and name.isdigit() and len(name) <= MAX_INDEX_DIGITS


def _next_repeat(arm_dir: Path) -> int:
    taken = [int(p.name) for p in arm_dir.iterdir() if p.is_dir() and _repeat_name(p.name)] if arm_dir.is_dir() else []
    return max(taken, default=0) + 1


def ingest_external(
    log: Path,
    *,
    spec_path: Path,
    arm: str,
    repeat: int | None,
    runs_root: Path,
    tensorboard: Path | None = None,
    stderr_log: Path | None = None,
    traces: Path | None = None,
) -> Path:
    """Create runs/<experiment>/<arm>/<repeat>/ from an outside log; return its path."""
    log, spec_path, runs_root = Path(log), Path(spec_path), Path(runs_root)
    spec = load_spec(spec_path)
    if arm not in spec.arm_ids():
        raise UserError(
            f"--arm {arm}: not 'baseline' or a candidate of {spec_path} (arms: {', '.join(spec.arm_ids())})"
        )
    _check_log(log, "log")
    if stderr_log is not None:
        _check_log(Path(stderr_log), "stderr log")
    if tensorboard is not None and not Path(tensorboard).is_dir():
        raise UserError(f"--tensorboard {tensorboard}: not a folder; pass the TensorBoard log folder of the run")
    if traces is not None and not Path(traces).is_dir():
        raise UserError(f"--traces {traces}: not a folder; pass the run's traces/ folder (Relax writes traces/<name>/)")
    if repeat is not None and repeat < 1:
        raise UserError(f"--repeat {repeat}: repeats are numbered from 1")

    spec_bytes = spec_path.read_bytes()
    exp_dir = runs_root / spec.name
    exp_spec = exp_dir / EXPERIMENT_SPEC
    if exp_spec.is_file() and exp_spec.read_bytes() != spec_bytes:
        raise UserError(
            f"{exp_spec}: differs from {spec_path}; ingest with the spec this experiment was run "
            "with, or give the experiment another name"
        )
    created_root, created_exp = not runs_root.exists(), not exp_dir.exists()
    # The campaign lock: a runner numbering its repeats meanwhile would take the same number.
    with hold_for_ingest(exp_dir):
        arm_dir = exp_dir / arm
        repeat = repeat if repeat is not None else _next_repeat(arm_dir)
        final = arm_dir / str(repeat)
        if final.exists():
            state = "a complete run" if _is_complete(final) else "an unfinished run"
            raise UserError(f"{final}: already holds {state}; leave out --repeat to use the next free one")

        arm_dir.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=f".ingest-{repeat}-", dir=arm_dir))
        try:
            os.chmod(staging, 0o755)  # mkdtemp makes it private; the run folder is not
            shutil.copyfile(log, staging / STDOUT)
            if stderr_log is not None:
                shutil.copyfile(stderr_log, staging / STDERR)
            if tensorboard is not None:
                shutil.copytree(tensorboard, staging / TENSORBOARD)
            if traces is not None:
                shutil.copytree(traces, staging / TRACES)
                summarize_run(staging)  # a bad trace or hostile snapshot: UserError, nothing left behind
            ingested = ingest_run(staging, invariants=list(spec.workload.flags), entrypoint=spec.recipe.entrypoint)
            if ingested.ingest["records"] == 0 and ingested.status != "failed":
                # A run that died before its first step (an OOM while loading) is still a result.
                raise UserError(_nothing_read(log, ingested.ingest))
            manifest = _manifest(spec.name, arm, repeat, log, stderr_log, tensorboard, ingested, staging, traces)
            Manifest.create(manifest, str(staging / MANIFEST)).write(staging / MANIFEST)
            if not exp_spec.is_file():
                atomic.write_bytes(exp_spec, spec_bytes)
            atomic.publish_dir(staging, final)  # the run appears complete, or not at all
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            if created_root:
                shutil.rmtree(runs_root, ignore_errors=True)
            elif created_exp:
                shutil.rmtree(exp_dir, ignore_errors=True)
            elif not any(arm_dir.iterdir()):
                arm_dir.rmdir()
            raise
    return final


def _job_spans(attempts: list[dict[str, Any]]) -> list[tuple[str | None, str | None]]:
    """(first, last) timestamp of each job of a log's lifecycle: a job and the in-run restarts after it."""
    spans: list[tuple[str | None, str | None]] = []
    for a in attempts:
        if a.get("kind") == "job" or not spans:
            spans.append((a.get("started_utc"), a.get("ended_utc")))
        else:
            spans[-1] = (spans[-1][0], a.get("ended_utc"))
    return spans


def _is_complete(run: Path) -> bool:
    try:
        manifest = Manifest.read(run / MANIFEST)
    except (OSError, UserError):
        return False
    return manifest is not None and manifest.complete


def _manifest(
    experiment: str,
    arm: str,
    repeat: int,
    log: Path,
    stderr_log: Path | None,
    tensorboard: Path | None,
    ingested: IngestedRun,
    run: Path,
    traces: Path | None = None,
) -> dict[str, Any]:
    starts = [log_times(run / name) for name in (STDOUT, STDERR) if (run / name).is_file()]
    firsts = [a for a, _ in starts if a]
    lasts = [b for _, b in starts if b]
    started, ended = (min(firsts) if firsts else None), (max(lasts) if lasts else None)
    duration = None
    times_from = "log timestamps (no zone in the log; read as UTC)" if started else None
    if started and ended:
        fmt = "%Y-%m-%dT%H:%M:%SZ"
        duration = (dt.datetime.strptime(ended, fmt) - dt.datetime.strptime(started, fmt)).total_seconds()
    # A log of several jobs (a retry appended to it) spans the gaps between them: the run's time is
    # the jobs' own, each from its first to its last timestamp.
    attempts = (ingested.ingest.get("lifecycle") or {}).get("attempts") or []
    jobs = [a.get("duration_s") for a in attempts if a.get("kind") == "job"]
    if len(jobs) > 1 and all(isinstance(d, (int, float)) for d in jobs):
        duration = float(sum(jobs))
        times_from = (
            f"log timestamps (no zone in the log; read as UTC); duration: the {len(jobs)} jobs' own, gaps left out"
        )
    return {
        "schema_version": Manifest.SCHEMA_VERSION,
        "kind": Manifest.KIND,
        "experiment": experiment,
        "arm": arm,
        "repeat": repeat,
        "role": "formal",
        "status": ingested.status,  # decide_status, as for `reportgen run`
        "started_utc": started,
        "ended_utc": ended,
        "duration_s": duration,
        "times_from": times_from,
        "exit_code": None,
        "signal": None,
        "timed_out": False,
        "command": None,
        "cwd": None,
        "executor": {"kind": "external"},
        "ingested_from": {
            "stdout": str(log.resolve()),
            "stderr": str(Path(stderr_log).resolve()) if stderr_log else None,
            "tensorboard": str(Path(tensorboard).resolve()) if tensorboard else None,
            **({"traces": str(Path(traces).resolve())} if traces else {}),
            "ingested_utc": dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        },
        **{k: v for k, v in ingested.manifest_fields().items() if k != "status"},
    }

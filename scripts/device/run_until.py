#!/usr/bin/env python3
"""Run a `reportgen run ...` command and stop it cleanly before a deadline, between runs if possible.

    python3 scripts/device/run_until.py --deadline-s 500 --experiment runs/NAME -- python3 -m reportgen run ...

A device command may run 10 minutes at most, and a campaign that is killed from outside leaves a
run marked `running` and nothing packed. So this watches the experiment folder: when a run starts
that would end after the deadline (judged by how long finished runs of the same arm, else of the
same role, took), it sends SIGINT at once, so only a few seconds of that run are lost; at the
deadline itself it sends SIGINT whatever runs. reportgen then stops the workload, marks the run
`interrupted` and exits (130); `reportgen run` with the same arguments later resumes, keeping every
finished run. If the command has not ended `--grace-s` after SIGINT, SIGTERM, then SIGKILL.
Exit code: the command's.
"""

from __future__ import annotations

import argparse
import contextlib
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from reportgen.store.layout import iter_runs
from reportgen.store.runs import read_manifest
from reportgen.vocab import FINAL_STATUSES, FORMAL, Status


@dataclass(frozen=True)
class RunState:
    """One run folder's manifest, as far as the deadline needs it."""

    rel: str  # <arm>/<repeat>
    arm: str
    role: str
    status: str
    duration_s: float | None


def read_states(exp_dir: Path) -> dict[str, RunState]:
    """Every run folder's state (the archive of earlier campaigns and unreadable manifests skipped)."""
    states = {}
    for arm, repeat, run_dir in iter_runs(exp_dir):
        m = read_manifest(run_dir)
        if m is None:
            continue  # not written yet, or being written: read it on the next poll
        rel = f"{arm}/{repeat}"
        duration = m.get("duration_s")
        states[rel] = RunState(
            rel=rel,
            arm=str(m.get("arm", arm)),
            role=str(m.get("role", FORMAL)),
            status=str(m.get("status", "")),
            duration_s=float(duration) if isinstance(duration, (int, float)) else None,
        )
    return states


def estimate_s(run: RunState, states: dict[str, RunState]) -> float | None:
    """How long `run` will take: the longest finished run of its arm, else of its role; None if none."""
    done = [s for s in states.values() if s.status in FINAL_STATUSES and s.duration_s is not None]
    for same in ([s for s in done if s.arm == run.arm], [s for s in done if s.role == run.role]):
        if same:
            return max(s.duration_s for s in same if s.duration_s is not None)
    return None


def stop_before(run: RunState, states: dict[str, RunState], now: float, deadline: float) -> bool:
    """Stop at the start of `run` when it is expected to end past the deadline."""
    est = estimate_s(run, states)
    return est is not None and now + est > deadline


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--deadline-s", type=float, required=True, help="seconds from now by which the command must end")
    p.add_argument("--experiment", type=Path, required=True, help="the experiment folder the command writes")
    p.add_argument("--grace-s", type=float, default=60.0, help="after SIGINT, wait this long before SIGTERM")
    p.add_argument("--poll-s", type=float, default=1.0)
    p.add_argument("command", nargs=argparse.REMAINDER, help="-- then the command")
    opts = p.parse_args(argv)
    cmd = opts.command[1:] if opts.command[:1] == ["--"] else opts.command
    if not cmd:
        p.error("give the command after --")
    t0 = time.monotonic()
    deadline = t0 + opts.deadline_s
    proc = subprocess.Popen(cmd)
    seen_running: set[str] = set()
    sent_at: float | None = None

    def say(text: str) -> None:
        print(f"[run_until +{time.monotonic() - t0:.0f}s] {text}", file=sys.stderr, flush=True)

    while proc.poll() is None:
        now = time.monotonic()
        if sent_at is None:
            states = read_states(opts.experiment)
            for run in states.values():
                if run.status != Status.RUNNING or run.rel in seen_running:
                    continue
                seen_running.add(run.rel)
                if stop_before(run, states, now, deadline):
                    est = estimate_s(run, states)
                    say(
                        f"{run.rel} would end after the deadline (about {est:.0f} s, {deadline - now:.0f} s left): SIGINT"
                    )
                    sent_at = now
            if sent_at is None and now >= deadline:
                say("deadline reached: SIGINT")
                sent_at = now
            if sent_at is not None:
                proc.send_signal(signal.SIGINT)
        elif now - sent_at > opts.grace_s:
            say(f"still running {opts.grace_s:.0f} s after SIGINT: SIGTERM, then SIGKILL after 15 s")
            proc.terminate()
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
            break
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=opts.poll_s)  # back at once when the command ends, not a poll later
    code = proc.wait()
    states = read_states(opts.experiment)
    counts: dict[str, int] = {}
    for s in states.values():
        counts[s.status] = counts.get(s.status, 0) + 1
    say(f"exit {code}; runs: " + ", ".join(f"{n} {k}" for k, n in sorted(counts.items())))
    return code


if __name__ == "__main__":
    sys.exit(main())

"""The campaign and machine locks with real processes: exclusive across processes, re-entrant within
one, named in a refusal, taken over (with a note) from a process that died holding them."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from reportgen.errors import UserError
from reportgen.store import lock
from tests.conftest import env_with_repo_on_path

HOLD = textwrap.dedent(
    """
    import sys, time
    from reportgen.store import lock
    held = lock.FileLock(sys.argv[1]).try_acquire(lock.Holder.here(sys.argv[2], ["exp"]))
    print("taken" if held.taken else "busy", flush=True)
    time.sleep(float(sys.argv[3]))
    """
)


def holder_process(path: Path, purpose: str = lock.RUN, seconds: float = 60.0) -> subprocess.Popen[str]:
    """Another process holding the lock at `path` until it is killed (or `seconds` pass)."""
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(path), purpose, str(seconds)],
        env=env_with_repo_on_path(),
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None and proc.stdout.readline().strip() == "taken"
    return proc


def stop(proc: subprocess.Popen[str]) -> None:
    proc.kill()
    proc.wait()


def test_lock_is_exclusive_across_processes_and_names_its_holder(tmp_path: Path) -> None:
    path = tmp_path / "exp" / lock.CAMPAIGN_LOCK
    proc = holder_process(path)
    try:
        attempt = lock.FileLock(path).try_acquire(lock.Holder.here(lock.RUN))
        assert not attempt.taken
        assert attempt.holder is not None and attempt.holder.pid == proc.pid and attempt.holder.purpose == lock.RUN
        assert f"pid {proc.pid} on " in attempt.holder.describe()
    finally:
        stop(proc)


def test_reentrant_in_one_process_and_removed_with_its_folders_on_release(tmp_path: Path) -> None:
    path = tmp_path / "runs" / "exp" / lock.CAMPAIGN_LOCK
    one, two = lock.FileLock(path), lock.FileLock(path)
    me = lock.Holder.here(lock.RUN)
    assert one.try_acquire(me).taken and two.try_acquire(me).taken
    assert json.loads(path.read_text())["pid"] == os.getpid()
    two.release()
    assert path.exists()  # still held once
    one.release()
    assert not path.exists() and not (tmp_path / "runs").exists()  # folders made for it were empty: gone


def test_a_lock_left_by_a_killed_process_is_taken_over_with_a_note(tmp_path: Path) -> None:
    path = tmp_path / lock.CAMPAIGN_LOCK
    proc = holder_process(path)
    proc.send_signal(signal.SIGKILL)  # dies holding it: the kernel drops the lock, the record stays
    proc.wait()
    assert json.loads(path.read_text())["pid"] == proc.pid
    attempt = lock.FileLock(path).try_acquire(lock.Holder.here(lock.RUN))
    try:
        assert attempt.taken
        assert attempt.note is not None and f"pid {proc.pid}" in attempt.note and "process is gone" in attempt.note
        assert json.loads(path.read_text())["pid"] == os.getpid()
    finally:
        lock.FileLock(path).release()


def test_a_lock_carried_from_another_machine_is_taken_over(tmp_path: Path) -> None:
    """A runs folder copied off a machine whose command was killed keeps its lock file and record; on
    the next machine nobody holds its flock: taken at once, with a note naming the other host."""
    path = tmp_path / "exp" / lock.CAMPAIGN_LOCK
    path.parent.mkdir()
    other = lock.Holder(pid=os.getpid(), host="gpu-lease-1", started_utc="2026-12-01T10:00:00Z", purpose=lock.RUN)
    path.write_text(json.dumps(other.to_json()))  # even a pid alive here: the kernel lock is what counts
    attempt = lock.FileLock(path).try_acquire(lock.Holder.here(lock.RUN))
    try:
        assert attempt.taken
        assert attempt.note is not None and "on gpu-lease-1" in attempt.note and "across machines" in attempt.note
    finally:
        lock.FileLock(path).release()
    assert not path.exists()


def test_a_second_run_of_a_campaign_is_refused_in_one_line(tmp_path: Path) -> None:
    exp = tmp_path / "runs" / "exp"
    proc = holder_process(exp / lock.CAMPAIGN_LOCK)
    try:
        with pytest.raises(UserError) as err, lock.hold_campaigns([exp], machine=False):
            pass
        text = str(err.value)
        assert "\n" not in text and str(exp) in text and f"pid {proc.pid}" in text and "in progress" in text
    finally:
        stop(proc)


def test_analysis_refuses_a_run_in_progress_or_waits_for_it(tmp_path: Path) -> None:
    exp = tmp_path / "exp"
    proc = holder_process(exp / lock.CAMPAIGN_LOCK, seconds=1.5)
    with pytest.raises(UserError, match="pass --wait"), lock.hold_for_analysis(exp):
        pass
    assert lock.in_progress(exp) is not None
    t0 = time.monotonic()
    with lock.hold_for_analysis(exp, wait=True, log=lambda line: None):
        assert proc.poll() is not None  # the holder ended first
    assert time.monotonic() - t0 > 0.5
    assert lock.in_progress(exp) is None


def test_a_run_waits_for_an_analysis_rather_than_refusing(tmp_path: Path) -> None:
    exp = tmp_path / "exp"
    proc = holder_process(exp / lock.CAMPAIGN_LOCK, purpose=lock.ANALYZE, seconds=1.0)
    lines: list[str] = []
    with lock.hold_campaigns([exp], machine=False, log=lines.append) as held:
        assert held and proc.poll() is not None
    assert lines and lines[0].startswith(f"waiting for {exp} (the campaign): held by ")


def test_machine_lock_makes_another_campaign_wait_and_a_stop_gives_up(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    machine = tmp_path / "machine.lock"
    monkeypatch.setenv(lock.MACHINE_LOCK_ENV, str(machine))
    assert lock.machine_lock_path() == machine
    proc = holder_process(machine)
    try:
        stop_event = threading.Event()
        lines: list[str] = []
        threading.Timer(0.8, stop_event.set).start()
        with lock.hold_campaigns([tmp_path / "other"], machine=True, stop=stop_event, log=lines.append) as held:
            assert not held
        assert lines == [
            f"waiting for the machine: held by {lock.Holder.from_json(json.loads(machine.read_text())).describe()}"
        ]  # type: ignore[union-attr]
        assert not (tmp_path / "other").exists()  # nothing written while waiting
    finally:
        stop(proc)
    with lock.hold_campaigns([tmp_path / "other"], machine=True) as held:
        assert held and json.loads(machine.read_text())["pid"] == os.getpid()
    assert not machine.exists()

"""Local executor: one workload process group, its streams in files, clean stop.

The workload (a bash recipe and whatever it starts) runs in its own session and process group
so that a stop reaches every process it started. The direct child also gets a parent-death
signal, and the group id and start time are recorded so that a later `reportgen run` can
stop a group orphaned by a runner killed with SIGKILL before it redoes the run.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import subprocess
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from reportgen.execute.executor import ExitInfo, Launch

_PR_SET_PDEATHSIG = 1


def _child_setup() -> None:  # runs in the child between fork and exec
    try:
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
    except OSError:
        pass


def exit_info(returncode: int) -> ExitInfo:
    if returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = f"SIG{-returncode}"
        return ExitInfo(exit_code=None, signal=name)
    return ExitInfo(exit_code=returncode, signal=None)


class LocalExecutor:
    """Runs each workload as a process group on this machine (see reportgen.execute.executor)."""

    kind = "local"
    captures_on_node = False
    fingerprint: Mapping[str, Any] | None = None
    lost: str | None = None

    def launch(self, launch: Launch) -> LocalProcess:
        return LocalProcess(launch)

    def stop_orphan(self, identity: Mapping[str, object] | None) -> bool:
        return stop_orphaned_group(identity)


class LocalProcess:
    """A workload process group started from `command` with streams into two files."""

    def __init__(self, launch: Launch) -> None:
        self.command = list(launch.command)
        self.cwd = Path(launch.cwd)
        self.env = dict(launch.env)
        self.stdout_path = Path(launch.stdout_path)
        self.stderr_path = Path(launch.stderr_path)
        self._proc: subprocess.Popen[bytes] | None = None
        self.pgid: int | None = None
        self.proc_start: int | None = None

    def start(self) -> None:
        with open(self.stdout_path, "ab") as out, open(self.stderr_path, "ab") as err:
            self._proc = subprocess.Popen(
                self.command,
                cwd=self.cwd,
                env=self.env,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=err,
                start_new_session=True,
                preexec_fn=_child_setup,
            )
        self.pgid = self._proc.pid
        self.proc_start = process_start_time(self._proc.pid)

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc else None

    def identity(self) -> dict[str, object]:
        return {"pid": self.pid, "pgid": self.pgid, "proc_start": self.proc_start, "host": os.uname().nodename}

    def poll(self) -> ExitInfo | None:
        assert self._proc is not None
        rc = self._proc.poll()
        return None if rc is None else exit_info(rc)

    def stop(self, *, grace_s: float = 10.0) -> ExitInfo:
        """SIGTERM the whole group, then SIGKILL what is left after `grace_s`."""
        assert self._proc is not None
        terminate_group(self.pgid, grace_s, leader=self._proc)
        return exit_info(self._proc.wait())

    def finish(self) -> None:
        """After the leader exits, stop any process of its group left behind."""
        if group_alive(self.pgid):
            terminate_group(self.pgid, 0.5)

    def capture_result(self) -> None:
        """Nothing: a local run's provenance and GPU samples are recorded by the runner itself."""
        return None


def terminate_group(pgid: int | None, grace_s: float, *, leader: subprocess.Popen[bytes] | None = None) -> None:
    """SIGTERM the group, wait up to `grace_s` for it to be gone (and our `leader` child reaped,
    else its zombie keeps the group alive), then SIGKILL whatever is left."""
    _signal_group(pgid, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline:
        if (leader is None or leader.poll() is not None) and not group_alive(pgid):
            break
        time.sleep(0.05)
    _signal_group(pgid, signal.SIGKILL)


def _signal_group(pgid: int | None, sig: int) -> None:
    if pgid is None:
        return
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


def group_alive(pgid: int | None) -> bool:
    if pgid is None:
        return False
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _stat_field(pid: int, index: int) -> int | None:
    """Field `index` of /proc/<pid>/stat counted after the command name (0: the state), or None
    when the process is gone. The name is cut at its last ")": it may hold spaces and parentheses."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat[stat.rfind(")") + 2 :].split()
    try:
        return int(fields[index])
    except (IndexError, ValueError):
        return None


def process_start_time(pid: int) -> int | None:
    """Start time of `pid` in clock ticks since boot (/proc), to tell a reused pid apart."""
    return _stat_field(pid, 19)


def parent_pid(pid: int) -> int | None:
    """The parent of `pid` (/proc), None when it is gone."""
    return _stat_field(pid, 1)


def stop_orphaned_group(identity: Mapping[str, object] | None) -> bool:
    """Stop a process group left running by a runner that died; True if one was stopped.

    Only acts when the group leader is still the same process (pid and start time match)
    on this host, so a reused pid is never signalled.
    """
    if not identity:
        return False
    pgid = identity.get("pgid")
    if not isinstance(pgid, int) or identity.get("host") != os.uname().nodename:
        return False
    if not group_alive(pgid):
        return False
    start = identity.get("proc_start")
    if start is not None and process_start_time(pgid) not in (start, None):
        return False
    terminate_group(pgid, 5.0)
    return True

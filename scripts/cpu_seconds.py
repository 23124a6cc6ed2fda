"""CPU-seconds (user + system) of a command and of every process it starts, daemons included.

    python scripts/cpu_seconds.py [--label TEXT] [--grace S] -- COMMAND ...

How the test suite's cost is measured part by part (docs/testing.md, "Where the time goes now"): on a
machine shared with other work, wall time is not a figure to publish, the CPU a part spends is. Time's
own count (`/usr/bin/time`, the CPU of the processes waited for) misses what escapes its process tree:
Ray's daemons, double-forked, end as children of init, and the workers a raylet reaps without waiting
(SIGCHLD ignored) are counted by no one.

Where this process may make a control group (root on cgroup v1's `cpuacct`, or a writable cgroup v2
tree), the command runs in one of its own and the count is the group's: every process and thread in
it, however it ended (exact). Else the count is that of the processes waited for, with this process
the command's *child subreaper* (prctl PR_SET_CHILD_SUBREAPER), so orphans are reaped here and their
CPU counted; a process reaped without a wait is missed (on the suite's Ray files, about a third of
their CPU: use a control group there). Either way, what the command left running when it ended gets
`--grace` seconds, then SIGTERM, then SIGKILL.

Prints one line on stderr: `cpu: LABEL user U sys S total T wall W rc RC by cgroup|waited (waited: T2)`;
exits with the command's code.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import os
import resource
import signal
import subprocess
import sys
import time
from pathlib import Path

PR_SET_CHILD_SUBREAPER = 36
CGROUP_ROOTS = ("/sys/fs/cgroup/cpuacct", "/sys/fs/cgroup/unified", "/sys/fs/cgroup")


def _make_cgroup(label: str) -> Path | None:
    """A control group of its own under the first hierarchy that counts CPU and lets this process make
    one, or None."""
    name = f"cpu-seconds-{os.getpid()}-{label or 'run'}".replace("/", "_")
    for root in map(Path, CGROUP_ROOTS):
        counts = (root / "cpuacct.usage").is_file() or (root / "cgroup.controllers").is_file()
        if not counts:
            continue
        try:
            (root / name).mkdir()
        except OSError:
            continue
        return root / name
    return None


def _cgroup_cpu(group: Path) -> tuple[float, float, float]:
    """(user, system, total) seconds of every task the group ever held."""
    if (group / "cpuacct.usage").is_file():  # cgroup v1: nanoseconds, and user/system in clock ticks
        total = int((group / "cpuacct.usage").read_text()) / 1e9
        ticks = dict(line.split() for line in (group / "cpuacct.stat").read_text().splitlines())
        hz = os.sysconf("SC_CLK_TCK")
        return int(ticks["user"]) / hz, int(ticks["system"]) / hz, total
    stat = dict(line.split() for line in (group / "cpu.stat").read_text().splitlines())  # v2: microseconds
    return int(stat["user_usec"]) / 1e6, int(stat["system_usec"]) / 1e6, int(stat["usage_usec"]) / 1e6


def _join(group: Path | None) -> None:
    """In the command's process, before it runs: into the group; Ctrl-C's default back."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    if group is not None:
        (group / "cgroup.procs").write_text(str(os.getpid()))


def _children() -> list[int]:
    """The live processes whose parent is this one (the command's orphans, re-parented here)."""
    me = str(os.getpid())
    out = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                stat = f.read().decode(errors="replace")
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()  # after the name, which may hold spaces
        if fields[1] == me and fields[0] != "Z":
            out.append(int(entry))
    return out


def _reap_all(grace_s: float) -> None:
    """Reap every child until none is left; the live ones after `grace_s` are stopped (TERM, then KILL)."""
    start = time.monotonic()
    sent: dict[int, float] = {}
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid != 0:
            continue
        now = time.monotonic()
        if now - start > grace_s:
            for child in _children():
                first = sent.setdefault(child, now)
                with contextlib.suppress(ProcessLookupError):
                    os.kill(child, signal.SIGKILL if now - first > 5 else signal.SIGTERM)
        time.sleep(0.1)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--label", default="", help="a name for the line printed")
    ap.add_argument("--grace", type=float, default=10.0, help="seconds left to what the command leaves running")
    ap.add_argument("command", nargs=argparse.REMAINDER)
    args = ap.parse_args()
    cmd = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not cmd:
        ap.error("no command")
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_CHILD_SUBREAPER)")
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C reaches the command; this one still counts
    group = _make_cgroup(args.label)
    t0 = time.monotonic()
    proc = subprocess.Popen(cmd, preexec_fn=lambda: _join(group))
    while True:
        pid, status = os.wait()
        if pid == proc.pid:
            rc = os.waitstatus_to_exitcode(status)
            break
    wall = time.monotonic() - t0
    _reap_all(args.grace)
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    waited = ru.ru_utime + ru.ru_stime
    user, system, total, how = ru.ru_utime, ru.ru_stime, waited, "waited"
    if group is not None:
        user, system, total = _cgroup_cpu(group)
        how = "cgroup"
        with contextlib.suppress(OSError):
            group.rmdir()
    label = f"{args.label} " if args.label else ""
    print(
        f"cpu: {label}user {user:.1f} sys {system:.1f} total {total:.1f} wall {wall:.1f} rc {rc} "
        f"by {how} (waited: {waited:.1f})",
        file=sys.stderr,
        flush=True,
    )
    return rc


if __name__ == "__main__":
    sys.exit(main())

"""CPU-seconds (user + system) of a command and of every process it starts, daemons included.

    python scripts/cpu_seconds.py [--label TEXT] [--grace S] -- COMMAND ...

How the test suite's cost is measured part by part (docs/testing.md, "Where the time goes now"): on a
machine shared with other work, wall time is not a figure to publish, the CPU a part spends is. Time's
own count (`/usr/bin/time`) misses what escapes its process tree: Ray's daemons, double-forked, end as
children of init, and their CPU is nobody's. Here this process is the command's *child subreaper*
(prctl PR_SET_CHILD_SUBREAPER): every orphan of the tree becomes its child and is reaped by it, so the
kernel adds each process's CPU to this one's children's count when it ends, whoever started it. After
the command ends, what it left running gets `--grace` seconds, then SIGTERM, then SIGKILL.

Prints one line on stderr: `cpu: LABEL user U sys S total T wall W rc RC`; exits with the command's code.
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

PR_SET_CHILD_SUBREAPER = 36


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
    t0 = time.monotonic()
    proc = subprocess.Popen(cmd, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    while True:
        pid, status = os.wait()
        if pid == proc.pid:
            rc = os.waitstatus_to_exitcode(status)
            break
    wall = time.monotonic() - t0
    _reap_all(args.grace)
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    label = f"{args.label} " if args.label else ""
    print(
        f"cpu: {label}user {ru.ru_utime:.1f} sys {ru.ru_stime:.1f} total {ru.ru_utime + ru.ru_stime:.1f} "
        f"wall {wall:.1f} rc {rc}",
        file=sys.stderr,
        flush=True,
    )
    return rc


if __name__ == "__main__":
    sys.exit(main())

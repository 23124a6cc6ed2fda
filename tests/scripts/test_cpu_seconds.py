"""scripts/cpu_seconds.py counts the CPU of what a command leaves behind (docs/testing.md measures the
suite's parts with it): a daemon that double-forked away from the command, as Ray's do, is reaped by it
and counted; the command's exit code is its own."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

# A grandchild that outlives its parent: it spins for 0.4 CPU-seconds, writes what it spent, then exits.
DAEMON = """
import os, sys, time
if os.fork():
    sys.exit(0)
os.setsid()
if os.fork():
    sys.exit(0)
while time.process_time() < 0.4:
    pass
open(sys.argv[1], "w").write(str(time.process_time()))
"""


def test_an_orphaned_daemons_cpu_is_counted_and_the_exit_code_kept(tmp_path: Path) -> None:
    spent = tmp_path / "spent"
    cmd = [sys.executable, str(REPO / "scripts" / "cpu_seconds.py"), "--label", "t", "--grace", "30", "--"]
    cmd += ["sh", "-c", f'"{sys.executable}" -c "$0" "$1"; exit 3', DAEMON, str(spent)]
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert res.returncode == 3, res.stderr
    assert spent.is_file()  # the daemon ran to its end: the command's end did not stop it
    line = res.stderr.strip().splitlines()[-1]
    assert line.startswith("cpu: t user ") and line.endswith(" rc 3"), line
    total = float(line.split(" total ")[1].split()[0])
    assert total >= float(spent.read_text()) - 0.05, line

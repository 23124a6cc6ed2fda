"""scripts/cpu_seconds.py counts the CPU of what a command leaves behind (docs/testing.md measures the
suite's parts with it): a daemon that double-forked away from the command, as Ray's do, is counted, and
where a control group can be made, a child reaped without a wait too; the command's exit code is its own."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

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
    assert line.startswith("cpu: t user ") and " rc 3 by " in line, line
    total = float(line.split(" total ")[1].split()[0])
    assert total >= float(spent.read_text()) - 0.05, line


# A child its parent never waits for (SIGCHLD ignored: the kernel reaps it, as a raylet's workers are): no
# process is credited with its CPU.
UNWAITED = """
import os, signal, sys, time
signal.signal(signal.SIGCHLD, signal.SIG_IGN)
if os.fork() == 0:
    while time.process_time() < 0.4:
        pass
    open(sys.argv[1], "w").write(str(time.process_time()))
    os._exit(0)
while not os.path.exists(sys.argv[1]):
    time.sleep(0.05)
time.sleep(0.2)
"""


def test_a_child_reaped_without_a_wait_is_counted_by_a_control_group(tmp_path: Path) -> None:
    spent = tmp_path / "spent"
    cmd = [sys.executable, str(REPO / "scripts" / "cpu_seconds.py"), "--", sys.executable, "-c", UNWAITED, str(spent)]
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    line = res.stderr.strip().splitlines()[-1]
    if " by cgroup " not in line:
        pytest.skip(f"no control group could be made here: {line}")
    total = float(line.split(" total ")[1].split()[0])
    waited = float(line.split("(waited: ")[1].rstrip(")"))
    assert total >= float(spent.read_text()) - 0.05 and waited < float(spent.read_text()), line

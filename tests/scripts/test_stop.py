"""scripts/test stopped by SIGTERM (a CI job's timeout) or Ctrl-C leaves no process behind: not
even one that left its process group, as Ray's daemons do (tests/scripts/stop_case.py makes one)."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


@pytest.mark.slow  # a suite inside the suite: about 10 s each
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["sigterm", "ctrl-c"])
def test_a_stopped_suite_leaves_no_process_behind(tmp_path: Path, sig: signal.Signals) -> None:
    pid_file = tmp_path / "daemon.pid"
    # The python and tools this suite runs with (REPORTGEN_ENV=none: no set-up of another venv).
    env = dict(os.environ, REPORTGEN_ENV="none", STOP_CASE_PID_FILE=str(pid_file), REPORTGEN_TEST_WORKERS="1")
    env.pop("REPORTGEN_TEST_RUN", None)  # its own mark, not this suite's
    env.pop("PYTEST_XDIST_WORKER", None)
    suite = subprocess.Popen(
        ["bash", str(REPO / "scripts" / "test"), "--fast", "-p", "no:cacheprovider", "tests/scripts/stop_case.py"],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    deadline = time.monotonic() + 120
    while not pid_file.is_file() and time.monotonic() < deadline and suite.poll() is None:
        time.sleep(0.2)
    assert pid_file.is_file(), suite.communicate(timeout=30)[0].decode()[-3000:]
    daemon = int(pid_file.read_text())
    assert _alive(daemon)
    os.kill(suite.pid, sig)
    out = suite.communicate(timeout=60)[0].decode()
    assert suite.returncode != 0, out[-2000:]
    for _ in range(50):
        if not _alive(daemon):
            break
        time.sleep(0.1)
    assert not _alive(daemon), f"pid {daemon} survived the stopped suite:\n{out[-2000:]}"

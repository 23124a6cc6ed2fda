"""Not collected by the suite (no test_ prefix): run alone by test_stop.py through `scripts/test`.

It leaves behind what Ray's daemons leave: a process in a session of its own, out of reach of a
signal to the suite's process group, then waits to be stopped."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path


def test_a_detached_process_then_a_long_wait() -> None:
    daemon = subprocess.Popen(["sleep", "300"], start_new_session=True)
    Path(os.environ["STOP_CASE_PID_FILE"]).write_text(str(daemon.pid))
    time.sleep(300)

"""Ctrl-C and SIGTERM become a stop flag while runs execute: one helper for both executors.

The flag is a `threading.Event`: the local runner checks it between polls of its workload, the
Ray executor's experiment threads share one. Handlers can only be installed from the main thread;
elsewhere (an experiment thread of the Ray executor) this is a no-op and the main thread's
handlers, set by the same helper, set the shared flag.
"""

from __future__ import annotations

import signal
import sys
import threading
from types import FrameType, TracebackType
from typing import Any

SIGNALS = (signal.SIGINT, signal.SIGTERM)
AGAIN = "reportgen: already stopping: waiting for the run's process group to end\n"


class stop_on_signals:
    """Within the block, SIGINT/SIGTERM set `stop` instead of raising; the handlers before are put back."""

    def __init__(self, stop: threading.Event) -> None:
        self.stop = stop
        self.previous: dict[int, Any] = {}

    def __enter__(self) -> stop_on_signals:
        if threading.current_thread() is threading.main_thread():
            for sig in SIGNALS:
                self.previous[sig] = signal.signal(sig, self._handle)
        return self

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        if self.stop.is_set():  # a second Ctrl-C: say what is going on
            sys.stderr.write(AGAIN)
        self.stop.set()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        for sig, handler in self.previous.items():
            signal.signal(sig, handler)
        self.previous.clear()

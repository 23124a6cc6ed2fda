"""Helpers shared by tests of several packages: waiting on a child process's files.

Plain functions, not fixtures: tests/conftest.py keeps the suite's hooks and fixtures, this module
what a test calls."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path


def wait_for(predicate: Callable[[], object], timeout: float, what: str, *, poll: float = 0.1) -> None:
    """Poll `predicate` until it is true; fail after `timeout` seconds naming `what` was awaited.

    For tests that start a runner in a child process and must act at a given point of its run
    (a run started, a step logged): the message says which point never came, and after how long."""
    start = time.monotonic()
    while time.monotonic() - start < timeout:
        if predicate():
            return
        time.sleep(poll)
    raise AssertionError(f"timed out after {timeout:g} s waiting for {what}")


def log_shows(path: Path, text: bytes) -> bool:
    """Whether the log at `path` exists and holds `text` yet (a run's stdout.log as it streams in)."""
    return path.is_file() and text in path.read_bytes()

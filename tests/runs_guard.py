"""No test reads the repository's runs/ folder: it is the user's as much as the project's.

A working copy holds more than git does under runs/: the demo's campaign (`scripts/demo`), a log
ingested by hand (`reportgen ingest`, as the README invites), an experiment copied in. A test that
listed runs/ saw those too, and failed (issue 46: one ingested log made
`tests/history/test_command.py` and `tests/render/test_reproduce.py` fail). So a test names the
committed experiments it reads (their own files only), takes them through a copy of them alone (the
`committed_runs` fixture of tests/conftest.py, made by `tests.helpers.copy_committed_runs` from what
git tracks) where it needs a runs root (a command's `--runs`, the analysis' freshness check, which
reads every experiment beside the one it checks), or makes its own runs root under tmp_path.

This module holds the check: an audit hook (PEP 578) sees every file this process opens and every
folder it lists. Listing the repository's runs/ itself, or reading anything of a folder there that
git does not track, is noted unless the two helpers that list it by git's word are on the stack;
tests/conftest.py fails the test that did it, naming the path. So a test that would trip over a
stray experiment fails in a clean clone too. In-process only: a child process a test starts (a
`reportgen` command, `mkdocs build`) must be given its runs root (`--runs`, `REPORTGEN_RUNS`) or
run in a clone.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from types import CodeType
from typing import Any

RUNS = Path(__file__).resolve().parents[1] / "runs"
_ROOT = str(RUNS)
_EVENTS = frozenset({"open", "os.listdir", "os.scandir"})
_allowed: set[CodeType] = set()
_seen: list[str] = []
_tracked: frozenset[str] | None = frozenset()


def tracked(repo: Path = RUNS.parent) -> frozenset[str] | None:
    """The names directly under runs/ that git tracks something in (the committed experiments and
    runs/README.md); None outside a git checkout (an exported tree: everything there is the tree's)."""
    try:
        out = subprocess.run(
            ["git", "-C", str(repo), "ls-files", "-z", "--", "runs"], capture_output=True, check=True
        ).stdout
    except (OSError, subprocess.CalledProcessError):
        return None
    return frozenset(p.split("/")[1] for p in out.decode().split("\0") if p.count("/") >= 1)


def allow(*functions: Callable[..., Any]) -> None:
    """Let `functions` (and what they call) read the repository's runs/: the helpers that take the
    committed experiments by git's list and copy them."""
    _allowed.update(f.__code__ for f in functions)


def _hook(event: str, args: tuple[Any, ...]) -> None:
    if event not in _EVENTS or not args:
        return
    path = "." if args[0] is None else args[0]  # os.listdir(): the working folder
    if isinstance(path, int):  # a file descriptor: its path was seen when it was opened
        return
    try:
        text = os.fsdecode(path)
        full = os.path.normpath(text if os.path.isabs(text) else os.path.join(os.getcwd(), text))
    except (TypeError, ValueError, OSError):
        return
    if full != _ROOT:
        if not full.startswith(_ROOT + os.sep):
            return
        name = full[len(_ROOT) + 1 :].split(os.sep, 1)[0]
        if _tracked is None or name in _tracked:  # a committed experiment's own files: named, never a stray
            return
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_code in _allowed:
            return
        frame = frame.f_back
    _seen.append(full)


_installed = False


def install() -> None:
    """Watch this process's reads from now on (an audit hook cannot be removed: install it once)."""
    global _installed, _tracked
    if not _installed:
        _tracked = tracked()
        sys.addaudithook(_hook)
        _installed = True


def take() -> list[str]:
    """The paths under the repository's runs/ read since the last call, and forget them."""
    out = list(dict.fromkeys(_seen))
    _seen.clear()
    return out

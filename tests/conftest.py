"""Shared test helpers: every test writes its own small fixtures under tmp_path."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture
def repo_root() -> Path:
    return REPO


@pytest.fixture(autouse=True)
def _quiet_mkdocs_banners(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NO_MKDOCS_2_WARNING", "1")
    monkeypatch.setenv("DISABLE_MKDOCS_2_WARNING", "true")


@pytest.fixture(autouse=True)
def _private_machine_lock(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test its own machine lock (reportgen.store.lock): tests of other checkouts running on
    the same machine must not wait for this one, nor it for them."""
    monkeypatch.setenv("REPORTGEN_MACHINE_LOCK", str(tmp_path_factory.mktemp("machine-lock") / "machine.lock"))


def python_exe() -> str:
    return sys.executable


def env_with_repo_on_path() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    return env


def logging_python(folder: Path) -> tuple[Path, Path]:
    """A `python` that writes each call's arguments, one line a call, to a log and then runs this
    interpreter with them: the real answers, and a count of who asked what. Returns (python, log)."""
    folder.mkdir(parents=True, exist_ok=True)
    python, log = folder / "python", folder / "calls.log"
    python.write_text(f'#!/bin/sh\nprintf "%s\\n" "$*" >> "{log}"\nexec "{sys.executable}" "$@"\n')
    python.chmod(0o755)
    return python, log

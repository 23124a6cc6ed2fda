"""Where reportgen keeps its files outside runs/: one cache folder for every part that keeps something
there (checkouts of revisions, drawn charts, probe answers, a Ray node's data hashes)."""

from __future__ import annotations

from pathlib import Path

import pytest

from reportgen.store import layout


def test_the_cache_folder_is_reportgen_cache_else_xdg_else_home(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    monkeypatch.delenv(layout.CACHE_ENV, raising=False)
    assert layout.default_cache() == (tmp_path / "home" / ".cache" / "reportgen").resolve()
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert layout.default_cache() == (tmp_path / "xdg" / "reportgen").resolve()
    monkeypatch.setenv(layout.CACHE_ENV, str(tmp_path / "mine"))
    assert layout.default_cache() == (tmp_path / "mine").resolve()

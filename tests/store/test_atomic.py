"""store/atomic.py: the one write-then-rename. A failed write leaves the old file and no debris;
an exclusive write never replaces; a staged folder is published whole or refused."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest

from reportgen.store import atomic


def _debris(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(".tmp"))


def test_a_failed_write_keeps_the_old_file_and_leaves_no_temporary(tmp_path: Path) -> None:
    path = atomic.write_text(tmp_path / "a.json", "old\n")

    def lines() -> Iterator[str]:
        yield "half"
        raise RuntimeError("disk gone")

    with pytest.raises(RuntimeError):
        atomic.write_lines(path, lines())
    assert path.read_text() == "old\n"
    assert _debris(tmp_path) == []


def test_write_lines_may_read_the_file_it_replaces(tmp_path: Path) -> None:
    path = atomic.write_text(tmp_path / "log", "a secret\nb\n")
    with open(path, encoding="utf-8") as fh:
        atomic.write_lines(path, (line.replace("secret", "***") for line in fh))
    assert path.read_text() == "a ***\nb\n"


def test_exclusive_never_replaces(tmp_path: Path) -> None:
    path = atomic.write_text(tmp_path / "sub" / "manifest.json", "complete")
    with pytest.raises(atomic.AlreadyExists):
        atomic.write_text(path, "other", exclusive=True)
    assert path.read_text() == "complete"
    assert _debris(path.parent) == []


def test_parquet_round_trip(tmp_path: Path) -> None:
    frame = pd.DataFrame({"step": [1, 2], "value": [0.5, 1.5]})
    path = atomic.write_parquet(tmp_path / "m.parquet", frame)
    assert pd.read_parquet(path).equals(frame)


def test_publish_dir_refuses_to_replace(tmp_path: Path) -> None:
    staging = tmp_path / ".staging"
    staging.mkdir()
    (staging / "manifest.json").write_text("{}")
    final = atomic.publish_dir(staging, tmp_path / "1")
    assert (final / "manifest.json").is_file() and not staging.exists()
    again = tmp_path / ".again"
    again.mkdir()
    (tmp_path / "2").mkdir()  # an empty folder: os.rename alone would replace it
    with pytest.raises(atomic.AlreadyExists):
        atomic.publish_dir(again, tmp_path / "2")

"""reportgen.analyze: a current analysis.json is left as it is, told without reading the run tables."""

from __future__ import annotations

from pathlib import Path

import pytest

from reportgen import analyze
from reportgen.store import layout
from tests.analysis.builder import FakeArm, make_experiment


def test_a_current_document_is_left_without_reading_the_runs_tables(tmp_path: Path, monkeypatch) -> None:
    exp = make_experiment(tmp_path / "runs", {"baseline": FakeArm(), "A1": FakeArm(speed=1.2)})
    path = analyze.analyze_experiment(exp)
    written = path.read_bytes()

    def no_full_read(*args: object, **kwargs: object) -> None:
        raise AssertionError("read the run tables of an experiment whose analysis is current")

    # A team's runs/ holds hundreds of experiments, most unchanged: `reportgen analyze` of them all
    # must not pay a full read of each (parquet tables) to leave them as they are.
    monkeypatch.setattr(analyze, "read_experiment", no_full_read)
    assert analyze.analyze_experiment(exp) == exp / layout.ANALYSIS
    assert path.read_bytes() == written
    # A changed input is still seen, and analysed again.
    manifest = exp / "A1" / "1" / "manifest.json"
    manifest.write_text(manifest.read_text(encoding="utf-8") + "\n", encoding="utf-8")
    with pytest.raises(AssertionError, match="read the run tables"):
        analyze.analyze_experiment(exp)
    monkeypatch.undo()
    analyze.analyze_experiment(exp)
    assert path.read_bytes() != written

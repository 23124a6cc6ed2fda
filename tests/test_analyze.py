"""reportgen.analyze: a current analysis.json is left as it is, told without reading the run tables, and a
runs folder's manifests are read once for all its experiments' checks."""

from __future__ import annotations

from pathlib import Path

import pytest

from reportgen import analyze
from reportgen.store import layout, run_folder
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


def test_analysing_a_runs_folder_reads_its_manifests_once_and_still_sees_what_went_stale(
    tmp_path: Path, monkeypatch
) -> None:
    runs = tmp_path / "runs"
    # Three experiments on one machine, the second's campaign overlapping the first's: each one's
    # overlap check reads the others' manifests.
    exps = [
        make_experiment(
            runs, {"baseline": FakeArm(), "A1": FakeArm(speed=1.1)}, name=f"e{i}", t0=1_764_000_000.0 + i * 60
        )
        for i in range(3)
    ]
    analyze.analyze_all(runs)
    before = {e: (e / layout.ANALYSIS).read_bytes() for e in exps}
    indexes = []
    made = run_folder.RunsIndex.__init__

    def counted(self: run_folder.RunsIndex, root: Path) -> None:
        indexes.append(root)
        made(self, root)

    monkeypatch.setattr(run_folder.RunsIndex, "__init__", counted)
    analyze.analyze_all(runs)
    assert indexes == [runs]  # one index for the folder, not one per experiment
    assert {e: (e / layout.ANALYSIS).read_bytes() for e in exps} == before
    # A run of e1 changes: what each experiment's own check (its own index) calls stale is analysed again.
    manifest = exps[1] / "A1" / "1" / "manifest.json"
    manifest.write_text(manifest.read_text(encoding="utf-8") + "\n", encoding="utf-8")
    monkeypatch.undo()
    stale = {e for e in exps if analyze.is_stale(e)}
    assert exps[1] in stale
    analyze.analyze_all(runs)
    assert {e for e in exps if (e / layout.ANALYSIS).read_bytes() != before[e]} == stale
    assert not any(analyze.is_stale(e) for e in exps)

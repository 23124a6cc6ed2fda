"""What the analysis reads of a run beyond its fields: the reader's notes in the analysis' words
and order, and a flag's value as one string."""

from __future__ import annotations

from reportgen.analysis.inputs import argv_value, run_notes
from reportgen.store.run import StoredRun


def test_notes_follow_the_files_and_say_what_a_missing_one_means() -> None:
    run = StoredRun(
        "A1",
        1,
        notes=(
            "gpu.parquet: unreadable (ArrowInvalid)",
            "git.json: invalid (commit)",
            "metrics.parquet: unreadable (OSError)",
            "command.json: unreadable (JSONDecodeError)",
        ),
        missing=frozenset({"manifest.json", "metrics.parquet", "gpu.parquet", "provenance/git.json"}),
    )
    assert run_notes(run) == [
        "manifest.json missing",
        "metrics.parquet: unreadable (OSError)",
        "metrics.parquet missing: run `reportgen ingest`",
        "gpu.parquet: unreadable (ArrowInvalid)",
        "command.json: unreadable (JSONDecodeError)",
    ]
    assert run_notes(StoredRun("A1", 2)) == []


def test_a_flag_value_is_one_string() -> None:
    argv = {"--n": 16, "--ids": [1, 2], "--on": True}
    assert [argv_value(argv, f) for f in ("--n", "--ids", "--on", "--off")] == ["16", "1 2", "true", None]

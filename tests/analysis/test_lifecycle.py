"""A run's attempts for the report, from the manifest's ingest.lifecycle."""

from __future__ import annotations

from reportgen.analysis.lifecycle import run_attempts


def manifest(*attempts: dict) -> dict:
    return {"ingest": {"lifecycle": {"stream": "stdout", "attempts": list(attempts)}}}


def test_one_plain_attempt_is_nothing_to_show() -> None:
    assert run_attempts(manifest({"attempt": 1, "kind": "job", "started_by": "log start", "steps": [0, 29]})) is None
    assert run_attempts({}) is None and run_attempts({"ingest": {"lifecycle": "x"}}) is None


def test_a_resumed_or_restarted_run_shows_its_attempts() -> None:
    resumed = run_attempts(manifest({"attempt": 1, "kind": "job", "started_by": "job submission", "start_step": 120}))
    assert resumed is not None and resumed[0].start_step == 120
    two = run_attempts(
        manifest(
            {
                "attempt": 1,
                "kind": "job",
                "started_by": "job submission",
                "steps": [0, 13],
                "end": "failed",
                "failure": "OOM at step 14",
                "replaced_values": 203,
                "redone_steps": [],
                "cause": None,
            },
            {
                "attempt": 2,
                "kind": "restart",
                "started_by": "global restart #1",
                "steps": [10, 29],
                "end": "clean",
                "redone": "10-14",
                "start_step": 10,
                "resumed_from_iteration": 9,
            },
        )
    )
    assert two is not None
    assert [(a.kind, a.steps, a.end, a.redone, a.replaced_values) for a in two] == [
        ("job", [0, 13], "failed", None, 203),
        ("restart", [10, 29], "clean", "10-14", 0),
    ]


def test_a_malformed_lifecycle_is_left_out() -> None:
    assert run_attempts(manifest({"attempt": "one", "kind": "job", "started_by": "x"}, {"attempt": 2})) is None

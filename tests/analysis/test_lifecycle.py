"""A run's attempts for the report, from the manifest's ingest.lifecycle."""

from __future__ import annotations

import pytest

from reportgen.analysis.lifecycle import run_attempts
from reportgen.errors import UserError
from reportgen.store.models import Manifest


def manifest(*attempts: dict) -> Manifest:
    return Manifest.create({"ingest": {"lifecycle": {"stream": "stdout", "attempts": list(attempts)}}})


def test_one_plain_attempt_is_nothing_to_show() -> None:
    assert run_attempts(manifest({"attempt": 1, "kind": "job", "started_by": "log start", "steps": [0, 29]})) is None
    assert run_attempts(Manifest.create({})) is None
    assert run_attempts(Manifest.create({"ingest": {"lifecycle": None}})) is None


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


def test_a_malformed_lifecycle_is_the_manifest_s_problem() -> None:
    # The typed manifest refuses a lifecycle of the wrong shape where it is read (store.run_folder then
    # names the file in the run's notes); an attempt short of what the report needs is left out.
    bad = {"ingest": {"lifecycle": {"attempts": [{"attempt": "one"}]}}}
    with pytest.raises(UserError, match="attempt"):
        Manifest.parse({"schema_version": 1, **bad}, "manifest.json")
    assert (
        run_attempts(manifest({"attempt": 1, "kind": "job", "started_by": "x", "start_step": 4}, {"attempt": 2}))
        is None
    )

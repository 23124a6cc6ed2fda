"""The behavioural fingerprint and the same_maths guardrail (reportgen.analysis.behaviour): runs made
in memory with the first steps' loss and grad norm, at one or two revisions."""

from __future__ import annotations

import pandas as pd

from reportgen.analysis import behaviour
from reportgen.store.models import Manifest
from reportgen.store.run import StoredRun
from reportgen.vocab import GRAD_NORM, LOSS


def _run(arm: str, repeat: int, sha: str | None, loss: list[float], grad: list[float] | None = None) -> StoredRun:
    rows = [(s, LOSS, v, "console") for s, v in enumerate(loss)]
    rows += [(s, GRAD_NORM, v, "console") for s, v in enumerate(grad or [])]
    metrics = pd.DataFrame(rows, columns=["step", "key", "value", "source"])
    manifest = Manifest.create(
        {"arm": arm, "repeat": repeat, **({"revision": {"ref": "x", "sha": sha}} if sha else {})}
    )
    return StoredRun(arm=arm, repeat=repeat, manifest=manifest, metrics=metrics)


LOSS_A = [0.0, 0.01, 0.02, 0.5, 0.6]


def test_same_code_at_two_revisions_passes_and_the_fingerprint_is_the_first_steps():
    base = [_run("baseline", r, "a" * 40, LOSS_A, [3.0, 1.0, 0.5, 9.0]) for r in (1, 2)]
    cand = [_run("candidate", r, "b" * 40, LOSS_A, [3.0, 1.0, 0.5, 7.0]) for r in (1, 2)]
    assert behaviour.fingerprint(base) == {LOSS: [0.0, 0.01, 0.02], GRAD_NORM: [3.0, 1.0, 0.5]}
    got = behaviour.check(base, cand)
    assert got is not None and got.status == "pass" and "agree" in got.reason


def test_a_revision_whose_first_steps_differ_changes_the_maths():
    base = [_run("baseline", 1, "a" * 40, LOSS_A, [3.0, 1.0, 0.5])]
    cand = [_run("candidate", 1, "b" * 40, LOSS_A, [3.0, 1.2, 0.5])]
    got = behaviour.check(base, cand)
    assert got is not None and got.status == "warn"
    assert f"step 1 {GRAD_NORM} 1.2 against the baseline's 1" in got.reason and "alters the maths" in got.reason


def test_the_runs_own_spread_is_not_a_change_of_maths():
    base = [_run("baseline", 1, "a" * 40, [0.0, 0.0100, 0.02]), _run("baseline", 2, "a" * 40, [0.0, 0.0110, 0.02])]
    cand = [_run("candidate", 1, "b" * 40, [0.0, 0.0105, 0.02])]
    got = behaviour.check(base, cand)
    assert got is not None and got.status == "pass"


def test_arms_at_the_same_code_or_without_revisions_are_not_judged_here():
    same = [_run("baseline", 1, "a" * 40, LOSS_A)], [_run("candidate", 1, "a" * 40, [9.0] * 5)]
    assert behaviour.check(*same) is None
    assert behaviour.check([_run("baseline", 1, None, LOSS_A)], [_run("A1", 1, None, [9.0] * 5)]) is None
    none_logged = behaviour.check([_run("baseline", 1, "a" * 40, [])], [_run("candidate", 1, "b" * 40, [])])
    assert none_logged is not None and none_logged.status == "not_applicable"

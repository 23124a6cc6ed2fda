"""Behavioural fingerprint of an arm, and the guardrail that names a code change altering the maths.

Part of reportgen.analysis (pure). When arms run at different git revisions (docs/revisions.md),
nothing in their flags says whether the code change is a pure speed-up or also changes what is
computed (another reduction order, a fused kernel with other rounding, a bug). With the same
prompts, seeds and lengths (the same-work guardrail spans revisions), the losses of the first
steps depend only on the model's initialisation, the data and the training code: their values are
the arm's fingerprint. Same code gives the same first losses (to the run-to-run spread the baseline's
own runs show); a revision whose first losses differ beyond that changes the maths, and the
`same_maths` guardrail warns so, naming the step and both values. A warning never decides the
verdict (decision.py counts failures); the reviewer is told the candidate trains differently.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from reportgen.analysis import document as doc
from reportgen.analysis import same_work
from reportgen.analysis.check import NA, PASS, WARN, guardrail
from reportgen.store.run import StoredRun, by_block
from reportgen.vocab import GRAD_NORM, LOSS

ID = "same_maths"
TITLE = "Same maths across revisions (the first steps' loss and grad norm)"
STEPS = 3  # the fingerprint: each key's value in the first this many logged steps
# GRPO's loss is 0 at the first step (ratio 1, advantages of mean 0): the grad norm says more there.
KEYS = (LOSS, GRAD_NORM)
RELATIVE = 1e-4  # of the key's largest magnitude in those steps: closer values agree, whatever the spread


def revision(run: StoredRun) -> str | None:
    """The commit a run ran at (arms at git revisions), else None (the working tree)."""
    rev = run.manifest.revision
    return rev.sha if rev is not None else None


def _first(runs: Sequence[StoredRun], key: str) -> dict[int, list[float]]:
    """The finite values of `key` in each run's first STEPS logged steps, by step."""
    out: dict[int, list[float]] = {}
    for r in runs:
        if key not in r.steps.columns:
            continue
        col = r.steps[key].dropna()
        for step, v in list(zip(col.index.tolist(), col.to_numpy(dtype=float).tolist(), strict=True))[:STEPS]:
            if np.isfinite(v):
                out.setdefault(int(step), []).append(float(v))
    return out


def fingerprint(runs: Sequence[StoredRun]) -> dict[str, list[float]]:
    """The arm's fingerprint: for each of KEYS it logged, the mean value of each of its first STEPS
    logged steps over its runs."""
    out = {}
    for key in KEYS:
        by_step = _first(runs, key)
        if by_step:
            out[key] = [float(np.mean(by_step[s])) for s in sorted(by_step)[:STEPS]]
    return out


def check(baseline: Sequence[StoredRun], candidate: Sequence[StoredRun]) -> doc.GuardrailResult | None:
    """`same_maths` for a comparison whose arms ran at different revisions; None when both arms ran
    the same code (no revision, or the same one): flags that change the maths are named by
    `maths_changes` instead. With seeds set per block the arms' runs are compared pair by pair
    (`_check_pairs`): only the two runs of a block had the same prompts and seeds."""
    b_revs = {revision(r) for r in baseline} - {None}
    c_revs = {revision(r) for r in candidate} - {None}
    if not b_revs or not c_revs or b_revs == c_revs:
        return None
    if same_work.seeds_vary([*baseline, *candidate]):
        return _check_pairs(baseline, candidate)
    compared = []
    for key in KEYS:
        b, c = _first(baseline, key), _first(candidate, key)
        steps = sorted(set(b) & set(c))[:STEPS]
        if not steps:
            continue
        scale = max(max(abs(float(np.mean(b[s]))) for s in steps), 1e-12)
        for s in steps:
            bs, cs = np.asarray(b[s]), np.asarray(c[s])
            spread = float(np.ptp(bs) + np.ptp(cs))
            gap = abs(float(cs.mean()) - float(bs.mean()))
            if gap > RELATIVE * scale + spread:
                return guardrail(
                    ID,
                    TITLE,
                    WARN,
                    f"the code change alters the maths: step {s} {key} {float(cs.mean()):.6g} against the "
                    f"baseline's {float(bs.mean()):.6g} (same prompts and seeds; the runs' own spread {spread:.2g}): "
                    "the candidate trains a different model",
                    f"{candidate[0].rel}/metrics.parquet",
                )
        compared.append(f"{key} {', '.join(f'{float(np.mean(b[s])):.6g}' for s in steps)}")
    if not compared:
        return guardrail(ID, TITLE, NA, f"not checkable: neither {' nor '.join(KEYS)} is logged by both arms")
    return guardrail(ID, TITLE, PASS, f"the first steps agree across the two revisions ({'; '.join(compared)})")


def _check_pairs(baseline: Sequence[StoredRun], candidate: Sequence[StoredRun]) -> doc.GuardrailResult:
    """`check` for seeds per block: in each pair (one block: the same seeds, prompts and warm start)
    the candidate's first steps against the baseline's, within RELATIVE of their magnitude. No
    run-to-run spread widens the bound: the runs of one arm differ by their seeds, not by noise, and
    the same code gave the same first steps to 1e-9 on one GPU (the r4 showcase's repeats)."""
    pairs = by_block(baseline, candidate)
    compared = 0
    for key in KEYS:
        for b_run, c_run in pairs:
            b, c = _first([b_run], key), _first([c_run], key)
            steps = sorted(set(b) & set(c))[:STEPS]
            if not steps:
                continue
            scale = max(max(abs(b[s][0]) for s in steps), 1e-12)
            for s in steps:
                if abs(c[s][0] - b[s][0]) > RELATIVE * scale:
                    return guardrail(
                        ID,
                        TITLE,
                        WARN,
                        f"the code change alters the maths: step {s} {key} {c[s][0]:.6g} against the baseline's "
                        f"{b[s][0]:.6g} in pair {c_run.repeat} (same prompts and seeds): the candidate trains a "
                        "different model",
                        f"{c_run.rel}/metrics.parquet",
                    )
            compared += 1
    if not compared:
        return guardrail(ID, TITLE, NA, f"not checkable: no pair logged {' or '.join(KEYS)} in both runs")
    return guardrail(
        ID,
        TITLE,
        PASS,
        f"the first steps agree within each of {len(pairs)} pair(s) (same seeds per pair) across the two revisions",
    )

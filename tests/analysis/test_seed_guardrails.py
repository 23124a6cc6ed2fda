"""The guardrails with seeds set per block ([run] seeds = "per-block"): seeds may differ between blocks
and must be equal within a pair, in the fixed-flags check, the same-maths fingerprint, the same-work
check and the warm start of the same-inputs check. Runs made in memory."""

from __future__ import annotations

import pandas as pd

from reportgen.analysis import behaviour, same_work
from reportgen.analysis.check import GuardrailInput
from reportgen.analysis.guardrails import fixed_workload, same_inputs
from reportgen.store.models import Manifest
from reportgen.store.run import StoredRun
from reportgen.vocab import GRAD_NORM, LOSS, RESPONSE_LENGTHS

SEEDS = ("--seed", "--rollout-seed")
FLAGS = ("--global-batch-size", *SEEDS)


def _run(
    arm: str,
    block: int,
    *,
    seed: int | None = None,
    warm: str | None = None,
    sha: str | None = None,
    loss: list[float] | None = None,
    length: float = 3.0,
) -> StoredRun:
    seed = 1000 * (block - 1) + 42 if seed is None else seed
    argv = {"--global-batch-size": "64", "--seed": str(seed + 1192), "--rollout-seed": str(seed)}
    rows = [(s, LOSS, v, "console") for s, v in enumerate(loss or [0.0, 0.1, 0.2])]
    rows += [(s, GRAD_NORM, 1.0 + v, "console") for s, v in enumerate(loss or [0.0, 0.1, 0.2])]
    rows += [(s, RESPONSE_LENGTHS, length, "console") for s in range(3)]
    manifest = Manifest.create(
        {
            "arm": arm,
            "repeat": block,
            "effective_argv": argv,
            "seeds": {"--seed": argv["--seed"], "--rollout-seed": argv["--rollout-seed"]},
            **({"workload": {"name": "grpo-max", "version": "v2", "warm_start_sha256": warm}} if warm else {}),
            **({"revision": {"ref": "x", "sha": sha}} if sha else {}),
        }
    )
    metrics = pd.DataFrame(rows, columns=["step", "key", "value", "source"])
    return StoredRun(arm=arm, repeat=block, manifest=manifest, metrics=metrics)


def _input(baseline: list[StoredRun], candidate: list[StoredRun], *, per_block: bool = True) -> GuardrailInput:
    return GuardrailInput(
        baseline=baseline,
        candidate=candidate,
        expected_steps=3,
        batch_flag="--global-batch-size",
        fixed_flags=FLAGS,
        windows=[("W1", 0, 2)],
        seed_flags=SEEDS if per_block else (),
    )


def test_seeds_that_differ_between_blocks_and_agree_within_pairs_pass():
    base = [_run("baseline", b) for b in (1, 2, 3)]
    cand = [_run("A1", b) for b in (3, 2, 1)]  # in any order: matched by block
    result = fixed_workload(_input(base, cand))
    assert result.status == "pass" and "--seed, --rollout-seed equal within each pair" in result.reason


def test_a_seed_that_differs_within_a_pair_fails_naming_the_pair():
    base = [_run("baseline", b) for b in (1, 2)]
    cand = [_run("A1", 1), _run("A1", 2, seed=7)]
    result = fixed_workload(_input(base, cand))
    assert result.status == "fail"
    assert result.reason == "A1/2: --seed = '1199', its pair's baseline (baseline/2) '2234'"


def test_with_fixed_seeds_a_seed_is_compared_with_the_first_baseline_run():
    base = [_run("baseline", b) for b in (1, 2)]
    cand = [_run("A1", b) for b in (1, 2)]  # block 2 has other seeds than baseline/1
    assert fixed_workload(_input(base, cand, per_block=False)).status == "fail"
    same = [_run("A1", b, seed=42) for b in (1, 2)]
    assert (
        fixed_workload(_input([_run("baseline", b, seed=42) for b in (1, 2)], same, per_block=False)).status == "pass"
    )


def test_the_warm_start_must_be_the_same_within_each_pair():
    base = [_run("baseline", 1, warm="a" * 64), _run("baseline", 2, warm="b" * 64)]
    ok = same_inputs(_input(base, [_run("A1", 1, warm="a" * 64), _run("A1", 2, warm="b" * 64)]))
    assert ok.status == "pass" and "the same warm start in each pair" in ok.reason
    bad = same_inputs(_input(base, [_run("A1", 1, warm="a" * 64), _run("A1", 2, warm="c" * 64)]))
    assert bad.status == "fail" and bad.reason.startswith("A1/2: warm start cccccccccccc differs from its pair's")


def test_same_maths_compares_pair_by_pair_when_seeds_vary():
    # Different seeds give different first steps in every block; the same code gives the same ones in a pair.
    base = [_run("baseline", b, sha="a" * 40, loss=[0.0, 0.1 * b, 0.2 * b]) for b in (1, 2, 3)]
    same = [_run("candidate", b, sha="b" * 40, loss=[0.0, 0.1 * b, 0.2 * b]) for b in (1, 2, 3)]
    result = behaviour.check(base, same)
    assert result is not None and result.status == "pass" and "within each of 3 pair(s)" in result.reason
    # a change of maths within one pair: the spread between blocks (0.1 to 0.3) does not hide it
    changed = [*same[:2], _run("candidate", 3, sha="b" * 40, loss=[0.0, 0.3, 0.61])]
    warned = behaviour.check(base, changed)
    assert warned is not None and warned.status == "warn" and "in pair 3" in warned.reason


def test_same_work_compares_the_blocks_both_arms_ran_when_seeds_vary():
    # block 3 of the baseline saw other prompts (longer answers) and has no candidate run to pair with
    base = [_run("baseline", 1), _run("baseline", 2), _run("baseline", 3, length=6.0)]
    cand = [_run("A1", 1), _run("A1", 2)]
    b, c = same_work.paired(base, cand)
    assert [r.repeat for r in b] == [1, 2] and [r.repeat for r in c] == [1, 2]
    found = same_work.check(base, cand, [("W1", 0, 2)], primary="perf/step_resp_token_per_s", tolerance=0.05)
    assert found.windows[0].response_length_change == 0.0
    # with the same seeds in every run, every run counts as before
    fixed_b = [_run("baseline", b, seed=42) for b in (1, 2, 3)]
    fixed_c = [_run("A1", b, seed=42) for b in (1, 2)]
    assert same_work.paired(fixed_b, fixed_c) == (fixed_b, fixed_c)

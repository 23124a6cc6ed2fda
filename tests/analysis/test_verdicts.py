"""Each verdict and each guardrail, reached by a constructed runs/ tree analysed end to end."""

import json

import pytest
from builder import Arm, make_experiment

from reportgen.analysis.guardrails import Guardrail
from reportgen.analysis.interval import Interval
from reportgen.analysis.verdict import Verdict, against_base, decide
from reportgen.analyze import analyze_experiment


def _analyse(tmp_path, arms, **kw):
    exp = make_experiment(tmp_path / "runs", arms, **kw)
    return json.loads(analyze_experiment(exp).read_text())


def _comp(doc, cand):
    return next(c for c in doc["comparisons"] if c["candidate"] == cand)


def _guard(comp, gid):
    return next(g for g in comp["guardrails"] if g["id"] == gid)


def test_verdicts_from_real_trees(tmp_path):
    doc = _analyse(
        tmp_path,
        {
            "baseline": Arm(),
            "fast": Arm(speed=1.2),
            "slow": Arm(speed=0.9),
            "same": Arm(),
            "noisy": Arm(cv=0.6),
            "oom": Arm(fail_at=9),
            "othergpu": Arm(speed=1.2, fingerprint="fp-2"),
            "othermodel": Arm(model_hash="m-2"),
        },
    )
    status = {c["candidate"]: c["verdict"]["status"] for c in doc["comparisons"]}
    assert status == {
        "fast": "accepted",
        "slow": "rejected",
        "same": "no_change",
        "noisy": "inconclusive",
        "oom": "failed",
        "othergpu": "invalid",
        "othermodel": "invalid",
    }
    oom = _comp(doc, "oom")
    assert oom["verdict"]["cause"] == "OOM at step 9, tried to allocate 2.46 GiB"
    assert _guard(oom, "no_failures")["evidence"] == "oom/1/stderr.log:812"
    assert _guard(oom, "steps_completed")["reason"] == "oom/1: 9/60 steps"
    fast = _comp(doc, "fast")
    assert fast["consistent_direction"] and all(g["status"] == "pass" for g in fast["guardrails"])
    assert fast["interval"]["low"] > 1.05
    # The failed arm's partial steps are still summarised, not dropped.
    oom_arm = next(a for a in doc["arms"] if a["id"] == "oom")
    assert oom_arm["runs"][0]["status"] == "failed" and oom_arm["runs"][0]["steps_completed"] == 9


@pytest.mark.parametrize(
    "arm,gid,reason_part",
    [
        (Arm(samples=15), "samples_per_step", "trained on 15 samples (rollout/num_samples), expected 16"),
        (Arm(tok_scale=1.2), "token_accounting", "apart"),
        (Arm(nan_at=30), "finite_training", "train/grad_norm = nan at step 30"),
        (Arm(argv={"--global-batch-size": "8"}), "fixed_workload", "--global-batch-size = '8', baseline '16'"),
        (
            Arm(violations=[{"flag": "--num-rollout", "expected": "60", "actual": "30"}]),
            "fixed_workload",
            "--num-rollout is '30'",
        ),
        (Arm(model_hash="m-9"), "same_inputs", "model manifest hash differs"),
        (Arm(fingerprint="fp-9"), "same_machine", "fingerprint fp-9 differs"),
        (Arm(argv={"--use-pytorch-profiler": True}), "no_profiler", "--use-pytorch-profiler in a formal run"),
        (Arm(fail_at=20), "steps_completed", "20/60 steps"),
        (Arm(fail_at=20), "no_failures", "OOM at step 20"),
    ],
)
def test_each_guardrail_fails_on_its_own_fault(tmp_path, arm, gid, reason_part):
    doc = _analyse(tmp_path, {"baseline": Arm(), "cand": arm})
    comp = _comp(doc, "cand")
    g = _guard(comp, gid)
    assert g["status"] == "fail" and g["passed"] is False
    assert reason_part in g["reason"]
    assert g["evidence"].startswith("cand/1/")
    assert comp["verdict"]["status"] in ("failed", "invalid")
    expected = "invalid" if gid in ("same_inputs", "same_machine") else "failed"
    assert comp["verdict"]["status"] == expected


def test_guardrails_not_applicable_when_keys_are_missing(tmp_path):
    drop = (
        "rollout/num_samples",
        "rollout/response_lengths",
        "train/loss",
        "rollout/raw_reward",
        "train/ppo_kl",
        "train/pg_clipfrac",
        "train/grad_norm",
    )
    doc = _analyse(tmp_path, {"baseline": Arm(drop_keys=drop), "cand": Arm(speed=1.2, drop_keys=drop)})
    comp = _comp(doc, "cand")
    for gid in ("samples_per_step", "token_accounting", "finite_training"):
        g = _guard(comp, gid)
        assert g["status"] == "not_applicable" and g["passed"] is None
        assert g["reason"].startswith("not checkable")
    assert comp["verdict"]["status"] == "accepted"  # n/a is not a failure


def _iv(est, lo, hi):
    return Interval(est, lo, hi, 0.95, "block-bootstrap", 100, 100, 4)


OK = [Guardrail("no_failures", "t", "pass", "ok")]


@pytest.mark.parametrize(
    "iv,windows,direction,repeats,expected",
    [
        (_iv(1.20, 1.15, 1.25), [0.2, 0.2, 0.1], "higher", (), "accepted"),
        (_iv(1.20, 1.15, 1.25), [0.2, -0.01, 0.1], "higher", (), "inconclusive"),  # one window went the other way
        (_iv(1.20, 1.15, 1.25), [0.2, 0.2, 0.1], "higher", (1.2, 0.99), "inconclusive"),  # a repeat disagrees
        (_iv(1.06, 1.02, 1.10), [0.06] * 3, "higher", (), "inconclusive"),  # does not clear 5 %
        (_iv(1.02, 1.01, 1.03), [0.02] * 3, "higher", (), "no_change"),  # real but below the minimum effect
        (_iv(1.00, 0.98, 1.02), [0.0] * 3, "higher", (), "no_change"),
        (_iv(1.00, 0.90, 1.10), [0.0] * 3, "higher", (), "inconclusive"),
        (_iv(0.90, 0.85, 0.95), [-0.1] * 3, "higher", (), "rejected"),
        (_iv(0.80, 0.75, 0.85), [-0.2] * 3, "lower", (), "accepted"),  # step time: lower is better
        (_iv(1.20, 1.15, 1.25), [0.2] * 3, "lower", (), "rejected"),
        (
            Interval(1.1, None, None, 0.95, "batch-means", 3, 3, None, ("too few batches",)),
            [0.1],
            "higher",
            (),
            "inconclusive",
        ),
    ],
)
def test_decide_branches(iv, windows, direction, repeats, expected):
    v = decide(
        guardrails=OK, interval=iv, window_changes=windows, direction=direction, min_effect=0.05, repeat_ratios=repeats
    )
    assert v.status == expected, v.summary
    assert v.summary


def test_decide_precedence_invalid_over_failed():
    gs = [Guardrail("no_failures", "t", "fail", "oom"), Guardrail("same_machine", "Same machine", "fail", "fp")]
    v = decide(
        guardrails=gs,
        interval=_iv(1.2, 1.1, 1.3),
        window_changes=[0.2],
        direction="higher",
        min_effect=0.05,
        failure_cause="OOM at step 3",
    )
    assert v.status == "invalid" and v.cause == "fp"


def test_different_response_lengths_make_the_verdict_invalid(tmp_path):
    # The candidate's policy generates a third fewer tokens: tokens/s no longer compares the same work.
    doc = _analyse(tmp_path, {"baseline": Arm(), "short": Arm(speed=1.2, resp_len=340.0), "fast": Arm(speed=1.2)})
    short = _comp(doc, "short")
    assert _guard(short, "same_work")["status"] == "fail"
    assert short["verdict"]["status"] == "invalid"
    assert "340.0 vs 512.0 tokens" in short["verdict"]["cause"]
    fast = _comp(doc, "fast")
    assert _guard(fast, "same_work")["status"] == "pass" and fast["verdict"]["status"] == "accepted"


@pytest.mark.parametrize(
    ("low", "high", "direction", "expected"),
    [
        (1.10, 1.30, "higher", "accepted"),  # what it adds clears the minimum effect on its own
        (0.60, 0.70, "higher", "rejected"),
        (0.98, 1.03, "higher", "no_change"),
        (1.01, 1.04, "higher", "no_change"),  # better, but all of it below the minimum effect
        (0.90, 1.20, "higher", "inconclusive"),
        (1.02, 1.20, "higher", "inconclusive"),  # better, not shown to clear 5 %
        (1.30, 1.40, "lower", "rejected"),  # step time 30-40 % longer than the base's
    ],
)
def test_against_base_branches(low, high, direction, expected):
    accepted = Verdict("accepted", "Accepted: better by +20.00%.")
    v = against_base(
        accepted,
        base="A1",
        estimate=(low + high) / 2,
        low=low,
        high=high,
        confidence=0.95,
        direction=direction,
        min_effect=0.05,
        label="response tokens/s",
    )
    assert v.status == expected and v.against == "A1"
    assert (v.cause is None) == (expected == "accepted")
    # the metric's own change against A1, whichever way is better (step time up is "+", and worse)
    mid = (low + high) / 2
    assert f"{(mid - 1) * 100:+.2f}% against A1 (95% interval {(low - 1) * 100:+.2f}% to {(high - 1) * 100:+.2f}%)" in (
        v.summary
    )
    if expected == "rejected":
        assert v.cause and "worse" in v.cause


@pytest.mark.parametrize("status", ["failed", "invalid", "inconclusive", "rejected", "no_change"])
def test_against_base_only_reconsiders_an_accepted_verdict(status):
    v = Verdict(status, "as decided against the baseline")
    kw: dict = {"base": "A1", "confidence": 0.95, "direction": "higher", "min_effect": 0.05, "label": "x"}
    assert against_base(v, estimate=0.5, low=0.4, high=0.6, **kw) is v
    # and an accepted one without an interval against its base stays as it was
    ok = Verdict("accepted", "ok")
    assert against_base(ok, estimate=None, low=None, high=None, **kw) is ok


def test_a_critics_nan_loss_fails_finite_training_and_grpo_lists_no_critic(tmp_path):
    doc = _analyse(tmp_path, {"baseline": Arm(critic_nan_at=10_000), "A1": Arm(speed=1.2, critic_nan_at=20)})
    g = _guard(_comp(doc, "A1"), "finite_training")
    assert g["status"] == "fail" and g["reason"] == "A1/1: train/critic-value_loss = nan at step 20"
    ok = _analyse(tmp_path / "ppo", {"baseline": Arm(critic_nan_at=10_000), "A1": Arm(critic_nan_at=10_000)})
    assert _guard(_comp(ok, "A1"), "finite_training")["reason"] == "8 quantities finite on every step"
    grpo = _analyse(tmp_path / "grpo", {"baseline": Arm(), "A1": Arm()})
    assert _guard(_comp(grpo, "A1"), "finite_training")["reason"] == "6 quantities finite on every step"

"""Each verdict and each guardrail, reached by a constructed runs/ tree analysed end to end."""

import json

import numpy as np
import pytest
from builder import FakeArm, make_experiment

from reportgen.analysis import design as dz
from reportgen.analysis import document as doc
from reportgen.analysis import runlevel
from reportgen.analysis.check import tally
from reportgen.analysis.decision import Evidence, Failure, decide
from reportgen.analysis.guardrails import guardrail
from reportgen.analysis.tables import maths_changes
from reportgen.analyze import analyze_experiment
from reportgen.errors import UserError
from reportgen.vocab import MATHS_FLAGS


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
            "baseline": FakeArm(cv=0.02),
            "fast": FakeArm(speed=1.2, cv=0.02),
            "slow": FakeArm(speed=0.9, cv=0.02),
            "same": FakeArm(cv=0.02),
            "oom": FakeArm(fail_at=9),
            "othergpu": FakeArm(speed=1.2, fingerprint="fp-2"),
            "othermodel": FakeArm(model_hash="m-2"),
        },
        # three pairs' own variance (2 degrees of freedom) puts "same" inside +-8 %, not +-5 %
        analysis={"min_effect": 0.08},
    )
    status = {c["candidate"]: c["verdict"]["status"] for c in doc["comparisons"]}
    assert status == {
        "fast": "accepted",
        "slow": "rejected",
        "same": "no_change",
        "oom": "failed",
        "othergpu": "invalid",
        "othermodel": "invalid",
    }
    oom = _comp(doc, "oom")
    assert oom["verdict"]["cause"] == "OOM at step 9, tried to allocate 2.46 GiB"
    assert _guard(oom, "no_failures")["evidence"] == "oom/1/stderr.log:812"
    # every repeat that fell short is named, not only the first
    assert _guard(oom, "steps_completed")["reason"] == "oom/1, oom/2, oom/3: 9/60 steps"
    fast = _comp(doc, "fast")
    assert fast["consistent_direction"] and all(g["status"] == "pass" for g in fast["guardrails"])
    assert fast["interval"]["low"] > 1.05 and fast["interval"]["pairs"] == 3
    assert fast["verdict"]["basis"] == "interval" and fast["run_level"]["variance"] == "pairs"
    # The failed arm's partial steps are still summarised, not dropped.
    oom_arm = next(a for a in doc["arms"] if a["id"] == "oom")
    assert oom_arm["runs"][0]["status"] == "failed" and oom_arm["runs"][0]["steps_completed"] == 9


def test_a_noisy_arm_keeps_its_own_variance_and_stays_undecided(tmp_path):
    doc = _analyse(
        tmp_path, {"baseline": FakeArm(), "quiet": FakeArm(speed=1.2), "calm": FakeArm(), "noisy": FakeArm(run_cv=0.3)}
    )
    noisy = _comp(doc, "noisy")
    assert noisy["run_level"]["variance"] == "pairs" and noisy["verdict"]["status"] == "inconclusive"
    # every comparison stands on its own pairs: the noisy arm neither narrows nor widens the others'
    assert _comp(doc, "calm")["run_level"]["variance"] == "pairs"
    assert _comp(doc, "quiet")["verdict"]["status"] == "accepted"
    # the pool is no longer offered: asking for it is refused, naming why
    with pytest.raises(UserError, match="pool = true is no longer offered"):
        _analyse(tmp_path / "pool", {"baseline": FakeArm(), "A1": FakeArm()}, analysis={"pool": True})
    # one pair alone never decides, whatever its size
    one = _analyse(tmp_path / "one", {"baseline": FakeArm(), "A1": FakeArm(speed=2.0)}, repeats=1)
    v = _comp(one, "A1")["verdict"]
    assert (v["status"], v["basis"], v["pairs"]) == ("inconclusive", "too_few_pairs", 1)
    assert "a verdict needs at least 2" in v["summary"]


@pytest.mark.parametrize(
    "arm,gid,reason_part",
    [
        (FakeArm(samples=15), "samples_per_step", "trained on 15 samples (rollout/num_samples), expected 16"),
        (FakeArm(tok_scale=1.2), "token_accounting", "apart"),
        (FakeArm(nan_at=30), "finite_training", "train/grad_norm = nan at step 30"),
        (FakeArm(argv={"--global-batch-size": "8"}), "fixed_workload", "--global-batch-size = '8', baseline '16'"),
        (
            FakeArm(violations=[{"flag": "--num-rollout", "expected": "60", "actual": "30"}]),
            "fixed_workload",
            "--num-rollout is '30'",
        ),
        (FakeArm(model_hash="m-9"), "same_inputs", "model manifest hash differs"),
        (FakeArm(fingerprint="fp-9"), "same_machine", "fingerprint fp-9 differs"),
        (FakeArm(argv={"--use-pytorch-profiler": True}), "no_profiler", "--use-pytorch-profiler in a formal run"),
        (FakeArm(fail_at=20), "steps_completed", "20/60 steps"),
        (FakeArm(fail_at=20), "no_failures", "OOM at step 20"),
    ],
)
def test_each_guardrail_fails_on_its_own_fault(tmp_path, arm, gid, reason_part):
    doc = _analyse(tmp_path, {"baseline": FakeArm(), "cand": arm})
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
    doc = _analyse(tmp_path, {"baseline": FakeArm(drop_keys=drop), "cand": FakeArm(speed=1.2, drop_keys=drop)})
    comp = _comp(doc, "cand")
    for gid in ("samples_per_step", "token_accounting", "finite_training"):
        g = _guard(comp, gid)
        assert g["status"] == "not_applicable" and g["passed"] is None
        assert g["reason"].startswith("not checkable")
    # n/a is not a failure: the speed half accepts; without a reward logged the quality half cannot be
    # tested, and a verdict that is not shown to train as well is not accepted
    assert comp["run_level"]["outcome"] == "accepted"
    assert comp["verdict"]["status"] == "inconclusive" and comp["verdict"]["basis"] == "quality_untestable"
    assert comp["quality"]["status"] == "not_testable" and "reward not logged" in comp["quality"]["summary"]


def _design(mode: str = "fixed", looks: int = 3, **kw) -> doc.Design:
    seq = mode == "sequential"
    return dz.make(
        sequential=seq,
        looks=list(range(3, 13)) if seq else [looks],
        min_pairs=kw.pop("min_pairs", 3),
        confidence=0.95,
        min_effect=0.05,
        pool=False,
        interleaved=True,
    )


def _outcome(logs, windows=(0.1, 0.1, 0.1), higher=True, design=None) -> str:
    """The run-level rules on pairs with these log ratios and window changes."""
    design = design or _design(looks=len(logs))
    s = runlevel.look_stats(np.array([logs], dtype=float))
    b = runlevel.bounds(s, design)
    up = all((w > 0) == higher for w in windows)
    down = all((w < 0) == higher for w in windows)
    o = runlevel.outcome(s, b, design, higher=higher, windows_better=np.array([up]), windows_worse=np.array([down]))
    return runlevel.OUTCOME_NAMES[int(o[0])]


@pytest.mark.parametrize(
    "logs,windows,higher,expected",
    [
        ([0.18, 0.20, 0.19, 0.21], (0.2, 0.2, 0.2), True, "accepted"),
        ([0.18, 0.20, 0.19, 0.21], (0.2, -0.01, 0.2), True, "windows"),  # one window went the other way
        ([0.04, -0.02, 0.03, -0.01], (0.01,) * 3, True, "futility"),  # +5 % is out of reach
        ([0.06, 0.065, 0.055, 0.06], (0.06,) * 3, True, "accepted"),  # clears zero, the estimate clears 5 %
        ([0.01, -0.01, 0.005, -0.005], (0.0,) * 3, True, "no_change"),  # inside ±5 %: equivalence
        ([0.2, -0.2, 0.1, -0.1], (0.0,) * 3, True, "open"),  # too wide either way
        ([-0.18, -0.20, -0.19, -0.21], (-0.2,) * 3, True, "rejected"),  # the mirror image of accepted
        ([-0.03, -0.02, -0.025, -0.03], (-0.03,) * 3, True, "no_change"),  # worse by less than 5 %: not rejected
        ([-0.18, -0.20, -0.19, -0.21], (-0.2,) * 3, False, "accepted"),  # step time: lower is better
        ([0.18, 0.20, 0.19, 0.21], (0.2,) * 3, False, "rejected"),
        ([0.18, 0.20], (0.2,) * 3, True, "too_few_pairs"),  # two pairs never decide
    ],
)
def test_outcome_rules(logs, windows, higher, expected):
    assert _outcome(logs, windows, higher) == expected


def test_rules_are_symmetric():
    # The same evidence the other way round gives the mirror verdict: "rejected" needs as much as "accepted".
    for logs in ([0.06, 0.065, 0.055, 0.06], [0.04, 0.06, 0.05, 0.07], [0.2, 0.1, 0.15, 0.3], [0.02, 0.01, 0.03, 0.0]):
        up, down = _outcome(logs, (0.1,) * 3), _outcome([-x for x in logs], (-0.1,) * 3)
        mirror = {"accepted": "rejected", "rejected": "accepted"}
        assert mirror.get(up, up) == down or (up == "futility" and down in ("no_change", "futility", "open")), (
            logs,
            up,
            down,
        )


def test_a_sequential_look_is_wider_than_a_fixed_one():
    fixed, seq = _design(looks=6), _design("sequential")
    assert fixed.look_confidence == pytest.approx(0.95)
    # the exact t level over looks 3-12 (issue 32's re-simulation: 98.95 %), not the normal Pocock constant 2.485
    assert seq.look_confidence == pytest.approx(0.9895, abs=0.0005) and seq.boundary == pytest.approx(2.56, abs=0.01)
    logs = [0.12, 0.0, 0.1, 0.02, 0.09, 0.03]  # +6 % on average, 6 pairs
    assert _outcome(logs, design=fixed) == "accepted"
    assert _outcome(logs, design=seq) == "open"  # ten looks: the same data is not yet decisive


def _rl(outcome: str, ratio: float = 1.2, n: int = 3, reference: str = "baseline") -> doc.RunLevel:
    pairs = [
        doc.Pair(
            repeat=i,
            reference_run=f"{reference}/{i}",
            candidate_run=f"c/{i}",
            reference=1.0,
            candidate=ratio,
            ratio=ratio,
        )
        for i in range(1, n + 1)
    ]
    iv = doc.Interval(estimate=ratio, low=ratio - 0.05, high=ratio + 0.05, pairs=n, confidence=0.95)
    return doc.RunLevel(reference=reference, metric="m", pairs=pairs, interval=iv, outcome=outcome)  # type: ignore[arg-type]


def _evidence(**kw) -> Evidence:
    base: dict = {
        "candidate": "c",
        "guardrails": [guardrail("no_failures", "t", "pass", "ok")],
        "same_work": ("pass", "ok"),
        "vs_baseline": _rl("accepted"),
        "design": _design(),
        "direction": "higher",
        "metric_label": "response tokens/s",
        "windows": ["W1", "W2", "W3"],
    }
    return Evidence(**{**base, **kw})


def test_decide_precedence():
    same_machine = guardrail("same_machine", "Same machine", "fail", "fp")
    oom = Failure("OOM at step 3", "c", True)
    v = decide(_evidence(guardrails=[same_machine], failure=oom))
    assert (v.status, v.basis, v.cause) == ("invalid", "invalid", "fp")
    v = decide(_evidence(failure=oom))
    assert (v.status, v.basis, v.failed_arm, v.oom) == ("failed", "failed", "c", True)
    v = decide(_evidence(same_work=("fail", "shorter"), pending="c/2 interrupted"))
    assert (v.status, v.basis) == ("invalid", "same_work")  # resuming would not make the work the same
    v = decide(_evidence(pending="c/2 interrupted"))
    assert (v.status, v.basis, v.cause) == ("incomplete", "pending", "c/2 interrupted")
    v = decide(
        _evidence(failure=Failure("baseline: OOM", "baseline", True), pending="c/1 interrupted", finished_both=False)
    )
    assert v.status == "failed"  # a failure seen in a finished run stands
    v = decide(_evidence(missing_metric="never logged"))
    assert (v.status, v.basis) == ("inconclusive", "missing_metric")
    v = decide(_evidence())
    assert (v.status, v.basis, v.against, v.pairs) == ("accepted", "interval", "baseline", 3)


@pytest.mark.parametrize(
    ("outcome", "status", "basis"),
    [
        ("accepted", "accepted", "interval"),
        ("rejected", "rejected", "interval"),
        ("no_change", "no_change", "interval"),
        ("futility", "inconclusive", "futility"),
        ("windows", "inconclusive", "windows"),
        ("open", "inconclusive", "open"),
    ],
)
def test_a_derived_candidate_is_decided_against_its_base(outcome, status, basis):
    v = decide(_evidence(base="A1", vs_base=_rl(outcome, 0.9 if outcome == "rejected" else 1.2, reference="A1")))
    assert (v.status, v.basis, v.against) == (status, basis, "A1")
    if status in ("rejected", "no_change"):
        assert v.cause and "what it adds to A1" in v.cause
    # its base unfinished: the change it adds cannot be judged yet
    w = decide(_evidence(base="A1", vs_base=_rl(outcome, reference="A1"), base_pending="A1/3 interrupted"))
    assert (w.status, w.against) == ("incomplete", "A1")


def test_a_derived_gain_on_a_base_that_is_no_gain_is_not_accepted():
    v = decide(_evidence(base="A1", vs_base=_rl("accepted", reference="A1"), vs_baseline=_rl("rejected", 0.8)))
    assert (v.status, v.basis) == ("inconclusive", "base")
    assert v.cause and "not better than the baseline" in v.cause


def test_different_response_lengths_make_the_verdict_invalid(tmp_path):
    # The candidate's policy generates a third fewer tokens: tokens/s no longer compares the same work.
    doc = _analyse(
        tmp_path, {"baseline": FakeArm(), "short": FakeArm(speed=1.2, resp_len=340.0), "fast": FakeArm(speed=1.2)}
    )
    short = _comp(doc, "short")
    assert _guard(short, "same_work")["status"] == "fail"
    assert short["verdict"]["status"] == "invalid"
    assert "340.0 vs 512.0 tokens" in short["verdict"]["cause"]
    fast = _comp(doc, "fast")
    assert _guard(fast, "same_work")["status"] == "pass" and fast["verdict"]["status"] == "accepted"


def test_a_critics_nan_loss_fails_finite_training_and_grpo_lists_no_critic(tmp_path):
    doc = _analyse(tmp_path, {"baseline": FakeArm(critic_nan_at=10_000), "A1": FakeArm(speed=1.2, critic_nan_at=20)})
    g = _guard(_comp(doc, "A1"), "finite_training")
    assert g["status"] == "fail" and g["reason"] == "A1/1: train/critic-value_loss = nan at step 20"
    ok = _analyse(tmp_path / "ppo", {"baseline": FakeArm(critic_nan_at=10_000), "A1": FakeArm(critic_nan_at=10_000)})
    assert _guard(_comp(ok, "A1"), "finite_training")["reason"] == "8 quantities finite on every step"
    grpo = _analyse(tmp_path / "grpo", {"baseline": FakeArm(), "A1": FakeArm()})
    assert _guard(_comp(grpo, "A1"), "finite_training")["reason"] == "6 quantities finite on every step"


QUALITY_WARN = guardrail("same_quality", "Training quality", "warn", "loss differs by 30% in W1; also KL")
PRECISION = doc.MathsChange(
    flag="--use-precision-aware-optimizer", baseline="true", candidate=None, changes="the precision of Adam's moments"
)


def test_an_accepted_verdict_carries_every_guardrail_and_the_maths_change():
    """ "all guardrails passed" only when every one did and no edit changes the maths; else the one
    count (guardrail_tally), the warning and the maths change are in the verdict's sentence."""
    clean = [guardrail("no_failures", "t", "pass", "ok"), guardrail("same_work", "w", "pass", "ok")]
    v = decide(_evidence(guardrails=clean[:1], tally=tally(clean)))
    assert v.status == "accepted" and "; all 2 guardrails passed." in v.summary
    warned = [*clean[:1], QUALITY_WARN]
    count = tally([*warned, guardrail("same_inputs", "i", "not_applicable", "no files")])
    v = decide(_evidence(guardrails=warned, tally=count, maths=[PRECISION]))
    assert v.status == "accepted" and "all guardrails passed" not in v.summary
    assert "1 of 3 guardrails passed (1 warned, 1 not checkable); warning: loss differs by 30% in W1;" in v.summary
    assert v.summary.endswith(
        "it changes the maths: removes --use-precision-aware-optimizer, which changes the precision of Adam's moments."
    )


def test_the_guardrail_tally_counts_each_status_once():
    results = [
        guardrail("a", "A", "pass", ""),
        guardrail("b", "B", "warn", ""),
        guardrail("c", "C", "fail", ""),
        guardrail("d", "D", "not_applicable", ""),
    ]
    t = tally(results)
    assert (t.total, t.passed, t.warned, t.failed, t.not_applicable) == (4, 1, ["B"], ["C"], 1)
    assert t.text() == "1 of 4 guardrails passed (1 failed, 1 warned, 1 not checkable)" and not t.clean
    assert tally(results[:1]).text() == "its one guardrail passed" and tally([]).text() == "no guardrail was checked"


def test_maths_changes_are_the_edits_of_flags_that_change_the_maths():
    flags = [
        doc.FlagChange(flag="--optimizer-cpu-offload", baseline="true", base="true", candidate=None),
        doc.FlagChange(flag="--use-precision-aware-optimizer", baseline="true", base="true", candidate=None),
        doc.FlagChange(flag="--lr", baseline="0.001", base="0.001", candidate="0.002"),
    ]
    got = maths_changes(flags)
    assert [m.edit() for m in got] == ["removes --use-precision-aware-optimizer", "sets --lr 0.002 (baseline 0.001)"]
    assert all(m.flag in MATHS_FLAGS for m in got) and "--optimizer-cpu-offload" not in MATHS_FLAGS


def test_profiler_flags_listed_as_off_are_no_profiler(tmp_path):
    # A log's argument dump (an ingested run) lists every flag, the profiler's too, set off.
    off = {"--use-pytorch-profiler": False, "--record-memory-history": "False", "--use-nsys": None}
    doc = _analyse(tmp_path, {"baseline": FakeArm(argv=off), "cand": FakeArm(argv=off)})
    assert _guard(_comp(doc, "cand"), "no_profiler")["status"] == "pass"
    on = {**off, "--record-memory-history": "True"}
    doc = _analyse(tmp_path / "on", {"baseline": FakeArm(argv=off), "cand": FakeArm(argv=on)})
    assert "--record-memory-history in a formal run" in _guard(_comp(doc, "cand"), "no_profiler")["reason"]

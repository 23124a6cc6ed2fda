"""Ingest + analyze end to end on the conformance corpus (logs written from Relax's code)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from reportgen.analyze import analyze_experiment
from reportgen.cli import main
from tests.helpers import write_spec

from . import relax_corpus as rc
from .test_relax_corpus import nan_then_oom

STEPS = 30


TRIO = ["--optimizer-cpu-offload", "--overlap-cpu-optimizer-d2h-h2d", "--use-precision-aware-optimizer"]
WINDOWS = ((2, 15), (16, STEPS - 1))  # (start, end) of W1, W2


def offload_spec(
    path: Path,
    *,
    primary: str = "perf/step_resp_token_per_s",
    windows: tuple[tuple[int, int], ...] = WINDOWS,
) -> Path:
    """The experiment of the corpus' logs: Relax's command line with the offload trio, A1 without it."""
    return write_spec(
        path,
        name="offload",
        title="Drop optimizer CPU offload",
        recipe={"argv": ["python3", "-m", "relax.entrypoints.train", *TRIO]},
        workload={"flags": ["--global-batch-size", "--rollout-batch-size", "--n-samples-per-prompt"]},
        analysis={
            "primary": primary,
            "warmup_steps": 2,
            "windows": [{"name": f"W{i}", "start": s, "end": e} for i, (s, e) in enumerate(windows, 1)],
        },
        candidates=[{"id": "A1", "title": "no optimizer offload", "remove": TRIO}],
    )


Runs = list[list[rc.Line]]


def three(make: Callable[[int], list[rc.Line]]) -> Runs:
    """Three runs of one arm (repeats 1-3), each from its own seed: a verdict needs three pairs."""
    return [make(k) for k in range(3)]


def analyze(tmp_path: Path, logs: dict[str, list[rc.Line] | Runs], primary: str = "perf/step_resp_token_per_s") -> dict:
    tmp_path.mkdir(exist_ok=True)
    spec = offload_spec(tmp_path / "offload.toml", primary=primary)
    runs = tmp_path / "runs"
    for arm, given in logs.items():
        each = given if given and isinstance(given[0], list) else [given]
        for repeat, lines in enumerate(each, start=1):
            log = tmp_path / f"{arm}-{repeat}.log"
            log.write_text(rc.text(lines))  # type: ignore[arg-type]
            args = ["ingest", str(log), "--spec", str(spec), "--arm", arm, "--runs", str(runs), "--repeat", str(repeat)]
            assert main(args) == 0
    return json.loads(analyze_experiment(runs / "offload").read_text())


def comparison(doc: dict) -> dict:
    (cmp,) = [c for c in doc["comparisons"] if c["candidate"] == "A1"]
    return cmp


def guard(cmp: dict, gid: str) -> dict:
    return next(g for g in cmp["guardrails"] if g["id"] == gid)


def test_a1_vs_baseline_on_two_healthy_logs_gets_a_real_verdict(tmp_path: Path) -> None:
    doc = analyze(
        tmp_path,
        {
            "baseline": three(lambda k: rc.healthy(STEPS, seed=1 + 10 * k)),
            "A1": three(lambda k: rc.healthy(STEPS, seed=2 + 10 * k, speed=1.5, offload=False)),
        },
    )
    cmp = comparison(doc)
    assert cmp["verdict"]["status"] == "accepted", cmp["verdict"]
    assert guard(cmp, "no_failures")["status"] == "pass"
    assert guard(cmp, "steps_completed")["status"] == "pass"
    spp = guard(cmp, "samples_per_step")
    assert spp["status"] == "pass" and "perf/actor_train_tokens / rollout/total_lengths" in spp["reason"]
    assert guard(cmp, "token_accounting")["status"] == "pass"
    assert guard(cmp, "fixed_workload")["status"] == "pass"


def test_fp16_skips_pass_as_warnings(tmp_path: Path) -> None:
    doc = analyze(
        tmp_path,
        {
            "baseline": three(lambda k: rc.healthy(STEPS, seed=1 + 10 * k, fp16_skips=[0, 1])),
            "A1": three(lambda k: rc.healthy(STEPS, seed=2 + 10 * k, speed=1.5)),
        },
    )
    cmp = comparison(doc)
    assert cmp["verdict"]["status"] == "accepted", cmp["verdict"]
    nf = guard(cmp, "no_failures")
    assert nf["status"] == "pass" and "fp16 loss scaling skipped the parameter update of 2 of 30" in nf["reason"]
    fin = guard(cmp, "finite_training")
    assert fin["status"] == "pass" and "grad norm nan on 6 step(s)" in fin["reason"]  # 2 in each of 3 runs


def test_oom_candidate_fails_with_one_cause(tmp_path: Path) -> None:
    doc = analyze(tmp_path, {"baseline": rc.healthy(STEPS, seed=1), "A1": rc.oom(9)})
    verdict = comparison(doc)["verdict"]
    assert verdict["status"] == "failed" and verdict["cause"].startswith("OOM at step 9, tried to allocate 2.46 GiB")


def test_hybrid_arm_without_the_primary_metric_says_so(tmp_path: Path) -> None:
    doc = analyze(
        tmp_path,
        {"baseline": rc.healthy(STEPS, seed=1, hybrid=True), "A1": rc.healthy(STEPS, seed=2, speed=1.5, hybrid=True)},
    )
    cmp = comparison(doc)
    cause = cmp["verdict"]["cause"]
    assert cmp["verdict"]["status"] == "inconclusive"
    assert cause.startswith("perf/step_resp_token_per_s was never logged by baseline and A1")
    assert 'set [analysis].primary = "perf/step_token_per_s"' in cause
    assert cmp["summary"]["next_step"]["action"] == "change_metric" and cmp["summary"]["cause"] == cause
    ta = guard(cmp, "token_accounting")
    assert ta["status"] == "not_applicable" and "logged no perf/step_resp_token_per_s" in ta["reason"]
    # ... and with the suggested metric the same logs get a real verdict.
    again = analyze(
        tmp_path / "again",
        {
            "baseline": three(lambda k: rc.healthy(STEPS, seed=1 + 10 * k, hybrid=True)),
            "A1": three(lambda k: rc.healthy(STEPS, seed=2 + 10 * k, speed=1.5, hybrid=True)),
        },
        primary="perf/step_token_per_s",
    )
    assert comparison(again)["verdict"]["status"] == "accepted"


def test_multi_turn_token_accounting_not_applicable(tmp_path: Path) -> None:
    doc = analyze(
        tmp_path,
        {
            "baseline": three(lambda k: rc.healthy(STEPS, seed=1 + 10 * k, multi_turn=True)),
            "A1": three(lambda k: rc.healthy(STEPS, seed=2 + 10 * k, speed=1.5, multi_turn=True)),
        },
    )
    cmp = comparison(doc)
    ta = guard(cmp, "token_accounting")
    assert ta["status"] == "not_applicable" and "multi-turn rollouts (multi_turn/" in ta["reason"]
    assert cmp["verdict"]["status"] == "accepted"


def test_samples_per_step_names_what_is_missing(tmp_path: Path) -> None:
    # A log without the rollout line (no rollout/total_lengths) and no argument dump.
    def strip(lines: list[rc.Line]) -> list[rc.Line]:
        return [(s, t) for s, t in lines if s not in ("rollout", "arg-dump")]

    doc = analyze(tmp_path, {"baseline": strip(rc.healthy(STEPS, seed=1)), "A1": strip(rc.healthy(STEPS, seed=2))})
    spp = guard(comparison(doc), "samples_per_step")
    assert spp["status"] == "not_applicable"
    assert spp["reason"].startswith(
        "not checkable: baseline/1: the effective argv has neither --rollout-batch-size with --n-samples-per-prompt "
        "nor --global-batch-size"
    )


def test_samples_per_step_catches_a_short_batch(tmp_path: Path) -> None:
    lines = rc.healthy(STEPS, seed=2, speed=1.5)
    # The actor trained on 15 samples' tokens at step 20 while the rollout line's mean is of 16.
    out = []
    for s, t in lines:
        if s == "perf-actor" and "perf 20: " in t:
            head, _, rest = t.partition("'perf/actor_train_tokens': ")
            n, _, tail = rest.partition(",")
            t = f"{head}'perf/actor_train_tokens': {int(n) * 15 // 16},{tail}"
        out.append((s, t))
    doc = analyze(tmp_path, {"baseline": rc.healthy(STEPS, seed=1), "A1": out})
    spp = guard(comparison(doc), "samples_per_step")
    assert spp["status"] == "fail" and spp["reason"].startswith("A1/1: step 20 trained on 15")


def test_ppo_runs_are_judged_on_the_actors_and_the_critics_keys(tmp_path: Path) -> None:
    # A critic's train/critic-* keys are stored beside the actor's; finite_training judges both
    # (the critic's value loss and grad norm on top of GRPO's six quantities).
    logs: dict[str, list[rc.Line] | Runs] = {
        "baseline": three(lambda k: rc.healthy(STEPS, seed=1 + 10 * k, critic=True)),
        "A1": three(lambda k: rc.healthy(STEPS, seed=2 + 10 * k, speed=1.5, critic=True)),
    }
    cmp = comparison(analyze(tmp_path / "ppo", logs))
    grpo = comparison(
        analyze(tmp_path / "grpo", {"baseline": rc.healthy(STEPS, seed=1), "A1": rc.healthy(STEPS, seed=2, speed=1.5)})
    )
    assert cmp["verdict"]["status"] == "accepted", cmp["verdict"]
    assert guard(grpo, "finite_training")["reason"] == "6 quantities finite on every step"
    assert guard(cmp, "finite_training")["status"] == "pass"
    assert guard(cmp, "finite_training")["reason"] == "8 quantities finite on every step"
    nan = comparison(
        analyze(tmp_path / "nan", {**logs, "A1": rc.healthy(STEPS, seed=2, speed=1.5, critic=True, nan_loss_at=20)})
    )
    fin = guard(nan, "finite_training")
    assert fin["status"] == "fail" and fin["reason"].endswith("train/loss = nan at step 20"), fin


def test_status_reason_and_verdict_cause_name_the_same_event(tmp_path: Path) -> None:
    # The NaN loss at step 8 is logged before the OOM at step 9: both name the OOM.
    doc = analyze(tmp_path, {"baseline": rc.healthy(STEPS, seed=1), "A1": nan_then_oom()})
    manifest = json.loads((tmp_path / "runs" / "offload" / "A1" / "1" / "manifest.json").read_text())
    events = json.loads((tmp_path / "runs" / "offload" / "A1" / "1" / "events.json").read_text())["events"]
    assert [e["kind"] for e in events] == ["nan", "oom"] and events[0]["line"] < events[1]["line"]
    label, _, where = manifest["status_reason"].partition(" (")
    assert label == "OOM at step 9, tried to allocate 2.46 GiB" and where.startswith(f"stdout.log:{events[1]['line']}:")
    verdict = comparison(doc)["verdict"]
    assert verdict["status"] == "failed" and verdict["cause"].startswith(label), verdict


# -- lifecycles (issue 22): what a verdict says about cut, resumed, retried and restarted runs ------


def analyze_logs(tmp_path: Path, logs: dict[str, str], windows: tuple[tuple[int, int], ...] = WINDOWS) -> dict:
    """`reportgen ingest` each arm's log, then `analyze`; the comparison of A1."""
    spec = offload_spec(tmp_path / "offload.toml", windows=windows)
    runs = tmp_path / "runs"
    for arm, log_text in logs.items():
        log = tmp_path / f"{arm}.log"
        log.write_text(log_text)
        assert main(["ingest", str(log), "--spec", str(spec), "--arm", arm, "--runs", str(runs), "--no-analyze"]) == 0
    doc = json.loads(analyze_experiment(runs / "offload").read_text())
    (cmp,) = doc["comparisons"]
    return {"doc": doc, "cmp": cmp, "runs": runs / "offload"}


def manifest(runs: Path, arm: str, repeat: int = 1) -> dict:
    return json.loads((runs / arm / str(repeat) / "manifest.json").read_text())


def test_cut_log_through_ingest_and_analyze_is_no_result(tmp_path: Path) -> None:
    got = analyze_logs(
        tmp_path,
        {"baseline": rc.text(rc.healthy(30, seed=1)), "A1": rc.text(rc.cut(17), "")},
    )
    m = manifest(got["runs"], "A1")
    assert m["status"] == "interrupted" and "cut at line" in m["status_reason"]
    v = got["cmp"]["verdict"]
    assert v["status"] == "incomplete" and v["cause"] == "A1/1 interrupted at step 17/30"  # step 17's perf line was cut
    assert got["cmp"]["summary"]["next_step"]["action"] == "resume"


def test_windows_that_miss_a_resumed_run_say_so_and_offer_windows(tmp_path: Path) -> None:
    logs = {"baseline": rc.text(rc.resumed(seed=1)), "A1": rc.text(rc.resumed(seed=2, speed=1.5))}
    early = ((6, 15), (16, 29))
    got = analyze_logs(tmp_path / "early", logs, early)
    cmp = got["cmp"]
    cause = (
        "baseline/1 and A1/1 ran steps 120-149 (resumed from iteration 119): no step in window W1 (steps 6-15) "
        "and W2 (steps 16-29); windows inside the steps every run has: W1 122-135, W2 136-149"
    )
    assert cmp["verdict"] == {
        "status": "inconclusive",
        "basis": "windows_missed",
        "pairs": 0,
        "summary": f"Inconclusive: {cause}.",
        "cause": cause,
        "against": "baseline",
        "failed_arm": None,
        "oom": False,
    }
    step = cmp["summary"]["next_step"]
    assert step["action"] == "declare_windows"
    assert step["command"] == 'windows = [{name = "W1", start = 122, end = 135}, {name = "W2", start = 136, end = 149}]'
    # A resumed run that reached its last step completed its steps: 120 were done before it started.
    assert next(g for g in cmp["guardrails"] if g["id"] == "steps_completed")["status"] == "pass"
    (run,) = got["doc"]["arms"][1]["runs"]
    assert [(a["attempt"], a["start_step"], a["steps"]) for a in run["lifecycle"]] == [(1, 120, [120, 149])]
    # The same logs with the windows where the steps are: the windows no longer decide, the pairs do
    # (one pair per arm here: too few for a verdict, and the cause says so, not the windows).
    late = ((126, 137), (138, 149))
    v = analyze_logs(tmp_path / "late", logs, late)["cmp"]["verdict"]
    assert (v["status"], v["basis"], v["pairs"]) == ("inconclusive", "too_few_pairs", 1)


def test_recovered_runs_pass_no_failures_through_ingest_and_analyze(tmp_path: Path) -> None:
    got = analyze_logs(
        tmp_path,
        {"baseline": rc.text(rc.retried(fail_at=7, total=30)), "A1": rc.text(rc.health_restart())},
    )
    cmp = got["cmp"]
    assert next(g for g in cmp["guardrails"] if g["id"] == "no_failures")["status"] == "pass"
    assert cmp["verdict"]["status"] not in ("failed", "incomplete")
    arms = {a["id"]: a for a in got["doc"]["arms"]}
    assert [a["started_by"] for a in arms["A1"]["runs"][0]["lifecycle"]] == ["job submission", "global restart #1"]
    assert {e["kind"] for e in arms["baseline"]["runs"][0]["events"]} == {"recovered"}
    # The experiment page shows each run's lifecycle, one line per attempt, under its runs table.
    from reportgen.render import experiment_page
    from reportgen.render.load import load_experiment

    md = experiment_page.render(load_experiment(got["runs"]), svg=False).markdown
    runs = md[md.index("## Runs") : md.index("## Reproduce")]
    assert "</table>\n\n\n**baseline/1**, as its log shows it:\n" in runs
    assert (
        "- attempt 1, job (job submission, 2026-08-05 10:10:00, 4.0 min): steps 0-6; failed: OOM at step 7, tried "
        "to allocate 2.46 GiB; 662 of its values replaced by a later attempt\n"
        "- attempt 2, job (job submission, 2026-08-05 10:23:37, 16.0 min): steps 0-29, redoing 0-7; clean end"
    ) in runs
    assert (
        "- attempt 2, restart (global restart &#35;1, 2026-08-05 10:17:35, 11.3 min): steps 10-29 (resumed from "
        "iteration 9), redoing 10-14; clean end"
    ) in runs


def test_rollout_only_indices_are_not_steps_of_the_analysis(tmp_path: Path) -> None:
    """A fully-async run's backfill rollout `perf 30` is no trained step: 30/30 steps, not 31."""
    got = analyze_logs(tmp_path, {"baseline": rc.text(rc.fully_async(30)), "A1": rc.text(rc.fully_async(30))})
    cmp = got["cmp"]
    assert (
        next(g for g in cmp["guardrails"] if g["id"] == "steps_completed")["reason"] == "baseline and A1: 30/30 steps"
    )
    assert [r["steps_completed"] for a in got["doc"]["arms"] for r in a["runs"]] == [30, 30]
    assert manifest(got["runs"], "A1")["ingest"]["rollout_only_steps"] == [30]

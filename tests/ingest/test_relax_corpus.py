"""Ingest of the conformance corpus: logs written from Relax's own code (relax_sources.md)."""

from __future__ import annotations

import ast
import json
import random
import re
from pathlib import Path

import pytest

from reportgen import vocab
from reportgen.cli import main
from reportgen.ingest.metrics import read_metrics
from reportgen.ingest.run_dir import IngestedRun, ingest_run
from reportgen.ingest.status import decide_status, first_failure
from reportgen.store.run import LogEvent, wide_table

from . import relax_corpus as rc
from .conftest import paste_spec

SOURCES = Path(__file__).with_name("relax_sources.md")
FIXTURES = {
    "healthy": lambda: rc.healthy(),
    "healthy-plain": lambda: rc.healthy(fmt="plain"),
    "oom": lambda: rc.oom(),
    "nan": lambda: rc.nan_grad(),
    "stopped": lambda: rc.stopped(),
    "fp16": lambda: rc.healthy(fp16_skips=[0, 1]),
    "hybrid": lambda: rc.healthy(hybrid=True),
    "multi-turn": lambda: rc.healthy(multi_turn=True),
    "passrate-eval": lambda: rc.healthy(passrate=True, eval_every=4),
    "ppo": lambda: rc.healthy(critic=True),
    "ppo-critic-nan": lambda: rc.healthy(critic=True, critic_nan_at=5),
    # lifecycles and pastes (test_relax_lifecycle.py)
    "cut": lambda: rc.cut(),
    "resumed": lambda: rc.resumed(),
    "retried": lambda: rc.retried(),
    "health-restart": lambda: rc.health_restart(),
    "restarts-exhausted": lambda: rc.restarts_exhausted(),
    "fully-async": lambda: rc.fully_async(),
    "fully-async-actor-dies": lambda: rc.fully_async(actor_dies_at=3, ahead=3),
    "handled-tracebacks": lambda: rc.handled_tracebacks(),
    "traceback-paste": lambda: rc.traceback_paste(quoted=True),
    "traceback-paste-cut": lambda: rc.traceback_paste(exception=False),
    "ray-banner-paste": lambda: rc.ray_banner_paste() + rc.ray_banner_paste("RuntimeError"),
    "unhandled-paste": lambda: rc.unhandled_paste(),
    "wrapped-paste": lambda: rc.wrapped(rc.healthy(4)),
    "bare-steps": lambda: rc.bare_steps(0, 9),
}


def ingest_text(tmp_path: Path, text: str | bytes, **kw: object) -> tuple[IngestedRun, list[dict], Path]:
    run = tmp_path / "run"
    run.mkdir(exist_ok=True)  # a test may have put a tensorboard/ folder there
    data = text.encode() if isinstance(text, str) else text
    (run / "stdout.log").write_bytes(data)
    ingested = ingest_run(run, invariants=["--global-batch-size"], **kw)  # type: ignore[arg-type]
    events = json.loads((run / "events.json").read_text())["events"]
    return ingested, events, run


def test_every_fixture_line_names_a_documented_source() -> None:
    documented = set(re.findall(r"^\| `([a-z0-9-]+)` \|", SOURCES.read_text(), re.MULTILINE))
    used: set[str] = set()
    for name, make in FIXTURES.items():
        lines = make()
        missing = rc.sources(lines) - documented
        assert not missing, f"{name}: lines from undocumented sources {missing}"
        used |= rc.sources(lines)
    # The corpus exercises every documented console line except those only other modes print.
    # Prefix formats (log-color, log-plain, ray-prefix) shape every line through colour(), plain()
    # and ray(); the others are facts about modes or files, not console lines of these fixtures.
    prefixes = {"log-color", "log-plain", "ray-prefix"}
    assert documented - used <= prefixes | {
        "perf-agentic",
        "oom-snapshot",
        "log-stream",
        "wandb-key",
        "recipe-2gpu",
        "resp-lens",
        # facts behind the lifecycle fixtures, and lines of modes they do not print
        "health-check",
        "recovery-load",
        "fully-async",
        "health-fatal",
        "ckpt-saved",  # the embedded workload prints it (tests/workloads/test_checkpoint.py)
    }


@pytest.mark.parametrize("name", ["healthy", "healthy-plain"])
def test_healthy_run_is_complete_with_no_event(tmp_path: Path, name: str) -> None:
    ingested, events, run = ingest_text(tmp_path, rc.text(FIXTURES[name]()))
    # `Graceful shutdown triggered (atexit)` after `Main func successfully`: a clean end.
    assert events == []
    assert (ingested.status, ingested.status_reason) == ("complete", None)
    ing = ingested.ingest
    assert ing["steps"] == 12 and ing["train_steps"] == 12 and ing["skipped_lines"] == 0
    assert ing["clean_end"] and ing["warnings"] == []
    assert ingested.argv_source == "argument-dump"
    assert ingested.effective_argv["--rollout-batch-size"] == "2"
    assert ingested.effective_argv["--n-samples-per-prompt"] == "8"
    wide = wide_table(read_metrics(run))
    assert {
        "perf/step_resp_token_per_s",
        "perf/step_token_per_s",
        "perf/actor_train_tokens",
        "rollout/total_lengths",
        "train/grad_norm",
        "rollout/num_turn/max",
    } <= set(wide.columns)
    assert wide.index.tolist() == list(range(12))


def test_oom_is_one_event_with_its_step_and_allocation(tmp_path: Path) -> None:
    text = rc.text(rc.oom(9))
    # The allocation is printed eight times (remote and local traceback, in the log and in Ray's re-print).
    assert text.count("Tried to allocate 2.46 GiB") >= 4 and "last available logs" in text
    ingested, events, _ = ingest_text(tmp_path, text)
    assert [(e["kind"], e["step"]) for e in events] == [("oom", 9)]
    oom = events[0]
    assert oom["details"]["tried_to_allocate"] == "2.46 GiB" and oom["details"]["tried_to_allocate_gib"] == 2.46
    assert oom["details"]["total_capacity_gib"] == 79.11 and oom["message"].endswith("unallocated.")
    assert oom["details"]["repeats"] > 4  # the fatal messages, callers' tracebacks and the re-print
    assert ingested.status == "failed"
    assert ingested.status_reason.startswith(f"OOM at step 9, tried to allocate 2.46 GiB (stdout.log:{oom['line']}: ")


def test_nan_in_grad_norm_is_one_nan_event(tmp_path: Path) -> None:
    ingested, events, _ = ingest_text(tmp_path, rc.text(rc.nan_grad(5)))
    assert [(e["kind"], e["step"]) for e in events] == [("nan", 5)]
    assert "found NaN in local grad norm" in events[0]["message"]
    assert ingested.status == "failed" and ingested.status_reason.startswith("NaN/Inf at step 5 (stdout.log:")


def test_nan_loss_in_a_step_line_fails_the_run(tmp_path: Path) -> None:
    ingested, events, _ = ingest_text(tmp_path, rc.text(rc.healthy(8, nan_loss_at=4)))
    assert [(e["kind"], e["step"], e["details"]["nonfinite"]) for e in events] == [("nan", 4, {"train/loss": "nan"})]
    assert ingested.status == "failed"


def test_sigterm_stop_is_interrupted_not_failed(tmp_path: Path) -> None:
    ingested, events, _ = ingest_text(tmp_path, rc.text(rc.stopped(6)))
    assert [(e["kind"], e["details"].get("signal")) for e in events] == [("interrupted", "SIGTERM")]
    assert ingested.status == "interrupted"
    assert "SIGTERM" in ingested.status_reason and "Graceful shutdown triggered (SIGTERM)" in ingested.status_reason


def test_sigterm_stop_through_the_runner_arguments_too(tmp_path: Path) -> None:
    # Relax's handler exits with 128 + SIGTERM after a stop: still a stop, not an abnormal exit.
    ingested, events, _ = ingest_text(tmp_path, rc.text(rc.stopped(6)), exit_code=143)
    assert ingested.status == "interrupted" and [e["kind"] for e in events] == ["interrupted"]


def test_fp16_loss_scale_skips_are_a_warning_with_a_count(tmp_path: Path) -> None:
    text = rc.text(rc.healthy(fp16_skips=[0, 1]))
    assert text.count("Inf found in gradients") == 4 and text.count("'train/grad_norm': nan") == 2
    ingested, events, _ = ingest_text(tmp_path, text)
    assert events == [] and ingested.status == "complete"
    skips = ingested.ingest["loss_scale_skips"]
    assert (skips["warnings"], skips["steps"]) == (4, 2) and "critic_skipped_steps" not in skips  # no critic
    assert ingested.ingest["warnings"][0].startswith("fp16 loss scaling skipped the parameter update of 2 of 12")


def test_fp16_skipping_every_step_fails(tmp_path: Path) -> None:
    ingested, _, _ = ingest_text(tmp_path, rc.text(rc.healthy(4, fp16_skips=range(4))))
    assert ingested.status == "failed"
    assert "skipped the parameter update of every training step (4 of 4)" in ingested.status_reason


def test_multi_turn_lines_are_read(tmp_path: Path) -> None:
    _, events, run = ingest_text(tmp_path, rc.text(rc.healthy(multi_turn=True)))
    assert events == []
    wide = wide_table(read_metrics(run))
    assert wide["multi_turn/multi_turn_metric/round_number_max"].notna().all()
    assert wide["multi_turn/wo_obs_response_length/response_length_mean"].notna().all()
    assert (wide["rollout/num_turn/max"] > 1).all()


def test_passrate_and_eval_lines_are_read(tmp_path: Path) -> None:
    _, events, run = ingest_text(tmp_path, rc.text(rc.healthy(8, passrate=True, eval_every=4)))
    wide = wide_table(read_metrics(run))
    assert events == [] and wide["passrate/pass@8"].notna().all() and wide["passrate/pass@1"].iloc[0] == 0.2
    assert wide["eval/openr1mm"].dropna().index.tolist() == [0, 4]


def test_ray_repeated_lines_count_for_what_they_stand_for() -> None:
    from reportgen.ingest.console import Record
    from reportgen.ingest.events import EventScanner

    sc = EventScanner("stdout")
    warn = "(A pid=1) Inf found in gradients (step_id=0, loss_scale=4096.0), skipping parameter update"
    sc.push(1, warn, None)
    sc.push(2, "step 0: {...}", Record("step", 0, {"train/grad_norm": float("nan")}, 2, "stdout"))
    # Ray's copy of the three other ranks' lines, flushed after the step's own line.
    sc.push(3, warn + " [repeated 3x across cluster]", None)
    sc.push(4, "step 1: {...}", Record("step", 1, {"train/grad_norm": 0.5}, 4, "stdout"))
    assert (sc.loss_scale["warnings"], sc.loss_scale["steps"], sc.loss_scale["skipped_steps"]) == (4, 1, [0])
    assert sc.finish() == []


def printed(lines: list[rc.Line], source: str) -> dict[int, dict[str, float]]:
    """The dicts of the fixture's `source` lines by step, read back with Python's own literal reader
    (not ingest's parser: the expectation must not come from the code under test)."""
    out = {}
    for src, text in lines:
        if src == source:
            body = text[text.index(": {") + 2 : text.rindex("}") + 1]
            out[int(text[: text.index(": {")].rsplit(" ", 1)[1])] = ast.literal_eval(body)
    return out


def test_ppo_log_yields_the_actors_and_the_critics_keys_per_step(tmp_path: Path) -> None:
    lines = rc.healthy(8, critic=True)
    actor, critic = printed(lines, "train-step"), printed(lines, "critic-step")
    assert sorted(actor) == sorted(critic) == list(range(8))
    ingested, events, run = ingest_text(tmp_path, rc.text(lines))
    assert events == [] and ingested.status == "complete"
    ing = ingested.ingest
    # The critic's line is metrics, not a second train step; both lines of a step land on that step.
    assert ing["train_steps"] == 8 and ing["skipped_lines"] == 0 and ing["disagreements"] == 0
    wide = wide_table(read_metrics(run))
    assert wide.index.tolist() == list(range(8))
    assert {vocab.CRITIC_VALUE_LOSS, vocab.CRITIC_VALUE_CLIPFRAC, vocab.CRITIC_GRAD_NORM} <= set(wide.columns)
    for s in range(8):
        for key, value in critic[s].items():
            if key != "train/step":
                assert wide.loc[s, key] == value, (s, key)
        for key, value in actor[s].items():  # the actor's train/* (train/step too) as the actor printed them
            assert wide.loc[s, key] == value, (s, key)
    assert not any(k.startswith("critic-step/") for k in wide.columns)
    # The same pair of GRPO lines without the critic: the actor's keys are unchanged, only train/critic-* added.
    (tmp_path / "grpo").mkdir()
    _, _, grpo = ingest_text(tmp_path / "grpo", rc.text(rc.healthy(8)))
    added = set(wide.columns) - set(wide_table(read_metrics(grpo)).columns)
    assert added == {f"train/critic-{k}" for k in ("value_loss", "value_clipfrac", "grad_norm", "lr-pg_0")}


def test_a_critics_fp16_skips_are_not_counted_as_the_actors(tmp_path: Path) -> None:
    # Both models log the same `Inf found in gradients` warning; only a step whose own grad norm is
    # nan (the actor's at 3) had its update skipped. The critic's nan grad norms are no event.
    text = rc.text(rc.healthy(8, critic=True, fp16_skips=[3], critic_fp16_skips=[2, 3, 5]))
    assert text.count("Inf found in gradients") == 8 and text.count("'train/critic-grad_norm': nan") == 3
    ingested, events, _ = ingest_text(tmp_path, text)
    assert events == [] and ingested.status == "complete"
    skips = ingested.ingest["loss_scale_skips"]
    assert (skips["warnings"], skips["steps"], skips["skipped_steps"]) == (8, 1, [3])
    assert skips["critic_skipped_steps"] == [2, 3, 5]
    assert ingested.ingest["warnings"][0].startswith(
        "fp16 loss scaling skipped the parameter update of 1 of 8 training step(s) and of 3 of the critic's 8 "
        "(8 `Inf found in gradients` warning(s)"
    )
    # A critic skipping every step is not "the model never trained": the actor's updates happened.
    (tmp_path / "all").mkdir()
    ingested, events, _ = ingest_text(tmp_path / "all", rc.text(rc.healthy(4, critic=True, critic_fp16_skips=range(4))))
    assert events == [] and ingested.status == "complete"
    assert ingested.ingest["loss_scale_skips"]["steps"] == 0
    assert "0 of 4 training step(s) and of 4 of the critic's 4 (" in ingested.ingest["warnings"][0]


def test_a_diverged_critics_nan_loss_fails_the_run(tmp_path: Path) -> None:
    # A bf16 critic without the NaN check (critic-nan): no warning, no exception, only its nan
    # value loss and grad norm from step 5 on. Each is a NaN event on its step, as an actor's would be.
    text = rc.text(rc.healthy(8, critic=True, critic_nan_at=5))
    assert "Inf found in gradients" not in text and text.count("'train/critic-value_loss': nan") == 3
    ingested, events, _ = ingest_text(tmp_path, text)
    nan = {"train/critic-value_loss": "nan", "train/critic-grad_norm": "nan"}
    assert [(e["kind"], e["step"], e["details"]["nonfinite"], e["details"]["record"]) for e in events] == [
        ("nan", s, nan, f"critic-step {s}") for s in (5, 6, 7)
    ]
    assert ingested.status == "failed" and ingested.status_reason.startswith("NaN/Inf at step 5 (stdout.log:")
    assert "loss_scale_skips" not in ingested.ingest
    # The same nan grad norm after the critic's own `Inf found in gradients` warning is an fp16 skip
    # (counted, test above); a nan value loss with it is still a NaN event, as the actor's is.
    # fp16: the NaN trips the loss scaler, so the critic's warning precedes its line (critic-nan, fp16-skip).
    lines = rc.healthy(4, critic=True, critic_fp16_skips=[2, 3], critic_nan_at=3)
    (tmp_path / "fp16").mkdir()
    ingested, events, _ = ingest_text(tmp_path / "fp16", rc.text(lines))
    assert [(e["step"], e["details"]["nonfinite"]) for e in events] == [(3, {"train/critic-value_loss": "nan"})]
    assert ingested.ingest["loss_scale_skips"]["critic_skipped_steps"] == [2, 3]


def test_critic_only_steps_hold_the_critics_keys_and_no_actor_step(tmp_path: Path) -> None:
    # --num-critic-only-steps 2: steps 0 and 1 train only the critic; they are not actor train steps.
    ingested, events, run = ingest_text(tmp_path, rc.text(rc.healthy(6, critic=True, critic_only_steps=2)))
    assert events == [] and ingested.status == "complete"
    # Steps are the actor's: the critic-only steps are neither counted nor rollout-only (the critic trained).
    assert ingested.ingest["train_steps"] == 4 and ingested.ingest["steps"] == 4
    assert ingested.ingest["rollout_only_steps"] == []
    wide = wide_table(read_metrics(run))
    assert wide[vocab.CRITIC_VALUE_LOSS].notna().all() and wide.index.tolist() == list(range(6))
    assert wide[vocab.LOSS].isna().tolist() == [True, True, False, False, False, False]
    assert wide[vocab.STEP_TIME].isna().tolist() == [True, True, False, False, False, False]
    assert ingested.effective_argv["--num-critic-only-steps"] == "2"


def test_ppo_log_and_its_tensorboard_agree(tmp_path: Path) -> None:
    """Relax sends both lines' keys but `train/step` to TensorBoard at step `train/step`
    (critic-step row): the console's critic keys are the same (step, key) pairs, no disagreement."""
    from .test_metrics import write_tb

    lines = rc.healthy(6, critic=True)
    rows = [
        (key, value, s)
        for source in ("train-step", "critic-step")
        for s, values in printed(lines, source).items()
        for key, value in values.items()
        if key != "train/step"
    ]
    run = tmp_path / "run"
    write_tb(run / "tensorboard", rows)
    ingested, _, _ = ingest_text(tmp_path, rc.text(lines))
    assert ingested.ingest["sources"] == ["console", "tensorboard"]
    assert ingested.ingest["disagreements"] == 0
    long = read_metrics(run)
    both = long[long.key == vocab.CRITIC_VALUE_LOSS].groupby("step")["source"].apply(set)
    assert both.tolist() == [{"console", "tensorboard"}] * 6


def test_hybrid_mode_logs_no_response_token_rate(tmp_path: Path) -> None:
    _, _, run = ingest_text(tmp_path, rc.text(rc.healthy(hybrid=True)))
    wide = wide_table(read_metrics(run))
    assert "perf/step_resp_token_per_s" not in wide.columns and wide["perf/step_token_per_s"].notna().all()


def test_binary_debris_is_read_around_and_counted(tmp_path: Path) -> None:
    text = rc.text(rc.oom(9)).encode()
    nuls = text + b"\x00" * 4096  # a crash's NUL padding at the end
    mid = len(text) // 3
    noise = bytes(random.Random(7).randrange(128, 256) for _ in range(1024))  # never valid UTF-8 alone
    middle = text[:mid] + noise + text[mid:]
    for i, data in enumerate((nuls, middle)):
        d = tmp_path / str(i)
        d.mkdir()
        ingested, events, _ = ingest_text(d, data)
        assert [(e["kind"], e["step"], e["details"]["tried_to_allocate"]) for e in events] == [("oom", 9, "2.46 GiB")]
        debris = ingested.ingest["undecodable"]["stdout"]
        assert debris["regions"] >= 1 and debris["chars"] >= (4096 if i == 0 else 1)
        assert any("undecodable region" in w for w in ingested.ingest["warnings"])


def test_same_status_through_ingest_and_the_runner_arguments(tmp_path: Path) -> None:
    # The runner passes the exit code it saw; ingest knows none: one rule decides both.
    for i, (lines, code) in enumerate(((rc.healthy(6), 0), (rc.oom(4), 1), (rc.healthy(6, nan_loss_at=2), 0))):
        (tmp_path / f"a{i}").mkdir()
        (tmp_path / f"b{i}").mkdir()
        a, _, _ = ingest_text(tmp_path / f"a{i}", rc.text(lines))
        b, _, _ = ingest_text(tmp_path / f"b{i}", rc.text(lines), exit_code=code)
        assert (a.status, a.status_reason) == (b.status, b.status_reason)
        assert a.status == ("complete" if i == 0 else "failed")


def test_decide_status_order() -> None:
    tb = LogEvent(kind="traceback", stream="stdout", line=5, message="KeyError: 'x'", step=1)
    assert decide_status([tb], clean_end={"stdout": 9}).status == "complete"  # handled: the run ended clean
    assert decide_status([tb], clean_end={"stdout": 3}).status == "failed"
    assert decide_status([tb], interrupted=True).status == "interrupted"
    assert decide_status([], exit_code=137).reason == "the workload process exited with code 137"
    assert decide_status([], signal="SIGKILL").status == "failed"
    assert decide_status([], signal="SIGTERM").status == "interrupted"
    assert decide_status([], timed_out=True).status == "failed"
    assert decide_status([]).status == "complete"


def test_status_reason_names_the_most_specific_failure_not_the_first_logged() -> None:
    tb = LogEvent(kind="traceback", stream="stdout", line=5, message="KeyError: 'x'", step=8)
    nan = LogEvent(kind="nan", stream="stdout", line=7, message="step 8: {...}", step=8)
    oom = LogEvent(kind="oom", stream="stderr", line=3, message="torch.OutOfMemoryError: ...", step=9)
    exit_ = LogEvent(kind="abnormal_exit", stream="process", line=None, message="exit code 1", step=10)
    assert first_failure([tb, nan, oom]) is oom
    assert first_failure([tb, nan]) is nan
    assert first_failure([exit_, tb]) is tb
    assert first_failure([tb], {"stdout": 9}) is None  # survived: Relax's clean end follows it
    assert first_failure([exit_], kinds=vocab.LOG_FAILURE_KINDS) is None
    later_tb = tb.model_copy(update={"line": 9})
    assert first_failure([later_tb, tb]) is later_tb  # one kind: the first in the list
    reason = decide_status([tb, nan, oom], exit_code=1).reason
    assert reason == "OOM at step 9 (stderr.log:3: torch.OutOfMemoryError: ...)"


def test_nan_then_oom_log_is_failed_by_its_oom(tmp_path: Path) -> None:
    ingested, events, _ = ingest_text(tmp_path, rc.text(nan_then_oom()))
    assert [(e["kind"], e["step"]) for e in events] == [("nan", 8), ("oom", 9)]
    oom_line = events[1]["line"]
    assert ingested.status_reason.startswith(f"OOM at step 9, tried to allocate 2.46 GiB (stdout.log:{oom_line}: ")


def nan_then_oom() -> list[rc.Line]:
    """`rc.oom(9)` whose actor logged a NaN loss at step 8 first (train-step: `'train/loss': nan`)."""
    out = []
    for source, text in rc.oom(9):
        if source == "train-step" and "step 8: {'train/loss': " in text:
            head, _, rest = text.partition("'train/loss': ")
            text = head + "'train/loss': nan," + rest.partition(",")[2]
        out.append((source, text))
    return out


def test_reportgen_ingest_of_binary_junk_is_refused_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = paste_spec(tmp_path / "exp.toml")
    junk = tmp_path / "core"
    junk.write_bytes(bytes(random.Random(1).randrange(256) for _ in range(8192)).replace(b"\n", b" "))
    assert main(["ingest", str(junk), "--spec", str(spec), "--arm", "baseline", "--runs", str(tmp_path / "runs")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "holds no console line" in err and not (tmp_path / "runs").exists()


RUN_RECIPE = """#!/bin/bash
set -e
cat relax.log
true --optimizer-cpu-offload --num-rollout ${STEPS} --global-batch-size 4
"""


@pytest.mark.parametrize("kind", ["healthy", "nan-loss"])
def test_reportgen_run_and_reportgen_ingest_agree(tmp_path: Path, kind: str) -> None:
    """The same Relax log, printed by a real workload process under `reportgen run` (exit 0) and
    given to `reportgen ingest`, gets the same status and reason."""
    from tests.execute.conftest import make_experiment

    spec = make_experiment(tmp_path / "recipes", recipe=RUN_RECIPE)
    lines = rc.healthy(6) if kind == "healthy" else rc.healthy(6, nan_loss_at=3)
    (tmp_path / "recipes" / "relax.log").write_text(rc.text(lines))
    runs = tmp_path / "runs"
    main(["run", str(spec), "--runs", str(runs), "--no-analyze"])
    ran = json.loads((runs / "exp" / "baseline" / "1" / "manifest.json").read_text())
    assert ran["exit_code"] == 0
    log = runs / "exp" / "baseline" / "1" / "stdout.log"
    assert main(["ingest", str(log), "--spec", str(spec), "--arm", "baseline", "--runs", str(runs)]) == 0
    ingested = json.loads((runs / "exp" / "baseline" / "2" / "manifest.json").read_text())
    assert (ran["status"], ran["status_reason"]) == (ingested["status"], ingested["status_reason"])
    if kind == "healthy":
        assert ran["status"] == "complete"
    else:
        assert ran["status"] == "failed" and ran["status_reason"].startswith("NaN/Inf at step 3 (stdout.log:")


def test_a_run_that_died_before_its_first_step_is_ingested_as_failed(tmp_path: Path) -> None:
    # OOM while the actor builds its model: console lines, no metric line, one failure.
    lines = rc.start(steps=10) + [
        (
            "actor-failed",
            rc.ray(
                rc.SERVE_ACTOR,
                rc.colour(
                    rc.ts(40),
                    "ERROR",
                    "relax.components.actor",
                    200,
                    f"Actor training failed at step 0: OutOfMemoryError: {rc.OOM_TEXT}",
                ),
            ),
        )
    ]
    spec = paste_spec(tmp_path / "exp.toml")
    log = tmp_path / "init-oom.log"
    log.write_text(rc.text(lines))
    assert main(["ingest", str(log), "--spec", str(spec), "--arm", "baseline", "--runs", str(tmp_path / "runs")]) == 0
    m = json.loads((tmp_path / "runs" / "x" / "baseline" / "1" / "manifest.json").read_text())
    assert m["status"] == "failed" and m["status_reason"].startswith("OOM at step 0, tried to allocate 2.46 GiB")
    assert m["ingest"]["records"] == 0

"""Real runs have lifecycles and real logs come in pieces (issue 22): cut logs, resumed runs, retried
jobs, in-run restarts, fully-async rollouts running ahead, handled tracebacks, and failures pasted in
whatever shape. The logs are written from Relax's code (relax_sources.md, relax_corpus.py); each
case is read through `ingest_run`, and through `reportgen ingest` + `analyze` where the verdict is
the point."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

from reportgen.cli import main
from reportgen.ingest.metrics import read_metrics
from reportgen.ingest.run_dir import IngestedRun
from reportgen.store.run import wide_table

from . import relax_corpus as rc
from .conftest import paste_spec
from .test_relax_analysis import offload_spec
from .test_relax_corpus import ingest_text, printed


def attempts(ingested: IngestedRun) -> list[dict]:
    return ingested.ingest["lifecycle"]["attempts"]


# -- a log cut by SIGKILL -------------------------------------------------------------------------


@pytest.mark.parametrize("mid_line", [True, False])
def test_a_log_cut_by_sigkill_is_interrupted_not_complete(tmp_path: Path, mid_line: bool) -> None:
    lines = rc.cut(17, mid_line=mid_line)
    text = rc.text(lines, "" if mid_line else "\n")
    assert "Main func successfully" not in text and "Graceful shutdown" not in text
    ingested, events, _ = ingest_text(tmp_path, text)
    n = len(lines)
    where = f"cut at line {n}, mid-line" if mid_line else f"after line {n}"
    assert (ingested.status, ingested.status_reason) == (
        "interrupted",
        f"the log ends without Relax's end-of-run lines ({where})",
    )
    (cut,) = events
    assert (cut["kind"], cut["line"], cut["details"]["cut"], cut["details"]["mid_line"]) == (
        "interrupted",
        n,
        True,
        mid_line,
    )
    assert cut["step"] == (17 if mid_line else 18)  # the perf line of step 17 was being written, or step 17 was done
    assert attempts(ingested)[0]["end"] == "cut"
    # A partial metric line is counted, by number.
    assert ingested.ingest.get("unreadable_lines") == ({"stdout": [n]} if mid_line else None)


def test_the_runners_exit_code_decides_where_the_log_cannot(tmp_path: Path) -> None:
    """`reportgen run` knows how the process ended: exit 0 is an end, a kill is a failure."""
    text = rc.text(rc.cut(17, mid_line=False))
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    assert ingest_text(tmp_path / "a", text, exit_code=0)[0].status == "complete"
    killed = ingest_text(tmp_path / "b", text, signal="SIGKILL")[0]
    assert (killed.status, killed.status_reason) == ("failed", "the workload process was killed by SIGKILL")


def test_restarts_exhausted_and_os_exit_is_failed_by_the_refusal(tmp_path: Path) -> None:
    ingested, events, _ = ingest_text(tmp_path, rc.text(rc.restarts_exhausted(14)))
    assert ingested.status == "failed"
    assert ingested.status_reason.startswith("fatal error at step 14 (stdout.log:")
    assert "Refusing to restart" in ingested.status_reason
    life = attempts(ingested)
    assert [(a["kind"], a["started_by"]) for a in life] == [("job", "job submission")] + [
        ("restart", f"global restart #{n}") for n in range(1, 5)
    ]
    # Each restart's OOM is its own event (not merged across restarts); none was got past.
    assert [(e["kind"], e["step"], e["details"]["attempt"]) for e in events] == [
        ("oom", 14, 1),
        ("oom", 14, 2),
        ("oom", 14, 3),
        ("oom", 14, 4),
        ("fatal", 14, 5),
    ]


# -- a run resumed from a checkpoint ---------------------------------------------------------------


def test_a_resumed_run_records_where_it_started(tmp_path: Path) -> None:
    ingested, events, run = ingest_text(tmp_path, rc.text(rc.resumed(120, 149)))
    assert events == [] and ingested.status == "complete"
    (a,) = attempts(ingested)
    assert (a["start_step"], a["resumed_from_iteration"], a["steps"], a["trained_steps"]) == (120, 119, [120, 149], 30)
    assert ingested.ingest["steps"] == 30 and ingested.ingest["last_step"] == 149
    assert "attempt 1 resumed from a checkpoint (iteration 119): its steps start at 120" in ingested.ingest["warnings"]
    assert wide_table(read_metrics(run)).index.tolist() == list(range(120, 150))


# -- two jobs in one file (a retried Ray job, `tee -a`) ---------------------------------------------


def test_a_retried_job_is_complete_with_the_first_attempts_failure_recovered(tmp_path: Path) -> None:
    lines = rc.retried(fail_at=7, total=30)
    ingested, events, run = ingest_text(tmp_path, rc.text(lines))
    assert (ingested.status, ingested.status_reason) == ("complete", None)
    (rec,) = events
    assert (rec["kind"], rec["step"], rec["details"]["failure"], rec["details"]["attempt"]) == (
        "recovered",
        7,
        "oom",
        1,
    )
    assert rec["details"]["by"] == "a new job (attempt 2)" and rec["details"]["redone"] == "0-7"
    assert rec["details"]["tried_to_allocate"] == "2.46 GiB" and "torch.OutOfMemoryError" in rec["message"]
    first, second = attempts(ingested)
    assert (first["steps"], first["end"], first["failure"]) == (
        [0, 6],
        "failed",
        "OOM at step 7, tried to allocate 2.46 GiB",
    )
    assert (second["steps"], second["end"], second["redone_steps"]) == ([0, 29], "clean", [[0, 7]])
    # The values are the retry's; the first attempt's are replaced (a warning, a count), not disagreements.
    retry = printed(lines[lines.index(next(x for x in lines if "raysubmit_Z8pQw3nRt5yUvWxY" in x[1])) :], "perf-actor")
    wide = wide_table(read_metrics(run))
    for s in range(30):
        assert wide.loc[s, "perf/step_time"] == retry[s]["perf/step_time"], s
    replaced = first["replaced_values"]
    assert replaced > 300 and ingested.ingest["disagreements"] == 0
    assert ingested.ingest["lifecycle"]["replaced_values"] == replaced
    assert any(
        w.startswith(f"attempt 2 replaced {replaced} value(s) that attempt 1 had logged at steps 0-7")
        for w in ingested.ingest["warnings"]
    )
    ev = json.loads((run / "events.json").read_text())
    assert ev["replaced_total"] == replaced and ev["replaced"][0]["attempt"] == 1


def test_a_retried_jobs_time_is_its_jobs_own(tmp_path: Path) -> None:
    spec = offload_spec(tmp_path / "x.toml")
    log = tmp_path / "retried.log"
    log.write_text(rc.text(rc.retried(fail_at=7, total=30)))
    assert (
        main(
            [
                "ingest",
                str(log),
                "--spec",
                str(spec),
                "--arm",
                "baseline",
                "--runs",
                str(tmp_path / "runs"),
                "--no-analyze",
            ]
        )
        == 0
    )
    m = json.loads((tmp_path / "runs" / "offload" / "baseline" / "1" / "manifest.json").read_text())
    first, second = m["ingest"]["lifecycle"]["attempts"]
    # The retry started ten minutes after the first job failed: the gap is no run time.
    assert m["duration_s"] == first["duration_s"] + second["duration_s"] < 30 * 31 + 600
    assert m["started_utc"] == first["started_utc"] and m["ended_utc"] == second["ended_utc"]
    assert "gaps left out" in m["times_from"]


# -- Relax's in-run restart (--use-health-check) ---------------------------------------------------


def test_an_in_run_restart_that_recovers_is_complete_with_a_recovered_event(tmp_path: Path) -> None:
    lines = rc.health_restart(fail_at=14, saved=9, total=30)
    ingested, events, run = ingest_text(tmp_path, rc.text(lines))
    assert (ingested.status, ingested.status_reason) == ("complete", None)
    (rec,) = events
    assert rec["kind"] == "recovered" and rec["step"] == 14 and rec["details"]["failure"] == "oom"
    assert (rec["details"]["by"], rec["details"]["redone"], rec["details"]["resumed_from_iteration"]) == (
        "global restart #1",
        "10-14",
        9,
    )
    job, restart = attempts(ingested)
    assert (job["kind"], job["steps"], job["end"]) == ("job", [0, 13], "failed")
    assert (restart["kind"], restart["started_by"], restart["start_step"], restart["steps"]) == (
        "restart",
        "global restart #1",
        10,
        [10, 29],
    )
    assert restart["cause"].startswith("service actor unhealthy: Actor training failed at step 14")
    assert ingested.ingest["lifecycle"]["restarts"] == 1 and job["replaced_values"] > 150
    assert ingested.ingest["disagreements"] == 0 and ingested.ingest["steps"] == 30
    # Steps 10-14 hold the restart's values.
    after = printed(lines[lines.index(next(x for x in lines if x[0] == "global-restart-done")) :], "train-step")
    wide = wide_table(read_metrics(run))
    for s in range(10, 15):
        assert wide.loc[s, "train/loss"] == after[s]["train/loss"]


# -- fully-async: rollout indices are not training steps ------------------------------------------


def test_fully_async_backfill_rollout_is_not_a_step(tmp_path: Path) -> None:
    lines = rc.fully_async(30)
    assert "perf 30: {" in rc.text(lines)
    ingested, events, _ = ingest_text(tmp_path, rc.text(lines))
    assert events == [] and ingested.status == "complete"
    assert (ingested.ingest["steps"], ingested.ingest["last_step"], ingested.ingest["rollout_only_steps"]) == (
        30,
        29,
        [30],
    )


def test_rollouts_ahead_of_a_dead_actor_are_not_steps(tmp_path: Path) -> None:
    ingested, events, _ = ingest_text(tmp_path, rc.text(rc.fully_async(30, actor_dies_at=3, ahead=3)))
    assert ingested.ingest["steps"] == 3 and ingested.ingest["rollout_only_steps"] == [3, 4, 5]
    assert [(e["kind"], e["step"]) for e in events] == [("oom", 3)]
    assert any("logged only by the rollout side" in w and "(3-5)" in w for w in ingested.ingest["warnings"])


def test_ls_shows_the_steps_the_actor_trained(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spec = offload_spec(tmp_path / "x.toml")
    log = tmp_path / "async.log"
    log.write_text(rc.text(rc.fully_async(30)))
    runs = tmp_path / "runs"
    assert (
        main(["ingest", str(log), "--spec", str(spec), "--arm", "baseline", "--runs", str(runs), "--no-analyze"]) == 0
    )
    capsys.readouterr()
    assert main(["ls", "--runs", str(runs)]) == 0
    (row,) = [line for line in capsys.readouterr().out.splitlines() if line.startswith("offload")]
    assert row.split()[-1] == "30"


# -- a handled traceback, twice ----------------------------------------------------------------------


def test_handled_tracebacks_sit_on_their_steps_and_stay_apart(tmp_path: Path) -> None:
    ingested, events, _ = ingest_text(tmp_path, rc.text(rc.handled_tracebacks(14, at=(5, 11))))
    assert ingested.status == "complete"  # logged and survived: Relax's clean end follows
    assert [(e["kind"], e["step"], e["details"]["exception"]) for e in events] == [
        ("traceback", 5, "requests.exceptions.ConnectionError"),
        ("traceback", 11, "requests.exceptions.ConnectionError"),
    ]


# -- failures pasted in whatever shape ----------------------------------------------------------------


def ingest_paste(tmp_path: Path, text: str) -> tuple[int, dict | None]:
    spec = paste_spec(tmp_path / "exp.toml")
    log = tmp_path / "paste.log"
    log.write_text(text)
    runs = tmp_path / "runs"
    code = main(["ingest", str(log), "--spec", str(spec), "--arm", "baseline", "--runs", str(runs)])
    path = runs / "x" / "baseline" / "1" / "manifest.json"
    return code, json.loads(path.read_text()) if path.is_file() else None


@pytest.mark.parametrize(
    "name,make,reason",
    [
        (
            "traceback",
            lambda: rc.traceback_paste(),
            "OOM, tried to allocate 2.46 GiB (stdout.log:8: torch.OutOfMemoryError",
        ),
        (
            "quoted",
            lambda: rc.traceback_paste(quoted=True),
            "OOM, tried to allocate 2.46 GiB (stdout.log:8: > torch.OutOfMemoryError",
        ),
        (
            "cut-traceback",
            lambda: rc.traceback_paste(exception=False),
            "exception (the log ends inside its traceback) (stdout.log:7: train(rollout_id",
        ),
        (
            "ray-banner-oom",
            lambda: rc.ray_banner_paste(),
            "OOM, tried to allocate 2.46 GiB (stdout.log:4: torch.OutOfMemoryError",
        ),
        (
            "ray-banner-runtime",
            lambda: rc.ray_banner_paste("RuntimeError"),
            "fatal error (stdout.log:1: RayTaskError(RuntimeError): ray::MegatronTrainRayActor.train()",
        ),
        (
            "unhandled",
            lambda: rc.unhandled_paste(),
            "exception (stdout.log:4: RuntimeError: NCCL communicator was aborted",
        ),
    ],
)
def test_a_paste_of_a_failure_alone_is_a_failed_run(tmp_path: Path, name: str, make, reason: str) -> None:
    lines = make()
    assert not any(line.startswith(("[20", "(")) for _, line in lines)  # no timestamp, no Ray prefix
    code, m = ingest_paste(tmp_path, rc.text(lines))
    assert code == 0 and m is not None
    assert m["status"] == "failed" and m["status_reason"].startswith(reason), m["status_reason"]
    assert m["ingest"]["records"] == 0


def test_a_ray_task_error_banner_in_a_log_is_classified(tmp_path: Path) -> None:
    """`RayTaskError(...)` outside any `Traceback` block, after the steps: classified by its cause."""
    for i, (cause, kind) in enumerate((("OutOfMemoryError", "oom"), ("RuntimeError", "fatal"))):
        d = tmp_path / str(i)
        d.mkdir()
        lines = rc.start(steps=10) + rc.steps(__import__("random").Random(1), 0, 3) + rc.ray_banner_paste(cause)
        ingested, events, _ = ingest_text(d, rc.text(lines))
        assert [(e["kind"], e["step"]) for e in events] == [(kind, 4)] and ingested.status == "failed"


def test_wrapped_metric_lines_are_joined_where_the_join_parses(tmp_path: Path) -> None:
    lines = rc.healthy(6)
    copy = rc.wrapped(lines, width=120)
    assert sum(1 for src, _ in copy if src == "paste-wrap") > 50
    ingested, events, run = ingest_text(tmp_path, rc.text(copy))
    assert events == [] and ingested.status == "complete" and ingested.ingest["skipped_lines"] == 0
    assert ingested.ingest["steps"] == 6 and ingested.ingest["joined_lines"]["stdout"]["count"] == 6 * 4
    wide = wide_table(read_metrics(run))
    for s, values in printed(lines, "perf-actor").items():
        for key, value in values.items():
            assert wide.loc[s, key] == value, (s, key)
    assert any("wrapped over several lines" in w for w in ingested.ingest["warnings"])


@pytest.mark.parametrize("width", [41, 96, 120, 200])
def test_wrapped_lines_read_alike_whatever_the_chunks(width: int) -> None:
    """Breaks anywhere, inside a number or a head (`per` / `f 0: {`; not inside `: {` itself, see
    console._straddles: widths 97 and 105 break there); any chunk boundaries; the block-wise and
    the line-by-line reading alike."""
    from reportgen.ingest.console import ConsoleParser

    from .test_blockwise import blockwise, line_by_line

    text = rc.text(rc.wrapped(rc.healthy(3), width=width))

    def read(chunk: int) -> list[tuple[str, int, int]]:
        p = ConsoleParser()
        recs = [r for i in range(0, len(text), chunk) for r in p.feed(text[i : i + chunk])] + p.close()
        return [(r.kind, r.index, r.line_no) for r in recs]

    whole = read(1 << 20)
    assert len(whole) == 3 * 4 and all(read(n) == whole for n in (1, 7, 64, 1000))
    for chunk in (13, 1 << 20):
        assert line_by_line(text, chunk)[0] == blockwise(text, chunk)[0]


def test_a_refusal_names_the_unreadable_metric_lines(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Two metric lines whose wrapped dicts never close (the copy lost their ends): named by line."""
    lines = [line for _, line in rc.wrapped(rc.bare_steps(0, 1), width=150)]
    broken = [lines[0], "x" * 10, lines[2]]  # the first dict's continuation garbled, the second's lost
    code, m = ingest_paste(tmp_path, "[2026-08-05 10:10:00] train.py:1 - start\n" + "\n".join(broken) + "\n")
    assert code == 2 and m is None
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "2 metric line(s), unreadable: line 2, 4; and no failure found" in err


def test_bare_step_lines_are_steps(tmp_path: Path) -> None:
    ingested, _, run = ingest_text(tmp_path, rc.text(rc.bare_steps(0, 9)))
    assert ingested.ingest["steps"] == 10 and ingested.ingest["last_step"] == 9
    assert wide_table(read_metrics(run)).index.tolist() == list(range(10))


# -- the argument dump where Relax prints it --------------------------------------------------------


def test_the_drivers_argument_dump_is_read(tmp_path: Path) -> None:
    lines = rc.healthy(4)
    dump = [i for i, (src, _) in enumerate(lines) if src == "arg-dump"]
    start = next(i for i, (src, _) in enumerate(lines) if src == "main-start")
    assert dump and max(dump) < start  # before `ray.init`'s line, no prefix
    assert all(not line.startswith(("(", "\x1b")) for i, (_, line) in enumerate(lines) if i in dump)
    ingested, _, _ = ingest_text(tmp_path, rc.text(lines))
    assert ingested.argv_source == "argument-dump"
    assert ingested.effective_argv["--global-batch-size"] == "16"
    assert [a["started_by"] for a in attempts(ingested)] == ["job submission"]


def test_printed_reads_the_fixture_not_the_parser() -> None:
    """`printed` (the expectation) reads dicts with Python's own literal reader."""
    (src, line) = next(x for x in rc.healthy(1) if x[0] == "perf-actor")
    assert printed([(src, line)], "perf-actor")[0] == ast.literal_eval(
        line[line.index(": {") + 2 : line.rindex("}") + 1]
    )

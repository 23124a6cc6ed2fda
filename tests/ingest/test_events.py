from reportgen.ingest.console import ANSI
from reportgen.ingest.events import find_events

from .conftest import OOM_LINE, relax_stdout


def events_of(text: str, stream: str = "stdout"):
    return find_events(text.splitlines(), stream)


def test_oom_at_step_9_located_and_quoted():
    text = relax_stdout()
    lines = ANSI.sub("", text).split("\n")
    evs = events_of(text)
    oom = [e for e in evs if e.kind == "oom"]
    assert len(oom) == 1
    e = oom[0]
    assert e.step == 9
    assert e.message == "(MegatronTrainRayActor pid=1234) " + OOM_LINE
    assert lines[e.line - 1] == e.message
    assert e.details["tried_to_allocate_gib"] == 2.46
    assert e.details["total_capacity_gib"] == 79.25
    # The event sits on the exception line (it names the allocation), not on the fatal message before it.
    assert e.details["exception"] == "torch.OutOfMemoryError"
    assert lines[e.details["traceback_line"] - 1].endswith("Traceback (most recent call last):")
    # excerpt: the exact lines around it (8 before, up to 8 after; the log ends 2 lines later)
    assert list(e.excerpt) == lines[e.line - 9 : e.line + 2]


def test_fatal_messages_that_quote_the_oom_are_the_same_event():
    (oom,) = events_of(relax_stdout())
    # The actor's `failed at step 9: OutOfMemoryError` line, the traceback's last line and the
    # loop's `Training loop failed with error: ...(OutOfMemoryError)` are one failure.
    assert oom.kind == "oom" and oom.step == 9 and oom.details["repeats"] == 3
    assert oom.details["signature"] == "Actor training failed at step 9: "
    lines = ANSI.sub("", relax_stdout()).split("\n")
    assert [lines[i - 1].split(" - ", 1)[-1][:31] for i in oom.details["also_at_lines"]] == [
        "Actor training failed at step 9",
        "Training loop failed with error",
    ]


def test_nan_from_message_and_from_metrics():
    # Step 3 of the fixture: a loss-scale skip, then the nan grad norm Relax logs for it: no event.
    assert [e for e in events_of(relax_stdout()) if e.kind == "nan"] == []
    evs = events_of("step 2: {'train/loss': nan, 'train/grad_norm': 1.0}\n")
    assert [(e.kind, e.step, e.details["nonfinite"]) for e in evs] == [("nan", 2, {"train/loss": "nan"})]
    megatron = events_of("[x] step 1: {'train/loss': 0.5}\nRank 0: found NaN in local grad norm in backward pass\n")
    assert [(e.kind, e.step) for e in megatron] == [("nan", 2)]


def test_parse_error_noise_and_clean_log_are_not_failures():
    text = relax_stdout(steps=5, fail=False)
    assert "parse error" in text
    assert [e.kind for e in events_of(text) if e.kind != "nan"] == []


def test_generic_traceback_and_interleaved_lines():
    text = "\n".join(
        [
            "perf 0: {'perf/step_time': 1.0}",
            "(A pid=1) Traceback (most recent call last):",
            '(A pid=1)   File "x.py", line 3, in f',
            "(B pid=2) unrelated progress line",
            "(A pid=1)     raise KeyError('w')",
            "(A pid=1) KeyError: 'w'",
            "tail",
        ]
    )
    evs = events_of(text, "stderr")
    assert [(e.kind, e.step, e.line, e.stream) for e in evs] == [("traceback", 1, 6, "stderr")]
    assert evs[0].details["exception"] == "KeyError" and evs[0].details["traceback_line"] == 2


def test_same_oom_on_two_ranks_is_one_event():
    text = "\n".join(
        [
            "step 4: {'train/loss': 0.1}",
            "(A pid=1) " + OOM_LINE,
            "(A pid=2) " + OOM_LINE.replace("GPU 0", "GPU 1"),
        ]
    )
    evs = events_of(text)
    assert [(e.kind, e.step, e.line) for e in evs] == [("oom", 5, 2)]
    assert evs[0].details["repeats"] == 2 and evs[0].details["also_at_lines"] == [3]


def test_no_metrics_step_unknown():
    evs = events_of("CUDA error: out of memory\n")
    assert [(e.kind, e.step) for e in evs] == [("oom", None)]


def test_many_reports_before_the_allocation_stay_one_event():
    # 30 ranks report the failure before one prints the allocation: one event, on that line.
    lines = ["step 4: {'train/loss': 0.1}"]
    lines += [f"(A pid={i}) Actor training failed at step 5: OutOfMemoryError: CUDA out of memory." for i in range(30)]
    lines.append("(A pid=99) " + OOM_LINE)
    (ev,) = events_of("\n".join(lines))
    assert (ev.kind, ev.step, ev.line, ev.details["tried_to_allocate"]) == ("oom", 5, 32, "2.46 GiB")
    assert (
        ev.details["repeats"] == 31 and len(ev.details["also_at_lines"]) == 20 and ev.details["also_at_lines"][0] == 2
    )


def test_a_nan_metric_keeps_its_records_step_when_a_later_failure_names_another():
    # The actor's step-8 line carries a NaN loss; the next step then fails (`... failed at step 9`)
    # within the NaN event's after-context: the NaN stays at step 8, where the record puts it.
    lines = [
        "(MegatronTrainRayActor pid=1) step 8: {'train/loss': nan, 'train/grad_norm': 0.3}",
        "(MegatronTrainRayActor pid=1) perf 8: {'perf/step_time': 30.5}",
        "(ServeReplica:default:Actor pid=2) Actor training failed at step 9: OutOfMemoryError: " + OOM_LINE,
    ]
    evs = find_events(lines, "stdout")
    assert [(e.kind, e.step, e.details["step_source"]) for e in evs] == [("nan", 8, "metric"), ("oom", 9, "message")]

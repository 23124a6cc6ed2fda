import math
import random

import pytest

from reportgen.ingest.console import MAX_LINE, ConsoleParser, parse_dict, parse_file, parse_metric_line

from .conftest import GARBLED, relax_stdout, step_time


def one_pass(text: str) -> tuple[list, ConsoleParser]:
    p = ConsoleParser("stdout")
    recs = p.feed(text) + p.close()
    return recs, p


def test_reads_every_metric_line(stdout_text):
    recs, p = one_pass(stdout_text)
    kinds = [(r.kind, r.index) for r in recs]
    # 9 complete steps x (perf, rollout, step, perf) + the rollout manager's perf 9 before the OOM
    assert len(recs) == 9 * 4 + 1
    assert kinds[:4] == [("perf", 0), ("rollout", 0), ("step", 0), ("perf", 0)]
    assert kinds[-1] == ("perf", 9)
    assert p.skipped == 1  # the garbled line
    assert p.lines == stdout_text.count("\n")


def test_values_nan_inf_and_nested(stdout_text):
    recs, _ = one_pass(stdout_text)
    step3 = next(r for r in recs if r.kind == "step" and r.index == 3)
    assert math.isnan(step3.values["train/grad_norm"])
    assert step3.values["train/lr-pg_0"] == 1e-06
    actor_perf = [r for r in recs if r.kind == "perf" and "perf/step_time" in r.values]
    assert [r.values["perf/step_time"] for r in actor_perf] == [step_time(s) for s in range(9)]
    assert actor_perf[0].values["perf/actor_train_tflops"] == math.inf
    assert actor_perf[0].values["perf/mfu/actor_train"] == -math.inf
    roll = next(r for r in recs if r.kind == "rollout" and r.index == 5)
    assert roll.values["rollout/meta"] == {"source": "openr1mm", "note": "it's {ok}"}
    assert roll.values["rollout/raw_reward"] == pytest.approx(0.6)


def test_line_numbers_and_stream(stdout_text):
    recs, _ = one_pass(stdout_text)
    lines = stdout_text.split("\n")
    for r in recs:
        assert f"{r.kind} {r.index}: {{" in lines[r.line_no - 1]
        assert r.stream == "stdout"


@pytest.mark.parametrize("seed", range(5))
def test_arbitrary_chunks_same_as_one_pass(stdout_text, seed):
    expect, p1 = one_pass(stdout_text)
    rng = random.Random(seed)
    p = ConsoleParser("stdout")
    got, i = [], 0
    while i < len(stdout_text):
        n = rng.choice([1, 2, 3, 7, 64, 500, 4096])
        got += p.feed(stdout_text[i : i + n])
        i += n
        assert len(p._partial) <= len(max(stdout_text.split("\n"), key=len))
    got += p.close()
    assert repr(got) == repr(expect)  # repr: nan != nan
    assert (p.lines, p.skipped) == (p1.lines, p1.skipped)


def test_split_inside_ansi_escape_and_unterminated_last_line():
    text = "\x1b[32m2026-08-05\x1b[0m perf 1: {'perf/step_time': 3.5}\n\x1b[36mx\x1b[0m step 2: {'train/loss': 0.5}"
    cut = text.index("[36m")  # chunk boundary in the middle of an escape sequence
    p = ConsoleParser()
    recs = p.feed(text[:cut]) + p.feed(text[cut:])
    assert [(r.kind, r.values) for r in recs] == [("perf", {"perf/step_time": 3.5})]
    last = p.close()
    assert [(r.kind, r.index, r.line_no) for r in last] == [("step", 2, 2)]


def test_feed_line_matches_feed(stdout_text):
    expect, _ = one_pass(stdout_text)
    p = ConsoleParser()
    got = [r for line in stdout_text.splitlines(keepends=True) if (r := p.feed_line(line))]
    assert repr(got) == repr(expect)


def test_parse_file(tmp_path, stdout_text):
    f = tmp_path / "log"
    f.write_text(stdout_text)
    assert repr(list(parse_file(f, stream="stderr"))) == repr(
        [r.__class__(r.kind, r.index, r.values, r.line_no, "stderr") for r in one_pass(stdout_text)[0]]
    )


def test_garbled_and_non_metric_lines():
    assert (
        parse_metric_line(
            GARBLED.replace("\x1b[32m", "").replace("\x1b[36m", "").replace("\x1b[1m", "").replace("\x1b[0m", "")
        )
        is True
    )
    # A critic's line is its own kind, never the actor's `step`; its untagged step key is not kept.
    assert parse_metric_line("critic-step 3: {'train/critic-value_loss': 0.5, 'train/step': 3}") == (
        "critic-step",
        3,
        {"train/critic-value_loss": 0.5},
    )
    assert parse_metric_line("pre-critic-step 3: {'a': 1}") is False
    assert parse_metric_line("xcritic-step 3: {'a': 1}") is False
    assert parse_metric_line("Actor training failed at step 9: OutOfMemoryError") is False
    assert parse_metric_line("perf 3: {'a': undefined_name}") is True
    assert parse_metric_line("(RolloutManager pid=9) eval 4: {'eval/aime': 0.25} [repeated 2x across cluster]") == (
        "eval",
        4,
        {"eval/aime": 0.25},
    )


def test_dict_forms():
    assert parse_dict("{}") == {}
    assert parse_dict("{'a': 1, 'b': -2.5e-3, 'c': -inf}") == {"a": 1.0, "b": -2.5e-3, "c": -math.inf}
    d = parse_dict("{'a': np.float64(0.5), 'b': tensor(2), 'c': [1, 'x'], 'd': None, 'e': True, 'f': {'g': nan}}")
    assert d is not None
    assert d["a"] == 0.5 and d["b"] == 2.0 and d["c"] == [1, "x"] and d["d"] is None and d["e"] is True
    assert math.isnan(d["f"]["g"])
    assert parse_dict("{'a': __import__('os')}") is None
    assert parse_dict("[1, 2]") is None
    assert parse_dict("{'a': 1,") is None


def test_overlong_line_is_dropped_and_counted():
    p = ConsoleParser()
    big = "perf 1: {'x': " + "1" * (MAX_LINE + 10)
    for i in range(0, len(big), 1 << 20):
        p.feed(big[i : i + (1 << 20)])
        assert len(p._partial) <= MAX_LINE
    recs = p.feed("}\nperf 2: {'perf/a': 1.0}\n")
    assert [(r.index, r.line_no) for r in recs] == [(2, 2)]
    assert p.skipped == 1 and p.lines == 2


def test_carriage_return_progress_bar():
    p = ConsoleParser()
    recs = p.feed(" 50%|####  |\r100%|########|\rperf 4: {'perf/step_time': 2.0}\r\n")
    assert [(r.index, r.values) for r in recs] == [(4, {"perf/step_time": 2.0})]


def test_full_log_without_failure_has_no_skips():
    recs, p = one_pass(relax_stdout(steps=4, fail=False).replace(GARBLED + "\n", ""))
    assert p.skipped == 0 and len(recs) == 16


WRAPPED = (
    "[2026-08-05 10:11:11] train.py:1 - starting\n"
    "[2026-08-05 10:11:12] data.py:123 - perf 7: {'perf/step_time': 31.2\n"  # a terminal broke the line
    "5, 'perf/train_time': 14.5, 'perf/step_resp_token_\n"
    "per_s': 250.25}\n"
    "[2026-08-05 10:11:13] data.py:123 - step 8: {'train/loss': 0.5, 'train/gr\n"  # its end never came
    "[2026-08-05 10:11:14] train.py:9 - bye\n"
)


def test_a_wrapped_metric_line_is_read_joined_and_an_unclosed_one_is_numbered():
    for chunk in (1 << 20, 5, 61):
        p = ConsoleParser()
        recs = [r for i in range(0, len(WRAPPED), chunk) for r in p.feed(WRAPPED[i : i + chunk])] + p.close()
        assert [(r.kind, r.index, r.line_no, r.values) for r in recs] == [
            ("perf", 7, 2, {"perf/step_time": 31.25, "perf/train_time": 14.5, "perf/step_resp_token_per_s": 250.25})
        ]
        assert (p.joined, p.joined_at, p.skipped, p.skipped_at, p.lines) == (1, [2], 1, [5], 6)


def test_a_head_broken_across_lines_is_mended():
    text = "[2026-08-05 10:11:12] data.py:123 - pe\nrf 7: {'perf/step_time': 31.25}\n[2026-08-05 10:11:13] x.py:1 - y\n"
    recs, p = one_pass(text)
    assert [(r.kind, r.index, r.line_no) for r in recs] == [("perf", 7, 2)] and p.skipped == 0


def test_unterminated_says_the_text_ends_mid_line():
    p = ConsoleParser()
    p.feed("a\nperf 1: {'x'")
    assert p.unterminated
    p.feed(": 1.0}\n")
    assert not p.unterminated

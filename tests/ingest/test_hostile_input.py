"""Hostile or corrupt log text: the ingest reads it as 'not a metric line', 'no step', or an
unreadable line (counted), never raises. Each case raised before its fix (docs/ingest.md,
"What the ingest does with hostile input")."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from reportgen.ingest import console
from reportgen.ingest.console import ConsoleParser, flatten, parse_dict, parse_metric_line
from reportgen.ingest.events import find_events, oom_details
from reportgen.ingest.external import _next_repeat
from tests.ingest.test_blockwise import blockwise, line_by_line

LONG = "9" * 5000  # more digits than int() reads (4,300)


def _all_paths(text: str) -> list[tuple[list[console.Record], int]]:
    """(records, skipped) of `text` by every reading: hook-less feed, line hook, block hook."""
    plain = ConsoleParser("stdout")
    recs = plain.feed(text) + plain.close()
    a, b = line_by_line(text, 1 << 20), blockwise(text, 1 << 20)
    return [(recs, plain.skipped), (a[0], a[3].skipped), (b[0], b[3].skipped)]


@pytest.mark.parametrize("digits", [LONG, "1" * 19])
def test_overlong_head_number_is_no_metric_line(digits):
    line = f"step {digits}: {{'a': 1}}"
    assert parse_metric_line(line) is False
    for recs, skipped in _all_paths(f"{line}\nstep 2: {{'a': 2.0}}\n{line}\n"):
        assert [(r.kind, r.index, r.line_no) for r in recs] == [("step", 2, 2)] and skipped == 0


def test_eighteen_digit_head_number_is_read():
    n = 10**17 + 5
    assert parse_metric_line(f"critic-step {n}: {{'a': 1}}") == ("critic-step", n, {"a": 1.0})


def test_overlong_failed_at_step_names_no_step():
    lines = ["step 3: {'train/loss': 0.5}", f"RuntimeError: actor training failed at step {LONG}: boom", "done"]
    (ev,) = find_events(lines, "stdout")
    assert ev.kind == "fatal" and (ev.step, ev.details["step_source"]) == (4, "metrics")
    # The block path (push_block) reads it alike; inside a traceback too.
    tb = ["Traceback (most recent call last):", '  File "x.py", line 1, in <module>', lines[1]]
    for text in ("\n".join(lines) + "\n", "\n".join(lines[:1] + tb) + "\n"):
        (ev_b,) = blockwise(text, 1 << 20)[1].finish()
        assert ev_b.step == 4 and ev_b.details["step_source"] == "metrics"


def test_overlong_numbers_in_oom_ray_and_exit_lines():
    assert oom_details(f"GPU {LONG} has a total capacity of 79.25 GiB. Tried to allocate 1.2.3 GiB") == {}
    d = oom_details(f"Tried to allocate {LONG} MiB. GPU 0 has a total capacity of 79.25 GiB of which 1.5 GiB is free")
    assert d == {"gpu": 0, "total_capacity_gib": 79.25, "free_gib": 1.5}
    evs = find_events(
        [
            f"(MegatronTrainRayActor pid=1) Inf found in gradients [repeated {LONG}x across cluster]",
            f"Job failed with exit code {LONG}; last available logs (truncated to 20,000 chars):",
        ],
        "stdout",
    )
    assert [(e.kind, e.details.get("exit_code")) for e in evs] == [("fatal", None)]


def test_huge_int_in_a_dict_reads_as_infinite_on_both_paths():
    """JSON's parse_int=float reads 400 digits as inf; the ast path raised OverflowError."""
    big = "1" * 400
    assert parse_dict(f"{{'a': {big}}}") == {"a": math.inf}  # JSON path
    assert parse_dict(f"{{'a': -{big}, 'b': True}}") == {"a": -math.inf, "b": True}  # ast path (True)
    assert console.parse_dict_ast(f"{{'a': {big}}}") == {"a": math.inf}


DEEP = "step 1: " + "{'a': " * 1500 + "1" + "}" * 1500  # 10 KB; JSON's decoder raised RecursionError


def test_deeply_nested_line_is_unreadable_by_the_line_path():
    assert parse_metric_line(DEEP) is True


def test_deeply_nested_line_is_unreadable_by_the_block_path():
    # Between readable lines, so the block path's one-decode-per-block (_decode_many) meets it.
    text = f"step 1: {{'a': 1.0}}\n{DEEP}\nstep 2: {{'a': 2.0}}\n"
    for recs, skipped in _all_paths(text):
        assert [(r.index, r.line_no) for r in recs] == [(1, 1), (2, 3)] and skipped == 1
    assert console._decode_many(["{'a': 1}", DEEP[8:], "{'b': 2}"]) == [{"a": 1.0}, None, {"b": 2.0}]


def test_flatten_does_not_recurse():
    """Dicts as deep as JSON reads them (near the interpreter's limit) flatten at any stack depth."""
    d: dict = {"x": 1.0}
    for _ in range(5000):
        d = {"a": d, "b": 2.0}
    got = list(flatten({"n": d, "m": 3.0}, "step"))
    assert len(got) == 5002 and got[0] == ("step/n/a/" + "a/" * 4999 + "x", 1.0)
    assert got[1] == ("step/n/" + "a/" * 4999 + "b", 2.0) and got[-1] == ("step/m", 3.0)


def test_repeat_folder_names_int_cannot_read_are_not_repeats(tmp_path: Path):
    for name in ("2", "\u00b2", "7" * 200):  # isdigit takes "²"; 200 digits is no repeat number
        (tmp_path / name).mkdir()
    (tmp_path / "3").write_text("a file, not a repeat")
    assert _next_repeat(tmp_path) == 3

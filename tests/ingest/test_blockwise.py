"""The block-wise ingest (C-speed skipping of uninteresting lines, columnar metrics) must give
exactly what the line-by-line scan gives: same records, events, argv lines and metrics table.

The reference here is the per-line path that stays in the code (`ConsoleParser(on_line=...)`
feeding `EventScanner.push` and `Collector.push`, and `merge_sources` on `console_frame`)."""

from __future__ import annotations

import random

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest

from reportgen.ingest import console
from reportgen.ingest.console import ConsoleParser
from reportgen.ingest.events import EventScanner, lines_with
from reportgen.ingest.log_stream import Collector
from reportgen.ingest.metrics import ConsoleMetrics, console_frame, merge_sources, write_metrics, write_metrics_table
from tests.ingest.conftest import ACTOR, DUMP, OOM_LINE, ROLL, TRACE, relax_stdout

TB = [
    ACTOR + "Traceback (most recent call last):",
    ACTOR + '  File "/relax/train.py", line 12, in <module>',
    ROLL + "interleaved: found NaN in rewards",
    ACTOR + "    main()",
    ACTOR + OOM_LINE,
    ACTOR + "Training loop failed with error: OutOfMemoryError, failed at step 7",
]
TB2 = ["Traceback (most recent call last):", '  File "x.py", line 3, in f', "ValueError: bad shape"]


def mixed_log(seed: int) -> str:
    """Relax-style lines with every kind of event, trace and dump lines, \\r progress bars,
    repeated keys that change value, and lines close together (overlapping excerpts)."""
    rng = random.Random(seed)
    base = relax_stdout(9).splitlines()
    extra = [
        "\n".join(TB),
        "\n".join(TB2),
        *TB,
        TRACE,
        DUMP.rstrip("\n"),
        *DUMP.splitlines(),
        "progress 10%\r{bar}\rperf 3: {'perf/step_time': 2.5}\r",
        "+ echo start",
        "Graceful shutdown triggered (atexit) \u2014 cleaning up SGLang engines...",
        "Graceful shutdown triggered (SIGTERM) \u2014 cleaning up SGLang engines...",
        "Main func successfully",
        ACTOR + "Inf found in gradients (step_id=0, loss_scale=65536.0), skipping parameter update",
        "Status message: Job entrypoint command failed with exit code 1, last available logs (truncated to 20,000 chars):",
        "x" * 300,
        "",
        "\r",
        "perf 2: {'perf/train_time': 99.0, 'perf/x': nan}",
        "step 4: {'train/loss': inf}",
        "(W pid=9) + python3 -m relax.entrypoints.train --lr 1e-6",
    ]
    out = [DUMP.rstrip("\n"), "\n".join(TB2)]
    for line in base * 3:
        out.append(line)
        if rng.random() < 0.15:
            out.extend(f"{ACTOR}idle {i}" for i in range(rng.randrange(0, 12)))
            out.extend(rng.sample(extra, rng.randrange(1, 4)))
        if rng.random() < 0.3:  # a stretch of lines no scan needs: passed over in bulk
            out.extend(f"{ROLL}worker {i}: loading shard" for i in range(rng.randrange(1, 20)))
    return "\n".join(out) + "\n" + "tail without newline {'a': 1"


def line_by_line(text: str, chunk: int):
    scanner, col, recs = EventScanner("stdout"), Collector(), []

    def on_line(n, line, rec):
        scanner.push(n, line, rec)
        col.push(line)

    p = ConsoleParser("stdout", on_line=on_line)
    for i in range(0, len(text), chunk):
        recs += p.feed(text[i : i + chunk])
    recs += p.close()
    return recs, scanner, col, p


def blockwise(text: str, chunk: int):
    scanner, col, recs, metrics = EventScanner("stdout"), Collector(), [], ConsoleMetrics()

    def on_block(first, body, got):
        lines = body.split("\n")
        lines = [x[:-1] if x.endswith("\r") else x for x in lines]
        scanner.push_block(first, body, lines, got)
        col.push_block(body, lines)

    p = ConsoleParser("stdout", on_block=on_block)
    for i in range(0, len(text), chunk):
        recs += p.feed(text[i : i + chunk])
    recs += p.close()
    metrics.extend(recs)
    return recs, scanner, col, p, metrics


@pytest.mark.parametrize("seed,chunk", [(1, 7), (2, 64), (3, 1000), (4, 1 << 20)])
def test_blockwise_equals_line_by_line(seed, chunk, tmp_path):
    text = mixed_log(seed)
    recs_a, sc_a, col_a, p_a = line_by_line(text, chunk)
    recs_b, sc_b, col_b, p_b, metrics = blockwise(text, chunk)
    assert recs_a == recs_b and len(recs_a) > 50
    assert (p_a.lines, p_a.skipped, p_a.records) == (p_b.lines, p_b.skipped, p_b.records)
    ev_a, ev_b = sc_a.finish(), sc_b.finish()
    assert [e.to_json() for e in ev_a] == [e.to_json() for e in ev_b]
    assert {e.kind for e in ev_a} >= {"oom", "nan", "traceback", "interrupted"}
    assert (sc_a.loss_scale, sc_a.clean_end, sc_a.replay_from) == (sc_b.loss_scale, sc_b.clean_end, sc_b.replay_from)
    assert (sc_a.done_step, sc_a.metric_lines, sc_a.any_index) == (sc_b.done_step, sc_b.metric_lines, sc_b.any_index)
    assert sc_a.lifecycle.attempts == sc_b.lifecycle.attempts
    assert list(col_a.trace) == list(col_b.trace) and col_a.trace
    assert col_a.dump == col_b.dump and col_a.dump
    assert list(col_a.tail) == list(col_b.tail)

    # Metrics: the columnar long table equals the pandas merge of the per-record frame.
    long_df, notes_a = merge_sources(console_frame(recs_a), None)
    table, notes_b = metrics.long_table()
    assert notes_a == notes_b and notes_a  # repeated keys with changed values are noted
    write_metrics(tmp_path / "a", long_df)
    write_metrics_table(tmp_path / "b", table)
    a, b = pq.read_table(tmp_path / "a" / "metrics.parquet"), pq.read_table(tmp_path / "b" / "metrics.parquet")
    assert_same_table(a, b)
    assert a.num_rows > 100 and np.isnan(a["value"].to_numpy()).any()
    rows, _ = metrics.long_rows()
    rows.ROW_GROUP = 7  # many row groups: the same table
    write_metrics_table(tmp_path / "c", rows)
    c = pq.ParquetFile(tmp_path / "c" / "metrics.parquet")
    assert c.metadata.num_row_groups > 10
    assert_same_table(a, c.read())


@pytest.mark.parametrize("chunk", [97, 4093, 1 << 20])
def test_lifecycles_read_alike_by_block_and_line(chunk):
    """Attempts (their lines, steps and times), events and steps of the lifecycle fixtures are the
    same whichever path reads them."""
    from tests.ingest import relax_corpus as rc

    for lines in (rc.retried(), rc.health_restart(), rc.restarts_exhausted(), rc.resumed()):
        text = rc.text(lines)
        recs_a, sc_a, _, _ = line_by_line(text, chunk)
        recs_b, sc_b, _, _, _ = blockwise(text, chunk)
        assert recs_a == recs_b
        assert [e.to_json() for e in sc_a.finish()] == [e.to_json() for e in sc_b.finish()]
        assert sc_a.lifecycle.attempts == sc_b.lifecycle.attempts
        assert all(a.started_utc for a in sc_a.lifecycle.attempts)
        assert (sc_a.done_step, sc_a.train_steps) == (sc_b.done_step, sc_b.train_steps)


def assert_same_table(a, b) -> None:
    """Same schema and pandas metadata, same rows; floats compared bit for bit (NaN included,
    which Arrow's `equals` counts as unequal)."""
    assert a.schema.equals(b.schema, check_metadata=True) and a.num_rows == b.num_rows
    for col in a.column_names:
        x, y = a[col].to_numpy(), b[col].to_numpy()
        if x.dtype == np.float64:
            x, y = x.view(np.int64), y.view(np.int64)
        assert (x == y).all(), col


def test_empty_metrics_table_written_like_write_metrics(tmp_path):
    table, notes = ConsoleMetrics().long_table()
    write_metrics_table(tmp_path / "b", table)
    write_metrics(tmp_path / "a", merge_sources(console_frame([]), None)[0])
    a, b = (pd.read_parquet(tmp_path / d / "metrics.parquet") for d in "ab")
    assert notes == [] and a.equals(b) and list(b.columns) == ["step", "key", "value", "source"]


def test_lines_with_finds_each_line_once():
    text = "a nan nan\nfoo\n+ x\nbar Inf\n\n+y nan"
    assert lines_with(text, ("nan", "Inf")) == [0, 3, 5]
    assert lines_with(text, ("\n+",)) == [2, 5]
    assert lines_with(text, ("zzz",)) == []


def _random_value(rng: random.Random, depth: int = 0):
    pick = rng.randrange(12 if depth < 2 else 10)
    if pick == 0:
        return rng.choice([float("nan"), float("inf"), -float("inf"), -0.0, 0.0])
    if pick == 1:
        return rng.choice([0, -0, 7, -3, 10**20, True, False, None])
    if pick == 2:
        return rng.choice(["openr1mm", "it's", 'say "hi"', "a: nan", "{x}", "tab\there", "é", "true", "", "nan"])
    if pick == 3:
        return [rng.randrange(5), rng.random()] if rng.random() < 0.5 else (1, "a")
    if pick >= 10:
        return {f"k{i}": _random_value(rng, depth + 1) for i in range(rng.randrange(0, 4))}
    return rng.choice([rng.random() * 10 ** rng.randrange(-8, 8), -rng.random(), 1e-06])


@pytest.mark.parametrize("seed", range(3))
def test_parse_dict_fast_paths_agree_with_ast(seed):
    from reportgen.ingest.console import parse_dict, parse_dict_ast

    rng = random.Random(seed)
    checked = 0
    for _ in range(800):
        d = {
            rng.choice(["a", "perf/x", "it's", "b c", "n: nan"]) + str(i): _random_value(rng)
            for i in range(rng.randrange(1, 6))
        }
        text = repr(d)
        for t in (text, text.replace("-0,", "-0 ,"), text.replace("True", "true").replace("None", "null")):
            # Only the quoted-strings path is checked: the older keys-only path is known to read
            # a few odd dicts differently (a string value holding ': nan', ints inside lists).
            if not ('"' not in t and "\\" not in t and t.count("'") == 2 * t.count(": ")):
                checked += 1
                assert repr(parse_dict(t)) == repr(parse_dict_ast(t)), t
    assert checked > 400


def test_loss_scale_skip_flag_is_for_one_record_in_both_paths():
    """A loss-scale skip marks the next `step N` record; a later record's NaN grad norm is an
    event, also when the marked record is one the block-wise path passes over in bulk."""
    text = "\n".join(
        [
            ACTOR + "Inf found in gradients (step_id=0, loss_scale=65536.0), skipping parameter update",
            ACTOR + "step 0: {'train/loss': 0.5, 'train/grad_norm': 1.5}",
            *(f"{ROLL}worker {i}: loading shard" for i in range(20)),
            ACTOR + "perf 1: {'perf/step_time': 2.0, 'train/grad_norm': nan}",
        ]
    )
    for chunk in (16, 1 << 20):
        ev_a = [e.to_json() for e in line_by_line(text, chunk)[1].finish()]
        ev_b = [e.to_json() for e in blockwise(text, chunk)[1].finish()]
        assert ev_a == ev_b
        assert [(e["kind"], e["line"], e["details"]["nonfinite"]) for e in ev_a] == [
            ("nan", 23, {"train/grad_norm": "nan"})
        ]


def test_critic_step_read_alike_by_block_and_line():
    """The block path's batched decoding keeps what `parse_metric_line` keeps of a critic's line."""
    text = (
        ACTOR
        + "step 3: {'train/loss': 0.5, 'train/step': 3}\n"
        + ACTOR
        + "critic-step 3: {'train/critic-value_loss': 0.25, 'train/step': 3}\n"
    )
    recs_a = line_by_line(text, 1 << 20)[0]
    recs_b = blockwise(text, 1 << 20)[0]
    plain = ConsoleParser("stdout").feed(text)
    assert recs_a == recs_b == plain
    assert [(r.kind, r.values) for r in plain] == [
        ("step", {"train/loss": 0.5, "train/step": 3.0}),
        ("critic-step", {"train/critic-value_loss": 0.25}),
    ]


def _reading(value: object) -> str:
    return repr(value)  # nan-aware: repr(nan) == repr(nan)


def test_decode_many_equals_parse_dict_per_text():
    """The block path decodes a block's JSON-ready dicts in place in one respelled text; each must
    read as `parse_dict` reads it alone, also texts that only parse together with a neighbour
    (an unclosed list closed by the next text, two dicts in one text, an early close)."""
    crafted = [
        "{'a': 1.5, 'b': nan, 'c': -inf, 'd': inf}",
        "{'x': [{'y': 1}",
        "{'z': 1}]}",
        "{'a': 1}, {'b': 2}",
        "{'a': 1}}",
        "{'k: {}': 1}",
        "{'n': {'m': 2, 'o': nan}}",
        "{'l': [1, 2, nan]}",
        "{'t': 3}",
        "{}",
        "{'a': 1",
    ]
    rng = random.Random(7)
    parts = ["{", "}", "[", "]", "'k'", "'v: '", ": ", ", ", "1", "-2.5e-3", "nan", "inf", "-inf", " "]
    fuzz = ["{" + " ".join(rng.choice(parts) for _ in range(rng.randrange(1, 12))) + "}" for _ in range(3000)]
    fuzz += [repr({f"k{i}": rng.random() for i in range(rng.randrange(0, 5))}) for _ in range(300)]
    texts = [t for t in crafted + fuzz if console._json_ready(t)]
    read = [console.parse_dict(t) for t in texts]
    assert len(texts) > 500 and sum(v is not None for v in read) > 300 and sum(v is None for v in read) > 100
    for cut in (1, 3, len(texts)):  # neighbours differ with where the batch starts
        for start in range(cut):
            batch = texts[start::cut]
            got = console._decode_many(batch)
            assert [_reading(v) for v in got] == [_reading(v) for v in read[start::cut]]


def test_superscript_digit_head_is_no_metric_line():
    """`str.isdigit` accepts `²`, which `int` cannot read: such a head is not a metric message
    (it used to make the ingest raise), by either path."""
    text = "step \u00b2: {'a': 1.0}\nstep 2: {'a': 2.0}\n"
    recs_a, recs_b = line_by_line(text, 1 << 20)[0], blockwise(text, 1 << 20)[0]
    assert recs_a == recs_b and [(r.kind, r.index, r.line_no) for r in recs_a] == [("step", 2, 2)]


def test_critic_nan_events_and_skips_alike_by_block_and_line():
    """A critic's nan loss / grad norm is a NaN event on both paths; after a loss-scale warning its
    nan grad norm is the critic's skip (the next `critic-step`, whatever actor line comes between)."""
    warn = "Inf found in gradients (step_id=0, loss_scale=65536.0), skipping parameter update"
    text = "\n".join(
        [
            "step 1: {'train/loss': 0.5, 'train/grad_norm': 1.0}",
            "critic-step 1: {'train/critic-value_loss': nan, 'train/critic-grad_norm': nan, 'train/step': 1}",
            warn,
            "step 2: {'train/loss': 0.4, 'train/grad_norm': 1.0}",
            "critic-step 2: {'train/critic-value_loss': 0.3, 'train/critic-grad_norm': nan, 'train/step': 2}",
            "step 3: {'train/loss': 0.4, 'train/grad_norm': 1.0}",
            "critic-step 3: {'train/critic-value_loss': 0.2, 'train/critic-grad_norm': inf, 'train/step': 3}",
        ]
    )
    sc_a, sc_b = line_by_line(text, 1 << 20)[1], blockwise(text, 1 << 20)[1]
    ev_a, ev_b = [e.to_json() for e in sc_a.finish()], [e.to_json() for e in sc_b.finish()]
    assert ev_a == ev_b
    assert [(e["step"], e["details"]["record"], e["details"]["nonfinite"]) for e in ev_a] == [
        (1, "critic-step 1", {"train/critic-value_loss": "nan", "train/critic-grad_norm": "nan"}),
        (3, "critic-step 3", {"train/critic-grad_norm": "inf"}),
    ]
    assert sc_a.critic_skipped == sc_b.critic_skipped == {2} and sc_a.loss_scale["steps"] == 0

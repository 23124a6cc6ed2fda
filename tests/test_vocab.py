"""The domain vocabulary: its words agree with the spec's defaults and with each other."""

from __future__ import annotations

import ast
from pathlib import Path

from reportgen import vocab
from reportgen.specfile.model import AnalysisSpec

PACKAGE = Path(vocab.__file__).parent


def test_spec_defaults_are_known_metrics() -> None:
    spec = AnalysisSpec()
    for key in (spec.primary, *spec.secondary):
        assert key in vocab.METRICS
        assert vocab.METRICS[key].direction is not None
    assert vocab.metric(spec.primary).title == "response tokens/s"
    assert vocab.metric("perf/not_a_relax_key").title == "not a relax key"


def test_failure_kind_orders_hold_the_same_kinds() -> None:
    assert set(vocab.FAILURE_DISPLAY_ORDER) == set(vocab.FAILURE_KINDS)
    assert vocab.LOG_FAILURE_KINDS.issubset(vocab.FAILURE_KINDS)


def test_roles() -> None:
    assert vocab.profile_arm("A1") == "profile-A1"
    assert vocab.run_role("profile-A1") == vocab.PROFILE
    assert vocab.run_role("A1") == vocab.FORMAL
    assert vocab.run_role("A1", "profile") == vocab.PROFILE


WORDS = {*vocab.VERDICT_STATUSES, *vocab.DIRECTIONS} - {vocab.Verdicts.FAILED}
"""Verdict statuses and directions, spelt only in vocab.py. ("failed" is also a run status,
`vocab.Status.FAILED`, and a log's end, so it is not searched for.)"""


def _stray_words(path: Path) -> list[str]:
    """Each string constant of `path` that is exactly one of WORDS (docstrings and f-string parts
    are prose, and a word inside a sentence is no literal)."""
    tree = ast.parse(path.read_text())
    prose = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    return [
        f"{path.relative_to(PACKAGE.parent)}:{node.lineno}: {node.value!r}"
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and node.value in WORDS and id(node) not in prose
    ]


def test_verdict_and_direction_words_are_spelt_in_vocab_only() -> None:
    stray = [hit for path in sorted(PACKAGE.rglob("*.py")) if path.name != "vocab.py" for hit in _stray_words(path)]
    assert stray == [], "use reportgen.vocab (Verdicts, VERDICT_LABELS, HIGHER/LOWER, gain) instead"


def test_gain_is_the_better_way_of_a_ratio() -> None:
    assert vocab.gain(1.25, vocab.HIGHER) == 1.25
    assert vocab.gain(1.25, vocab.LOWER) == 0.8
    assert vocab.gain(0.0, vocab.LOWER) == float("inf")
    assert vocab.is_better(0.8, vocab.LOWER) and not vocab.is_better(0.8, vocab.HIGHER)


def test_every_verdict_has_a_label_and_any_key_a_title() -> None:
    assert set(vocab.VERDICT_LABELS) == set(vocab.VERDICT_STATUSES)
    assert vocab.verdict_label("new_status").word == "new_status"
    assert vocab.title(vocab.STEP_TIME) == "step time"
    assert vocab.title(f"{vocab.STEP_TIME}:p95") == "step time p95"
    assert vocab.title("perf/decode_tokens_per_s") == "decode tokens per s"
    assert vocab.title("gpu/util_mean") == "util mean (gpu)"

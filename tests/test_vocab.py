"""The domain vocabulary: its words agree with the spec's defaults and with each other."""

from __future__ import annotations

from reportgen import vocab
from reportgen.spec.model import AnalysisSpec


def test_spec_defaults_are_known_metrics() -> None:
    spec = AnalysisSpec()
    for key in (spec.primary, *spec.secondary):
        assert key in vocab.METRICS
        assert vocab.METRICS[key].direction is not None
    assert vocab.metric(spec.primary).title == "response tokens/s"
    assert vocab.metric("perf/not_a_relax_key").title == "perf/not_a_relax_key"


def test_failure_kind_orders_hold_the_same_kinds() -> None:
    assert set(vocab.FAILURE_DISPLAY_ORDER) == set(vocab.FAILURE_KINDS)
    assert vocab.LOG_FAILURE_KINDS.issubset(vocab.FAILURE_KINDS)


def test_roles() -> None:
    assert vocab.profile_arm("A1") == "profile-A1"
    assert vocab.run_role("profile-A1") == vocab.PROFILE
    assert vocab.run_role("A1") == vocab.FORMAL
    assert vocab.run_role("A1", "profile") == vocab.PROFILE

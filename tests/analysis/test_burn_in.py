"""Windows declared from evidence (analysis/burn_in.py): the committed one-H200 campaigns put A3's
warm-up at step 23 in each of them, so the burn-in each proposes for the others is 24 and the
windows 24-35 and 36-47; a long warm-up is not read as drift (analysis/warmup.py)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from reportgen.analysis import burn_in, warmup
from reportgen.errors import UserError
from reportgen.store.run_folder import read_experiment

KEY = "perf/step_resp_token_per_s"
H200 = ("showcase-1xh200-grpo-offload-r2", "showcase-1xh200-grpo-offload-r3", "showcase-1xh200-grpo-offload-r4")


def _evidence(runs: Path, name: str) -> burn_in.Evidence:
    return burn_in.evidence_of(name, "1 x NVIDIA H200", read_experiment(runs / name).runs, KEY)


@pytest.mark.parametrize("target", H200)
def test_each_campaign_gets_the_burn_in_the_others_show(target: str, committed_runs: Path) -> None:
    others = [_evidence(committed_runs, n) for n in H200 if n != target]
    p = burn_in.propose(others, steps=48, arms=["baseline", "A1", "A2", "A3"])
    assert p.burn_in == 24 and p.windows == (("W1", 24, 35), ("W2", 36, 47))
    assert p.latest["A3"][0] == 23 and p.unknown == ("A2",)  # A2 ran out of memory: no steps to locate
    assert all(8 <= e.settled["baseline"] <= 14 for e in others)  # type: ignore[operator]
    assert p.toml().startswith('warmup_steps = 24\nwindows = [{ name = "W1", start = 24, end = 35 }')
    assert "A3 at step 23" in p.reason() and "no evidence for A2" in "\n".join(p.lines())


def test_too_few_steps_left_or_nothing_located_is_one_clear_line() -> None:
    ev = burn_in.Evidence("x", "", 48, {"A3": 40, "baseline": None})
    with pytest.raises(UserError, match="leaves 7 of 48, fewer than 2 windows of 4"):
        burn_in.propose([ev])
    with pytest.raises(UserError, match="no arm of baseline settles in x"):
        burn_in.propose([ev], arms=["baseline"])
    # three windows when asked, the last one taking the remainder
    p = burn_in.propose([burn_in.Evidence("y", "", 48, {"A1": 11})], windows=3)
    assert p.windows == (("W1", 12, 23), ("W2", 24, 35), ("W3", 36, 47))


def test_a_long_warm_up_is_found_not_read_as_drift() -> None:
    """A3's shape on every GPU campaign: slow until step 23 of 48. With MSER's search stopping at
    half the run (24), it was read as drift in about a fifth of campaigns; now it is found."""
    rng = np.random.default_rng(5)
    found = []
    for _ in range(40):
        runs = [
            np.r_[np.linspace(0.6, 1.0, 24)[:-1], np.ones(25)] * (1 + 0.08 * rng.standard_normal(48)) for _ in range(3)
        ]
        y = np.median([r / np.median(r[24:]) for r in runs], axis=0)
        d = warmup.mser(y)
        found.append(None if warmup.trends(y, d) else warmup.steady_start(y))
    assert sum(f is None for f in found) <= 2, found
    assert np.median([f for f in found if f is not None]) >= 17


def test_a_trend_through_the_run_is_drift() -> None:
    y = np.linspace(1.2, 0.94, 60) * (1 + 0.002 * np.random.default_rng(2).standard_normal(60))
    assert warmup.trends(y, warmup.mser(y))
    steady = 1 + 0.05 * np.random.default_rng(3).standard_normal(48)
    assert not warmup.trends(steady, warmup.mser(steady))

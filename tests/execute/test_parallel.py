"""The block scheduler (reportgen.execute.parallel) with real runs of the CPU stand-in on two slots of
this machine's local executor, and the campaign's `ahead` before any block is complete: blocks run
two at a time, each slot one run at a time in the block's interleaved order; a block's runs join
the experiment only once all have ended, so a look never sees a block in flight; every block
handed out is kept; a block a stopped runner left in flight is archived whole and redone; max_pairs
counts the blocks in flight."""

from __future__ import annotations

import itertools
import json
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest

from reportgen.campaign import Sequential
from reportgen.errors import UserError
from reportgen.execute.executor import RunOptions
from reportgen.execute.parallel import IN_FLIGHT, Slot, run_blocks
from reportgen.execute.process import LocalExecutor
from reportgen.execute.progress import ProgressDisplay
from reportgen.pipeline import load_plan
from reportgen.store import layout
from tests.execute.conftest import make_experiment
from tests.helpers import wait_for


class _Looks:
    """A schedule of `count` blocks of both arms that records, at each ask, which blocks the
    experiment folder holds and which are in flight (what a look would be taken on)."""

    def __init__(self, exp_dir: Path, count: int) -> None:
        self.exp_dir, self.count = exp_dir, count
        self.asks: list[tuple[int, set[int], set[int]]] = []

    def ahead(self, block: int, in_flight: Mapping[int, Sequence[str]]) -> Sequence[str] | None:
        seen = {rep for _, rep, _ in layout.iter_runs(self.exp_dir)}
        self.asks.append((block, seen, set(in_flight)))
        return ["baseline", "A1"] if block <= self.count else None


@pytest.mark.slow  # eight real runs, two at a time: about 10 s
def test_blocks_run_two_at_a_time_and_join_the_experiment_whole(tmp_path: Path) -> None:
    spec = make_experiment(tmp_path / "r", name="blk", steps=3, sleep=0.5, order=None, repeats=None)
    plan = load_plan(spec, None)
    options = RunOptions(runs_root=tmp_path / "runs", profiler=False, poll_s=0.05)
    exp_dir = options.runs_root / "blk"
    looks = _Looks(exp_dir, 4)
    slots = [Slot(LocalExecutor(), {"slot": i}, f"slot {i}") for i in (1, 2)]
    outcome = run_blocks(plan, options, slots, looks, display=ProgressDisplay(live=False), stop=threading.Event())
    assert not outcome.interrupted and len(outcome.runs) == 8
    assert not (exp_dir / IN_FLIGHT).exists()
    made = {
        (arm, rep): json.loads((path / "manifest.json").read_text()) for arm, rep, path in layout.iter_runs(exp_dir)
    }
    assert sorted(made) == sorted((a, k) for a in ("A1", "baseline") for k in (1, 2, 3, 4))
    assert {m["status"] for m in made.values()} == {"complete"}
    # Blocks 1 and 2 were handed out at once, before any block was in the experiment folder; each
    # later ask saw whole blocks only (a block is in the folder with both runs, or not at all).
    assert looks.asks[0] == (1, set(), set()) and looks.asks[1] == (2, set(), {1})
    assert all(not (seen & flying) for _, seen, flying in looks.asks)
    # Each slot ran its block's runs one after another, odd blocks baseline first, even A1 first.
    for k in (1, 2, 3, 4):
        first, second = ("baseline", "A1") if k % 2 else ("A1", "baseline")
        a, b = made[(first, k)], made[(second, k)]
        assert a["ended_utc"] <= b["started_utc"] and a["executor"] == b["executor"], (a, b)
    # Both slots gave blocks, and two blocks ran at the same time.
    assert {m["executor"]["slot"] for m in made.values()} == {1, 2}
    spans = sorted((m["started_utc"], m["ended_utc"], m["executor"]["slot"]) for m in made.values())
    assert any(s2 < e1 and n1 != n2 for (_, e1, n1), (s2, _, n2) in itertools.pairwise(spans))


def test_the_campaign_hands_out_no_block_beyond_max_pairs_counting_blocks_in_flight(tmp_path: Path) -> None:
    spec = make_experiment(
        tmp_path / "r", name="cap", order=None, repeats=None, run={"until": "decided", "min_pairs": 2, "max_pairs": 3}
    )
    plan = load_plan(spec, None)
    said: list[str] = []

    def no_analysis(exp_dir: Path):  # no block is complete: nothing to analyse yet
        raise AssertionError("analysed with no complete block")

    seq = Sequential(plan, tmp_path / "runs" / "cap", no_analysis, log=said.append)
    assert seq.ahead(1, {}) == ["baseline", "A1"]
    assert seq.ahead(2, {1: ["baseline", "A1"]}) == ["baseline", "A1"]
    assert seq.ahead(3, {1: ["baseline", "A1"], 2: ["baseline", "A1"]}) == ["baseline", "A1"]
    assert seq.ahead(4, {k: ["baseline", "A1"] for k in (1, 2, 3)}) is None
    assert seq.stopped_by is not None and "last look (3 pairs)" in seq.stopped_by
    assert seq.ahead(5, {}) is None  # None is final
    assert said[:3] == [
        "campaign: pair 1 for A1",
        "campaign: pair 2 for A1; 1 other block(s) running",
        "campaign: pair 3 for A1; 2 other block(s) running",
    ]


@pytest.mark.slow  # real runs, one stopped: about 10 s
def test_a_block_left_in_flight_by_a_stopped_runner_is_archived_whole_and_redone(tmp_path: Path) -> None:
    spec = make_experiment(tmp_path / "r", name="stp", steps=6, sleep=0.5, order=None, repeats=None)
    plan = load_plan(spec, None)
    options = RunOptions(runs_root=tmp_path / "runs", profiler=False, poll_s=0.05, stop_grace_s=2.0)
    exp_dir = options.runs_root / "stp"
    stop = threading.Event()
    first: list = []
    runner = threading.Thread(
        target=lambda: first.append(
            run_blocks(
                plan,
                options,
                [Slot(LocalExecutor(), {}, "here")],
                _Looks(exp_dir, 1),
                display=ProgressDisplay(live=False),
                stop=stop,
            )
        )
    )
    runner.start()
    wait_for(lambda: (exp_dir / IN_FLIGHT / "1" / "baseline" / "1" / "stdout.log").is_file(), 60, "block 1 running")
    stop.set()
    runner.join(timeout=60)
    assert first[0].interrupted and not layout.iter_runs(exp_dir)  # nothing half-made in the experiment
    assert (exp_dir / IN_FLIGHT / "1").is_dir()

    again = run_blocks(
        plan,
        options,
        [Slot(LocalExecutor(), {}, "here")],
        _Looks(exp_dir, 1),
        display=ProgressDisplay(live=False),
        stop=threading.Event(),
    )
    assert not again.interrupted and not (exp_dir / IN_FLIGHT).exists()
    [archived] = list((exp_dir / "archive").glob("*/baseline-1"))
    assert json.loads((archived / "manifest.json").read_text())["status"] == "interrupted"
    made = {
        (arm, rep): json.loads((p / "manifest.json").read_text())["status"] for arm, rep, p in layout.iter_runs(exp_dir)
    }
    assert made == {("baseline", 1): "complete", ("A1", 1): "complete"}


def test_rerun_is_refused_for_a_campaign_in_blocks_before_anything_is_written(tmp_path: Path) -> None:
    spec = make_experiment(tmp_path / "r", name="rr", order=None, repeats=None, run={"until": "decided"})
    options = RunOptions(runs_root=tmp_path / "runs", rerun=("A1",))
    with pytest.raises(UserError, match="--rerun A1: a sequential campaign on a Ray cluster"):
        run_blocks(
            load_plan(spec, None),
            options,
            [Slot(LocalExecutor(), {}, "here")],
            _Looks(tmp_path / "runs" / "rr", 1),
            display=ProgressDisplay(live=False),
            stop=threading.Event(),
        )
    assert not (tmp_path / "runs").exists()

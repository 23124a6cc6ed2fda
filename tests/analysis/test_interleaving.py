"""The interleaving check (analysis/interleaving.py): the runs' recorded start times against the
design's block order, on constructed runs/ trees whose manifests say when each run started."""

from __future__ import annotations

import json
from pathlib import Path

from builder import FakeArm, analyse, make_experiment

from reportgen.analysis import interleaving
from reportgen.analyze import analyze_experiment
from reportgen.store.run_folder import read_experiment


def _runs(exp: Path):
    return [r for r in read_experiment(exp).runs if r.role == "formal"]


def _set_start(exp: Path, run: str, utc: str) -> None:
    path = exp / run / "manifest.json"
    m = json.loads(path.read_text())
    m["started_utc"] = utc
    path.write_text(json.dumps(m))


def test_runs_in_the_designs_order_give_no_warning(tmp_path: Path) -> None:
    doc = analyse(tmp_path, {"baseline": FakeArm(), "A1": FakeArm(speed=1.3), "A2": FakeArm(speed=1.2)}, repeats=3)
    assert not [w for w in doc.warnings if "order" in w or "block" in w]


T0 = 1_764_000_000.0  # make_experiment's first start; each run has a 4000 s slot


def _iso(t: float, *, whole: bool = False) -> str:
    from datetime import UTC, datetime

    d = datetime.fromtimestamp(t, UTC)
    return d.strftime("%Y-%m-%dT%H:%M:%SZ") if whole else d.strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def test_a_block_run_in_another_order_is_named(tmp_path: Path) -> None:
    exp = make_experiment(tmp_path / "runs", {"baseline": FakeArm(), "A1": FakeArm(speed=1.3)}, repeats=2)
    # Block 2 should run A1 (at T0 + 8000) then the baseline: the baseline started first.
    _set_start(exp, "baseline/2", _iso(T0 + 7000.25))
    [w] = interleaving.warnings(["baseline", "A1"], _runs(exp))
    assert w.startswith(
        "block 2 ran baseline, A1 by the runs' recorded start times; the design's interleaved order is A1, baseline"
    )
    analysed = json.loads(analyze_experiment(exp).read_text())
    assert w in analysed["warnings"]


def test_a_run_redone_after_later_blocks_is_named(tmp_path: Path) -> None:
    exp = make_experiment(tmp_path / "runs", {"baseline": FakeArm(), "A1": FakeArm(speed=1.3)}, repeats=3)
    _set_start(exp, "baseline/1", _iso(T0 + 30000))  # redone after block 3
    got = interleaving.warnings(["baseline", "A1"], _runs(exp))
    assert got[0].startswith("block 1 ran A1, baseline by the runs' recorded start times")
    assert got[1].startswith("block 2 started (A1/2) before block 1 had started all its runs (baseline/1)")


def test_sub_second_starts_are_told_apart_and_whole_seconds_within_one_second_are_not(tmp_path: Path) -> None:
    exp = make_experiment(tmp_path / "runs", {"baseline": FakeArm(), "A1": FakeArm(speed=1.3)}, repeats=2)
    # Block 2: the baseline 0.4 s before A1, recorded to the millisecond: out of order.
    _set_start(exp, "A1/2", _iso(T0 + 8000.6))
    _set_start(exp, "baseline/2", _iso(T0 + 8000.2))
    assert len(interleaving.warnings(["baseline", "A1"], _runs(exp))) == 1
    # The same starts as an older runner recorded them (whole seconds): not known, not called wrong.
    _set_start(exp, "A1/2", _iso(T0 + 8000.6, whole=True))
    _set_start(exp, "baseline/2", _iso(T0 + 8000.2, whole=True))
    assert interleaving.warnings(["baseline", "A1"], _runs(exp)) == []


def test_the_design_order_alternates_by_block() -> None:
    from reportgen.specfile.model import interleaved

    assert interleaved(["baseline", "A1", "A2"], 1) == ["baseline", "A1", "A2"]
    assert interleaved(["baseline", "A1", "A2"], 2) == ["A2", "A1", "baseline"]


def test_the_committed_two_gpu_showcase_ran_block_2_in_block_1s_order(committed_runs: Path) -> None:
    """Made before the runner alternated the blocks: its whole-second start times are far apart, so
    the check can tell, and says so."""
    root = committed_runs / "showcase-2xh200-grpo-offload"
    [w] = interleaving.warnings(["baseline", "A1", "A2", "A3"], _runs(root))
    assert w.startswith("block 2 ran baseline, A1, A2, A3 by the runs' recorded start times")


def test_new_runs_record_their_start_to_the_millisecond() -> None:
    import re

    from reportgen.store.run import parse_utc
    from reportgen.store.runs import utc_now

    now = utc_now()
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", now), now
    assert parse_utc("2026-12-01T10:00:00.250Z") == parse_utc("2026-12-01T10:00:00Z") + 0.25  # type: ignore[operator]

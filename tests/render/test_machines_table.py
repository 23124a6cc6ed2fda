"""A campaign whose blocks came from two machines of one class: the analysis' machine guardrail
passes (each pair on one machine), analysis.machines counts each machine's blocks from the runs,
and the experiment page lists the machines; a block holding runs of two machines fails the guardrail."""

from __future__ import annotations

from pathlib import Path

from reportgen.analysis.machines import machine_blocks
from reportgen.analyze import analyze_experiment
from reportgen.render.experiment_page import render
from reportgen.render.load import load_analysis, load_experiment
from reportgen.store.models import Manifest
from reportgen.store.runs import load_manifest
from tests.analysis.builder import FakeArm, make_experiment


def _move(exp: Path, arm: str, block: int, machine: str, host: str) -> None:
    """The run as if machine `machine` had made it (the builder writes one fingerprint an arm)."""
    run_dir = exp / arm / str(block)
    m = load_manifest(run_dir)
    assert m is not None
    doc = m.to_dict() | {"fingerprint_id": machine, "fingerprint": {"hostname": host}}
    Manifest.create(doc).write(run_dir / "manifest.json")


def _guardrail(exp: Path) -> str:
    doc = load_analysis(exp)
    comp = doc.comparison("A1")
    assert comp is not None
    return next(f"{g.status}: {g.reason}" for g in comp.guardrails if g.id == "same_machine")


def test_blocks_from_two_machines_are_counted_and_listed(tmp_path: Path) -> None:
    exp = make_experiment(tmp_path / "runs", {"baseline": FakeArm(), "A1": FakeArm(speed=1.3)}, repeats=3)
    for arm in ("baseline", "A1"):
        _move(exp, arm, 1, "fp-a", "lease-a")
        for block in (2, 3):
            _move(exp, arm, block, "fp-b", "lease-b")
    analyze_experiment(exp)
    assert _guardrail(exp).startswith("pass: ") and "2 machines" in _guardrail(exp)
    data = load_experiment(exp)
    shares = machine_blocks(data.runs)
    assert [(m.machine, m.host, m.blocks, m.runs, m.mixed) for m in shares] == [
        ("fp-a", "lease-a", (1,), 2, ()),
        ("fp-b", "lease-b", (2, 3), 4, ()),
    ]
    page = render(data, svg=False).markdown
    assert "### Machines {#machines}" in page and "3 blocks came from 2 machines of one class" in page
    assert '<td>lease-b</td><td style="text-align: right;">2 (2, 3)</td>' in page


def test_a_block_with_runs_of_two_machines_fails_the_guardrail(tmp_path: Path) -> None:
    exp = make_experiment(tmp_path / "runs", {"baseline": FakeArm(), "A1": FakeArm(speed=1.3)}, repeats=3)
    _move(exp, "A1", 2, "fp-b", "lease-b")
    analyze_experiment(exp)
    said = _guardrail(exp)
    assert said.startswith("fail: ") and "a pair's runs must be made on one machine" in said
    shares = machine_blocks(load_experiment(exp).runs)
    assert [m.mixed for m in shares] == [(2,), (2,)]


def test_one_machine_shows_no_machines_table(tmp_path: Path) -> None:
    exp = make_experiment(tmp_path / "runs", {"baseline": FakeArm(), "A1": FakeArm(speed=1.3)}, repeats=3)
    analyze_experiment(exp)
    assert "{#machines}" not in render(load_experiment(exp), svg=False).markdown

"""The sequential schedule's words when a block replaces a pair set aside (campaign.py): blocks
count the runs made, pairs only the valid ones, so the block that redoes one says so."""

from __future__ import annotations

from pathlib import Path

from reportgen.campaign import Sequential
from tests.analysis.builder import FakeArm, analyse


def test_the_block_that_replaces_a_set_aside_pair_names_it(tmp_path: Path) -> None:
    doc = analyse(
        tmp_path,
        {"baseline": FakeArm(disturb="cpu", disturb_repeats=(1,)), "A1": FakeArm(speed=1.3)},
        repeats=1,
        run={"until": "decided", "min_pairs": 3, "max_pairs": 5},
    )
    assert Sequential._why_more(doc) == " (still undecided; set aside, redone: A1 pair 1)"
    quiet = analyse(
        tmp_path / "q", {"baseline": FakeArm(), "A1": FakeArm(speed=1.3)}, repeats=1, run={"until": "decided"}
    )
    assert Sequential._why_more(quiet) == " (still undecided)"

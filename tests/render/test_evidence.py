"""Evidence ids of analysis.json become links: the one mapping (render/evidence.py) from an id and
its arm to a page and anchor, from the experiment page and from a candidate's page."""

from __future__ import annotations

from typing import get_args

import pytest
from pydantic import ValidationError

from reportgen.analysis.document import EvidenceId, EvidenceLink
from reportgen.render.evidence import CANDIDATE_ANCHORS, EXPERIMENT_ANCHORS, evidence_href


def test_every_id_has_one_place():
    assert set(EXPERIMENT_ANCHORS) | set(CANDIDATE_ANCHORS) == set(get_args(EvidenceId))
    assert not set(EXPERIMENT_ANCHORS) & set(CANDIDATE_ANCHORS)


def test_a_section_of_the_experiment_page():
    link = EvidenceLink(label="same-work check", id="same_work")
    assert evidence_href(link) == "#same-work"
    assert evidence_href(link, on="A2") == "../index.md#same-work"
    assert evidence_href(EvidenceLink(label="interval", id="interval_by_pair")) == "#confidence-and-verdicts"


def test_a_section_of_a_candidates_page():
    chart = EvidenceLink(label="memory up to the failure", id="memory_chart", arm="A2")
    assert evidence_href(chart) == "A2/index.md#chart-memory"
    assert evidence_href(chart, on="A2") == "#chart-memory"
    assert evidence_href(chart, on="A3") == "../A2/index.md#chart-memory"
    page = EvidenceLink(label="A2's write-up", id="candidate_page", arm="A2")
    assert evidence_href(page) == "A2/index.md"
    assert evidence_href(page, on="A2") == "index.md"  # the page itself (candidate_page leaves it out)
    assert evidence_href(EvidenceLink(label="A3 against A1", id="against_base", arm="A3")) == "A3/index.md#against-base"


def test_a_candidate_named_like_a_fixed_page_links_to_its_folder():
    link = EvidenceLink(label="write-up", id="candidate_page", arm="provenance")
    assert evidence_href(link) == "candidate-provenance/index.md"


def test_the_arm_goes_with_the_candidate_ids_only():
    with pytest.raises(ValidationError, match="needs arm"):
        EvidenceLink(label="chart", id="memory_chart")
    with pytest.raises(ValidationError, match="takes no arm"):
        EvidenceLink(label="runs", id="runs", arm="A2")

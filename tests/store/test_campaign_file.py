"""campaign.json through its model: version 2 lists the machines and their blocks; a version-1 file
(one machine, no `machines`) still reads, and is rewritten only when another machine joins."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from reportgen.errors import UserError
from reportgen.store.models import Campaign
from reportgen.store.runs import join_campaign, load_campaign, record_block, write_campaign

V1 = {
    "schema_version": 1,
    "kind": "reportgen.campaign",
    "campaign_id": "20261129T071500Z",
    "fingerprint_id": "f-a",
    "fingerprint": {"hostname": "gpu-7"},
    "started_utc": "2026-11-29T07:15:00Z",
}


def test_a_version_1_file_reads_with_its_one_machine_and_blocks_not_recorded(tmp_path: Path) -> None:
    c = Campaign.parse(dict(V1), "campaign.json")
    assert c.schema_version == 2 and c.class_id is None
    assert [(m.fingerprint_id, m.hostname, m.first_seen_utc, m.blocks) for m in c.machines] == [
        ("f-a", "gpu-7", "2026-11-29T07:15:00Z", None)
    ]
    assert c.blocks_of() == {}


def test_a_version_1_file_is_left_as_it_was_until_another_machine_joins(tmp_path: Path) -> None:
    path = tmp_path / "campaign.json"
    path.write_text(json.dumps(V1))
    join_campaign(tmp_path, fingerprint={"hostname": "gpu-7"}, fingerprint_id="f-a", legacy_blocks=[1])
    record_block(tmp_path, fingerprint_id="f-a", block=2)  # its blocks are read from its runs, not recorded
    assert json.loads(path.read_text()) == V1
    join_campaign(tmp_path, fingerprint={"hostname": "gpu-3"}, fingerprint_id="f-b", legacy_blocks=[1, 2])
    record_block(tmp_path, fingerprint_id="f-b", block=3)
    doc = json.loads(path.read_text())
    assert doc["schema_version"] == 2 and doc["fingerprint_id"] == "f-a"
    assert [(m["hostname"], m["blocks"]) for m in doc["machines"]] == [("gpu-7", [1, 2]), ("gpu-3", [3])]
    c = load_campaign(tmp_path)
    assert c is not None and c.blocks_of() == {1: "f-a", 2: "f-a", 3: "f-b"}


def test_a_new_campaign_lists_its_first_machine_and_records_each_block_once(tmp_path: Path) -> None:
    write_campaign(tmp_path, fingerprint={"hostname": "n1"}, fingerprint_id="f-1", class_id="k-1")
    record_block(tmp_path, fingerprint_id="f-1", block=1)
    record_block(tmp_path, fingerprint_id="f-1", block=1)
    c = load_campaign(tmp_path)
    assert c is not None and c.class_id == "k-1" and [m.blocks for m in c.machines] == [[1]]


def test_a_newer_campaign_file_is_refused(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="newer than this reportgen reads"):
        Campaign.parse({**V1, "schema_version": 3}, "campaign.json")

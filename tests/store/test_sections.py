"""The sections inside a run folder's files are typed (store/models.py `Section`): readers use
attributes, every committed file reads and writes back the same, a section written as null reads
as an empty one, and a key no model declares is kept."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from reportgen.errors import UserError
from reportgen.store.models import Campaign, Events, Fingerprint, LogEvent, Manifest


def _order(x: object) -> object:
    if isinstance(x, dict):
        return [(k, _order(v)) for k, v in x.items()]
    if isinstance(x, list):
        return [_order(v) for v in x]
    return x


@pytest.mark.parametrize(("pattern", "model"), [("*/*/*/manifest.json", Manifest), ("*/*/*/events.json", Events)])
def test_every_committed_file_reads_and_writes_back_the_same(pattern: str, model: type, committed_runs: Path) -> None:
    files = sorted(committed_runs.glob(pattern))
    assert files
    for path in files:
        raw = json.loads(path.read_text())
        assert _order(model.read(path).to_dict()) == _order(raw), path


def test_readers_use_attributes(committed_runs: Path) -> None:
    m = Manifest.read(committed_runs / "showcase-1xh200-grpo-offload-r4" / "baseline" / "1" / "manifest.json")
    assert m is not None
    assert m.fingerprint.gpus[0].name == "NVIDIA H200" and m.fingerprint.cpu_count == 16
    assert m.gpu.available and m.gpu.visible_indices() == {0}
    assert m.ingest.clean_ends() == {"stdout": m.ingest.clean_end[0].line} and m.ingest.trained() == 48
    assert m.attempts[0].end == "clean" and m.invariants.violations == [] and not m.hashes.recorded
    campaign = Campaign.read(committed_runs / "showcase-1xh200-grpo-offload-r4" / "campaign.json")
    assert campaign is not None and campaign.fingerprint.driver == m.fingerprint.driver


def test_a_null_section_reads_as_an_empty_one_and_unknown_keys_are_kept() -> None:
    m = Manifest.create({"fingerprint": None, "ingest": {"steps": 3, "new_counter": 7}, "gpu": None})
    assert not m.fingerprint and m.fingerprint == Fingerprint() and m.gpu.gpus == [] and m.attempts == []
    assert m.ingest.steps == 3 and m.to_dict()["ingest"] == {"steps": 3, "new_counter": 7}
    event = LogEvent.model_validate({"kind": "oom", "line": 3, "stream": "stderr", "step": 1, "extra": "kept"})
    assert event.where == "stderr.log:3" and event.to_dict()["extra"] == "kept" and event.details == {}


def test_a_section_of_the_wrong_shape_is_one_line() -> None:
    with pytest.raises(UserError, match=r"manifest.json: ingest.lifecycle.attempts.0.attempt"):
        Manifest.parse(
            {"schema_version": 1, "ingest": {"lifecycle": {"attempts": [{"attempt": "x"}]}}}, "manifest.json"
        )

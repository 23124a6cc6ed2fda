"""analysis.json's model: its documentation cannot drift, its examples validate, and a file of
another schema or shape is refused with one line naming `reportgen analyze`."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from reportgen.analysis import schema_doc
from reportgen.analysis.document import SCHEMA_VERSION, AnalysisDocument, parse
from reportgen.analysis.document.root import READABLE_SCHEMAS
from reportgen.errors import UserError
from reportgen.render.load import load_analysis
from reportgen.store.atomic import write_json

DOC = Path(__file__).resolve().parents[2] / "docs" / "formats" / "analysis.md"
SHOWCASE = Path(__file__).resolve().parents[2] / "runs" / "showcase-1xh200-grpo-offload-r2"


def _json_blocks(text: str) -> list[str]:
    return re.findall(r"^```json\n(.*?)^```", text, flags=re.S | re.M)


def _example() -> dict:
    blocks = [json.loads(b) for b in _json_blocks(DOC.read_text())]
    docs = [b for b in blocks if b.get("kind") == "reportgen.analysis"]
    assert docs, "docs/formats/analysis.md has no example document"
    return docs[0]


def test_generated_reference_matches_the_model():
    page = DOC.read_text()
    assert schema_doc.BEGIN in page and schema_doc.END in page
    assert schema_doc.replace_generated(page) == page, "run `PYTHONPATH=. python scripts/gen_formats.py`"


def test_drift_is_detected():
    page = DOC.read_text()
    edited = page.replace("| `inputs_sha256` |", "| `inputs_digest` |", 1)
    assert edited != page and schema_doc.replace_generated(edited) != edited


def test_documented_example_is_a_valid_document():
    doc = parse(_example(), "docs/formats/analysis.md")
    assert doc.schema_version == SCHEMA_VERSION
    assert doc.primary.key == "perf/step_resp_token_per_s"
    assert doc.comparison("A1") is not None and doc.arm("baseline") is not None
    # the example round-trips through the model unchanged
    assert AnalysisDocument.model_validate(doc.to_json()) == doc


def test_documented_refusal_line_is_the_real_one():
    data = {**_example(), "schema_version": 1}
    with pytest.raises(UserError) as err:
        parse(data, "runs/grpo-offload/analysis.json", "grpo-offload")
    assert f"```text\n{err.value}\n```" in DOC.read_text()


def test_committed_showcase_is_current_schema():
    doc = load_analysis(SHOWCASE)
    assert doc.experiment.name == SHOWCASE.name and doc.comparisons


@pytest.mark.parametrize("version", [min(READABLE_SCHEMAS) - 1, SCHEMA_VERSION + 1, None])
def test_other_schema_version_is_one_line(tmp_path, version):
    exp = tmp_path / "grpo-offload"
    data = {**_example(), "schema_version": version}
    write_json(exp / "analysis.json", data)
    with pytest.raises(UserError) as err:
        load_analysis(exp)
    msg = str(err.value)
    assert "\n" not in msg
    readable = ", ".join(map(str, READABLE_SCHEMAS))
    assert f"has schema {version}, this reportgen reads {readable}: run `reportgen analyze grpo-offload`" in msg


def test_an_older_readable_schema_is_read_and_named(tmp_path):
    exp = tmp_path / "grpo-offload"
    data = _example()
    for c in data["comparisons"]:
        c.pop("set_aside", None)  # what schema 8 added
    write_json(exp / "analysis.json", {**data, "schema_version": 7})
    doc = load_analysis(exp)
    assert doc.schema_version == 7 and doc.comparisons[0].set_aside == []
    assert doc.older_schema() == f"schema 7, this reportgen writes {SCHEMA_VERSION}"
    assert parse(_example(), "x").older_schema() is None


def test_the_previous_schema_still_reads():
    """Schema 8 lacks only fields with defaults (the warm-up cost, the machine spread and claim, the
    re-analysis record)."""
    doc = parse({**_example(), "schema_version": SCHEMA_VERSION - 1}, "old.json")
    assert doc.schema_version == SCHEMA_VERSION - 1 and doc.comparisons


def test_malformed_document_is_one_line(tmp_path):
    exp = tmp_path / "grpo-offload"
    data = _example()
    data["comparisons"][0]["verdict"]["status"] = "great"
    data["arms"][0]["runs"][0]["surprise"] = 1
    write_json(exp / "analysis.json", data)
    with pytest.raises(UserError) as err:
        load_analysis(exp)
    msg = str(err.value)
    assert "\n" not in msg and "2 problem(s)" in msg and "reportgen analyze grpo-offload" in msg
    assert msg.startswith(f"{exp / 'analysis.json'}: arms.0.runs.0.surprise")


def test_missing_and_foreign_files(tmp_path):
    exp = tmp_path / "x"
    exp.mkdir()
    with pytest.raises(UserError, match="missing; run `reportgen analyze x`"):
        load_analysis(exp)
    write_json(exp / "analysis.json", {"kind": "something.else"})
    with pytest.raises(UserError, match=r"not an analysis\.json"):
        load_analysis(exp)


@pytest.mark.parametrize(
    ("given", "source", "target"),
    [
        ("EXPERIMENT_AS_GIVEN", "Spec", "Experiment"),
        ("SETTINGS_AS_GIVEN", "AnalysisSpec", "Settings"),
    ],
)
def test_keys_restated_from_the_spec_are_fields_of_both_models(given, source, target):
    """analysis/report.py copies these keys by name (model_dump(include=...)): a misspelt or renamed
    one would be dropped silently and the document's default written instead."""
    from reportgen.analysis import document as doc
    from reportgen.analysis import report
    from reportgen.specfile import model as spec_model

    names = getattr(report, given)
    assert len(set(names)) == len(names)
    assert set(names) <= set(getattr(spec_model, source).model_fields)
    assert set(names) <= set(getattr(doc, target).model_fields)


def test_a_machine_class_in_words() -> None:
    """One rule for the history's series and plan-windows' evidence: GPUs by model and count with the
    driver; a CPU machine by its model and cores; hostnames left out."""
    from reportgen.analysis.document import Machine

    two = Machine(
        hostname="a", gpus=[{"name": "NVIDIA H200"}, {"name": "NVIDIA H200"}], driver="580.1", cpu_model="EPYC"
    )
    assert two.class_name() == "2 x NVIDIA H200, driver 580.1"
    assert Machine(hostname="b", gpus=[{"name": "NVIDIA H100"}]).class_name() == "1 x NVIDIA H100"
    assert Machine(cpu_model="AMD EPYC", cpu_count=2, gpus=[]).class_name() == "CPU: AMD EPYC, 2 cores"
    assert Machine().class_name() == "CPU: unknown CPU"

"""PR mode's derived spec (reportgen.specfile.derive): the baseline recipe at two revisions, as TOML
that loads back as the same spec."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from reportgen.specfile import load_spec
from reportgen.specfile.derive import CANDIDATE, revision_spec, toml_text
from reportgen.specfile.load import apply_profile

DEFAULT = Path(__file__).resolve().parents[2] / "scripts" / "recipes" / "default.toml"


def test_toml_text_reads_back_as_the_same_document():
    doc = {
        "name": "x",
        "n": 3,
        "f": 0.5,
        "on": True,
        "quote": 'a "b"\n\\c ü',
        "list": [1, "two", 3.0],
        "recipe": {"env": {"A": "1", "weird key": "2"}, "script": "r.sh"},
        "analysis": {"windows": [{"name": "W1", "start": 1, "end": 3}]},
        "candidates": [{"id": "A1", "set": {"--lr": 0.002}}, {"id": "A2", "remove": ["--x"]}],
    }
    assert tomllib.loads(toml_text(doc)) == doc


@pytest.mark.parametrize(("pairs", "sequential"), [(None, False), (1, False), (4, False), (2, True), (6, True)])
def test_the_default_experiment_at_two_revisions_loads_as_a_spec(tmp_path, pairs, sequential):
    raw = apply_profile(tomllib.loads(DEFAULT.read_text()), "gpu", DEFAULT)
    derived = revision_spec(
        raw,
        source_dir=DEFAULT.parent,
        repo=DEFAULT.parents[2],
        baseline_ref="a" * 40,
        candidate_ref="b" * 40,
        name="pr-1",
        candidate_title="HEAD against main",
        pairs=pairs,
        sequential=sequential,
    )
    path = tmp_path / "pr.toml"
    path.write_text(toml_text(derived))
    spec = load_spec(path)
    assert spec.title == "Code change: HEAD against main" and "b" * 40 in spec.hypothesis
    assert spec.name == "pr-1" and spec.profiler is None and [c.id for c in spec.candidates] == [CANDIDATE]
    assert (spec.recipe.ref, spec.candidates[0].ref) == ("a" * 40, "b" * 40)
    assert Path(spec.recipe.script or "").is_absolute() and spec.recipe.env["PRESET"] == "gpu-small"
    assert spec.candidates[0].edits().remove == () and spec.workload.steps == 48
    if pairs is None:
        assert (spec.run.until, spec.run.min_pairs, spec.run.max_pairs) == ("decided", 2, 16)
    elif sequential:
        assert (spec.run.until, spec.run.min_pairs, spec.run.max_pairs) == ("decided", 2, pairs)
    else:
        assert (spec.run.until, spec.run.repeats, spec.run.order) == ("fixed", pairs, "interleaved")

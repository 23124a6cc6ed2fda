"""An analysis.json of an older schema is named when met, never replaced or listed silently:
`reportgen analyze` says which schema it replaced, `reportgen ls` lists it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from reportgen.analysis.document import SCHEMA_VERSION
from reportgen.cli import main
from tests.analysis.builder import FakeArm, make_experiment


def _older(exp: Path) -> None:
    path = exp / "analysis.json"
    data = json.loads(path.read_text())
    path.write_text(json.dumps({**data, "schema_version": SCHEMA_VERSION - 1}))


def test_analyze_and_ls_name_an_older_schema(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    runs = tmp_path / "runs"
    exp = make_experiment(runs, {"baseline": FakeArm(), "A1": FakeArm(speed=1.3)}, repeats=1)
    assert main(["analyze", "exp", "--runs", str(runs)]) == 0
    assert "schema" not in capsys.readouterr().err  # a new one: nothing to say
    _older(exp)
    assert main(["ls", "--runs", str(runs)]) == 0
    err = capsys.readouterr().err
    note = f"{exp / 'analysis.json'}: schema {SCHEMA_VERSION - 1}, this reportgen reads {SCHEMA_VERSION}"
    assert err.strip() == f"{note}; run `reportgen analyze exp`"
    assert main(["analyze", "exp", "--runs", str(runs)]) == 0
    err = capsys.readouterr().err
    assert f"{note} (docs/formats/analysis.md#versions); analysed again" in err
    assert json.loads((exp / "analysis.json").read_text())["schema_version"] == SCHEMA_VERSION
    assert main(["ls", "--runs", str(runs)]) == 0
    assert capsys.readouterr().err == ""

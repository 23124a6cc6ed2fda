"""docs/examples/pr-report.yml, the documented CI example of PR mode (docs/revisions.md): a valid
workflow whose every `reportgen` and `mike` command uses options those commands have, that measures
the PR's head against the commit it branched from, and that updates one marked comment in place."""

from __future__ import annotations

import re
import shlex
import shutil
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from reportgen.cli import app, main
from tests.git_repos import workload_repo

EXAMPLE = Path(__file__).resolve().parents[2] / "docs" / "examples" / "pr-report.yml"


def _scripts() -> list[str]:
    flow = yaml.safe_load(EXAMPLE.read_text())
    return [step["run"] for job in flow["jobs"].values() for step in job["steps"] if "run" in step]


def _commands(tool: str) -> list[list[str]]:
    """Each `tool ...` command of the run steps, also inside `{ ...; }` groups."""
    lines = [ln.strip() for s in _scripts() for ln in s.replace("\\\n", " ").splitlines()]
    found = [m.strip() for ln in lines for m in re.findall(rf"(?:^|[;{{]\s+)({tool} [^;]+)", ln)]
    return [shlex.split(c) for c in found]


def test_the_workflow_runs_on_pull_requests_and_may_comment():
    flow = yaml.safe_load(EXAMPLE.read_text())
    assert set(flow[True]["pull_request"]["types"]) == {"opened", "synchronize", "reopened"}  # `on:` is YAML's true
    assert flow["permissions"] == {"contents": "write", "pull-requests": "write"}


def test_every_reportgen_option_it_uses_exists():
    commands = _commands("reportgen")
    assert {c[1] for c in commands} == {"run", "pr-body"}
    for command in commands:
        help_text = CliRunner().invoke(app, [command[1], "--help"], terminal_width=200).output
        for option in (w for w in command if w.startswith("--")):
            assert re.search(rf"(?<![\w-]){re.escape(option)}(?![\w-])", help_text), f"{command[1]} has no {option}"
    run = next(c for c in commands if c[1] == "run")
    assert run[run.index("--baseline-ref") + 1] == "$BASE" and run[run.index("--candidate-ref") + 1] == "$HEAD_SHA"


def test_it_measures_from_the_merge_base_and_updates_one_marked_comment():
    text = EXAMPLE.read_text()
    assert 'BASE=$(git merge-base "origin/${{ github.base_ref }}" HEAD)' in text
    assert "fetch-depth: 0" in text
    deploy = _commands("mike")[0]
    assert deploy[:4] == ["mike", "deploy", "--push", "--update-aliases"] and deploy[-1] == "pr-$PR"
    assert 'MARKER="<!-- reportgen:performance-report -->"' in text
    assert "-X PATCH" in text and "-X POST" in text and 'startswith(\\"$MARKER\\")' in text


def test_pr_mode_refuses_one_ref_alone_and_an_unknown_ref_in_one_line(tmp_path, capsys, monkeypatch):
    if shutil.which("git") is None:
        pytest.skip("needs git")
    monkeypatch.setenv("REPORTGEN_CACHE", str(tmp_path / "cache"))
    repo = tmp_path / "repo"
    first = workload_repo(repo)
    spec = str(repo / "spec.toml")
    runs = ["--runs", str(tmp_path / "runs")]
    assert main(["run", spec, "--baseline-ref", "main", *runs]) == 2
    assert "--baseline-ref and --candidate-ref go together" in capsys.readouterr().err
    assert main(["run", spec, "--baseline-ref", "nope", "--candidate-ref", "main", *runs]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "revision 'nope' is not a commit of" in err
    assert main(["run", spec, "--baseline-ref", "main", "--candidate-ref", "main", "--dry-run", *runs]) == 0
    out = capsys.readouterr().out
    assert f"plan for slow-step-{first[:7]}-{first[:7]}" in out and f"revision: {first}" in out
    assert not (tmp_path / "runs").exists()

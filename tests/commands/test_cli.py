"""The command line's own edges, tried as a new user would (Typer's CliRunner, and main())."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from reportgen.cli import app, main
from reportgen.commands.ls_cmd import columns
from reportgen.store.layout import resolve_runs_root
from tests.helpers import write_run_folder

LONG = "grpo-offload-and-recompute-on-two-h200-with-a-long-name"


def _runs(root: Path, experiment: str = LONG) -> Path:
    run = root / experiment / "baseline" / "1"
    manifest = {"role": "formal", "status": "complete", "started_utc": "2026-11-29T08:04:49Z", "duration_s": 12.5}
    write_run_folder(run, manifest)
    (root / experiment / "experiment.toml").write_text('name = "x"\n')
    return root


def test_bare_reportgen_prints_help_and_succeeds() -> None:
    res = CliRunner().invoke(app, [])
    assert res.exit_code == 0, res.output
    assert "Usage: reportgen" in res.output
    assert "Traceback" not in res.output
    assert res.exception is None


def test_bare_reportgen_through_main(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 0
    out = capsys.readouterr()
    assert "Commands:" in out.out
    assert "Traceback" not in out.err


def test_run_help_shows_brackets_literally() -> None:
    res = CliRunner().invoke(app, ["run", "--help"], terminal_width=200)
    assert res.exit_code == 0
    assert "[profiles.NAME]" in res.output
    assert "Usage: reportgen run [OPTIONS] [SPEC]..." in res.output
    assert "--runs DIR" in res.output and "--rerun ARM" in res.output


def test_unknown_option_is_a_usage_error_not_a_traceback(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["ls", "--bogus"]) == 2
    err = capsys.readouterr().err
    assert "No such option: --bogus" in err
    assert "Traceback" not in err


def test_ls_piped_keeps_whole_names(tmp_path: Path) -> None:
    runs = _runs(tmp_path / "runs")
    res = CliRunner().invoke(app, ["ls", "--runs", str(runs)], terminal_width=40)
    assert res.exit_code == 0, res.output
    lines = res.output.splitlines()
    assert lines[0].split() == [
        "experiment",
        "arm",
        "repeat",
        "role",
        "status",
        "started",
        "(UTC)",
        "duration",
        "steps",
        "done",
    ]
    assert lines[1].split() == [LONG, "baseline", "1", "formal", "complete", "2026-11-29T08:04:49Z", "12.5", "s", "-"]
    assert "…" not in res.output


def test_ls_reads_the_runs_root_from_the_environment(tmp_path: Path) -> None:
    runs = _runs(tmp_path / "elsewhere", "from-env")
    res = CliRunner().invoke(app, ["ls"], env={"REPORTGEN_RUNS": str(runs)})
    assert res.exit_code == 0, res.output
    assert "from-env" in res.output
    res = CliRunner().invoke(app, ["ls", "--runs", str(tmp_path / "none")], env={"REPORTGEN_RUNS": str(runs)})
    assert res.output == f"no experiments under {tmp_path / 'none'}\n"


def test_analyze_names_a_missing_runs_root_in_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["analyze", "--runs", str(tmp_path / "nowhere")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "nowhere" in err and err.startswith("reportgen: error:")


def test_runs_root_resolution_order(tmp_path: Path) -> None:
    env = {"REPORTGEN_RUNS": str(tmp_path / "env")}
    assert resolve_runs_root(tmp_path / "opt", env=env) == tmp_path / "opt"
    assert resolve_runs_root(None, env=env) == tmp_path / "env"
    assert resolve_runs_root(None, env={}) == Path("runs")
    assert resolve_runs_root(None, base=tmp_path, env={}) == tmp_path / "runs"
    assert resolve_runs_root(None, base=tmp_path, env={"REPORTGEN_RUNS": ""}) == tmp_path / "runs"


def test_columns_pad_to_the_longest_cell() -> None:
    assert columns(("a", "bb"), [("long cell", "x")]) == "a          bb\nlong cell  x\n"


def test_ls_counts_the_steps_that_trained(tmp_path: Path) -> None:
    # An OOM in step 1's training: steps 0 and 1 logged, one trained; the report says 1/48, so does ls.
    runs = _runs(tmp_path / "runs")
    manifest = next(runs.rglob("manifest.json"))
    data = json.loads(manifest.read_text())
    data["ingest"] = {"steps": 2, "train_steps": 1}
    manifest.write_text(json.dumps(data))
    res = CliRunner().invoke(app, ["ls", "--runs", str(runs)])
    assert res.exit_code == 0, res.output
    assert res.output.splitlines()[1].split()[-1] == "1"

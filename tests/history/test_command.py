"""`reportgen history` and `reportgen run --baseline-only`: thin commands, one-line errors, nothing
half-written."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from reportgen.cli import main
from reportgen.execute.runner import RunOptions, _order
from reportgen.history import store
from reportgen.plan.arms import build_plan
from reportgen.specfile import load_spec
from reportgen.workloads.grpo.args import parse_args
from tests.execute.conftest import make_experiment

REPO = Path(__file__).resolve().parents[2]


def test_history_writes_both_tables_and_says_where_a_baseline_sits(
    tmp_path: Path, capsys, committed_runs: Path
) -> None:
    runs = committed_runs
    out = tmp_path / "h.parquet"
    assert (
        main(["history", "--runs", str(runs), "--out", str(out), "--experiment", "showcase-1xh200-grpo-offload-r3"])
        == 0
    )
    text = capsys.readouterr().out.splitlines()
    # The committed campaigns are all of one commit (no revision arms): no paired point, no alarm, and the
    # absolute figures only as the machines' health; the line says how to add a paired point.
    paired_out = tmp_path / "paired-history.parquet"
    assert text[0] == f"paired history: {paired_out} (0 campaigns, 0 series)" and "no alarm" in text
    assert text[1].startswith(f"machine health: {out} (")
    assert text[-1].startswith("vs history: its baseline's commit ") and "--candidate-ref" in text[-1]
    assert "below the last baseline" not in "\n".join(text)  # the absolute flag across leases is gone
    assert store.read_paired(paired_out) == []
    pts = store.read(out)
    assert {p.experiment for p in pts} == {p.name for p in runs.iterdir() if (p / "analysis.json").is_file()}
    assert not (runs / store.HISTORY_FILE).exists()  # written where --out says, never beside the runs


def test_bad_input_is_one_line_exit_2_and_nothing_written(tmp_path: Path, capsys, committed_runs: Path) -> None:
    out = tmp_path / "h.parquet"
    assert main(["history", "--runs", str(tmp_path / "none"), "--out", str(out)]) == 2
    assert capsys.readouterr().err.strip().endswith("no runs folder; run `reportgen run SPEC` first or pass --runs")
    assert main(["history", "--runs", str(committed_runs), "--out", str(out), "--git", str(tmp_path)]) == 2
    assert "not a git repository" in capsys.readouterr().err
    assert main(["history", "--runs", str(committed_runs), "--out", str(out), "--experiment", "nope"]) == 2
    assert "--experiment nope: no complete run of it" in capsys.readouterr().err
    assert not out.exists() and list(tmp_path.iterdir()) == []


def test_a_stale_analysis_is_refused_with_the_command_that_refreshes_it(
    tmp_path: Path, capsys, committed_runs: Path
) -> None:
    runs = tmp_path / "runs"
    shutil.copytree(
        committed_runs / "aa-1xh200-grpo", runs / "aa-1xh200-grpo", ignore=shutil.ignore_patterns("tensorboard")
    )
    (runs / "aa-1xh200-grpo" / "baseline" / "1" / "events.json").write_text('{"schema_version": 1, "events": []}')
    assert main(["history", "--runs", str(runs)]) == 2
    err = capsys.readouterr().err
    assert "runs changed since it was written; run `reportgen analyze aa-1xh200-grpo --runs" in err
    assert not (runs / store.HISTORY_FILE).exists()


def test_history_is_listed_in_the_help(capsys) -> None:
    assert main(["--help"]) == 0
    assert "history" in capsys.readouterr().out


def test_baseline_only_runs_the_baseline_as_often_as_the_first_look_needs(tmp_path: Path) -> None:
    plan = build_plan(load_spec(REPO / "scripts" / "recipes" / "default.toml"))  # sequential, min_pairs 3
    runs = _order(plan, RunOptions(baseline_only=True, profiler=False))
    assert [(a.id, r, role) for a, r, role, _ in runs] == [("baseline", r, "formal") for r in (1, 2, 3)]
    fixed = build_plan(load_spec(make_experiment(tmp_path, repeats=2)))  # a fixed design of 2 repeats
    assert [(a.id, r) for a, r, *_ in _order(fixed, RunOptions(baseline_only=True))] == [
        ("baseline", 1),
        ("baseline", 2),
    ]


def test_the_workloads_injected_slowdown_is_a_checked_flag(capsys) -> None:
    assert parse_args([]).inject_slowdown == 0.0
    assert parse_args(["--inject-slowdown", "0.111111"]).inject_slowdown == pytest.approx(1 / 9, rel=1e-5)
    with pytest.raises(SystemExit) as exc:
        parse_args(["--inject-slowdown", "-0.1"])
    assert exc.value.code == 2 and "--inject-slowdown must be 0 or more" in capsys.readouterr().err


def test_a_baseline_only_campaign_is_a_history_point_and_renders(tmp_path: Path, capsys) -> None:
    from reportgen.render.history_page import history_of, paired_of, vs_history_lines
    from reportgen.render.load import load_experiment
    from reportgen.render.site import render_experiment

    spec = make_experiment(tmp_path / "recipes", repeats=2, steps=5, sleep=0.01)
    runs = tmp_path / "runs"
    assert main(["run", str(spec), "--runs", str(runs), "--baseline-only"]) == 0, capsys.readouterr().err[-1500:]
    exp_dir = runs / "exp"
    assert sorted(p.name for p in exp_dir.iterdir() if p.is_dir()) == ["baseline"]
    assert sorted(p.name for p in (exp_dir / "baseline").iterdir()) == ["1", "2"]
    exp = load_experiment(exp_dir)
    assert exp.comparison("A1").verdict.cause == "no formal run of this candidate"  # it never ran
    series = history_of([exp])
    base = next(s for s in series if s.primary)
    assert base.key.arm == "baseline" and base.points[0].n_runs == 2
    line = vs_history_lines(paired_of([exp]), [exp])["exp"]
    assert "has no paired history point" in line
    pages = render_experiment(exp, svg=False, history=line)
    assert "**vs history**" in pages[0].markdown

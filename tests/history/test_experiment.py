"""One experiment as loaded is one type, read by one function: the history's store and the site's
loader both read a folder through `history.experiment.read_experiment`, and what the site publishes
makes the same history points as what the history reads. The history reads no run folder: every
figure it plots is in analysis.json (each run's figures, commit and machine class)."""

from __future__ import annotations

from pathlib import Path

import pytest

from reportgen.errors import UserError
from reportgen.history import experiment, store
from reportgen.history.figures import points
from reportgen.history.paired import arm_commits
from reportgen.render.load import PublishedExperiment, load_experiment


def test_the_history_and_the_site_read_one_type_and_make_the_same_points(committed_runs: Path) -> None:
    exp = committed_runs / "aa-1xh200-grpo"
    read = store.read_experiment(exp, committed_runs)
    shown = load_experiment(exp)
    assert type(read) is experiment.LoadedExperiment
    assert isinstance(shown, PublishedExperiment) and isinstance(shown, experiment.LoadedExperiment)
    assert (read.name, read.recipe, read.shas) == (shown.name, shown.recipe, shown.shas)
    # The history reads no run folder (its figures are analysis.json's); the pages read them all.
    assert read.runs == () and [r.rel for r in shown.runs] != [] and any(r.command is not None for r in shown.runs)
    assert points(read) == points(shown) != []
    assert arm_commits(read) == arm_commits(shown)


def test_a_missing_analysis_is_one_line_naming_the_command(tmp_path: Path) -> None:
    exp = tmp_path / "exp"
    exp.mkdir()
    with pytest.raises(UserError, match=r"analysis.json: missing; run `reportgen analyze exp` \(or `reportgen run`\)"):
        experiment.read_experiment(exp, needed=(), fix="")

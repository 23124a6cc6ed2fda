"""A stray experiment under the repository's runs/ changes no test's outcome (issue 46): tests read
what git tracks there, through tests/helpers.py's two helpers, and tests/runs_guard.py fails any
test that lists runs/ itself or reads a folder there git does not track."""

from __future__ import annotations

import contextlib
import subprocess
from pathlib import Path

from tests import runs_guard
from tests.helpers import REPO, committed_experiments, copy_committed_runs


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True)


def test_the_guard_notes_a_listing_of_runs_and_a_read_of_an_untracked_folder() -> None:
    runs = REPO / "runs"
    runs_guard.take()
    sorted(runs.iterdir())  # what `reportgen history --runs runs/` and the freshness check do
    with contextlib.suppress(FileNotFoundError):  # the audit hook sees the open before it fails
        (runs / "not-tracked-by-git" / "analysis.json").read_text()  # a stray experiment's file
    seen = runs_guard.take()
    assert seen == [str(runs), str(runs / "not-tracked-by-git" / "analysis.json")]
    # a committed experiment's own file, named by the test, is no stray
    name = committed_experiments()[0].name
    (runs / name / "experiment.toml").read_bytes()
    assert runs_guard.take() == []


def test_the_committed_experiments_are_what_git_tracks_and_a_stray_one_is_never_copied(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    for name in ("kept", "stray"):
        (repo / "runs" / name / "baseline" / "1").mkdir(parents=True)
        (repo / "runs" / name / "experiment.toml").write_text(f'name = "{name}"\n')
    (repo / "runs" / "README.md").write_text("runs\n")
    _git(repo, "init", "-q")
    _git(repo, "add", "runs/kept", "runs/README.md")
    assert runs_guard.tracked(repo) == {"kept", "README.md"}
    assert [p.name for p in committed_experiments(repo)] == ["kept"]
    copied = copy_committed_runs(tmp_path / "copy", repo)
    assert sorted(p.name for p in copied.iterdir()) == ["kept"]


def test_this_checkout_commits_the_showcases_the_tests_name() -> None:
    names = {p.name for p in committed_experiments()}
    tracked = runs_guard.tracked()
    assert tracked is None or names <= tracked
    assert {"aa-1xh200-grpo", "showcase-1xh200-grpo-offload-r3", "showcase-1xh200-grpo-offload-r4"} <= names

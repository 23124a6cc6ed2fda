"""Seeds per block through `reportgen run`: every block runs with its own seeds, the same in both runs
of a pair, set in the run folder's recipe, recorded in the manifest, shown by --dry-run, and checked
by the fixed-flags guardrail pair by pair (real subprocesses: the stand-in trainer of conftest.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from reportgen.analysis.document import AnalysisDocument
from reportgen.cli import main
from tests.execute.conftest import make_experiment


def run_cli(*args: str) -> int:
    return main(list(args))


def _manifest(runs: Path, arm: str, repeat: int) -> dict:
    return json.loads((runs / "exp" / arm / str(repeat) / "manifest.json").read_text())


@pytest.fixture
def seeded(tmp_path: Path) -> Path:
    return make_experiment(tmp_path / "recipes", order="interleaved", repeats=3, seeds=True)


def test_every_block_has_its_seeds_the_same_in_both_runs(tmp_path: Path, seeded: Path) -> None:
    runs = tmp_path / "runs"
    assert run_cli("run", str(seeded), "--runs", str(runs)) == 0
    rewards = {}
    for block, (seed, rollout_seed) in enumerate([("1234", "42"), ("2234", "1042"), ("3234", "2042")], 1):
        for arm in ("baseline", "A1"):
            m = _manifest(runs, arm, block)
            assert m["seeds"] == {"--seed": seed, "--rollout-seed": rollout_seed}
            # what ran: the recipe in the run folder, the trainer's effective argv, its own log
            recipe = (runs / "exp" / arm / str(block) / "recipe.sh").read_text()
            assert f"--seed {seed}\n" in recipe and f"--rollout-seed {rollout_seed}\n" in recipe
            assert m["effective_argv"]["--rollout-seed"] == rollout_seed
            assert m["invariants"]["violations"] == []
            log = (runs / "exp" / arm / str(block) / "stdout.log").read_text()
            assert f"setting random seeds to {seed} ..." in log
            # the arm's own change against the recipe leaves the seeds out: it is the PR's diff
            assert "seed" not in (runs / "exp" / arm / str(block) / "recipe.patch").read_text()
            rewards.setdefault(block, set()).add(log.split("'rollout/raw_reward': ")[1].split(",")[0])
    # a pair shares its prompts (the stand-in's reward depends on --rollout-seed), blocks differ
    assert all(len(r) == 1 for r in rewards.values()) and len(set().union(*rewards.values())) == 3
    doc = AnalysisDocument.model_validate_json((runs / "exp" / "analysis.json").read_text())
    fixed = next(g for g in doc.comparisons[0].guardrails if g.id == "fixed_workload")
    assert fixed.status == "pass" and "equal within each pair" in fixed.reason


def test_dry_run_shows_each_blocks_seeds(tmp_path: Path, seeded: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run_cli("run", str(seeded), "--runs", str(tmp_path / "runs"), "--dry-run") == 0
    out = capsys.readouterr().out
    assert "seeds per block" in out
    assert "baseline/1  (--seed 1234 --rollout-seed 42)" in out
    assert "A1/2  (--seed 2234 --rollout-seed 1042)" in out
    assert "baseline/3  (--seed 3234 --rollout-seed 2042)" in out
    assert not (tmp_path / "runs").exists()


def test_fixed_seeds_leave_every_run_as_the_recipe(tmp_path: Path) -> None:
    spec = make_experiment(tmp_path / "recipes", order="interleaved", repeats=2, seeds=True, run={"seeds": "fixed"})
    runs = tmp_path / "runs"
    assert run_cli("run", str(spec), "--runs", str(runs), "--no-analyze") == 0
    for block in (1, 2):
        m = _manifest(runs, "A1", block)
        assert "seeds" not in m and m["effective_argv"]["--rollout-seed"] == "42"


def test_a_seed_flag_missing_from_the_recipe_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spec = make_experiment(tmp_path / "recipes", order="interleaved", repeats=2, seeds=True)
    recipe = spec.parent / "recipe.sh"
    recipe.write_text(recipe.read_text().replace("   --rollout-seed 42\n", ""))
    assert run_cli("run", str(spec), "--runs", str(tmp_path / "runs")) == 2
    err = capsys.readouterr().err
    assert "--rollout-seed is not in the recipe" in err and not (tmp_path / "runs").exists()

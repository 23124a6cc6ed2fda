"""The verdict's quality half on real runs of the embedded GRPO workload, in PR mode (issue 42 point 5):
a code change that is faster because it trains less (the backward pass on every other training step) is
rejected on quality; a change that leaves the maths alone is not; an A/A passes quality.

Each test makes its own throw-away repository (tests/git_repos.py) holding a copy of the embedded workload
and a spec of its own: short CPU runs, and a seed per block (both runs of a block share it, every block has
another: the recipe derives it from the run's folder, `REPORTGEN_RUN_DIR`), so the pairs vary as new seeds
do and an interval over them is honest (docs/analysis.md#where-the-variation-comes-from)."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from reportgen.analysis.document import Comparison
from reportgen.cli import main
from reportgen.render.load import load_analysis
from tests.git_repos import commit, same_maths, train_less, workload_repo

pytestmark = [pytest.mark.slow, pytest.mark.skipif(shutil.which("git") is None, reason="needs git")]

STEPS = 16
SPEC = f"""\
schema_version = 1
name = "quality"
title = "The embedded workload at two revisions: does it train as well?"

[recipe]
script = "recipe.sh"
workdir = "."
entrypoint = "reportgen.workloads.grpo"
env = {{ NUM_ROLLOUT = "{STEPS}", ROLLOUT_BATCH_SIZE = "2", GLOBAL_BATCH_SIZE = "16", PRESET = "cpu-tiny", DEVICE = "cpu" }}

[workload]
steps = {STEPS}
flags = ["--num-rollout", "--rollout-batch-size", "--n-samples-per-prompt", "--global-batch-size", "--preset", "--device"]

[run]
repeats = {{repeats}}
order = "interleaved"
timeout_s = 300

[analysis]
quality_margin = {{margin}}
warmup_steps = 4
windows = [{{ name = "W1", start = 4, end = 9 }}, {{ name = "W2", start = 10, end = {STEPS - 1} }}]

[[candidates]]  # PR mode replaces it with the candidate revision
id = "A1"
title = "Remove the optimizer offload trio"
remove = ["--optimizer-cpu-offload", "--overlap-cpu-optimizer-d2h-h2d", "--use-precision-aware-optimizer"]
"""


def _seeded_by_block(repo: Path, *, repeats: int, margin: float) -> str:
    """The recipe with a seed per block: the run's folder (runs/<experiment>/<arm>/<block>) names the block."""
    recipe = (repo / "recipe.sh").read_text()
    for was, now in (
        ("--seed 1234", "--seed $((1234 + BLOCK))"),
        ("--rollout-seed 42", "--rollout-seed $((42 + BLOCK))"),
    ):
        assert was in recipe, f"scripts/recipes/grpo-recipe.sh changed: update {__name__} ({was!r})"
        recipe = recipe.replace(was, now)
    head = 'BLOCK=$(basename "${REPORTGEN_RUN_DIR:-/1}")  # a seed per block: both arms of a block share it\n'
    first, rest = recipe.split("\n", 1)
    spec = SPEC.replace("{repeats}", str(repeats)).replace("{margin}", repr(margin))
    return commit(repo, "a seed per block, short runs", {"recipe.sh": f"{first}\n{head}{rest}", "spec.toml": spec})


def _campaign(
    tmp_path: Path, change: Callable[[Path], str] | None, *, repeats: int, margin: float = 0.05
) -> Comparison:
    """PR mode on a throw-away repository: its first commit with a seed per block against `change` of it (a
    tests/git_repos.py commit maker; None: the same commit, an A/A), `repeats` pairs."""
    repo = tmp_path / "repo"
    workload_repo(repo)
    base = _seeded_by_block(repo, repeats=repeats, margin=margin)
    cand = change(repo) if change is not None else base
    runs = tmp_path / "runs"
    argv = ["run", str(repo / "spec.toml"), "--baseline-ref", base, "--candidate-ref", cand, "--runs", str(runs)]
    assert main([*argv, "--name", "pr"]) == 0
    comp = load_analysis(runs / "pr").comparison("candidate")
    assert comp is not None and comp.quality is not None
    return comp


def test_faster_because_it_trains_less_is_rejected_on_quality(tmp_path: Path) -> None:
    # The CPU-tiny task's reward is low (about 0.07 in these 16 steps) and rises little: the spec declares a
    # margin on its scale (0.01), and five pairs resolve it (a pair's difference varies by about 0.013).
    comp = _campaign(tmp_path, train_less, repeats=5, margin=0.01)
    q = comp.quality
    assert q is not None
    assert (comp.verdict.status, comp.verdict.basis) == ("rejected", "quality"), (comp.verdict.summary, q.summary)
    assert q.status == "worse" and q.metrics[0].label == "reward" and q.metrics[0].high is not None
    assert comp.summary.next_step.text.startswith("Do not merge candidate: it trains worse")


def test_a_change_that_keeps_the_maths_trains_identically(tmp_path: Path) -> None:
    comp = _campaign(tmp_path, same_maths, repeats=2)
    q = comp.quality
    assert q is not None and q.status == "identical", q.summary
    assert comp.verdict.basis != "quality"


def test_an_aa_passes_quality(tmp_path: Path) -> None:
    comp = _campaign(tmp_path, None, repeats=2)
    q = comp.quality
    assert q is not None and q.status == "identical", q.summary
    assert comp.verdict.basis != "quality" and comp.verdict.status != "rejected"

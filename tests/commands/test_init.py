"""`reportgen init RECIPE.sh` (issue 46.8): from a checkout laid out like Relax's (the Relax-style
recipe of tests/relax_recipe.py) and from the embedded workload's recipe, a spec whose baseline is the
recipe, that every command accepts as written; the two commands of docs/relax.md run as shown (real
`reportgen` processes), and an existing spec is never replaced."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from reportgen.errors import UserError
from reportgen.plan.arms import build_plan
from reportgen.plan.init_spec import propose_windows, read_recipe, write_spec
from reportgen.specfile import load_spec
from tests.conftest import env_with_repo_on_path
from tests.helpers import REPO
from tests.relax_recipe import RECIPE

RECIPE_PATH = "scripts/training/multimodal/run-qwen3-vl-4B-2xgpu.sh"
DOC = REPO / "docs" / "relax.md"


def _reportgen(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "reportgen", *args],
        cwd=cwd,
        env=env_with_repo_on_path(),
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.fixture
def relax(tmp_path: Path) -> Path:
    """A checkout laid out like Relax's, in git, holding the Relax-style recipe."""
    checkout = tmp_path / "Relax"
    (checkout / RECIPE_PATH).parent.mkdir(parents=True)
    (checkout / RECIPE_PATH).write_text(RECIPE)
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", "-C", str(checkout)]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "recipe"], check=True)
    return checkout


def test_the_two_commands_of_the_docs_take_a_relax_checkout_to_a_dry_run(relax: Path) -> None:
    shown = re.search(r"```bash\n(reportgen init .*?)\n(reportgen run --dry-run .*?)\n```", DOC.read_text())
    assert shown is not None, "docs/relax.md shows the two commands"
    first, second = (line.split("  #")[0].split() for line in shown.groups())
    assert first == ["reportgen", "init", RECIPE_PATH] and second[:3] == ["reportgen", "run", "--dry-run"]
    made = _reportgen(relax, *first[1:])
    assert made.returncode == 0, made.stderr
    spec = relax / "run-qwen3-vl-4B-2xgpu.toml"
    assert made.stdout.strip() == str(spec) and second[3] == spec.name
    dry = _reportgen(relax, *second[1:])
    assert dry.returncode == 0, dry.stderr
    assert (
        "== AA1: The recipe again, unchanged (A/A)" in dry.stdout
        and "dry run: nothing was run or written" in dry.stdout
    )
    # and refused nowhere: the spec loads, plans, and its A/A candidate changes no byte of the recipe
    loaded = load_spec(spec)
    assert loaded.recipe.entrypoint == "relax.entrypoints.train" and loaded.recipe.workdir == "."
    assert loaded.workload.steps == 200 and loaded.workload.flags == [
        "--num-rollout",
        "--rollout-batch-size",
        "--rollout-temperature",
        "--prompt-data",
        "--seed",
    ]
    assert loaded.analysis.warmup_steps == 100
    assert [(w.name, w.start, w.end) for w in loaded.analysis.windows] == [("W1", 100, 149), ("W2", 150, 199)]
    plan = build_plan(loaded)
    arms = {a.id: a for a in plan.arms}
    assert arms["AA1"].recipe_text == arms["baseline"].recipe_text == RECIPE
    # PR mode, as the spec's last comment says, in the same checkout
    subprocess.run(["git", "-C", str(relax), "add", "-A"], check=True)
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", "-C", str(relax), "commit", "-qm", "spec"],
        check=True,
    )
    pr = re.search(r"#   (reportgen run .* --baseline-ref \S+ --candidate-ref HEAD)", spec.read_text())
    assert pr is not None
    branch = subprocess.run(["git", "-C", str(relax), "branch", "--show-current"], capture_output=True, text=True)
    words = pr.group(1).replace("--baseline-ref main", f"--baseline-ref {branch.stdout.strip()}").split()
    done = _reportgen(relax, *words[1:], "--dry-run")
    assert done.returncode == 0, done.stderr


def test_an_existing_spec_is_refused_in_one_line_and_left_as_it_is(relax: Path) -> None:
    assert _reportgen(relax, "init", RECIPE_PATH).returncode == 0
    spec = relax / "run-qwen3-vl-4B-2xgpu.toml"
    spec.write_text("# mine\n")
    again = _reportgen(relax, "init", RECIPE_PATH)
    assert again.returncode == 2 and again.stdout == ""
    assert again.stderr.strip() == (
        "reportgen: error: run-qwen3-vl-4B-2xgpu.toml: a file is already there; pass --out OTHER.toml, "
        "or remove it to write it again"
    )
    assert spec.read_text() == "# mine\n"


def test_the_embedded_recipe_gives_a_spec_every_command_accepts(tmp_path: Path) -> None:
    recipe = REPO / "scripts" / "recipes" / "grpo-recipe.sh"
    spec = write_spec(recipe, tmp_path / "specs" / "grpo.toml")
    loaded = load_spec(spec)
    assert loaded.name == "grpo-recipe" and loaded.recipe.entrypoint == "reportgen.workloads.grpo"
    assert Path(loaded.source_dir, loaded.recipe.workdir).resolve() == REPO.resolve()  # the repository's root
    assert loaded.workload.steps == 48 and loaded.analysis.warmup_steps == 24
    assert [(w.start, w.end) for w in loaded.analysis.windows] == [(24, 35), (36, 47)]
    for flag in ("--preset", "--rollout-max-response-len", "--kl-loss-coef", "--lr", "--seed", "--rollout-seed"):
        assert flag in loaded.workload.flags
    assert "--max-tokens-per-gpu" not in loaded.workload.flags  # what candidates change
    plan = build_plan(loaded)
    arms = {a.id: a for a in plan.arms}
    assert arms["AA1"].recipe_text == arms["baseline"].recipe_text  # the A/A changes no byte
    dry = _reportgen(tmp_path, "run", "--dry-run", str(spec), "--runs", str(tmp_path / "runs"))
    assert dry.returncode == 0, dry.stderr
    assert not (tmp_path / "runs").exists()


def test_the_commented_example_is_a_candidate_as_written(tmp_path: Path) -> None:
    spec = write_spec(REPO / "scripts" / "recipes" / "grpo-recipe.sh", tmp_path / "g.toml")
    text = spec.read_text()
    start = text.index("# [[candidates]]")
    block = text[start : text.index("\n#\n", start)]
    spec.write_text(text + "\n" + "\n".join(line.removeprefix("# ") for line in block.splitlines()) + "\n")
    loaded = load_spec(spec)
    assert [c.id for c in loaded.candidates] == ["AA1", "A1"]
    assert loaded.candidates[1].remove == [
        "--optimizer-cpu-offload",
        "--overlap-cpu-optimizer-d2h-h2d",
        "--use-precision-aware-optimizer",
    ]
    build_plan(loaded)


def test_a_step_count_the_recipe_does_not_give_is_asked_for(tmp_path: Path) -> None:
    recipe = tmp_path / "r.sh"
    recipe.write_text(RECIPE.replace("NUM_ROLLOUT=${NUM_ROLLOUT:-200}\n", ""))
    with pytest.raises(
        UserError, match=r"cannot tell how many steps a run makes \(--num-rollout \$\{NUM_ROLLOUT\}\); pass --steps N"
    ):
        write_spec(recipe, tmp_path / "a.toml")
    assert not (tmp_path / "a.toml").exists()
    loaded = load_spec(write_spec(recipe, tmp_path / "b.toml", steps=40))
    assert loaded.workload.steps == 40 and [(w.start, w.end) for w in loaded.analysis.windows] == [(20, 29), (30, 39)]
    assert "as `reportgen init --steps` was told" in (tmp_path / "b.toml").read_text()


def test_the_windows_rule_and_what_the_recipe_says() -> None:
    assert propose_windows(48) == (24, [("W1", 24, 35), ("W2", 36, 47)])
    assert propose_windows(9) == (4, [("W1", 4, 5), ("W2", 6, 8)])
    with pytest.raises(UserError, match="too few"):
        propose_windows(7)
    facts = read_recipe(RECIPE)
    assert facts.steps == 200 and facts.steps_raw == "${NUM_ROLLOUT}" and facts.entrypoint == "relax.entrypoints.train"
    assert facts.restate == ("--max-tokens-per-gpu", "9216")  # never a flag of the ray submit line (--address)

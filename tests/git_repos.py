"""Throw-away git repositories for tests of arms at revisions (docs/revisions.md): plain functions.

`workload_repo` makes a repository holding a copy of the embedded GRPO workload's code (the
`reportgen.workloads.grpo` package and the recipe script), a spec for it, and one commit;
`slow_down` commits a change that sleeps in every training step, `commit` anything else.
`standin_history` makes the same kind of history for the stand-in trainer of
tests/execute/conftest.py (a real subprocess that costs no torch start-up)."""

from __future__ import annotations

import os
import shutil
import subprocess
import textwrap
from pathlib import Path

import reportgen

PACKAGE = Path(reportgen.__file__).resolve().parent
RECIPE = PACKAGE.parent / "scripts" / "recipes" / "grpo-recipe.sh"
TRAIN = Path("reportgen/workloads/grpo/train.py")
ARGS = Path("reportgen/workloads/grpo/args.py")
# The line of Trainer.step after which a slowed-down commit sleeps: inside the step's timed block.
STEP_ANCHOR = "        rollout, perf = self.train(rollout_id, batch, verdicts)\n"

GIT_ENV = {
    "GIT_AUTHOR_NAME": "reportgen tests",
    "GIT_AUTHOR_EMAIL": "tests@example.invalid",
    "GIT_COMMITTER_NAME": "reportgen tests",
    "GIT_COMMITTER_EMAIL": "tests@example.invalid",
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_CONFIG_NOSYSTEM": "1",
}


def git(repo: Path, *args: str) -> str:
    env = {**os.environ, **GIT_ENV}
    return subprocess.run(
        ["git", "-C", str(repo), *args], check=True, capture_output=True, text=True, env=env
    ).stdout.strip()


def init(repo: Path) -> Path:
    repo.mkdir(parents=True, exist_ok=True)
    git(repo, "init", "-q", "-b", "main")
    return repo


def commit(repo: Path, message: str, files: dict[str, str] | None = None) -> str:
    """Write `files` (path -> text), commit everything, return the new commit's full SHA."""
    for rel, text in (files or {}).items():
        path = repo / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "--allow-empty", "-m", message)
    return git(repo, "rev-parse", "HEAD")


SPEC = """\
schema_version = 1
name = "slow-step"
title = "The embedded workload at two revisions"

[recipe]
script = "recipe.sh"
workdir = "."
entrypoint = "reportgen.workloads.grpo"
env = {{ NUM_ROLLOUT = "{steps}", ROLLOUT_BATCH_SIZE = "2", GLOBAL_BATCH_SIZE = "16", PRESET = "cpu-tiny", DEVICE = "cpu" }}

[workload]
steps = {steps}
flags = ["--num-rollout", "--rollout-batch-size", "--n-samples-per-prompt", "--global-batch-size", "--seed", "--rollout-seed", "--preset", "--device"]

[run]
timeout_s = 240

[analysis]
warmup_steps = {warmup}
min_effect = {min_effect}
windows = [{{ name = "W1", start = {warmup}, end = {last} }}]

[[candidates]]
id = "A1"
title = "Remove the optimizer offload trio"
remove = ["--optimizer-cpu-offload", "--overlap-cpu-optimizer-d2h-h2d", "--use-precision-aware-optimizer"]
"""


def workload_repo(repo: Path, *, steps: int = 6, warmup: int = 2, min_effect: float = 0.05) -> str:
    """A repository with the embedded workload's code, its recipe and a spec (`spec.toml`) of `steps`
    CPU-tiny steps and the minimum effect `min_effect` (the spec's default unless given); returns its
    first commit."""
    init(repo)
    for rel in ("__init__.py", "workloads/__init__.py"):
        (repo / "reportgen" / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(PACKAGE / rel, repo / "reportgen" / rel)
    shutil.copytree(
        PACKAGE / "workloads" / "grpo",
        repo / "reportgen" / "workloads" / "grpo",
        ignore=shutil.ignore_patterns("__pycache__"),
    )
    shutil.copyfile(RECIPE, repo / "recipe.sh")
    (repo / "spec.toml").write_text(
        SPEC.format(steps=steps, warmup=warmup, last=steps - 1, min_effect=min_effect), encoding="utf-8"
    )
    return commit(repo, "the embedded workload")


def slow_down(repo: Path, seconds: float, message: str | None = None) -> str:
    """Commit a change that sleeps `seconds` in every training step (inside the step's timed block)."""
    path = repo / TRAIN
    text = path.read_text(encoding="utf-8")
    assert STEP_ANCHOR in text, "Trainer.step changed: update tests/git_repos.py STEP_ANCHOR"
    text = text.replace(STEP_ANCHOR, STEP_ANCHOR + f"        time.sleep({seconds!r})  # a slower step\n", 1)
    return commit(repo, message or f"sleep {seconds} s in every step", {str(TRAIN): text})


def code_history(
    repo: Path,
    *,
    commits: int,
    slow_at: int,
    sleep_s: float,
    steps: int = 6,
    warmup: int = 2,
    min_effect: float = 0.05,
) -> tuple[str, list[str]]:
    """GOOD (`workload_repo`, `steps` steps a run, the first `warmup` left out) and `commits` commits
    that change the workload's code, the one at `slow_at` (0-based) sleeping `sleep_s` in every
    training step, the others a comment in its argument parser (no change in what runs), the spec's
    minimum effect `min_effect` (see `workload_repo`): the
    bisection's real-run test (tests/history/test_real_bisect.py) and scripts/bisect_cost.py.
    Returns GOOD and the commits."""
    good = workload_repo(repo, steps=steps, warmup=warmup, min_effect=min_effect)
    shas = []
    for i in range(commits):
        if i == slow_at:
            shas.append(slow_down(repo, sleep_s, f"train: every step sleeps {sleep_s} s"))
            continue
        text = (repo / ARGS).read_text(encoding="utf-8") + f"\n# refactor {i}: no change in what runs\n"
        shas.append(commit(repo, f"args: refactor {i}", {str(ARGS): text}))
    return good, shas


STANDIN_SPEED = '"--speed", type=float, default=100.0'


def standin_history(
    repo: Path, *, commits: int, slow_at: int, slowdown: float, noise: float = 0.02
) -> tuple[str, list[str], Path]:
    """GOOD and `commits` commits of the stand-in trainer's experiment (tests/execute/conftest.py;
    its spec `experiment.toml` checks `import stand_in` in each checkout): the commit at `slow_at`
    (0-based) makes every step `slowdown` times as long (the trainer's speed divided by it), the
    others add a comment to the trainer (no change in what runs). Each run's speed is off by a
    `noise` (sd) draw seeded by its experiment/arm/repeat folder names: a campaign's figures are
    the same every time it is made under the same name. Returns GOOD, the commits and the spec."""
    from tests.execute.conftest import RECIPE, make_experiment

    init(repo)
    recipe = RECIPE.replace(
        "--step-sleep ${STEP_SLEEP:-0.05}", f"--step-sleep ${{STEP_SLEEP:-0.05}} --noise {noise} --noise-per-experiment"
    )
    assert recipe != RECIPE, "tests/execute/conftest.py RECIPE changed: update tests/git_repos.py standin_history"
    spec = make_experiment(repo, name="standin-history", steps=5, sleep=0.01, order=None, repeats=None, recipe=recipe)
    spec.write_text(
        spec.read_text().replace('entrypoint = "trainer.py"', 'entrypoint = "trainer.py"\nimport_check = "stand_in"')
    )
    (repo / "stand_in.py").write_text("SPEED = 1\n")
    good = commit(repo, "the stand-in trainer")
    shas = []
    for i in range(commits):
        trainer = (repo / "trainer.py").read_text(encoding="utf-8")
        if i == slow_at:
            assert STANDIN_SPEED in trainer, "the stand-in's --speed changed: update tests/git_repos.py STANDIN_SPEED"
            slower = STANDIN_SPEED.replace("100.0", repr(100.0 / slowdown))
            shas.append(
                commit(
                    repo,
                    f"trainer: every step {slowdown:g} times as long",
                    {"trainer.py": trainer.replace(STANDIN_SPEED, slower)},
                )
            )
            continue
        shas.append(
            commit(
                repo, f"trainer: refactor {i}", {"trainer.py": trainer + f"# refactor {i}: no change in what runs\n"}
            )
        )
    return good, shas, spec


BACKWARD = "                (parts.loss / a.global_batch_size).backward()\n"


def train_less(repo: Path) -> str:
    """Commit a change that is faster because it trains less: the loss's backward pass on every other
    training step only (same rollouts, samples and tokens; the optimizer updates on half the steps)."""
    path = repo / TRAIN
    text = path.read_text(encoding="utf-8")
    assert BACKWARD in text, "Trainer.train changed: update tests/git_repos.py BACKWARD"
    less = "                if self.train_step % 2 == 0:  # the backward pass on every other step only\n    " + BACKWARD
    return commit(
        repo, "train: the backward pass on every other step only", {str(TRAIN): text.replace(BACKWARD, less, 1)}
    )


def same_maths(repo: Path) -> str:
    """Commit a change that leaves the maths as it is: the same division written as a method call."""
    path = repo / TRAIN
    text = path.read_text(encoding="utf-8")
    assert BACKWARD in text, "Trainer.train changed: update tests/git_repos.py BACKWARD"
    same = BACKWARD.replace(
        "(parts.loss / a.global_batch_size).backward()", "parts.loss.div(a.global_batch_size).backward()"
    )
    return commit(
        repo, "train: the loss scaled by a method call (same maths)", {str(TRAIN): text.replace(BACKWARD, same, 1)}
    )


def break_import(repo: Path) -> str:
    """Commit a syntax error into the workload's package: its checkout cannot import."""
    init_py = repo / "reportgen" / "workloads" / "grpo" / "__init__.py"
    return commit(repo, "break the import", {str(init_py.relative_to(repo)): "this is not python\n"})


def readme_repo(repo: Path) -> list[str]:
    """A small repository of three commits (a file, a change to it, a second file): their SHAs."""
    init(repo)
    shas = [commit(repo, "one", {"a.py": "x = 1\n"})]
    shas.append(commit(repo, "two", {"a.py": "x = 2\ny = 3\n"}))
    shas.append(commit(repo, "three", {"b/c.txt": textwrap.dedent("hello\n")}))
    return shas

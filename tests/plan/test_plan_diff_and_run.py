"""The saved diff really applies (git apply, patch -p1) and reverses; a patched recipe really runs."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from reportgen.plan.recipe import edit_script, unified_diff
from reportgen.specfile.model import Edits
from tests.relax_recipe import BASELINE_ARGV, OFFLOAD, PRINTF, RECIPE, RECOMPUTE, recipe

REL = "scripts/training/run-qwen3-vl-4B-2xgpu.sh"


def git(repo: Path, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "HOME": str(repo)}
    return subprocess.run(["git", "-C", str(repo), *args], input=stdin, capture_output=True, text=True, env=env)


@pytest.fixture
def repo(tmp_path):
    repo = tmp_path / "relax"
    (repo / REL).parent.mkdir(parents=True)
    (repo / REL).write_bytes(RECIPE.encode())
    assert git(repo, "init", "-q").returncode == 0
    git(repo, "add", ".")
    assert git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "base").returncode == 0
    return repo


@pytest.mark.parametrize(
    "edits",
    [
        [Edits(remove=OFFLOAD)],
        [Edits(remove=OFFLOAD), Edits(remove=RECOMPUTE)],
        [Edits(remove=("--seed",)), Edits(add=(("--x", ("1",)),), add_after="--colocate")],
    ],
)
def test_git_apply_and_reverse(repo, edits):
    patched = edit_script(RECIPE, edits)
    diff = unified_diff(RECIPE, patched, REL)
    assert diff.startswith(f"diff --git a/{REL} b/{REL}\n--- a/{REL}\n+++ b/{REL}\n@@ ")
    assert git(repo, "apply", "--check", "-", stdin=diff).returncode == 0
    assert git(repo, "apply", "-", stdin=diff).returncode == 0
    assert (repo / REL).read_bytes() == patched.encode()
    assert git(repo, "apply", "-R", "-", stdin=diff).returncode == 0  # the rollback
    assert (repo / REL).read_bytes() == RECIPE.encode()
    assert git(repo, "status", "--porcelain").stdout == ""


def test_patch_p1_applies_and_no_newline_at_end_is_kept(tmp_path):
    original = "A=(\n  --a 1\n  --b\n)"  # no newline at the end of the file
    patched = edit_script(original, [Edits(set=(("--a", ("2",)),), add=(("--c", True),))])
    diff = unified_diff(original, patched, "r.sh")
    (tmp_path / "r.sh").write_text(original)
    run = subprocess.run(["patch", "-p1", "-s"], input=diff, text=True, cwd=tmp_path, capture_output=True)
    assert run.returncode == 0, run.stdout + run.stderr
    assert (tmp_path / "r.sh").read_text() == patched
    run = subprocess.run(["patch", "-p1", "-R", "-s"], input=diff, text=True, cwd=tmp_path, capture_output=True)
    assert run.returncode == 0 and (tmp_path / "r.sh").read_text() == original


def test_no_change_no_diff():
    assert unified_diff(RECIPE, RECIPE, REL) == ""


def effective_argv(script: str, tmp_path: Path) -> list[str]:
    path = tmp_path / "recipe.sh"
    path.write_text(script)
    env = {"PATH": os.environ["PATH"]}  # the recipe's own defaults apply
    run = subprocess.run(["bash", str(path)], capture_output=True, text=True, env=env, timeout=30)
    assert run.returncode == 0, run.stderr
    return run.stdout.splitlines()


def without(argv: list[str], *drop: str) -> list[str]:
    return [a for a in argv if a not in drop]


def test_patched_recipes_run_with_the_intended_argv(tmp_path):
    base = recipe(PRINTF)
    assert effective_argv(base, tmp_path) == BASELINE_ARGV

    a1 = edit_script(base, [Edits(remove=OFFLOAD)])
    assert effective_argv(a1, tmp_path) == without(BASELINE_ARGV, *OFFLOAD)

    a2 = edit_script(base, [Edits(remove=OFFLOAD), Edits(remove=RECOMPUTE)])
    want = without(BASELINE_ARGV, *OFFLOAD)
    i = want.index("--recompute-granularity")
    assert want[i : i + 6] == [
        "--recompute-granularity",
        "full",
        "--recompute-method",
        "uniform",
        "--recompute-num-layers",
        "1",
    ]
    del want[i : i + 6]
    assert effective_argv(a2, tmp_path) == want

    a3 = edit_script(base, [Edits(remove=OFFLOAD), Edits(set=(("--max-tokens-per-gpu", ("8192",)),))])
    want = without(BASELINE_ARGV, *OFFLOAD)
    want[want.index("--max-tokens-per-gpu") + 1] = "8192"
    assert effective_argv(a3, tmp_path) == want

    odd = edit_script(
        base,
        [
            Edits(
                remove=("--seed",),
                set=(("--runtime-env-json", ('{"env_vars": {"B": "it\'s"}}',)), ("--loss-scale", ("-2.5",))),
                add=(("--tag", ("a b", "$HOME")),),
                add_after="--colocate",
            )
        ],
    )
    want = BASELINE_ARGV[:-2]
    want[1] = '--runtime-env-json={"env_vars": {"B": "it\'s"}}'
    want[want.index("--loss-scale") + 1] = "-2.5"
    j = want.index("--colocate") + 1
    want[j:j] = ["--tag", "a b", "$HOME"]  # values are quoted: never expanded by the shell
    assert effective_argv(odd, tmp_path) == want

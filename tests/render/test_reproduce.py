"""The Reproduce section: what a reader pastes must run, and say what it runs."""

from __future__ import annotations

import re
import shutil
import subprocess
import textwrap
from pathlib import Path

import pytest

from reportgen.render import provenance_page
from reportgen.render.load import load_experiment
from reportgen.render.reproduce import (
    ArmCommand,
    ReproduceInputs,
    argv_lines,
    repo_relative,
    run_commands,
    section,
    wrapped_command,
    wrapped_words,
)
from reportgen.store import layout
from tests.helpers import committed_experiments

ARGV = {
    "--preset": "gpu-small",
    "--use-kl-loss": True,
    "--no-such-switch": False,
    "--tb-experiment-name": "name with 'quotes' and $HOME",
    "--lr": "1e-3",
}


def test_wrapped_command_is_one_flag_per_line():
    text = wrapped_command(["python3", "-m", "reportgen.workloads.grpo"], ARGV)
    lines = text.split("\n")
    assert lines[0] == "python3 -m reportgen.workloads.grpo \\"
    assert lines[1] == "  --preset gpu-small \\" and lines[2] == "  --use-kl-loss \\"
    assert not lines[-1].endswith("\\") and all(line.endswith(" \\") for line in lines[:-1])
    assert max(len(line) for line in lines) < 80
    assert "--no-such-switch" not in text


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
def test_wrapped_command_pastes_into_bash_as_the_same_words():
    text = wrapped_command(["printf", "%s\\n"], ARGV)
    out = subprocess.run(["bash", "-c", text], capture_output=True, text=True, check=True).stdout
    assert out.split("\n")[:-1] == [
        "--preset",
        "gpu-small",
        "--use-kl-loss",
        "--tb-experiment-name",
        "name with 'quotes' and $HOME",
        "--lr",
        "1e-3",
    ]


def test_a_word_list_is_grouped_at_each_flag():
    assert argv_lines(["train.py", "--a", "1", "2", "--b"]) == [["train.py"], ["--a", "1", "2"], ["--b"]]


def test_paths_under_the_repository_become_relative():
    assert repo_relative("<repo>/scripts/recipes") == "scripts/recipes"
    assert repo_relative("~/elsewhere") == "~/elsewhere" and repo_relative(None) is None


def test_section_with_a_commit_reruns_into_a_new_folder():
    inp = ReproduceInputs("exp", commit="abc123", profile="gpu", recipe_dir="<repo>/scripts/recipes")
    md = section(inp, [ArmCommand("A1/1", {"--lr": "1e-3"}, "runs/exp/A1/1/recipe.sh")])
    # the spec is taken out of the reader's checkout before the checkout: the recorded commit has no runs/exp/
    assert md.index('cp runs/exp/experiment.toml "${TMPDIR:-/tmp}/exp.toml"') < md.index("git checkout abc123")
    assert md.index("git checkout abc123") < md.index('cp "${TMPDIR:-/tmp}/exp.toml" scripts/recipes/exp.toml')
    assert "reportgen run scripts/recipes/exp.toml --profile gpu --name exp-rerun" in md
    # then back at the reader's checkout, whose reportgen analyses the re-run and builds the site with it
    assert md.index("--name exp-rerun") < md.index("\ngit checkout - && reportgen analyze && mkdocs build\n")
    assert "runs/exp/A1/1/recipe.sh" in md and '=== "A1/1"' in md
    assert ".reportgen." not in md


def test_section_without_a_commit_says_so_and_finds_the_nearest():
    md = section(ReproduceInputs("exp", dirty=True), [])
    assert "No commit was recorded" in md
    assert "git log --diff-filter=A --format=%H" in md and "-- runs/exp/experiment.toml | tail -n 1" in md
    assert 'reportgen run "${TMPDIR:-/tmp}/exp.toml" --name exp-rerun' in md
    assert "??? example" not in md  # no run recorded an effective command


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
def test_the_rerun_block_is_valid_bash_and_fits_the_column():
    inp = ReproduceInputs("showcase-h200-grpo-offload", profile="gpu", recipe_dir="scripts/recipes")
    lines, _ = run_commands(inp)
    script = "\n".join(lines)
    subprocess.run(["bash", "-n", "-c", script], check=True)  # parses: continuations and quotes are right
    assert max(len(line) for line in script.split("\n")) <= 80
    words = subprocess.run(
        ["bash", "-c", "printf '%s\\n' " + wrapped_words(["reportgen", "run", "a b.toml", "--profile", "gpu"])],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split("\n")[:-1]
    assert words == ["reportgen", "run", "a b.toml", "--profile", "gpu"]


def test_a_home_relative_path_keeps_its_tilde():
    from reportgen.render.reproduce import quote

    assert quote("~/relax") == "~/relax" and quote("~/a b") == "'~/a b'" and quote("a b") == "'a b'"


COMMITTED = [p.name for p in committed_experiments()]  # what git tracks: never a stray experiment beside them
FENCE = re.compile(r"```bash\n(?P<body>.*?)\n\s*```", re.S)
TRAINER = """#!/bin/sh
# stands in for the trainer (a GPU run cannot run here): records how the recipe launched it
printf '%s\\n' "$@" > "$LAUNCHED"
"""


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
@pytest.mark.parametrize("name", COMMITTED)
def test_every_provenance_command_runs_as_printed(name: str, tmp_path: Path, committed_runs: Path) -> None:
    # Each run's command on the provenance page, pasted into bash in the root of a checkout: the
    # recipe it names must exist there (the run folder's kept copy, not the runner's temporary one)
    # and run to the trainer's launch, which a stand-in records (PYTHON is the recipe's own hook).
    spec = committed_runs / name / layout.EXPERIMENT_SPEC
    exp = load_experiment(spec.parent)
    blocks = [
        (section.split('"', 1)[0].split(" · ")[0], FENCE.search(section))  # the run, less its machine
        for section in "\n".join(provenance_page.commands_section(exp)).split('??? note "')[1:]
    ]
    assert blocks and all(m is not None for _, m in blocks)
    for rel in {rel for rel, _ in blocks}:  # the checkout holds the committed run folders
        kept = tmp_path / "runs" / exp.name / rel / layout.RECIPE_SCRIPT
        kept.parent.mkdir(parents=True)
        shutil.copy(spec.parent / rel / layout.RECIPE_SCRIPT, kept)
    trainer = tmp_path / "trainer"
    trainer.write_text(TRAINER)
    trainer.chmod(0o755)
    for rel, m in blocks:
        body = textwrap.dedent(m.group("body"))  # type: ignore[union-attr]
        assert ".reportgen." not in body, body
        env = {"PATH": "/usr/bin:/bin", "PYTHON": str(trainer), "LAUNCHED": str(tmp_path / "argv")}
        res = subprocess.run(["bash", "-e", "-c", body], cwd=tmp_path, env=env, capture_output=True, text=True)
        assert res.returncode == 0, f"{rel}: exit {res.returncode}\n{body}\n{res.stderr[-1500:]}"
        launched = (tmp_path / "argv").read_text().split("\n")
        assert launched[:2] == ["-m", "reportgen.workloads.grpo"] and "--tb-experiment-name" in launched, rel

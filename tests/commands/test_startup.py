"""The CLI answers at once: `reportgen --help` and each command's `--help` load no heavy library.

Each case starts a real `python -X importtime -m reportgen ... --help` (the repo on PYTHONPATH) and
reads from Python's own import log which modules that process loaded. The heavy libraries (the data
stack, the charts, the trainer, Ray) belong in the command bodies, loaded when a command runs; one
imported at the top of a command module, or of anything a command module imports at its top, makes
help wait seconds for it and fails here by name.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
import typer.main

from reportgen.cli import app
from tests.conftest import REPO, env_with_repo_on_path, python_exe

# pydantic too (0.1 s of CPU, half of what a command's help costs): reportgen's models load it, and
# so would Typer, for the root's --help flag, but for reportgen.cli's _Group.
HEAVY = (
    "numpy",
    "pandas",
    "scipy",
    "pyarrow",
    "altair",
    "torch",
    "ray",
    "tbparse",
    "tensorboard",
    "mkdocs",
    "pydantic",
)
COMMANDS = sorted(typer.main.get_group(app).commands)
EXPERIMENT = "showcase-1xh200-grpo-offload-r4"  # committed: its warm-up is found (A3 settles at step 23)


def imported_modules(args: list[str]) -> tuple[list[str], str]:
    """Every module `python -m reportgen ARGS` imports, in order (from -X importtime), and its stdout."""
    res = subprocess.run(
        [python_exe(), "-X", "importtime", "-m", "reportgen", *args],
        cwd=REPO,
        env=env_with_repo_on_path(),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert res.returncode == 0, res.stderr[-2000:]
    # Lines read "import time: <self us> | <cumulative us> | <indent><module>".
    names = [line.rsplit("|", 1)[1].strip() for line in res.stderr.splitlines() if line.startswith("import time:")]
    return names[1:], res.stdout  # the first line is the header


def imported_packages(args: list[str]) -> set[str]:
    """Top-level package of every module `python -m reportgen ARGS --help` imports."""
    names, out = imported_modules(args)
    assert "Usage: reportgen" in out
    return {n.split(".")[0] for n in names}


def test_the_commands_are_read_from_the_app() -> None:
    assert {"run", "ls", "ingest", "analyze", "history"} <= set(COMMANDS)


@pytest.mark.parametrize("args", [["--help"]] + [[c, "--help"] for c in COMMANDS], ids=lambda a: " ".join(a))
def test_help_imports_no_heavy_library(args: list[str]) -> None:
    loaded = imported_packages(args)
    assert "reportgen" in loaded and "typer" in loaded  # the log was read
    assert sorted(loaded & set(HEAVY)) == []


def test_an_analysis_imports_scipy_special_but_not_scipy_stats(tmp_path: Path, committed_runs: Path) -> None:
    """`reportgen analyze` (and every `reportgen run` that analyses) computes its quantiles, p-values and
    the warm-up's slope test with scipy.special (analysis/inference.py): scipy.stats computes the same
    numbers but costs about half a CPU-second more to import in every analysing process."""
    runs = tmp_path / "runs"
    shutil.copytree(committed_runs / EXPERIMENT, runs / EXPERIMENT)  # analysed again: a copy of the committed one
    names, _ = imported_modules(["analyze", EXPERIMENT, "--runs", str(runs), "--force"])
    assert "reportgen.analysis.warmup" in names and "scipy.special" in names  # it analysed
    assert not [n for n in names if n == "scipy.stats" or n.startswith("scipy.stats.")]

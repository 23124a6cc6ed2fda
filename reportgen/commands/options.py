"""Options shared by several commands, declared once so their name, help and default agree."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from reportgen.errors import UserError
from reportgen.store.layout import RUNS_ENV, resolve_runs_root

RunsOption = Annotated[
    Path | None,
    typer.Option(
        "--runs",
        metavar="DIR",
        help=f"The runs/ root (default: ${RUNS_ENV}, else ./runs).",
        show_default=False,
    ),
]


def runs_root(runs: Path | None) -> Path:
    """The runs/ root a command works on (see reportgen.store.layout.resolve_runs_root)."""
    return resolve_runs_root(runs)


def experiment_dir(name: str, runs: Path) -> Path:
    """The experiment a command names: a folder holding experiment.toml, or one under `runs`."""
    p = Path(name)
    if (p / "experiment.toml").is_file():
        return p
    if (runs / name / "experiment.toml").is_file():
        return runs / name
    raise UserError(f"{runs / name}: no such experiment (no experiment.toml); see `reportgen ls` or pass --runs")


def optional(flag: str, metavar: str, help: str) -> Any:
    """An option that takes a value and is None when not given, the commands' usual kind: its flag,
    the placeholder the help shows for its value (FILE, NAME, DIR), and the help."""
    return typer.Option(None, flag, metavar=metavar, help=help)

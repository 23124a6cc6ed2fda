"""Options shared by several commands, declared once so their name, help and default agree."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

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

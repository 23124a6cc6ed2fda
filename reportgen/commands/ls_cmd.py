"""`reportgen ls`: experiments, arms, repeats and their status.

Plain aligned columns, never cut: the output is read in a terminal, in `less` and in files.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from reportgen.commands.options import RunsOption, runs_root

if TYPE_CHECKING:  # the listing reads manifests through the pydantic models: loaded when `ls` runs
    from reportgen.store.listing import RunRow

HEADER = ("experiment", "arm", "repeat", "role", "status", "started (UTC)", "duration", "steps done")


def columns(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """Rows as left-aligned columns two spaces apart; no cell is shortened."""
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    return "".join(
        "  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() + "\n" for r in [header, *rows]
    )


def ls_text(rows: Sequence[RunRow], runs: Path) -> str:
    if not rows:
        return f"no experiments under {runs}\n"
    cells = [
        (
            r.experiment,
            r.arm,
            str(r.repeat),
            r.role,
            r.status,
            r.started_utc or "-",
            "-" if r.duration_s is None else f"{r.duration_s:.1f} s",
            "-" if r.steps is None else str(r.steps),
        )
        for r in rows
    ]
    return columns(HEADER, cells)


def register(app: typer.Typer) -> None:
    @app.command("ls")
    def ls_command(runs: RunsOption = None) -> None:
        """List experiments, arms, repeats and their status."""
        from reportgen.store.listing import list_runs

        root = runs_root(runs)
        rows = list_runs(root)
        typer.echo(ls_text(rows, root), nl=False)
        for note in schema_notes(root, sorted({r.experiment for r in rows})):
            typer.echo(note, err=True)


def schema_notes(root: Path, experiments: Sequence[str]) -> list[str]:
    """One line per experiment whose analysis.json an older (or newer) reportgen wrote, naming its
    schema: its pages and verdicts are not this reportgen's until `reportgen analyze` runs again."""
    from reportgen.analysis.document import SCHEMA_VERSION
    from reportgen.store.freshness import older_schema

    out = []
    for name in experiments:
        if (why := older_schema(root / name, SCHEMA_VERSION)) is not None:
            out.append(f"{root / name / 'analysis.json'}: {why}; run `reportgen analyze {name}`")
    return out

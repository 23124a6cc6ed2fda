"""`reportgen ls`: experiments, arms, repeats and their status."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.console import Console
from rich.table import Table

from reportgen.store.listing import list_runs


def register(app: typer.Typer) -> None:
    @app.command("ls")
    def ls_command(runs: Path = typer.Option(Path("runs"), "--runs", help="The runs/ root.")) -> None:
        """List experiments, arms, repeats and their status."""
        rows = list_runs(runs)
        console = Console()
        if not rows:
            console.print(f"no experiments under {runs}", markup=False)
            return
        table = Table("experiment", "arm", "repeat", "role", "status", "started (UTC)", "duration", "steps", box=None)
        for r in rows:
            table.add_row(
                r.experiment,
                r.arm,
                str(r.repeat),
                r.role,
                r.status,
                r.started_utc or "-",
                "-" if r.duration_s is None else f"{r.duration_s:.1f} s",
                "-" if r.steps is None else str(r.steps),
            )
        console.print(table)

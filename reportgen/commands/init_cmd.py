"""`reportgen init RECIPE.sh`: write an experiment spec from a recipe script (thin: parses options,
calls reportgen.plan.init_spec.write_spec)."""

from __future__ import annotations

from pathlib import Path

import typer

from reportgen.commands.options import optional


def init(
    recipe: Path = typer.Argument(..., metavar="RECIPE.sh", help="The recipe script (a Relax training script)."),
    out: Path | None = optional("--out", "SPEC", "Where to write the spec (default: <recipe's name>.toml here)."),
    steps: int | None = optional(
        "--steps",
        "N",
        "Steps a run makes, where the recipe's --num-rollout cannot be read (a variable without default).",
    ),
) -> None:
    """Write an experiment spec whose baseline is RECIPE.sh as it is: its fixed-workload flags, windows
    from its step count, an A/A candidate, and commented examples of a flag edit and of PR mode. An
    existing file is never replaced."""
    from reportgen.plan.init_spec import write_spec

    path = write_spec(recipe, out, steps=steps)
    typer.echo(str(path))
    typer.echo(f"next: reportgen run --dry-run {out or path.name}", err=True)


def register(app: typer.Typer) -> None:
    app.command("init")(init)

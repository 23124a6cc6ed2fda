"""Command line: thin. Each command module parses options and calls one plain function.

`UserError` is caught here, once: its one-line message goes to stderr and the exit code is 2.
Usage errors (an unknown option, a missing argument) are Typer's: usage, one error line, exit 2.
Help text is plain (no Rich markup), so `[profiles.NAME]` in a help string reads as written.
"""

from __future__ import annotations

import sys
from typing import Any

import typer
from typer.core import TyperGroup

from reportgen.errors import UserError

HELP = "Run, ingest, analyze and publish performance experiments for RL training."


class _Group(TyperGroup):
    """Typer's group of commands, its own --help flag defaulting to False.

    Typer (0.29) leaves that flag's default unset, so every `reportgen COMMAND ...` converts the
    absent flag's None through a pydantic TypeAdapter, importing pydantic first: 0.1 s of CPU, half
    of what `reportgen COMMAND --help` costs (docs/contributing.md, CLI start-up). A bool needs no
    conversion."""

    def get_help_option(self, ctx: Any) -> Any:  # Any: the types are those of Typer's private copy of click
        option = super().get_help_option(ctx)
        if option is not None:
            option.default = False
        return option


app = typer.Typer(
    name="reportgen",
    help=HELP,
    cls=_Group,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)


@app.callback(invoke_without_command=True)
def _root(ctx: typer.Context) -> None:
    """Run, ingest, analyze and publish performance experiments for RL training."""
    if ctx.invoked_subcommand is None:  # bare `reportgen`: the help, and success
        typer.echo(ctx.get_help())
        raise typer.Exit(0)


def _register() -> None:
    # One module per command; each exposes register(app).
    from reportgen.commands import (
        analyze_cmd,
        bisect_cmd,
        history_cmd,
        ingest_cmd,
        init_cmd,
        ls_cmd,
        plan_cmd,
        run_cmd,
    )

    for module in (init_cmd, run_cmd, ls_cmd, ingest_cmd, analyze_cmd, history_cmd, plan_cmd, bisect_cmd):
        module.register(app)


_register()


def main(argv: list[str] | None = None) -> int:
    """Run one command; returns its exit status (0, 2 for bad input, 130 when interrupted)."""
    try:
        app(args=argv, prog_name="reportgen")
    except UserError as exc:
        sys.stderr.write(f"reportgen: error: {exc}\n")
        return UserError.exit_code
    except SystemExit as exc:  # standalone mode always ends here: typer.Exit, usage errors, success
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    return 0


if __name__ == "__main__":
    sys.exit(main())

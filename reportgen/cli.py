"""Command line: thin. Each command module parses options and calls one plain function.

`UserError` is caught here, once: its one-line message goes to stderr and the exit code is 2.
"""

from __future__ import annotations

import sys

import typer

from reportgen.errors import UserError

app = typer.Typer(
    name="reportgen",
    help="Run, ingest, analyze and publish performance experiments for RL training.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


@app.callback()
def _root() -> None:
    """Run, ingest, analyze and publish performance experiments for RL training."""


def _register() -> None:
    # One module per command; each exposes register(app).
    from reportgen.commands import analyze_cmd, ingest_cmd, ls_cmd, run_cmd

    for module in (run_cmd, ls_cmd, ingest_cmd, analyze_cmd):
        module.register(app)


_register()


def main(argv: list[str] | None = None) -> int:
    try:
        rc = app(args=argv, standalone_mode=False, prog_name="reportgen")
        if isinstance(rc, int):  # typer.Exit(code) comes back as a return value here
            return rc
    except UserError as exc:
        sys.stderr.write(f"reportgen: error: {exc}\n")
        return UserError.exit_code
    except typer.Abort:
        sys.stderr.write("reportgen: aborted\n")
        return 130
    except SystemExit as exc:  # typer.Exit and click's own usage errors
        return int(exc.code or 0)
    except Exception as exc:  # click usage errors arrive as ClickException in non-standalone mode
        import click

        if isinstance(exc, click.exceptions.Exit):
            return exc.exit_code
        if isinstance(exc, click.ClickException):
            exc.show()
            return 2
        raise
    return 0


if __name__ == "__main__":
    sys.exit(main())

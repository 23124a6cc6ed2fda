"""`reportgen ingest LOG --spec SPEC --arm ARM`: a log made outside `reportgen run` becomes a run.

Thin: parses options and calls `reportgen.ingest.external.ingest_external`, then re-analyses the
experiment so that every command that changes runs/ leaves its analysis.json current (the site
build only reads it; see docs/site.md).
"""

from __future__ import annotations

from pathlib import Path

import typer

from reportgen.commands.options import RunsOption, optional, runs_root


def ingest(
    log: Path = typer.Argument(..., metavar="LOG", help="Relax console log (stdout, or the tee'd log file)."),
    spec: Path = typer.Option(..., "--spec", metavar="SPEC", help="Experiment spec (TOML) the run belongs to."),
    arm: str = typer.Option(..., "--arm", metavar="ARM", help="'baseline' or a candidate id of the spec."),
    repeat: int | None = optional("--repeat", "N", "Repeat number (default: the next free one)."),
    runs: RunsOption = None,
    tensorboard: Path | None = optional("--tensorboard", "DIR", "TensorBoard event folder of the run."),
    stderr: Path | None = optional("--stderr", "LOG", "The run's stderr, if kept apart from LOG."),
    traces: Path | None = optional(
        "--traces", "DIR", "The run's profiler output folder (Relax's traces/): summarised into traces.parquet."
    ),
    no_analyze: bool = typer.Option(False, "--no-analyze", help="Do not rewrite the experiment's analysis.json."),
) -> None:
    """Ingest a Relax console log (and optional TensorBoard folder) as a run under runs/."""
    from reportgen.analyze import analyze_experiment
    from reportgen.ingest.external import ingest_external

    root = runs_root(runs)
    path = ingest_external(
        log,
        spec_path=spec,
        arm=arm,
        repeat=repeat,
        runs_root=root,
        tensorboard=tensorboard,
        stderr_log=stderr,
        traces=traces,
    )
    typer.echo(str(path))
    if not no_analyze:
        typer.echo(f"analysis: {analyze_experiment(path.parent.parent)}")


def register(app: typer.Typer) -> None:
    app.command("ingest")(ingest)

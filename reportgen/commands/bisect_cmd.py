"""`reportgen bisect GOOD BAD [SPEC]`: the first commit whose performance differs from GOOD's
(thin; the work is reportgen.bisect). Progress goes to stderr, so that `--json` prints one object
on stdout whose `culprit` is the full SHA."""

from __future__ import annotations

import json
from pathlib import Path

import typer

from reportgen.commands.options import RunsOption, optional, runs_root


def register(app: typer.Typer) -> None:
    @app.command("bisect")
    def bisect_command(
        good: str = typer.Argument(..., metavar="GOOD", help="A revision whose performance is the reference."),
        bad: str = typer.Argument(..., metavar="BAD", help="A later revision whose performance differs."),
        spec: Path | None = typer.Argument(
            None,
            metavar="SPEC",
            help="The spec whose baseline recipe is measured (default: REPO/scripts/recipes/default.toml).",
        ),
        repo: Path = typer.Option(Path("."), "--repo", metavar="DIR", help="The git repository (default: here)."),
        runs: RunsOption = None,
        pairs: int = typer.Option(
            6, "--pairs", min=2, max=100, help="Most pairs a step may spend (it stops when decided)."
        ),
        profile: str | None = optional("--profile", "NAME", "Apply the spec's [profiles.NAME] overlay."),
        name: str | None = optional(
            "--name", "NAME", "The bisection's folder under runs/ (default bisect-GOOD7-BAD7)."
        ),
        as_json: bool = typer.Option(False, "--json", help="Print one JSON object (culprit: the full SHA)."),
    ) -> None:
        """Find the first commit between GOOD and BAD whose performance differs from GOOD's (paired campaigns)."""
        from rich.console import Console

        from reportgen.bisect import BisectRequest, run_bisect, summary

        req = BisectRequest(
            repo=repo, good=good, bad=bad, spec=spec, runs_root=runs_root(runs), pairs=pairs, profile=profile, name=name
        )
        record, out_dir = run_bisect(req, console=Console(stderr=True))
        if as_json:
            typer.echo(json.dumps(summary(record, out_dir)))
            return
        for i, s in enumerate(record.steps, start=1):
            typer.echo(
                f"step {i}: {s.sha[:12]} {(s.ratio - 1) * 100:+.1f} % vs GOOD over {s.pairs} pairs: {s.call}"
                + ("" if s.decided else " (undecided: by its estimate)")
            )
        if record.culprit:
            typer.echo(f"culprit: {record.culprit} {record.culprit_subject}")
        else:
            typer.echo("no culprit: " + "; ".join(record.notes))
        typer.echo(f"{record.runs} runs, {record.minutes:.1f} minutes; report: {out_dir / 'report.md'}")

"""Commands `analyze` and `pr-body`: parse options, call one plain function each."""

from __future__ import annotations

from pathlib import Path

import typer

from reportgen.commands.options import RunsOption, experiment_dir, optional, runs_root


def analyze(experiments: list[str], runs: Path, *, wait: bool = False, force: bool = False) -> list[Path]:
    """analysis.json for the named experiments under `runs`, or for all of them (one that is
    current is left as it is unless `force`); a campaign in progress is refused, or with `wait`
    waited for."""
    from reportgen.analyze import analyze_all, analyze_experiment

    if not experiments:
        return analyze_all(runs, wait=wait, force=force, log=_say)
    return [analyze_experiment(experiment_dir(name, runs), wait=wait, force=force, log=_say) for name in experiments]


def _say(line: str) -> None:
    """A note on stderr (stdout lists the files written): e.g. an older analysis schema met."""
    typer.echo(line, err=True)


def pr_body(experiment: str, runs: Path, site_url: str | None, *, full: bool = False, root: Path | None = None) -> str:
    """The PR section; its report link is `site_url`, else the spec's `[analysis] site_url`, else the
    published address derived from the repository at `root` (default: the working folder;
    render/site_address.py), else none (the line says how to give one)."""
    from reportgen.analyze import analyze_experiment, is_stale
    from reportgen.render.common import recipe_dir_where_it_ran
    from reportgen.render.load import load_experiment
    from reportgen.render.prbody import render_pr_body
    from reportgen.render.site_address import published_address

    exp = experiment_dir(experiment, runs)
    if is_stale(exp):
        analyze_experiment(exp, log=_say)
    data = load_experiment(exp)
    if not site_url and not data.analysis.settings.site_url:
        found = published_address(exp.name, root=root or Path.cwd())
        if found is not None:
            site_url = found.url
            _say(f"report link: {found.url} ({found.how}); --site-url gives another")
    return render_pr_body(
        data.analysis, site_url=site_url, runs_dir=str(runs), recipe_dir=recipe_dir_where_it_ran(data), full=full
    )


def register(app: typer.Typer) -> None:
    @app.command("analyze")
    def analyze_command(
        experiments: list[str] | None = typer.Argument(
            None, metavar="EXPERIMENT", help="experiment names (default: all under --runs)"
        ),
        runs: RunsOption = None,
        wait: bool = typer.Option(
            False, "--wait", help="Wait for a campaign in progress to end instead of refusing it."
        ),
        force: bool = typer.Option(
            False, "--force", help="Write analysis.json again even when it is current (same inputs and schema)."
        ),
    ) -> None:
        """Write analysis.json (windows, interval, guardrails, verdicts) for experiments whose runs or
        analysis schema changed since it was written; a current one is left as it is."""
        for path in analyze(list(experiments or []), runs_root(runs), wait=wait, force=force):
            typer.echo(str(path))

    @app.command("pr-body")
    def pr_body_command(
        experiment: str = typer.Argument(..., metavar="EXPERIMENT", help="experiment name under --runs"),
        runs: RunsOption = None,
        site_url: str | None = optional(
            "--site-url",
            "URL",
            "base URL of the published site (default: mkdocs.yml's site_url or origin's GitHub Pages, with the mike "
            "version that holds the report)",
        ),
        full: bool = typer.Option(
            False, "--full", help="Add each candidate's headline table and every guardrail (longer than 60 lines)."
        ),
    ) -> None:
        """Print a Markdown section for a PR description (at most 60 lines; the details folded)."""
        typer.echo(pr_body(experiment, runs_root(runs), site_url, full=full), nl=False)

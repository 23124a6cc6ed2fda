"""Planning a campaign from earlier ones of its machine class.

`reportgen plan-power EXPERIMENT`: the pairs a minimum effect needs on a machine class, and the
effect a budget of GPU minutes can see, from a past campaign (or A/A) of that class. Thin: loads the
experiment's analysis.json and calls reportgen.analysis.power_plan.plan.

`reportgen plan-windows [EXPERIMENT] --from EARLIER ...`: where every arm settles in earlier
campaigns, and the windows whose burn-in covers it, for the spec's [analysis] table before the
campaign (or, with --amend, recorded in a campaign's stored spec). Thin: calls
reportgen.analyze.plan_windows.
"""

from __future__ import annotations

import typer

from reportgen.commands.options import RunsOption, experiment_dir, optional, runs_root


def plan_power(
    experiment: str = typer.Argument(
        ...,
        metavar="EXPERIMENT",
        help="A past campaign or A/A experiment of the machine class (name under --runs, or a folder).",
    ),
    runs: RunsOption = None,
    min_effect: float | None = optional(
        "--min-effect", "X", "The design's minimum effect (default: the experiment's)."
    ),
    effect: float | None = optional(
        "--effect", "X", "The change to accept or reject (default: twice the minimum effect)."
    ),
    budget_minutes: float | None = optional(
        "--budget-minutes",
        "M",
        "GPU minutes (minutes on a CPU) one candidate may spend: the smallest change they can see.",
    ),
    power: float = typer.Option(0.90, "--power", metavar="P", help="Power wanted, both ways (default 0.90)."),
) -> None:
    """Print the pairs a sequential campaign needs for a change at the shipped error rates, from the
    run-to-run spread a past campaign of the same machine class measured (docs/calibration.md)."""
    from reportgen.analysis.power_plan import plan
    from reportgen.render.load import load_analysis

    exp = experiment_dir(experiment, runs_root(runs))
    result = plan(
        load_analysis(exp),
        str(exp / "analysis.json"),
        effect=effect,
        min_effect=min_effect,
        budget_minutes=budget_minutes,
        target=power,
    )
    for line in result.lines():
        typer.echo(line)


def plan_windows(
    experiment: str | None = typer.Argument(
        None,
        metavar="[EXPERIMENT]",
        help="The campaign to declare windows for (its arms and run length); without --from, its own runs are the evidence.",
    ),
    evidence: list[str] | None = typer.Option(
        None,
        "--from",
        metavar="EARLIER",
        help="An earlier campaign of the same experiment and machine class (repeatable): the evidence.",
    ),
    runs: RunsOption = None,
    windows: int = typer.Option(
        2, "--windows", metavar="K", help="Windows to split the steady steps into (default 2)."
    ),
    amend: bool = typer.Option(
        False, "--amend", help="Record the windows in EXPERIMENT's stored spec (experiment.toml), with the reason."
    ),
    reason: str | None = optional("--reason", "TEXT", "The amendment's reason (default: the evidence, in words)."),
) -> None:
    """Print where every arm settles in earlier campaigns and the windows whose burn-in covers every
    arm's warm-up (docs/analysis.md#burn-in)."""
    from reportgen.analyze import plan_windows as plan

    root = runs_root(runs)
    target = experiment_dir(experiment, root) if experiment is not None else None
    proposal = plan(
        target, [experiment_dir(e, root) for e in evidence or []], windows=windows, amend=amend, reason=reason
    )
    if not evidence:
        typer.echo(f"evidence: {experiment}'s own runs (name earlier campaigns of its class with --from)")
    for line in proposal.lines():
        typer.echo(line)
    if amend and target is not None:
        typer.echo(
            f"recorded in {target / 'experiment.toml'} (experiment.json keeps the amendment); `reportgen analyze {target.name}` next"
        )


def register(app: typer.Typer) -> None:
    app.command("plan-power")(plan_power)
    app.command("plan-windows")(plan_windows)

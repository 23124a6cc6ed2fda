"""`reportgen plan-power EXPERIMENT`: the pairs a minimum effect needs on a machine class, and the
effect a budget of GPU minutes can see, from a past campaign (or A/A) of that class.

Thin: loads the experiment's analysis.json and calls reportgen.analysis.power_plan.plan.
"""

from __future__ import annotations

import typer

from reportgen.commands.options import RunsOption, optional, runs_root


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
    from reportgen.commands.analyze_cmd import _exp_dir
    from reportgen.render.load import load_analysis

    exp = _exp_dir(experiment, runs_root(runs))
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


def register(app: typer.Typer) -> None:
    app.command("plan-power")(plan_power)

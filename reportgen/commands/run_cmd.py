"""`reportgen run`: execute an experiment spec into runs/ (thin; the work is reportgen.pipeline.run)."""

from __future__ import annotations

from pathlib import Path

import typer

from reportgen.commands.options import RunsOption, optional, runs_root
from reportgen.errors import UserError


def register(app: typer.Typer) -> None:
    @app.command("run")
    def run_command(
        specs: list[Path] | None = typer.Argument(
            None,
            metavar="SPEC",
            help="Experiment spec(s) (TOML). Default: scripts/recipes/default.toml. Several run in parallel on Ray (one node each), else one after another.",
        ),
        profile: str | None = optional("--profile", "NAME", "Apply the spec's [profiles.NAME] overlay, e.g. gpu."),
        runs: RunsOption = None,
        dry_run: bool = typer.Option(False, "--dry-run", help="Print each arm's diff and command; run nothing."),
        rerun: list[str] = typer.Option(
            [], "--rerun", metavar="ARM", help="Rerun this arm even if complete (repeatable)."
        ),
        new_campaign: bool = typer.Option(
            False, "--new-campaign", help="Archive existing runs and rerun all arms (other machine or changed spec)."
        ),
        no_profiler: bool = typer.Option(False, "--no-profiler", help="Skip the separate profiler run."),
        no_analyze: bool = typer.Option(False, "--no-analyze", help="Do not write analysis.json at the end."),
        baseline_only: bool = typer.Option(
            False,
            "--baseline-only",
            help="Run the baseline alone ([run] repeats times, min_pairs for a sequential spec), no profiler: "
            "a point for the performance history (docs/performance-history.md).",
        ),
        name: str | None = optional("--name", "NAME", "Experiment folder name under runs/ instead of the spec's name."),
        ray: str | None = optional(
            "--ray",
            "ADDRESS",
            "Submit runs as jobs to this Ray cluster (address of its dashboard): --executor ray --address ADDRESS.",
        ),
        executor: str | None = optional(
            "--executor",
            "NAME",
            "Run with this registered executor (local, ray, ...) instead of the spec's [run] executor.",
        ),
        address: str | None = optional("--address", "ADDRESS", "Where the executor submits runs (a Ray dashboard)."),
        budget_minutes: float | None = typer.Option(
            None,
            "--budget-minutes",
            min=0.001,
            metavar="MIN",
            help='Sequential campaigns (until = "decided"): no new pair once this many minutes of runs are spent now; '
            "overrides [run] budget_minutes. The same command later resumes and adds pairs.",
        ),
        baseline_ref: str | None = optional(
            "--baseline-ref",
            "REV",
            "PR mode: the spec's baseline recipe at this revision of its repository (a branch, tag or SHA) is the "
            "baseline ... (docs/revisions.md)",
        ),
        candidate_ref: str | None = optional(
            "--candidate-ref",
            "REV",
            "... and at this revision the one candidate: one campaign of the two revisions, no spec to write.",
        ),
        share_machine: bool = typer.Option(
            False,
            "--share-machine",
            help="Run beside another campaign on this machine instead of waiting for it (overlapping runs then make their comparisons invalid).",
        ),
    ) -> None:
        """Run baseline and candidates back to back, with provenance and GPU sampling; resumable."""
        # The pipeline (execute, ingest, analysis: pandas, scipy, pyarrow) loads when a run starts, not for --help.
        from reportgen.execute.executor import RunOptions
        from reportgen.pipeline import RunRequest, run_all

        specs = list(specs or [])
        if ray is not None:
            if executor not in (None, "ray") or address is not None:
                raise UserError("--ray ADDRESS is --executor ray --address ADDRESS: give one or the other")
            executor, address = "ray", ray
        outcomes = run_all(
            RunRequest(
                spec_path=specs[0] if specs else None,
                more_specs=tuple(specs[1:]),
                profile=profile,
                options=RunOptions(
                    runs_root=runs_root(runs),
                    rerun=tuple(rerun),
                    new_campaign=new_campaign,
                    profiler=not (no_profiler or baseline_only),
                    baseline_only=baseline_only,
                    budget_minutes=budget_minutes,
                    share_machine=share_machine,
                ),
                dry_run=dry_run,
                analyze=not no_analyze,
                executor=executor,
                address=address,
                name=name,
                baseline_ref=baseline_ref,
                candidate_ref=candidate_ref,
            )
        )
        if any(o.interrupted for o in outcomes):
            raise typer.Exit(130)

"""Top of the pipeline: what `reportgen run` does, as one plain function.

spec -> plan -> execute (+ capture, ingest per run) -> analyze. The CLI only parses options.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from rich.console import Console

from reportgen.errors import UserError
from reportgen.execute.progress import ProgressDisplay
from reportgen.execute.runner import ExperimentOutcome, RunOptions, run_plan
from reportgen.plan.arms import Plan, build_plan
from reportgen.spec import Spec, load_spec

DEFAULT_SPEC = Path("scripts/recipes/default.toml")


@dataclass(frozen=True)
class RunRequest:
    spec_path: Path | None = None
    profile: str | None = None
    options: RunOptions = RunOptions()
    dry_run: bool = False
    analyze: bool = True
    ray_address: str | None = None


def resolve_spec_path(path: Path | None) -> Path:
    if path is not None:
        return path
    if DEFAULT_SPEC.is_file():
        return DEFAULT_SPEC
    raise UserError(
        f"no spec given and {DEFAULT_SPEC} not found here; pass the path of an experiment TOML "
        "(see docs/formats/spec.md) or run from the reportgen checkout"
    )


def load_plan(spec_path: Path | None, profile: str | None) -> Plan:
    spec: Spec = load_spec(resolve_spec_path(spec_path), profile=profile)
    return build_plan(spec)


def run(request: RunRequest, *, console: Console | None = None) -> ExperimentOutcome | None:
    """Execute (or, with dry_run, describe) the experiment; analysis.json is written at the end."""
    console = console or Console(stderr=True)
    plan = load_plan(request.spec_path, request.profile)
    if request.dry_run:
        from reportgen.plan.show import describe_plan

        spec = plan.spec
        text = describe_plan(plan, runs_root=request.options.runs_root, repeats=spec.run.repeats, order=spec.run.order)
        Console(soft_wrap=True).print(text + "\ndry run: nothing was run or written", markup=False, highlight=False)
        return None
    launcher = None
    executor_info: dict[str, object] = {}
    address = request.ray_address or (plan.spec.run.ray_address if plan.spec.run.executor == "ray" else None)
    if address or plan.spec.run.executor == "ray":
        from reportgen.execute.ray_jobs import ray_launcher

        launcher, executor_info = ray_launcher(plan, address=address, runs_root=request.options.runs_root)
    outcome = run_plan(
        plan, request.options, display=ProgressDisplay(console), launcher=launcher, executor_info=executor_info
    )
    if request.analyze:
        from reportgen.analyze import analyze_experiment

        path = analyze_experiment(outcome.path)
        console.print(f"analysis: {path}", markup=False, highlight=False)
    return outcome

"""Top of the pipeline: what `reportgen run` does, as one plain function.

spec -> plan -> execute (+ capture, ingest per run) -> analyze. The CLI only parses options.
"""

from __future__ import annotations

import contextlib
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, cast

from rich.console import Console

from reportgen.analysis.document import AnalysisDocument, parse
from reportgen.campaign import Sequential
from reportgen.errors import UserError
from reportgen.execute.executor import ExecutorKind, ExperimentOutcome, NextBlock, RunOptions, executor_kind
from reportgen.execute.progress import ProgressDisplay
from reportgen.execute.signals import stop_on_signals
from reportgen.plan.arms import Plan, build_plan
from reportgen.specfile import Spec, load_spec
from reportgen.store.atomic import read_json
from reportgen.store.lock import hold_campaigns
from reportgen.vocab import ID_PATTERN

DEFAULT_SPEC = Path("scripts/recipes/default.toml")


@dataclass(frozen=True)
class RunRequest:
    spec_path: Path | None = None
    profile: str | None = None
    options: RunOptions = field(default_factory=RunOptions)
    dry_run: bool = False
    analyze: bool = True
    executor: str | None = None  # a registered executor's name (execute/executor.py); None: the spec's
    address: str | None = None  # where that executor submits (a Ray dashboard); None: its default
    more_specs: tuple[Path, ...] = ()  # further experiments; an executor with `parallel` runs them at once
    name: str | None = None  # experiment folder name instead of the spec's (one spec only)


def resolve_spec_path(path: Path | None) -> Path:
    if path is not None:
        return path
    if DEFAULT_SPEC.is_file():
        return DEFAULT_SPEC
    raise UserError(
        f"no spec given and {DEFAULT_SPEC} not found here; pass the path of an experiment TOML "
        "(see docs/formats/spec.md) or run from the reportgen checkout"
    )


def load_plan(spec_path: Path | None, profile: str | None, name: str | None = None) -> Plan:
    spec: Spec = load_spec(resolve_spec_path(spec_path), profile=profile)
    if name is not None:
        spec = rename(spec, name)
    executor_kind(spec.run.executor, where=f"{spec.source_path}: [run] executor")  # a registered one
    return build_plan(spec)


def rename(spec: Spec, name: str) -> Spec:
    """The same experiment under another folder name (e.g. a showcase labelled with its machine)."""
    if not ID_PATTERN.match(name):
        raise UserError(f"--name {name!r}: expected letters, digits, '.', '_' or '-' (at most 64)")
    return spec.model_copy(update={"name": name})


def analysed(exp_dir: Path) -> AnalysisDocument:
    """Analyse an experiment now (writing its analysis.json) and return the document."""
    from reportgen.analyze import analyze_experiment

    path = analyze_experiment(exp_dir)
    return parse(read_json(path), str(path), exp_dir.name)


def schedule(plan: Plan, options: RunOptions, display: ProgressDisplay) -> NextBlock | None:
    """The sequential schedule of a campaign with `[run] until = "decided"`; None for a fixed one."""
    if plan.spec.run.until != "decided":
        return None
    exp_dir = Path(options.runs_root) / plan.spec.name
    return Sequential(plan, exp_dir, analysed, log=display.log, budget_minutes=options.budget_minutes)


def run(request: RunRequest, *, console: Console | None = None) -> ExperimentOutcome | None:
    """Execute (or, with dry_run, describe) the experiment; analysis.json is written at the end."""
    outcomes = run_all(request, console=console)
    return outcomes[0] if outcomes else None


def run_all(request: RunRequest, *, console: Console | None = None) -> list[ExperimentOutcome]:
    """Every requested experiment, with the executor the request or the first spec names (looked up
    in the registry of reportgen.execute.executor): one after another here, or in parallel on a Ray
    cluster."""
    console = console or Console(stderr=True)
    paths = [request.spec_path, *request.more_specs]
    if request.name is not None and request.more_specs:
        raise UserError("--name renames one experiment; give one spec with it")
    plans = [load_plan(p, request.profile, request.name) for p in paths]
    names = [p.spec.name for p in plans]
    if len(set(names)) != len(names):
        raise UserError(
            f"experiment names must differ to run together, got {', '.join(names)}: rename one (spec key 'name')"
        )
    kind = executor_kind(request.executor or plans[0].spec.run.executor, where="--executor")
    if request.dry_run:
        from reportgen.execute.runner import campaign_refusal
        from reportgen.plan.show import describe_plan

        for plan in plans:
            spec = plan.spec
            # A dry run refuses what the run would refuse (another machine's campaign, a changed spec),
            # so a published command can be checked without running it.
            if not request.options.new_campaign and (
                refused := campaign_refusal(spec, request.options.runs_root / spec.name)
            ):
                raise UserError(refused)
            text = describe_plan(
                plan,
                runs_root=request.options.runs_root,
                profiler=request.options.profiler,
                baseline_only=request.options.baseline_only,
            )
            Console(soft_wrap=True).print(text + "\ndry run: nothing was run or written", markup=False, highlight=False)
        return []
    exp_dirs = [Path(request.options.runs_root) / p.spec.name for p in plans]
    # One runner per campaign, one measurement per machine: held around the runs and the analysis.
    machine = kind.on_this_machine and not request.options.share_machine

    def say(line: str) -> None:
        console.print(line, markup=False, highlight=False, soft_wrap=True)

    with contextlib.ExitStack() as locks:
        # Ctrl-C or SIGTERM while waiting for the machine gives up with nothing run, however the
        # process was started: a background job inherits SIGINT ignored, and `kill -INT` (run_until,
        # a CI job's timeout) must still stop the wait as it stops the runs (the runner's handlers).
        stop = threading.Event()
        with stop_on_signals(stop):
            held = locks.enter_context(hold_campaigns(exp_dirs, machine=machine, stop=stop, log=say))
        if not held or stop.is_set():  # nothing ran
            return [
                ExperimentOutcome(p.spec.name, d, (), interrupted=True) for p, d in zip(plans, exp_dirs, strict=True)
            ]
        return _run_and_analyze(request, plans, kind=kind, console=console)


def _run_and_analyze(
    request: RunRequest, plans: list[Plan], *, kind: ExecutorKind, console: Console
) -> list[ExperimentOutcome]:
    def display_for(plan: Plan) -> ProgressDisplay:
        if len(plans) == 1 or not kind.parallel:
            return ProgressDisplay(console)
        # Experiments in parallel share the terminal: plain lines, each tagged with its experiment.
        return ProgressDisplay(
            Console(file=cast(IO[str], _Prefixed(console.file, plan.spec.name)), width=console.width), live=False
        )

    done = kind.run(
        plans,
        request.options,
        address=request.address,
        display_for=display_for,
        next_block_for=lambda plan, display: schedule(plan, request.options, display),
    )
    outcomes = [o for o in done if o is not None]
    if request.analyze:
        from reportgen.analyze import analyze_experiment

        for outcome in outcomes:
            path = analyze_experiment(outcome.path)
            console.print(f"analysis: {path}", markup=False, highlight=False)
    return outcomes


class _Prefixed:
    """A text stream that starts every line with `[name] `."""

    def __init__(self, stream: Any, name: str) -> None:
        self.stream = stream
        self.prefix = f"[{name}] "
        self.at_line_start = True

    def write(self, text: str) -> int:
        out = []
        for piece in text.splitlines(keepends=True):
            if self.at_line_start:
                out.append(self.prefix)
            out.append(piece)
            self.at_line_start = piece.endswith("\n")
        self.stream.write("".join(out))
        return len(text)

    def flush(self) -> None:
        self.stream.flush()

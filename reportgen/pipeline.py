"""Top of the pipeline: what `reportgen run` does, as one plain function.

spec -> plan -> execute (+ capture, ingest per run) -> analyze. The CLI only parses options.
"""

from __future__ import annotations

import contextlib
import hashlib
import threading
from dataclasses import dataclass, field, replace
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
from reportgen.store import atomic
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
    # PR mode (docs/revisions.md): the spec's baseline recipe at these two revisions of its
    # repository, as one campaign of a baseline and one candidate; no spec written for it.
    baseline_ref: str | None = None
    candidate_ref: str | None = None
    cache: Path | None = None  # checkouts and per-arm caches of arms at revisions (default_cache())


def resolve_spec_path(path: Path | None) -> Path:
    if path is not None:
        return path
    if DEFAULT_SPEC.is_file():
        return DEFAULT_SPEC
    raise UserError(
        f"no spec given and {DEFAULT_SPEC} not found here; pass the path of an experiment TOML "
        "(see docs/formats/spec.md) or run from the reportgen checkout"
    )


def load_plan(
    spec_path: Path | None,
    profile: str | None,
    name: str | None = None,
    *,
    runs_root: Path | None = None,
    new_campaign: bool = False,
    cache: Path | None = None,
) -> Plan:
    """The plan of a spec. Arms at git revisions keep the commits their campaign in `runs_root`
    was planned with (revisions.json) while the spec names the same refs, unless `new_campaign`."""
    spec: Spec = load_spec(resolve_spec_path(spec_path), profile=profile)
    if name is not None:
        spec = rename(spec, name)
    executor_kind(spec.run.executor, where=f"{spec.source_path}: [run] executor")  # a registered one
    pinned = {}
    if spec.uses_revisions() and runs_root is not None and not new_campaign:
        from reportgen.execute.checkouts import stored_revisions

        pinned = stored_revisions(Path(runs_root) / spec.name)
    return build_plan(spec, pinned=pinned, cache=cache)


def revision_request(request: RunRequest) -> RunRequest:
    """PR mode: the request with its spec replaced by one derived for the two revisions (its baseline
    recipe at `baseline_ref`, one candidate at `candidate_ref`; reportgen.specfile.derive), written
    under the cache; the experiment is named after the spec and both commits unless --name says."""
    base_ref, cand_ref = request.baseline_ref, request.candidate_ref
    if base_ref is None or cand_ref is None:
        raise UserError("--baseline-ref and --candidate-ref go together: give both revisions to compare")
    if request.more_specs:
        raise UserError("--baseline-ref/--candidate-ref compare two revisions of one spec; give one spec")
    path = derive_revision_spec(
        resolve_spec_path(request.spec_path),
        request.profile,
        base_ref,
        cand_ref,
        name=request.name,
        cache=request.cache,
    )
    return replace(request, spec_path=path, profile=None, name=None, baseline_ref=None, candidate_ref=None)


def derive_revision_spec(
    spec_path: Path,
    profile: str | None,
    base_ref: str,
    cand_ref: str,
    *,
    name: str | None = None,
    repo: Path | None = None,
    pairs: int | None = None,
    sequential: bool = False,
    cache: Path | None = None,
) -> Path:
    """Write the spec comparing `spec_path`'s baseline recipe at two revisions (derive.revision_spec)
    and return its path. `repo`: the recipe's repository (default: the spec's `[recipe] repo`, else
    the git repository holding the spec)."""
    import tomllib

    from reportgen.plan.revisions import repo_root, resolve
    from reportgen.specfile.derive import revision_spec, toml_text
    from reportgen.specfile.load import apply_profile, expand_paths
    from reportgen.store.layout import default_cache

    spec = load_spec(spec_path, profile=profile)  # validated as the user wrote it
    source_dir = Path(spec.source_dir)
    repo = repo_root(Path(repo) if repo is not None else source_dir / (spec.recipe.repo or "."))
    base_sha, cand_sha = resolve(repo, base_ref), resolve(repo, cand_ref)
    name = name or f"{spec.name}-{base_sha[:7]}-{cand_sha[:7]}"
    if not ID_PATTERN.match(name):
        raise UserError(f"--name {name!r}: expected letters, digits, '.', '_' or '-' (at most 64)")
    raw = expand_paths(apply_profile(tomllib.loads(Path(spec_path).read_text("utf-8")), profile, spec_path), spec_path)
    derived = revision_spec(
        raw,
        source_dir=source_dir,
        repo=repo,
        baseline_ref=base_sha,
        candidate_ref=cand_sha,
        name=name,
        candidate_title=f"{cand_ref} ({cand_sha[:12]}) against {base_ref} ({base_sha[:12]})",
        pairs=pairs,
        sequential=sequential,
    )
    # The source spec's own name in the header: the history files the campaign under that recipe
    # (history.experiment.recipe_name), while `name` is the campaign's folder.
    text = (
        f"# Derived by reportgen from {Path(spec_path).resolve()} (spec {spec.name}): {base_ref} vs {cand_ref}.\n"
        + toml_text(derived)
    )
    # Named by its content too: two campaigns of one name (`--name pr` in two repositories, two
    # terminals) share the cache, and a file named after the campaign alone was overwritten by the
    # other's between writing and reading it (a test saw one campaign run the other's spec).
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]
    out = (Path(cache) if cache is not None else default_cache()) / "specs" / f"{name}-{digest}.toml"
    out.parent.mkdir(parents=True, exist_ok=True)
    if not out.is_file():
        atomic.write_text(out, text)
    load_spec(out)  # the derived spec must load as any spec does
    return out


def run_revisions(
    repo: Path,
    base_sha: str,
    cand_sha: str,
    spec: Path | None = None,
    *,
    runs_root: Path,
    pairs: int,
    name: str,
    sequential: bool = False,
    profile: str | None = None,
    cache: Path | None = None,
    console: Console | None = None,
    executor: str | None = None,
    address: str | None = None,
) -> Path:
    """Measure `spec`'s baseline recipe (default: the repository's scripts/recipes/default.toml) at two
    revisions of `repo` as one paired campaign of `pairs` interleaved pairs (`sequential`: up to
    `pairs`, stopping when decided), in runs_root/name, analysed; returns that experiment folder.
    Its analysis.json holds the comparison: the candidate is `derive.CANDIDATE` ("candidate"), the
    baseline `base_sha`. Resumes a campaign of the same name and revisions; UserError for a bad
    revision or a checkout that cannot import. `executor`/`address`: another registered executor than
    the spec's (e.g. "ray" and a dashboard address), as `reportgen run --executor/--address`."""
    repo = Path(repo)
    spec_path = Path(spec) if spec is not None else repo / DEFAULT_SPEC
    path = derive_revision_spec(
        spec_path, profile, base_sha, cand_sha, name=name, repo=repo, pairs=pairs, sequential=sequential, cache=cache
    )
    request = RunRequest(
        spec_path=path,
        options=RunOptions(runs_root=Path(runs_root), profiler=False),
        cache=cache,
        executor=executor,
        address=address,
    )
    outcomes = run_all(request, console=console)
    exp_dir = Path(runs_root) / name
    if not outcomes or outcomes[0].interrupted:
        raise UserError(f"{exp_dir}: the campaign of {base_sha[:12]} vs {cand_sha[:12]} was interrupted")
    return exp_dir


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
    if request.baseline_ref is not None or request.candidate_ref is not None:
        request = revision_request(request)
    paths = [request.spec_path, *request.more_specs]
    if request.name is not None and request.more_specs:
        raise UserError("--name renames one experiment; give one spec with it")
    opts = request.options
    plans = [
        load_plan(
            p,
            request.profile,
            request.name,
            runs_root=opts.runs_root,
            new_campaign=opts.new_campaign,
            cache=request.cache,
        )
        for p in paths
    ]
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

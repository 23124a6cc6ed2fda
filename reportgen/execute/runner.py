"""Execute an experiment's plan into runs/: campaign pinning, resume, one run after another.

Sits after `plan` and before `ingest` in the pipeline. For each (arm, repeat) in the planned
order it keeps a finished run (complete or failed), redoes an unfinished one (interrupted, or
left `running` by a runner that died), and otherwise: records provenance, starts the GPU
sampler, runs the workload's process group with its streams in files, shows live progress from
the same console parser ingest uses, stops cleanly on Ctrl-C/SIGTERM/timeout, ingests, and
writes the manifest's final status last.
"""

from __future__ import annotations

import codecs
import functools
import hashlib
import inspect
import os
import shutil
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ParamSpec

from reportgen import vocab
from reportgen.capture.artifacts import list_artifacts
from reportgen.capture.fingerprint import class_id, fingerprint_id, machine_fingerprint
from reportgen.capture.gpu import GpuSampler, GpuStatus, compact
from reportgen.capture.host import compact_host
from reportgen.capture.provenance import CampaignProbes, capture_provenance
from reportgen.capture.redact import (
    flag_secret_values,
    published_env,
    recipe_variables,
    redact_command_text,
    redact_text,
    secret_values,
)
from reportgen.errors import UserError
from reportgen.execute import blocks
from reportgen.execute.checkouts import prepare_checkouts, record_revisions
from reportgen.execute.executor import (
    CaptureRequest,
    Executor,
    ExecutorKind,
    ExitInfo,
    ExperimentOutcome,
    Launch,
    NextBlock,
    RunExperiments,
    RunOptions,
    RunOutcome,
    Workload,
)
from reportgen.execute.process import LocalExecutor, stop_orphaned_group
from reportgen.execute.progress import ProgressDisplay
from reportgen.execute.signals import stop_on_signals
from reportgen.ingest.console import ConsoleParser
from reportgen.ingest.run_dir import IngestedRun, ingest_run
from reportgen.plan.arms import Arm, Plan, argv_text, block_order, runs_to_make
from reportgen.specfile import Spec
from reportgen.specfile.model import campaign_amendment
from reportgen.store import atomic, layout
from reportgen.store import lock as locks
from reportgen.store.experiment import (
    amend_experiment,
    load_experiment_record,
    read_spec,
    spec_record,
    write_experiment,
)
from reportgen.store.layout import default_cache
from reportgen.store.models import RunCommand
from reportgen.store.runs import (
    join_campaign,
    load_manifest,
    move_aside,
    read_campaign,
    record_block,
    utc_now,
    write_campaign,
    write_manifest,
)
from reportgen.traces.store import summarize_run_noting
from reportgen.vocab import FINAL_STATUSES, RunRole, Status

_P = ParamSpec("_P")


def _holding_locks(run: Callable[_P, ExperimentOutcome]) -> Callable[_P, ExperimentOutcome]:
    """run_plan holds its campaign's lock (another `reportgen run` of it is refused, nothing written)
    and, when the workload runs on this machine, the machine's (another campaign waits). Both are
    re-entrant: a pipeline holding them around runs and analysis just goes on (reportgen.store.lock).
    Ctrl-C while waiting for the machine ends with nothing run, as interrupted."""

    @functools.wraps(run)
    def wrapper(*args: _P.args, **kwargs: _P.kwargs) -> ExperimentOutcome:
        bound = inspect.signature(run).bind(*args, **kwargs)
        plan, options = bound.arguments["plan"], bound.arguments["options"]
        executor, display = bound.arguments.get("executor"), bound.arguments.get("display")
        stop = bound.arguments.get("stop_event") or threading.Event()
        bound.arguments["stop_event"] = stop
        exp_dir = Path(options.runs_root) / plan.spec.name
        here = executor is None or not executor.captures_on_node
        log = display.log if display is not None else None
        with (
            stop_on_signals(stop),
            locks.hold_campaigns([exp_dir], machine=here and not options.share_machine, stop=stop, log=log) as held,
        ):
            if not held:
                return ExperimentOutcome(plan.spec.name, exp_dir, (), interrupted=True)
            return run(*bound.args, **bound.kwargs)

    return wrapper


@_holding_locks
def run_plan(
    plan: Plan,
    options: RunOptions,
    *,
    display: ProgressDisplay | None = None,
    executor: Executor | None = None,
    executor_info: Mapping[str, Any] | None = None,
    stop_event: threading.Event | None = None,
    next_block: NextBlock | None = None,
) -> ExperimentOutcome:
    """Run every planned run; `stop_event` lets a caller running several experiments stop them all.
    With `next_block` the formal runs come in blocks it chooses (a sequential campaign), else in
    the spec's fixed order."""
    spec = plan.spec
    executor = executor or LocalExecutor()
    exp_dir = Path(options.runs_root) / spec.name
    info = dict(executor_info or {})
    # The machine the runs execute on: this one, or the executor's node.
    fp = dict(executor.fingerprint) if executor.fingerprint else machine_fingerprint()
    _prepare_revisions(plan, display)
    campaign = _prepare_experiment(spec, exp_dir, options, machine=fp, executor=info or None)
    record_revisions(plan, exp_dir)
    exp = _Experiment(
        plan=plan,
        exp_dir=exp_dir,
        campaign=campaign,
        options=options,
        display=display or ProgressDisplay(),
        executor=executor,
        executor_info=info,
        stop=stop_event if stop_event is not None else threading.Event(),
        machine_id=fingerprint_id(fp),
    )
    outcomes: list[RunOutcome] = []
    with stop_on_signals(exp.stop), exp.display:
        for line in _join_blocks(exp):
            exp.display.log(line)
        finished = blocks.finished_blocks(exp_dir, exp.campaign) if _in_blocks(spec) else {}
        for arm, repeat, role, ends_block in _runs(plan, options, next_block, finished):
            if exp.stop.is_set():
                break
            outcomes.append(_run_one(arm, repeat, role, exp))
            if executor.lost:  # its machine is gone: no later run may go elsewhere
                break
            if ends_block and not exp.stop.is_set():
                _close_block(exp, repeat)
    interrupted = exp.stop.is_set() or bool(executor.lost)
    return ExperimentOutcome(spec.name, exp_dir, tuple(outcomes), interrupted=interrupted)


def _prepare_revisions(plan: Plan, display: ProgressDisplay | None) -> None:
    """Arms at git revisions: each commit's clean export and import check, before anything of the
    campaign is written (reportgen.execute.checkouts; nothing for arms in the working tree)."""
    if plan.repo is not None:
        prepare_checkouts(plan, log=display.log if display is not None else print)


def _order(plan: Plan, options: RunOptions) -> list[tuple[Arm, int, RunRole, bool]]:
    """(arm, repeat, role, ends its block) of every run to make, in the spec's order; profiler runs
    last, if wanted. A block ends with the last formal run of its repeat, in interleaved order only."""
    arms = {arm.id: arm for arm in plan.arms}
    todo = [
        (arms[a], r, vocab.PROFILE if arms[a].role == "profile" else vocab.FORMAL)
        for a, r in runs_to_make(
            plan, profiler=options.profiler, baseline_only=options.baseline_only, repeats=plan.spec.run.repeats
        )
    ]
    last = {r: i for i, (_, r, role) in enumerate(todo) if role == vocab.FORMAL}
    in_blocks = _in_blocks(plan.spec) and not options.baseline_only
    return [(a, r, role, in_blocks and role == vocab.FORMAL and last[r] == i) for i, (a, r, role) in enumerate(todo)]


def _runs(
    plan: Plan, options: RunOptions, next_block: NextBlock | None, finished: Mapping[int, Sequence[str]]
) -> Iterator[tuple[Arm, int, RunRole, bool]]:
    """The runs in order, each with whether it ends its block. A generator: a sequential campaign's
    next block is chosen only after the block before it has run (the loop that consumes this runs
    each run before asking again). A block already finished (`finished`: block -> its arms, perhaps
    made on another machine) is kept as it is, never asked for again: nothing is added to it."""
    if next_block is None or options.baseline_only:
        yield from _order(plan, options)
        return
    arms = {arm.id: arm for arm in plan.arms}
    block = 1
    while True:
        chosen = finished.get(block)
        if chosen is None and (chosen := next_block(block)) is None:
            break
        ids = block_order(plan, block, chosen)
        for i, a in enumerate(ids):
            yield arms[a], block, vocab.FORMAL, i == len(ids) - 1
        block += 1
    if options.profiler:
        for arm in plan.profile_arms:
            yield arm, 1, vocab.PROFILE, False


def _in_blocks(spec: Spec) -> bool:
    """Whether the runs are made in blocks, each a pair on one machine: interleaved order (a
    sequential campaign always is). In the sequential order a pair's runs are far apart, and the
    campaign stays on the machine that started it."""
    return spec.run.order == "interleaved"


def _join_blocks(exp: _Experiment) -> list[str]:
    """What joining the campaign did, in words: this machine's arrival (when it gave no block yet)
    and each unfinished block another machine left, set aside to be redone whole here."""
    said = []
    me = next((m for m in exp.campaign.get("machines") or [] if m.get("fingerprint_id") == exp.machine_id), None)
    if me is not None and not me.get("blocks") and len(exp.campaign.get("machines") or []) > 1:
        said.append(f"campaign: machine {exp.machine_id[:12]} ({me.get('hostname')}) adds blocks (same machine class)")
    if _in_blocks(exp.spec):
        said += blocks.set_aside_unfinished(exp.exp_dir, exp.campaign, exp.machine_id)
    return said


def _close_block(exp: _Experiment, block: int) -> None:
    """Record `block` in campaign.json as given by this machine when each of its runs ended here."""
    if blocks.block_is_whole(exp.exp_dir, block, exp.machine_id):
        record_block(exp.exp_dir, fingerprint_id=exp.machine_id, block=block)


@dataclass(frozen=True)
class _Experiment:
    """What every run of one experiment shares."""

    plan: Plan
    exp_dir: Path
    campaign: Mapping[str, Any]
    options: RunOptions
    display: ProgressDisplay
    executor: Executor
    executor_info: Mapping[str, Any]
    stop: threading.Event  # set by SIGINT/SIGTERM: the run in progress stops, nothing further starts
    machine_id: str = ""  # the fingerprint id of the machine the runs execute on (each manifest records it)
    # What provenance asks once for all the runs made here (the Python's version and packages), kept
    # in the cache folder too, so the next `reportgen run` of the campaign reads it while unchanged.
    probes: CampaignProbes = field(default_factory=lambda: CampaignProbes(default_cache()))

    @property
    def spec(self) -> Spec:
        return self.plan.spec


# -- experiment folder: spec, campaign, resume rules -------------------------------------------


def _prepare_experiment(
    spec: Spec,
    exp_dir: Path,
    options: RunOptions,
    *,
    machine: Mapping[str, Any] | None = None,
    executor: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The campaign in `exp_dir` this machine adds runs to: a new one (pinned to this machine's
    class), or the one there, which this machine joins (campaign.json's `machines`)."""
    source_bytes = Path(spec.source_path).read_bytes()
    # The campaign pins the class of the machines the runs execute on: this one, or the executor's node.
    fp = dict(machine) if machine else machine_fingerprint()
    fp_id = fingerprint_id(fp)
    campaign = read_campaign(exp_dir)
    amend: dict[str, tuple[object, object]] = {}
    looks: list[int] = []
    if campaign is not None:
        reasons, amend, looks = _campaign_check(spec, exp_dir, campaign, fp, source_bytes)
        rerun = options.rerun and not reasons and not options.new_campaign
        if rerun and (why := blocks.rerun_refusal(exp_dir, options.rerun, fp_id)) is not None:
            raise UserError(f"{exp_dir}: {why}")
        if reasons:
            if not options.new_campaign:
                raise UserError(
                    f"{exp_dir}: {'; '.join(reasons)}. Pass --new-campaign to archive the existing runs "
                    "and rerun every arm, or give the experiment another name"
                )
            _archive_campaign(exp_dir, campaign)
            campaign = None
    elif options.new_campaign and exp_dir.exists():
        _archive_campaign(exp_dir, {"campaign_id": "unpinned"})
    exp_dir.mkdir(parents=True, exist_ok=True)
    if campaign is None:
        write_experiment(exp_dir, spec, source_bytes)
        campaign = write_campaign(
            exp_dir, fingerprint=fp, fingerprint_id=fp_id, class_id=class_id(fp), executor=executor
        )
    else:
        if amend:
            amend_experiment(exp_dir, spec, source_bytes, changed=amend, looks_taken=looks, utc=utc_now())
        machines = campaign.get("machines") or []
        joins = not any(m.get("fingerprint_id") == fp_id for m in machines)
        unrecorded = any(m.get("blocks") is None for m in machines)  # a version-1 file's machine
        legacy = blocks.ended_blocks(exp_dir, campaign.get("fingerprint_id")) if joins and unrecorded else None
        campaign = join_campaign(exp_dir, fingerprint=fp, fingerprint_id=fp_id, legacy_blocks=legacy)
    return campaign


def _campaign_check(
    spec: Spec, exp_dir: Path, campaign: Mapping[str, Any], fingerprint: Mapping[str, Any], source_bytes: bytes
) -> tuple[list[str], dict[str, tuple[object, object]], list[int]]:
    """Why `spec` may not add runs to the campaign in `exp_dir` on the machine `fingerprint` (reasons;
    empty: it may), the amendment it makes to the campaign's design, and the looks already taken.
    The machine's part is `blocks.machine_refusal`: another machine class is refused."""
    reasons: list[str] = []
    if (why := blocks.machine_refusal(campaign, fingerprint, pinned=not _in_blocks(spec))) is not None:
        reasons.append(why)
    record = load_experiment_record(exp_dir)
    want = spec_record(spec, source_bytes)
    amend: dict[str, tuple[object, object]] = {}
    looks: list[int] = []
    if record is not None and record.profile != want["profile"]:
        reasons.append("the spec changed since its runs were made")
    elif record is not None and record.spec_sha256 != want["spec_sha256"]:
        old = read_spec(exp_dir)
        taken = _looks_taken(old, exp_dir)
        amend, why = campaign_amendment(old, spec, taken)  # no change of looks once one was taken
        if why:
            reasons.append(why)
        elif amend:
            looks = taken
    return reasons, amend, looks


def campaign_refusal(spec: Spec, exp_dir: Path) -> str | None:
    """What `reportgen run` would say when refusing to add runs to `exp_dir`'s campaign here (another
    machine, a changed spec), or None: a dry run says it too, so a command is checked without running."""
    campaign = read_campaign(exp_dir)
    if campaign is None:
        return None
    reasons = _campaign_check(spec, exp_dir, campaign, machine_fingerprint(), Path(spec.source_path).read_bytes())[0]
    if not reasons:
        return None
    return (
        f"{exp_dir}: {'; '.join(reasons)}. Pass --new-campaign to archive the existing runs "
        "and rerun every arm, or give the experiment another name"
    )


def _looks_taken(old: Spec, exp_dir: Path) -> list[int]:
    """The pair counts at which the campaign's analysis could already decide under its old size:
    its looks up to the blocks every formal arm has finished."""
    done: dict[str, set[int]] = {}
    for arm, repeat, path in layout.iter_runs(exp_dir):
        manifest = load_manifest(path)
        if manifest and manifest.status in FINAL_STATUSES and (manifest.role or vocab.FORMAL) == vocab.FORMAL:
            done.setdefault(arm, set()).add(repeat)
    reached = min((max(r) for r in done.values()), default=0)
    return [n for n in old.run.looks() if old.run.min_pairs <= n <= reached]


def _archive_campaign(exp_dir: Path, campaign: Mapping[str, Any]) -> None:
    cid = str(campaign.get("campaign_id", "unknown"))
    for child in sorted(exp_dir.iterdir()):
        if child.name in (layout.ARCHIVE, layout.CAMPAIGN_LOCK):  # the lock stays: this run holds it
            continue
        move_aside(child, exp_dir, cid, child.name)


def _resume_decision(
    run_dir: Path,
    arm_id: str,
    options: RunOptions,
    campaign_id: str,
    stop_orphan: Callable[[Mapping[str, Any] | None], bool] = stop_orphaned_group,
) -> dict[str, Any] | None:
    """The manifest of a run to keep, or None after moving an unfinished/forced one aside."""
    if not run_dir.exists():
        return None
    manifest = load_manifest(run_dir)
    if manifest is not None and manifest.status in FINAL_STATUSES and arm_id not in options.rerun:
        return manifest.to_dict()
    if manifest is not None and manifest.status == Status.RUNNING:
        stop_orphan(manifest.process)
    label = f"{run_dir.parent.name}-{run_dir.name}"
    move_aside(run_dir, run_dir.parent.parent, campaign_id, label)
    return None


# -- one run -------------------------------------------------------------------------------------


def _run_one(arm: Arm, repeat: int, role: RunRole, exp: _Experiment) -> RunOutcome:
    """One run, step by step: keep it if it finished before; else write its inputs, record
    provenance (here, unless the executor does it on its node), run the workload, record the end."""
    run_dir = exp.exp_dir / arm.id / str(repeat)
    label = _label(arm, repeat, role, exp.spec)
    kept = _resume_decision(
        run_dir, arm.id, exp.options, exp.campaign["campaign_id"], stop_orphan=exp.executor.stop_orphan
    )
    if kept is not None:
        exp.display.log(f"[{label}] kept: {kept.get('status')} (resume)")
        return RunOutcome(arm.id, repeat, str(kept.get("status")), run_dir, reused=True)
    if role == vocab.FORMAL:
        arm = exp.plan.at_block(arm, repeat)  # the block's seeds ([run] seeds = "per-block"); else as planned
    run = _write_inputs(arm, repeat, role, label, run_dir, exp)
    if not exp.executor.captures_on_node:
        prov = capture_provenance(
            run_dir / layout.PROVENANCE,
            **run.provenance_args,
            env=run.env,
            cache_path=Path(exp.options.runs_root) / ".cache" / "hashes.json",
            probes=exp.probes,
        )
        _record_provenance(run.manifest, prov, exp.machine_id)
    ended = _execute(run, exp)
    return _record_end(run, ended, exp)


def _label(arm: Arm, repeat: int, role: RunRole, spec: Spec) -> str:
    """How the display names a run: "A1 2/3" (repeat 2 of 3), "A1 pair 4" (sequential), "profile-A1 1/1"."""
    if role != vocab.FORMAL:
        return f"{arm.id} 1/1"
    if spec.run.until == "decided":
        return f"{arm.id} pair {repeat}"
    return f"{arm.id} {repeat}/{spec.run.repeats}"


@dataclass
class _Run:
    """One run being made: where it goes, how it is launched, and its manifest as it grows."""

    arm: Arm
    repeat: int
    role: RunRole
    label: str
    run_dir: Path
    command: list[str]
    workdir: Path
    env: dict[str, str]
    secrets: list[str]
    sibling: Path | None  # the patched recipe's hidden copy beside the original, while it runs
    provenance_args: dict[str, Any]  # keyword arguments of capture_provenance, less dest/env/cache_path
    manifest: dict[str, Any]


@dataclass(frozen=True)
class _Ended:
    """How the workload ended, as the run loop saw it."""

    info: ExitInfo
    timed_out: bool
    interrupted: bool
    duration_s: float
    gpu: GpuStatus
    # When the workload ended: the manifest's ended_utc, from which the analysis places the measured
    # windows in time (walking back by the logged step times), so not when the folder was finished
    # (compacting, ingesting and redacting after the end take seconds on a loaded machine).
    ended_utc: str


def _write_inputs(arm: Arm, repeat: int, role: RunRole, label: str, run_dir: Path, exp: _Experiment) -> _Run:
    """The run folder with the patched recipe, its diff, the command, and the manifest `running`."""
    spec, plan = exp.spec, exp.plan
    run_dir.mkdir(parents=True)
    env = _run_env(spec, arm, run_dir)
    recipe = (arm.recipe_text or "") if arm.recipe_kind == "script" else argv_text(list(arm.argv or ()))
    # Credentials passed as flag values (`--wandb-key sk-...`) are scrubbed like the environment's.
    secrets = sorted({*secret_values(env), *flag_secret_values(recipe)}, key=lambda s: (-len(s), s))
    workdir = arm.workdir or (Path(spec.source_dir) / spec.recipe.workdir).resolve()
    command = plan.command(arm, repeat)
    atomic.write_text(run_dir / arm.recipe_file, recipe)
    atomic.write_text(run_dir / layout.RECIPE_PATCH, redact_command_text(arm.diff))
    shown = [redact_text(c, secrets) for c in command]
    # Published with the runs: the framework variables and the recipe's own, never the machine's whole
    # environment (its paths, a lent machine's history); `env_total` says how many were left out.
    own = {*spec.recipe.env, *arm.env, *recipe_variables(recipe)}
    shown_env = published_env(env, own)
    RunCommand.create({"command": shown, "cwd": str(workdir), "env": shown_env, "env_total": len(env)}).write(
        run_dir / layout.COMMAND
    )
    manifest: dict[str, Any] = {
        "experiment": spec.name,
        "arm": arm.id,
        "repeat": repeat,
        "role": role,
        "status": Status.RUNNING,
        "title": arm.title,
        "base": arm.base,
        "chain": list(arm.chain),
        "started_utc": utc_now(),
        "ended_utc": None,
        "duration_s": None,
        "exit_code": None,
        "signal": None,
        "timed_out": False,
        "command": shown,
        "cwd": str(workdir),
        "recipe": _recipe_info(plan, arm),
        "edits": [e.model_dump(mode="json") for e in arm.edits],
        **({"seeds": plan.seeds_of(repeat)} if role == vocab.FORMAL and plan.seed_bases else {}),
        **({"revision": {"ref": arm.ref, "sha": arm.revision}} if arm.revision else {}),
        "campaign_id": exp.campaign["campaign_id"],
        "fingerprint_id": exp.machine_id,  # the machine it runs on (the campaign's may be another of its class)
        "executor": {"kind": exp.executor.kind, **exp.executor_info},
    }
    write_manifest(run_dir, manifest)
    sibling = plan.launch_script(arm, repeat)
    return _Run(
        arm,
        repeat,
        role,
        label,
        run_dir,
        list(command),
        workdir,
        env,
        secrets,
        sibling,
        _arm_provenance_args(spec, arm),
        manifest,
    )


def _provenance_args(spec: Spec) -> dict[str, Any]:
    """What capture_provenance records for a run of `spec` (its keywords, less dest/env/cache_path)."""
    recipe_dir = Path(spec.source_dir)
    return {
        "python": spec.recipe.interpreter(),
        "recipe_repo": Path(spec.provenance.recipe_repo) if spec.provenance.recipe_repo else recipe_dir,
        "model_dir": (recipe_dir / spec.provenance.model_dir) if spec.provenance.model_dir else None,
        "data_files": [recipe_dir / d for d in spec.provenance.data_files],
        "commands": list(spec.provenance.commands),
        # What the run reads: an untracked file among them makes the tree "dirty", any other does not.
        "reads": [
            str(p)
            for p in (
                spec.source_path,
                recipe_dir / spec.recipe.script if spec.recipe.script else None,
                *(recipe_dir / d for d in spec.provenance.data_files),
            )
            if p
        ],
    }


def _arm_provenance_args(spec: Spec, arm: Arm) -> dict[str, Any]:
    """`_provenance_args`, with the code an arm at a git revision runs: its checkout (whose tree
    stamp names the commit) instead of the working tree."""
    args = _provenance_args(spec)
    if arm.checkout is not None:
        args["recipe_repo"] = arm.checkout
    return args


def _execute(run: _Run, exp: _Experiment) -> _Ended:
    """Launch the workload, sample the GPUs, follow the logs until it ends, is stopped or times out."""
    spec, executor = exp.spec, exp.executor
    if run.sibling is not None:
        atomic.write_text(run.sibling, run.arm.recipe_text or "")
    on_node = executor.captures_on_node
    capture = CaptureRequest(run.run_dir, run.provenance_args, spec.run.gpu_sample_interval_s) if on_node else None
    workload = executor.launch(
        Launch(
            tuple(run.command), run.workdir, run.env, run.run_dir / layout.STDOUT, run.run_dir / layout.STDERR, capture
        )
    )
    sampler = (
        None
        if on_node
        else GpuSampler(
            run.run_dir / layout.GPU_JSONL,
            interval_s=spec.run.gpu_sample_interval_s,
            env=run.env,  # the workload's CUDA_VISIBLE_DEVICES; its REPORTGEN_RUN_DIR marks its processes
            host_jsonl=run.run_dir / layout.HOST_JSONL,  # and the load beside it (reportgen.capture.host)
        )
    )
    exp.display.start_run(
        run.label,
        total_steps=spec.workload.steps if run.role == vocab.FORMAL else None,
        metric_name=_short(spec.analysis.primary),
    )
    t0 = time.monotonic()
    gpu: GpuStatus | None = None
    if sampler is not None:
        sampler.start()
    try:
        workload.start()
        run.manifest["process"] = workload.identity()
        write_manifest(run.run_dir, run.manifest)
        tail = _Tail(run.run_dir, spec.analysis.primary, exp.display)
        info, timed_out, interrupted = _wait(workload, tail, exp, t0)
        workload.finish()
        tail.pump()
    finally:
        if sampler is not None:
            gpu = sampler.stop()
        if run.sibling is not None and run.sibling.exists():
            run.sibling.unlink()
    duration, ended_utc = time.monotonic() - t0, utc_now()
    node = workload.capture_result()
    if node is not None:
        _record_provenance(run.manifest, node.provenance, exp.machine_id)
        gpu = node.gpu
    if executor.lost:
        # The machine went away: the run is unfinished, and no later run may go elsewhere.
        interrupted = True
        run.manifest.setdefault("warnings", []).append(str(executor.lost))
    if gpu is None:
        gpu = GpuStatus(available=False, reason=f"the {executor.kind} executor returned no GPU status")
    return _Ended(info, timed_out, interrupted, duration, gpu, ended_utc)


def _wait(workload: Workload, tail: _Tail, exp: _Experiment, t0: float) -> tuple[ExitInfo, bool, bool]:
    """(how it ended, timed out, interrupted): poll the workload, stopping it on a signal or the time limit."""
    while True:
        info = workload.poll()
        tail.pump()
        if info is not None:
            return info, False, False
        if exp.stop.is_set():
            return workload.stop(grace_s=exp.options.stop_grace_s), False, True
        if time.monotonic() - t0 > exp.spec.run.timeout_s:
            return workload.stop(grace_s=exp.options.stop_grace_s), True, False
        time.sleep(exp.options.poll_s)


def _record_end(run: _Run, ended: _Ended, exp: _Experiment) -> RunOutcome:
    """GPU samples compacted, logs redacted and ingested, then the manifest's final status, last."""
    run_dir, manifest, info = run.run_dir, run.manifest, ended.info
    rows = compact(run_dir / layout.GPU_JSONL, run_dir / layout.GPU_PARQUET)
    compact_host(run_dir / layout.HOST_JSONL, run_dir / layout.HOST_PARQUET)
    manifest["artifacts"] = list_artifacts(run_dir)
    if trace_warnings := summarize_run_noting(run_dir):
        manifest.setdefault("warnings", []).extend(trace_warnings)
    _redact_logs(run_dir, run.secrets)
    ingested = ingest_run(
        run_dir,
        invariants=list(exp.spec.workload.flags),
        expected=_expected_values(run, exp),
        entrypoint=exp.spec.recipe.entrypoint,
        exit_code=info.exit_code,
        signal=info.signal,
        timed_out=ended.timed_out,
        interrupted=ended.interrupted,
    )
    status = ingested.status  # reportgen.ingest.status.decide_status: the rule `reportgen ingest` applies too
    manifest.update(ingested.manifest_fields())
    gpu = ended.gpu
    manifest.update(
        status=status,
        ended_utc=ended.ended_utc,
        duration_s=round(ended.duration_s, 3),
        exit_code=info.exit_code,
        signal=info.signal,
        timed_out=ended.timed_out,
        gpu={"available": gpu.available, "reason": gpu.reason, "gpus": gpu.gpus, "samples": rows},
    )
    write_manifest(run_dir, manifest)
    detail = _detail(info, ended.timed_out, ingested)
    exp.display.finish_run(status, detail)
    return RunOutcome(run.arm.id, run.repeat, status, run_dir, detail=detail)


def _record_provenance(manifest: dict[str, Any], prov: Mapping[str, Any], machine_id: str) -> None:
    manifest.update(
        fingerprint=prov.get("fingerprint"),
        hashes=prov.get("hashes"),
        git=prov.get("git"),
        python_version=prov.get("python_version"),
    )
    if prov.get("fingerprint_id") and prov["fingerprint_id"] != machine_id:
        manifest.setdefault("warnings", []).append("machine fingerprint changed during the run's set-up")


def _expected_values(run: _Run, exp: _Experiment) -> dict[str, Any] | None:
    """The fixed-workload values a run must show: a candidate the first finished baseline run's; every
    formal run its block's seeds, which the runner set (per-block seeds differ between blocks)."""
    seeds = exp.plan.seeds_of(run.repeat) if run.role == vocab.FORMAL else {}
    base = None if run.arm.id == vocab.BASELINE else _baseline_values(exp.exp_dir)
    if base is not None and exp.plan.seed_bases:  # that baseline run's seeds are its block's
        base = {k: v for k, v in base.items() if k not in dict(exp.plan.seed_bases)}
    if base is None and not seeds:
        return None
    return {**(base or {}), **seeds}


def _baseline_values(exp_dir: Path) -> dict[str, Any] | None:
    """The fixed-workload values the first finished baseline run used: what candidates must match."""
    for _, _, path in layout.iter_runs(exp_dir):
        if path.parent.name != vocab.BASELINE:
            continue
        manifest = load_manifest(path)
        if manifest and manifest.status in FINAL_STATUSES and manifest.invariants.values:
            return dict(manifest.invariants.values)
    return None


def _run_env(spec: Spec, arm: Arm, run_dir: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.update(spec.recipe.env)
    env.update(arm.env)
    python = shutil.which(spec.recipe.interpreter()) or spec.recipe.interpreter()
    if "PYTHON" not in spec.recipe.env and "PYTHON" not in arm.env:
        env["PYTHON"] = python  # the spec's interpreter, not whatever $PYTHON the shell had
    env.update(
        REPORTGEN_RUN_DIR=str(run_dir.resolve()),
        REPORTGEN_EXPERIMENT=spec.name,
        REPORTGEN_ARM=arm.id,
        TENSORBOARD_DIR=str((run_dir / layout.TENSORBOARD).resolve()),
        PYTHONUNBUFFERED="1",
    )
    return env


def _recipe_info(plan: Plan, arm: Arm) -> dict[str, Any]:
    """Hashes of the recipe as read by the plan and as this arm runs it (no second read)."""
    if arm.recipe_kind == "script":
        original, patched = plan.original_text or "", arm.recipe_text or ""
        source = plan.spec.recipe.script
    else:
        original, patched = argv_text(list(plan.original_argv or ())), argv_text(list(arm.argv or ()))
        source = None
    return {
        "kind": arm.recipe_kind,
        "source": source,
        "sha256": hashlib.sha256(original.encode()).hexdigest(),
        "patched_sha256": hashlib.sha256(patched.encode()).hexdigest(),
    }


def _redact_logs(run_dir: Path, secrets: list[str]) -> None:
    """Rewrite a log only if a secret value leaked into it (e.g. through `set -x`). Logs can be
    gigabytes: both the scan and the rewrite stream."""
    if not secrets:
        return
    needles = [s.encode() for s in secrets]
    for name in (layout.STDOUT, layout.STDERR):
        path = run_dir / name
        if path.is_file() and _contains_any(path, needles):
            with open(path, encoding="utf-8", errors="replace", newline="") as fh:
                atomic.write_lines(path, (redact_text(line, secrets) for line in fh))


def _contains_any(path: Path, needles: list[bytes], chunk: int = 1 << 20) -> bool:
    keep = max(len(n) for n in needles) - 1  # a needle may straddle two chunks
    tail = b""
    with open(path, "rb") as fh:
        while block := fh.read(chunk):
            data = tail + block
            if any(n in data for n in needles):
                return True
            tail = data[-keep:] if keep else b""
    return False


def _detail(info: ExitInfo, timed_out: bool, ingested: IngestedRun) -> str:
    parts = []
    if timed_out:
        parts.append("timed out")
    if info.signal:
        parts.append(f"ended by {info.signal}")
    elif info.exit_code not in (0, None):
        parts.append(f"exit code {info.exit_code}")
    parts.append(f"{ingested.ingest['steps']} steps")
    return ", ".join(parts)


def _short(key: str) -> str:
    return key.split("/")[-1]


class _Tail:
    """Follows the growing stdout/stderr logs and feeds the console parser to the display."""

    def __init__(self, run_dir: Path, primary: str, display: ProgressDisplay) -> None:
        self.primary = primary
        self.display = display
        self.files = [run_dir / layout.STDOUT, run_dir / layout.STDERR]
        self.offsets = [0, 0]
        self.decoders = [codecs.getincrementaldecoder("utf-8")("replace") for _ in self.files]
        self.parsers = [ConsoleParser(), ConsoleParser()]

    def pump(self) -> None:
        for i, path in enumerate(self.files):
            try:
                with open(path, "rb") as fh:
                    fh.seek(self.offsets[i])
                    chunk = fh.read(1 << 20)
            except OSError:
                continue
            if not chunk:
                continue
            self.offsets[i] += len(chunk)
            for rec in self.parsers[i].feed(self.decoders[i].decode(chunk)):
                # Relax prints `perf N` twice: the rollout manager's line comes first, mid-step;
                # the actor's line (step time, throughput) marks the step as done.
                if rec.kind == "perf" and (self.primary in rec.values or vocab.STEP_TIME in rec.values):
                    value = rec.values.get(self.primary)
                    self.display.step(rec.index, value if isinstance(value, (int, float)) else None)


# -- running experiments one after another with one executor --------------------------------------


def one_after_another(make_executor: Callable[[Plan, str | None], Executor]) -> RunExperiments:
    """A `RunExperiments` for an executor that runs one experiment at a time: each plan through
    `run_plan` with `make_executor(plan, address)`, stopping after an interrupted one. An executor
    that needs no more than that (this machine's, a batch queue's) registers
    `ExecutorKind(name, one_after_another(...))`."""

    def run(
        plans: Sequence[Plan],
        options: RunOptions,
        *,
        address: str | None,
        display_for: Callable[[Plan], ProgressDisplay],
        next_block_for: Callable[[Plan, ProgressDisplay], NextBlock | None],
    ) -> list[ExperimentOutcome | None]:
        outcomes: list[ExperimentOutcome | None] = [None] * len(plans)
        for i, plan in enumerate(plans):
            display = display_for(plan)
            outcome = run_plan(
                plan,
                options,
                display=display,
                executor=make_executor(plan, address),
                next_block=next_block_for(plan, display),
            )
            outcomes[i] = outcome
            if outcome.interrupted:
                break
        return outcomes

    return run


LOCAL = ExecutorKind(
    "local", one_after_another(lambda plan, address: LocalExecutor()), summary="process groups on this machine"
)

"""The analysis I/O edge: read a runs/<experiment>/ folder, call reportgen.analysis, write
analysis.json atomically.

Pipeline position: store -> **analyze (I/O)** -> analysis (pure) -> analysis.json -> render.
A folder that is not an experiment raises `UserError`; anything wrong inside a run (missing or
unreadable files, failed or partial runs) becomes data in the document, never an exception.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from reportgen import vocab
from reportgen.analysis import burn_in
from reportgen.analysis.check import Span
from reportgen.analysis.document import (
    AnalysisDocument,
    Artifact,
    ChangedFile,
    CodeChange,
    Machine,
    ProfilerRun,
    parse,
)
from reportgen.analysis.report import SCHEMA_VERSION, Context, build
from reportgen.capture.redact import redact_published
from reportgen.errors import UserError
from reportgen.store import atomic, layout
from reportgen.store.experiment import amend_windows, prior_looks, read_spec
from reportgen.store.freshness import stale_reason
from reportgen.store.lock import hold_for_analysis, in_progress
from reportgen.store.models import Campaign, ExperimentRecord, Fingerprint, Manifest, Revisions
from reportgen.store.run import parse_utc
from reportgen.store.run_folder import ExperimentFiles, RunsIndex, read_experiment
from reportgen.traces import model as trace_model
from reportgen.traces.stats import RunSummary

# Files a run writes while it works: the last write is when a run without an end stopped (or now).
_GROWING = (layout.STDOUT, layout.STDERR, layout.GPU_JSONL, layout.HOST_JSONL, layout.MANIFEST)


def _span(experiment: str, label: str, path: str | None, run_dir: Path, manifest: Manifest) -> Span | None:
    """A run's time on its machine from its manifest; without an end (in progress, or its runner
    died) it lasts until its files were last written."""
    start, end = parse_utc(manifest.started_utc), parse_utc(manifest.ended_utc)
    estimated = False
    if start is not None and end is None and manifest.status == vocab.Status.RUNNING:
        writes = [f.stat().st_mtime for f in (run_dir / n for n in _GROWING) if f.is_file()]
        end, estimated = (max(writes) if writes else None), True
    if start is None or end is None:
        return None
    return Span(label, experiment, path, manifest.fingerprint_id, start, max(start, end), estimated)


def _spans(files: ExperimentFiles) -> tuple[Span, ...]:
    """Every run recorded under the runs folder on a machine this experiment's runs used (the one
    reader found them and put their manifests in the digest): what the overlap check compares with."""
    out = [
        span
        for m in files.machine_runs
        if (span := _span(m.experiment, f"{m.experiment}/{m.rel}", m.path, m.run_dir, m.manifest)) is not None
    ]
    return tuple(sorted(out, key=lambda s: (s.start, s.label)))


def _summaries(files: ExperimentFiles) -> tuple[RunSummary, ...]:
    """The stored profiler summary of every run that has a traces.parquet; one that cannot be read
    is named with the first line of why."""
    out = []
    for f in files.runs:
        if f.traces is None:
            continue
        try:
            rows: list[trace_model.TraceRow] | None = trace_model.read_bytes(f.traces, trace_model.FILENAME)
            error = ""
        except (trace_model.SummaryFormatError, OSError, ValueError) as exc:
            first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            rows, error = None, first.removeprefix(f"{trace_model.FILENAME}: ")
        out.append(RunSummary(f.rel, rows, error, f.artifacts))
    return tuple(out)


def _machine(campaign: Campaign | None) -> dict[str, Any]:
    """The analysis' `machine` (doc.Machine's fields) from the campaign's fingerprint."""
    fp = campaign.fingerprint if campaign is not None else Fingerprint()
    return {
        "fingerprint_id": campaign.fingerprint_id if campaign is not None else None,
        "hostname": fp.hostname,
        "cpu_model": fp.cpu_model,
        "cpu_count": fp.cpu_count,
        "gpus": [g.to_dict() for g in fp.gpus] if "gpus" in fp.model_fields_set else None,
        "driver": fp.driver,
        "cuda": fp.cuda,
    }


def _context(files: ExperimentFiles) -> Context:
    exp_dir = files.path
    record = files.record
    campaign = files.campaign
    machine = _machine(campaign)
    diffs: dict[str, str] = {}
    commit, dirty, repo = None, None, None
    profiler: list[ProfilerRun] = []
    for r in files.runs:
        if r.arm not in diffs and r.patch is not None:
            diffs[r.arm] = r.patch
        if commit is None and r.arm == vocab.BASELINE and r.git is not None:
            commit, dirty, repo = r.git.commit_id, r.git.dirty, r.git.repo_path
        if r.role == vocab.PROFILE:
            profiler.append(
                ProfilerRun(
                    arm=r.arm.removeprefix(vocab.PROFILE_PREFIX),
                    path=r.rel,
                    status=r.status,
                    artifacts=[Artifact.model_validate(a) for a in r.artifacts],  # the manifest's JSON
                )
            )
    source = record.source_path if record is not None else None
    return Context(
        experiment=exp_dir.name,
        spec_sha256=hashlib.sha256(files.spec_text.encode("utf-8")).hexdigest(),
        generated_utc=datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        inputs_sha256=files.digest,
        diffs=diffs,
        machine=machine,
        baseline_commit=commit,
        dirty=dirty,
        profiler_runs=profiler,
        trace_summaries=_summaries(files),
        spec_source=source,
        spec_dir=spec_dir(source, repo),
        prior_looks=tuple(prior_looks(record)),
        spans=_spans(files),
        code_changes=_code_changes(exp_dir),
    )


def _previous(exp_dir: Path) -> AnalysisDocument | None:
    """The analysis.json about to be replaced, when it reads as a document of a readable schema: the
    re-analysis record says what it decided (analysis/reanalysis.py). An unreadable one is no record."""
    path = exp_dir / layout.ANALYSIS
    if not path.is_file():
        return None
    try:
        return parse(atomic.read_json(path), str(path))
    except (UserError, OSError, ValueError):
        return None


def _amendments(
    record: ExperimentRecord | None, previous: AnalysisDocument | None, spec_sha256: str
) -> tuple[str, ...]:
    """The spec's amendments made since the previous document was written, in words with their reasons.

    Told by the specs' digests, not by the clock: every amendment names the digest of the spec it
    replaced and the previous document the digest of the spec it was made from, so walking back from
    the spec now (`spec_sha256`), the amendments since are those down to the one that replaced the
    document's spec. Time stamps, to the second, cannot tell an amendment written in the second the
    document was (`plan-windows --amend` right after `analyze`) from one written before it. An
    amendment stamped after the document's second is one since whatever the digests say (a spec
    amended and amended back); where the chain breaks (a record without digests) the time decides."""
    if record is None or previous is None:
        return ()
    made, made_from = previous.generated_utc, previous.experiment.spec_sha256 or None
    spec: str | None = spec_sha256
    since = []
    for a in reversed(record.amendments):
        later = a.utc is not None and bool(made) and a.utc > made
        if not later and (spec is None or made_from is None or spec == made_from):
            break
        since.append(a)
        spec = a.previous_spec_sha256
    out = []
    for a in reversed(since):
        what = "; ".join(f"{k}: {v[0]} -> {v[1]}" for k, v in a.changed.items() if isinstance(v, list) and len(v) == 2)
        out.append(f"{a.utc or 'undated'}: {what}" + (f" ({a.reason})" if a.reason else ""))
    return tuple(out)


def _code_changes(exp_dir: Path) -> dict[str, CodeChange]:
    """Each candidate's code change against the baseline's commit, from revisions.json (arms at git
    revisions, docs/revisions.md); empty for arms that ran from the working tree."""
    record = Revisions.read(exp_dir / layout.REVISIONS)
    if record is None:
        return {}
    return {
        arm: CodeChange(
            baseline_sha=c.base_sha,
            candidate_sha=c.sha,
            merge_base=c.merge_base,
            files=[ChangedFile(path=f.path, added=f.added, deleted=f.deleted) for f in c.files],
            link=c.link,
            revert=c.revert,
        )
        for arm, c in record.changes.items()
    }


def spec_dir(source: object, repo: str | None) -> str | None:
    """The folder the spec ran from, relative to the root of the repository it ran in ("scripts/recipes"):
    next-step commands run from a checkout of that repository, where the runs are committed. None
    when the spec or the repository was not recorded, or the spec lay outside it."""
    if not isinstance(source, str) or not source or not repo:
        return None
    if not source.startswith(repo.rstrip("/") + "/"):
        return None
    return os.path.dirname(os.path.relpath(source, repo)) or "."


def analyze_experiment(
    exp_dir: Path,
    *,
    wait: bool = False,
    force: bool = False,
    log: Callable[[str], None] | None = None,
    index: RunsIndex | None = None,
) -> Path:
    """Analyse runs/<experiment>/ and write its analysis.json; returns the file's path.

    An analysis.json that is current (this schema, made from the very files there now: its
    `inputs_sha256`) is left untouched unless `force`: re-analysing a committed experiment
    must not rewrite it with a new time stamp. Holds the campaign lock meanwhile: a campaign in
    progress in another process is refused (UserError naming it) or, with `wait`, waited for;
    the runner analyses under its own lock."""
    exp_dir = Path(exp_dir)
    spec = read_spec(exp_dir)
    with hold_for_analysis(exp_dir, wait=wait):
        # A current document is told from the files' bytes (their digest), without reading the run
        # tables: `reportgen analyze` over a team's runs/ of hundreds of experiments, most unchanged,
        # paid a full read of each only to leave it as it was.
        why = stale_reason(exp_dir, SCHEMA_VERSION, index=index)
        if not force and why is None:
            return exp_dir / layout.ANALYSIS
        files = read_experiment(exp_dir)  # the campaign lock held: the files are the ones just digested
        if log is not None and why is not None and why.startswith("schema "):
            # An older document is named, not silently replaced: what it lacked is what changed.
            log(f"{exp_dir / layout.ANALYSIS}: {why} (docs/formats/analysis.md#versions); analysed again")
        previous = _previous(exp_dir)
        ctx = _context(files)
        ctx = replace(ctx, previous=previous, amendments=_amendments(files.record, previous, ctx.spec_sha256))
        doc = build(spec, files.runs, ctx)
        # analysis.json is published with the site: credential flag values (in diffs, argv) never reach it.
        return atomic.write_json(exp_dir / layout.ANALYSIS, redact_published(doc.to_json()))


OWN_RUNS = "; from the campaign's own runs: no other campaign of its machine class was given"


def plan_windows(
    target: Path | None,
    evidence: list[Path],
    *,
    windows: int = burn_in.WINDOWS,
    amend: bool = False,
    reason: str | None = None,
    utc: str | None = None,
) -> burn_in.Proposal:
    """`reportgen plan-windows`: where every arm settles in the `evidence` campaigns (their complete
    formal runs), and the windows whose burn-in covers the target's arms for runs of its length.
    Without evidence, the target's own runs are the evidence (the proposal says so). `amend`: record
    the proposal in the target's stored spec with its reason (store.experiment.amend_windows), so its
    next `reportgen analyze` rests on steady-state steps; refused for a campaign in progress."""
    if target is None and not evidence:
        raise UserError("plan-windows: name an experiment, or earlier campaigns with --from")
    spec = read_spec(target) if target is not None else None
    sources: list[Path] = list(evidence) if evidence else [target] if target is not None else []
    key = spec.analysis.primary if spec is not None else vocab.PRIMARY_DEFAULT
    found = []
    for d in sources:
        files = read_experiment(d)
        machine = Machine.model_validate(_machine(files.campaign)).class_name() if files.campaign else ""
        found.append(burn_in.evidence_of(d.name, machine, files.runs, key))
    steps = spec.workload.steps if spec is not None else None
    proposal = burn_in.propose(found, steps=steps, arms=spec.arm_ids() if spec is not None else None, windows=windows)
    if amend:
        if target is None:
            raise UserError("plan-windows --amend: name the experiment whose windows to declare")
        with hold_for_analysis(target, wait=False):
            amend_windows(
                target,
                warmup_steps=proposal.burn_in,
                windows=proposal.windows,
                reason=reason or proposal.reason() + ("" if evidence else OWN_RUNS),
                utc=utc or datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
            )
    return proposal


def is_stale(exp_dir: Path) -> bool:
    """True when analysis.json is missing, of another schema, or was made from other inputs
    (see reportgen.store.freshness)."""
    return stale_reason(exp_dir, SCHEMA_VERSION) is not None


def analyze_all(
    runs_root: Path, *, wait: bool = False, force: bool = False, log: Callable[[str], None] | None = None
) -> list[Path]:
    """analysis.json for every experiment under a runs/ root (those current left as they are,
    unless `force`). Without `wait`, a campaign in progress among them refuses the whole command
    before anything is written."""
    runs_root = Path(runs_root)
    if not runs_root.is_dir():
        raise UserError(f"{runs_root}: no runs folder; run `reportgen run SPEC` first or pass --runs")
    experiments = layout.iter_experiments(runs_root)
    if not wait:
        busy = [(d, h) for d in experiments if (h := in_progress(d)) is not None]
        if busy:
            names = "; ".join(f"{d.name}: {h.describe()}" for d, h in busy)
            raise UserError(
                f"{runs_root}: a campaign is in progress ({names}); its analysis.json is written when it ends: "
                "pass --wait to wait for it, or name the experiments to analyse"
            )
    # The runs folder's manifests read once for every experiment's freshness check (the overlap check
    # reads them all): each check read every manifest again, 206 x 2,459 at a team's scale. A stale
    # experiment is then read afresh, under its lock, by its own reader.
    index = RunsIndex(runs_root)
    return [analyze_experiment(d, wait=wait, force=force, log=log, index=index) for d in experiments]

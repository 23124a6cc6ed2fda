"""The analysis I/O edge: read a runs/<experiment>/ folder, call reportgen.analysis, write
analysis.json atomically.

Pipeline position: store -> **analyze (I/O)** -> analysis (pure) -> analysis.json -> render.
A folder that is not an experiment raises `UserError`; anything wrong inside a run (missing or
unreadable files, failed or partial runs) becomes data in the document, never an exception.
"""

from __future__ import annotations

import hashlib
import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from reportgen import vocab
from reportgen.analysis.gpu import parse_utc
from reportgen.analysis.inputs import RunData
from reportgen.analysis.overlap import Span
from reportgen.analysis.report import SCHEMA_VERSION, Context, build
from reportgen.capture.artifacts import list_artifacts
from reportgen.capture.redact import redact_published
from reportgen.errors import UserError
from reportgen.ingest.metrics import wide_table
from reportgen.spec import Spec
from reportgen.store import atomic, layout
from reportgen.store.experiment import prior_looks, read_experiment_record, read_spec
from reportgen.store.freshness import inputs_sha256, stale_reason
from reportgen.store.lock import hold_for_analysis, in_progress


def _spec(exp_dir: Path) -> tuple[Spec, str]:
    spec = read_spec(exp_dir)
    return spec, (exp_dir / layout.EXPERIMENT_SPEC).read_text(encoding="utf-8")


def _read_json(path: Path, notes: list[str]) -> Any:
    if not path.is_file():
        return None
    try:
        return atomic.read_json(path)
    except (OSError, ValueError) as exc:
        notes.append(f"{path.name}: unreadable ({exc.__class__.__name__})")
        return None


def _read_parquet(path: Path, notes: list[str]) -> pd.DataFrame | None:
    if not path.is_file():
        return None
    try:
        return pd.read_parquet(path)
    except Exception as exc:  # a truncated or foreign file must not stop the analysis
        notes.append(f"{path.name}: unreadable ({exc.__class__.__name__})")
        return None


def read_run(exp_dir: Path, arm: str, repeat: int, run_dir: Path) -> RunData:
    notes: list[str] = []
    manifest = _read_json(run_dir / layout.MANIFEST, notes)
    if not isinstance(manifest, dict):
        notes.append("manifest.json missing")
        manifest = {"status": "unknown"}
    metrics = _read_parquet(run_dir / layout.METRICS, notes)
    nonfinite: tuple = ()
    if metrics is None:
        notes.append("metrics.parquet missing: run `reportgen ingest`")
        steps = wide_table(pd.DataFrame(columns=["step", "key", "value", "source"]))
    else:
        steps = wide_table(metrics)
        bad = metrics[~np.isfinite(metrics["value"].astype(float))] if "value" in metrics else metrics.iloc[:0]
        nonfinite = tuple(
            (str(k), int(s), float(v)) for k, s, v in zip(bad["key"], bad["step"], bad["value"], strict=False)
        )
    events_doc = _read_json(run_dir / layout.EVENTS, notes)
    events = tuple(events_doc.get("events", [])) if isinstance(events_doc, dict) else ()
    gpu = _read_parquet(run_dir / layout.GPU_PARQUET, notes)
    host = _read_parquet(run_dir / layout.HOST_PARQUET, notes)
    return RunData(
        arm=arm,
        repeat=repeat,
        path=f"{arm}/{repeat}",
        manifest=manifest,
        steps=steps,
        events=events,
        gpu=gpu,
        host=host,
        notes=tuple(notes),
        nonfinite=nonfinite,
    )


def _artifacts(run_dir: Path, manifest: dict) -> list[dict]:
    """The runner lists artifacts in the manifest; a run made elsewhere is listed from its files."""
    if isinstance(manifest.get("artifacts"), list):
        return manifest["artifacts"]
    return list_artifacts(run_dir)


# Files a run writes while it works: the last write is when a run without an end stopped (or now).
_GROWING = (layout.STDOUT, layout.STDERR, layout.GPU_JSONL, layout.HOST_JSONL, layout.MANIFEST)


def _span(experiment: str, label: str, path: str | None, run_dir: Path, manifest: Any) -> Span | None:
    """A run's time on its machine from its manifest; without an end (in progress, or its runner
    died) it lasts until its files were last written."""
    if not isinstance(manifest, dict):
        return None
    start, end = parse_utc(manifest.get("started_utc")), parse_utc(manifest.get("ended_utc"))
    estimated = False
    if start is not None and end is None and manifest.get("status") == vocab.Status.RUNNING:
        writes = [f.stat().st_mtime for f in (run_dir / n for n in _GROWING) if f.is_file()]
        end, estimated = (max(writes) if writes else None), True
    if start is None or end is None:
        return None
    return Span(label, experiment, path, manifest.get("fingerprint_id"), start, max(start, end), estimated)


def _spans(exp_dir: Path, runs: list[RunData]) -> tuple[Span, ...]:
    """Every run recorded under the runs folder (each experiment's runs and archived campaigns) on a
    machine this experiment's runs used: what the overlap check compares them with."""
    machines = {r.manifest.get("fingerprint_id") for r in runs} - {None}
    if not machines:
        return ()
    out = []
    root = exp_dir.parent
    experiments = {d.name: d for d in layout.iter_experiments(root)} | {exp_dir.name: exp_dir}
    for other in experiments.values():
        found: list[tuple[str | None, str, Path]] = [(f"{a}/{n}", f"{a}/{n}", d) for a, n, d in layout.iter_runs(other)]
        archive = other / layout.ARCHIVE
        for m in (*archive.glob("*/*/" + layout.MANIFEST), *archive.glob("*/*/*/" + layout.MANIFEST)):
            found.append((None, m.parent.relative_to(other).as_posix(), m.parent))
        for path, rel, run_dir in found:
            manifest = _read_json(run_dir / layout.MANIFEST, [])
            if isinstance(manifest, dict) and manifest.get("fingerprint_id") in machines:
                span = _span(other.name, f"{other.name}/{rel}", path, run_dir, manifest)
                if span is not None:
                    out.append(span)
    return tuple(sorted(out, key=lambda s: (s.start, s.label)))


def _context(exp_dir: Path, spec_text: str, runs: list[RunData]) -> Context:
    notes: list[str] = []
    record = read_experiment_record(exp_dir)
    campaign = _read_json(exp_dir / layout.CAMPAIGN, notes) or {}
    fp = campaign.get("fingerprint") or {}
    machine = {
        "fingerprint_id": campaign.get("fingerprint_id"),
        **{k: fp.get(k) for k in ("hostname", "cpu_model", "cpu_count", "gpus", "driver", "cuda")},
    }
    diffs: dict[str, str] = {}
    commit, dirty, repo = None, None, None
    profiler = []
    for r in runs:
        run_dir = exp_dir / r.arm / str(r.repeat)
        patch = run_dir / layout.RECIPE_PATCH
        if r.arm not in diffs and patch.is_file():
            diffs[r.arm] = patch.read_text(encoding="utf-8", errors="replace")
        if commit is None and r.arm == vocab.BASELINE:
            git = _read_json(run_dir / layout.PROVENANCE / "git.json", notes)
            if isinstance(git, dict):
                commit = git.get("commit") or git.get("head")
                dirty = git.get("dirty")
                repo = git.get("repo") if isinstance(git.get("repo"), str) else None
        if r.role == vocab.PROFILE:
            profiler.append(
                {
                    "arm": r.arm.removeprefix(vocab.PROFILE_PREFIX),
                    "path": r.path,
                    "status": r.status,
                    "artifacts": _artifacts(run_dir, r.manifest),
                }
            )
    return Context(
        experiment=exp_dir.name,
        spec_sha256=hashlib.sha256(spec_text.encode("utf-8")).hexdigest(),
        generated_utc=datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        inputs_sha256=inputs_sha256(exp_dir),
        diffs=diffs,
        machine=machine,
        baseline_commit=commit,
        dirty=dirty,
        profiler_runs=profiler,
        spec_source=(record or {}).get("source_path"),
        run_name=exp_dir.name,
        spec_dir=spec_dir((record or {}).get("source_path"), repo),
        prior_looks=tuple(prior_looks(record)),
        spans=_spans(exp_dir, runs),
    )


def spec_dir(source: object, repo: str | None) -> str | None:
    """The folder the spec ran from, relative to the root of the repository it ran in ("scripts/recipes"):
    next-step commands run from a checkout of that repository, where the runs are committed. None
    when the spec or the repository was not recorded, or the spec lay outside it."""
    if not isinstance(source, str) or not source or not repo:
        return None
    if not source.startswith(repo.rstrip("/") + "/"):
        return None
    return os.path.dirname(os.path.relpath(source, repo)) or "."


def analyze_experiment(exp_dir: Path, *, wait: bool = False) -> Path:
    """Analyse runs/<experiment>/ and write its analysis.json; returns the file's path.

    Holds the campaign lock meanwhile: a campaign in progress in another process is refused
    (UserError naming it) or, with `wait`, waited for; the runner analyses under its own lock."""
    exp_dir = Path(exp_dir)
    spec, text = _spec(exp_dir)
    with hold_for_analysis(exp_dir, wait=wait):
        runs = [read_run(exp_dir, arm, rep, d) for arm, rep, d in layout.iter_runs(exp_dir)]
        doc = build(spec, runs, _context(exp_dir, text, runs))
        # analysis.json is published with the site: credential flag values (in diffs, argv) never reach it.
        return atomic.write_json(exp_dir / layout.ANALYSIS, redact_published(doc.to_json()))


def is_stale(exp_dir: Path) -> bool:
    """True when analysis.json is missing, of another schema, or was made from other inputs
    (see reportgen.store.freshness)."""
    return stale_reason(exp_dir, SCHEMA_VERSION) is not None


def analyze_all(runs_root: Path, *, wait: bool = False) -> list[Path]:
    """analysis.json for every experiment under a runs/ root. Without `wait`, a campaign in
    progress among them refuses the whole command before anything is written."""
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
    return [analyze_experiment(d, wait=wait) for d in experiments]

"""The one reader of an experiment folder: its runs as `StoredRun`s, and the digest of exactly the bytes read.

`read_experiment(exp_dir)` reads what the analysis of one experiment uses: `experiment.toml`,
`experiment.json`, `campaign.json`, and per run `manifest.json`, `metrics.parquet`, `events.json`,
`gpu.parquet`, `host.parquet`, `traces.parquet`, `recipe.patch`, `provenance/git.json` and, for a
run whose manifest lists no artifacts, every file under `traces/` (the artifact listing), and the
manifests of every run under the runs folder recorded on the same machines (the overlap check's).
Every byte passes
through one `_Reads` that hashes it, so `ExperimentFiles.digest` is a digest over the files as
they were read (relative path and SHA-256 of each): analyze stamps it into analysis.json as
`inputs_sha256`, and the freshness check (store.freshness) compares it with a fresh read, so any
input going stale, whichever file it is, stops the site build.

Each run is read into the one run type, `StoredRun` (store.run); `read_run_folder` reads one run
on its own, with what only the pages show (command.json, provenance/ as text). A file that is
missing or unreadable inside a run is not an error here: it leaves its field empty and is named
in the run's `missing` (an unreadable one also in its `notes`; the analysis reports both). A file
of a newer schema than this reportgen reads is refused (UserError, store.models). Store stage:
reads files, writes nothing.
"""

from __future__ import annotations

import hashlib
import io
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import pandas as pd

from reportgen.errors import UserError
from reportgen.store import layout
from reportgen.store.experiment import EXPERIMENT_RECORD
from reportgen.store.models import Campaign, Events, ExperimentRecord, GitProvenance, Manifest, RunCommand, StoreFile
from reportgen.store.run import StoredRun, empty_metrics, parse_utc

GIT_JSON = f"{layout.PROVENANCE}/git.json"
# The tables of a run read without decoding them (`tables=False`: the freshness check, the site's
# scan), shared: making three empty DataFrames per run was most of the cost of such a read.
_NO_METRICS = empty_metrics()
_NO_TABLE = pd.DataFrame()

M = TypeVar("M", bound=StoreFile)


class _Reads:
    """Reads files under one folder and remembers the SHA-256 of each one's bytes."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.sha256: dict[str, str] = {}

    def bytes(self, path: Path) -> bytes | None:
        if not path.is_file():
            return None
        data = path.read_bytes()
        self.sha256[path.relative_to(self.root).as_posix()] = hashlib.sha256(data).hexdigest()
        return data

    def digest(self) -> str:
        """One digest over every file read (relative path and content), in path order."""
        h = hashlib.sha256()
        for rel in sorted(self.sha256):
            h.update(rel.encode() + b"\0" + self.sha256[rel].encode() + b"\n")
        return h.hexdigest()


@dataclass(frozen=True)
class MachineRun:
    """A run recorded under the runs folder on a machine this experiment's runs used (another
    experiment's, an archived campaign's, or this experiment's own): what the overlap check
    compares this experiment's runs with."""

    experiment: str
    rel: str  # "A1/1", or "archive/<campaign>/A1/1"
    path: str | None  # "A1/1" for a current run of its experiment, None for an archived one
    run_dir: Path
    manifest: Manifest


@dataclass(frozen=True)
class ExperimentFiles:
    path: Path
    spec_text: str
    record: ExperimentRecord | None
    campaign: Campaign | None
    runs: tuple[StoredRun, ...]
    read_sha256: dict[str, str]  # relative path -> SHA-256 of every file read
    digest: str  # one digest over read_sha256: analysis.json's inputs_sha256
    machine_runs: tuple[MachineRun, ...] = ()  # the runs on this experiment's machines while its campaign ran


def _model(reads: _Reads, path: Path, model: type[M], notes: list[str] | None) -> M | None:
    """A JSON file through its model. Inside a run (`notes` given) an unreadable or invalid file
    is a note naming it (never a machine's path); a schema newer than this reportgen reads is
    refused either way (UserError)."""
    data = reads.bytes(path)
    if data is None:
        return None
    if notes is None:
        return model.from_bytes(data, str(path))
    try:
        decoded = json.loads(data.decode("utf-8"))
    except ValueError as exc:
        notes.append(f"{path.name}: unreadable ({exc.__class__.__name__})")
        return None
    version = decoded.get("schema_version") if isinstance(decoded, dict) else None
    if isinstance(version, int) and version > model.SCHEMA_VERSION:
        model.upgrade(decoded, str(path))  # refuses the newer schema, naming the file
    try:
        return model.parse(decoded, path.name)
    except UserError as exc:
        notes.append(f"{path.name}: invalid ({exc.message.removeprefix(path.name + ': ')})")
        return None


def _parquet(reads: _Reads, path: Path, notes: list[str], tables: bool) -> pd.DataFrame | None:
    data = reads.bytes(path)
    if data is None or not tables:
        return None
    try:
        return pd.read_parquet(io.BytesIO(data))
    except Exception as exc:  # a truncated or foreign file must not stop the analysis
        notes.append(f"{path.name}: unreadable ({exc.__class__.__name__})")
        return None


def _artifacts(reads: _Reads, run_dir: Path, manifest: Manifest | None) -> tuple[dict[str, Any], ...]:
    """The runner lists artifacts in the manifest; a run made elsewhere is listed from its files."""
    if manifest is not None and isinstance(manifest.artifacts, list):
        return tuple(manifest.artifacts)
    traces = run_dir / layout.TRACES
    if not traces.is_dir():
        return ()
    out = []
    for p in sorted(traces.rglob("*")):
        data = reads.bytes(p)
        if data is not None:
            rel = p.relative_to(run_dir).as_posix()
            out.append({"path": rel, "bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()})
    return tuple(out)


def read_run(
    reads: _Reads, arm: str, repeat: int, run_dir: Path, *, tables: bool = True, shown: bool = False
) -> StoredRun:
    """One run folder. `tables=False` hashes the Parquet files without decoding them (the freshness
    check); `shown` also reads what only the pages show (command.json, provenance/ as text), which
    the analysis never reads: it is not in the digest."""
    notes: list[str] = []
    manifest = _model(reads, run_dir / layout.MANIFEST, Manifest, notes)
    metrics = _parquet(reads, run_dir / layout.METRICS, notes, tables)
    events = _model(reads, run_dir / layout.EVENTS, Events, notes)
    gpu = _parquet(reads, run_dir / layout.GPU_PARQUET, notes, tables)
    host = _parquet(reads, run_dir / layout.HOST_PARQUET, notes, tables)
    patch = reads.bytes(run_dir / layout.RECIPE_PATCH)
    git = _model(reads, run_dir / GIT_JSON, GitProvenance, notes)
    read: dict[str, object] = {layout.MANIFEST: manifest, layout.EVENTS: events, GIT_JSON: git}
    if tables:
        read |= {layout.METRICS: metrics, layout.GPU_PARQUET: gpu, layout.HOST_PARQUET: host}
    return StoredRun(
        arm=arm,
        repeat=repeat,
        manifest=manifest if manifest is not None else Manifest.create({}),
        metrics=metrics if metrics is not None else empty_metrics() if tables else _NO_METRICS,
        events=tuple(events.events) if events is not None else (),
        gpu=gpu if gpu is not None else pd.DataFrame() if tables else _NO_TABLE,
        host=host if host is not None else pd.DataFrame() if tables else _NO_TABLE,
        patch=None if patch is None else patch.decode("utf-8", errors="replace"),
        git=git,
        artifacts=_artifacts(reads, run_dir, manifest),
        traces=reads.bytes(run_dir / layout.TRACES_PARQUET),
        command=_model(reads, run_dir / layout.COMMAND, RunCommand, notes) if shown else None,
        provenance=_texts(reads, run_dir / layout.PROVENANCE) if shown else {},
        notes=tuple(notes),
        missing=frozenset(name for name, got in read.items() if got is None),
        run_dir=run_dir,
    )


def _texts(reads: _Reads, folder: Path) -> dict[str, str]:
    """Every file directly in `folder`, by name, decoded (undecodable bytes replaced)."""
    if not folder.is_dir():
        return {}
    out = {}
    for f in sorted(folder.iterdir()):
        data = reads.bytes(f)
        if data is not None:
            out[f.name] = data.decode("utf-8", errors="replace")
    return out


def read_run_folder(run_dir: Path, arm: str, repeat: int, *, shown: bool = True, tables: bool = True) -> StoredRun:
    """One run folder on its own (the site's loader and the history read an experiment's runs one
    by one), with what only the pages show unless `shown` is False, its tables unless `tables` is."""
    run_dir = Path(run_dir)
    return read_run(_Reads(run_dir), arm, repeat, run_dir, shown=shown, tables=tables)


def read_experiment(exp_dir: Path, *, tables: bool = True, index: RunsIndex | None = None) -> ExperimentFiles:
    """Every file the analysis of one experiment reads, typed, with the digest of their bytes.
    `tables=False` reads and hashes the Parquet files without decoding them (the freshness check);
    `index`: the runs folder's manifests, read once for every experiment read in one go (the site)."""
    exp_dir = Path(exp_dir)
    reads = _Reads(exp_dir)
    spec = reads.bytes(exp_dir / layout.EXPERIMENT_SPEC)
    if spec is None:
        raise UserError(
            f"{exp_dir}: not an experiment folder (no {layout.EXPERIMENT_SPEC}); run `reportgen ls` to list experiments"
        )
    record = _model(reads, exp_dir / EXPERIMENT_RECORD, ExperimentRecord, None)
    campaign = _model(reads, exp_dir / layout.CAMPAIGN, Campaign, [])  # unreadable: as if absent
    runs = tuple(read_run(reads, arm, rep, d, tables=tables) for arm, rep, d in layout.iter_runs(exp_dir))
    machine_runs = _machine_runs(reads, exp_dir, runs, index or RunsIndex(exp_dir.parent))
    return ExperimentFiles(
        path=exp_dir,
        spec_text=spec.decode("utf-8", errors="replace"),
        record=record,
        campaign=campaign,
        runs=runs,
        read_sha256=dict(reads.sha256),
        digest=reads.digest(),
        machine_runs=machine_runs,
    )


@dataclass(frozen=True)
class _Placed:
    """A run folder of the index with its manifest read (None fields: missing or unreadable)."""

    path: str | None
    rel: str
    run_dir: Path
    sha: str | None
    manifest: Manifest | None
    machine: str | None
    start: float | None  # seconds (store.run.parse_utc)
    end: float | None


class RunsIndex:
    """Every run folder of one runs folder (each experiment's runs and its archived campaigns) and
    their manifests, each listed and read once: the overlap check of every experiment needs them
    all, so reading many experiments (the site build) shares one index rather than reading every
    manifest once per experiment. Valid while the folder does not change (one build, one analysis)."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        self._experiments: dict[str, Path] | None = None
        self._runs: dict[Path, list[tuple[str | None, str, Path]]] = {}
        self._manifests: dict[Path, tuple[str, Manifest] | None] = {}
        self._placed: dict[Path, list[_Placed]] = {}

    def experiments(self, also: Path) -> dict[str, Path]:
        """name -> folder of every experiment of the root, and `also` (the one being read)."""
        if self._experiments is None:
            self._experiments = {d.name: d for d in layout.iter_experiments(self.root)}
        return {**self._experiments, also.name: also}

    def runs(self, exp_dir: Path) -> list[tuple[str | None, str, Path]]:
        """(path, rel, folder) of every run of an experiment: current runs ("A1/1", "A1/1"), then
        archived ones (None, "archive/<campaign>/A1/1")."""
        if exp_dir not in self._runs:
            found: list[tuple[str | None, str, Path]] = [
                (f"{a}/{n}", f"{a}/{n}", d) for a, n, d in layout.iter_runs(exp_dir)
            ]
            archive = exp_dir / layout.ARCHIVE
            for m in sorted((*archive.glob("*/*/" + layout.MANIFEST), *archive.glob("*/*/*/" + layout.MANIFEST))):
                found.append((None, m.parent.relative_to(exp_dir).as_posix(), m.parent))
            self._runs[exp_dir] = found
        return self._runs[exp_dir]

    def placed(self, exp_dir: Path) -> list[_Placed]:
        """Every run of an experiment as the overlap check places it: its paths, and its manifest's
        digest, machine and times (parsed once for the whole build, not once per experiment that
        asks: at a few hundred experiments on one machine that was half the site's scan)."""
        if exp_dir not in self._placed:
            out = []
            for path, rel, run_dir in self.runs(exp_dir):
                got = self.manifest(run_dir)
                if got is None:
                    out.append(_Placed(path, rel, run_dir, None, None, None, None, None))
                    continue
                sha, m = got
                start, end = parse_utc(m.started_utc), parse_utc(m.ended_utc)
                out.append(_Placed(path, rel, run_dir, sha, m, m.fingerprint_id, start, end))
            self._placed[exp_dir] = out
        return self._placed[exp_dir]

    def manifest(self, run_dir: Path) -> tuple[str, Manifest] | None:
        """(SHA-256 of its bytes, the manifest) of a run folder's manifest.json; None when it is
        missing or unreadable (the overlap check cannot place it; its own experiment reports it)."""
        if run_dir not in self._manifests:
            file = run_dir / layout.MANIFEST
            try:
                data = file.read_bytes()
                self._manifests[run_dir] = (hashlib.sha256(data).hexdigest(), Manifest.from_bytes(data, str(file)))
            except (OSError, UserError):
                self._manifests[run_dir] = None
        return self._manifests[run_dir]


def _machine_runs(
    reads: _Reads, exp_dir: Path, runs: tuple[StoredRun, ...], index: RunsIndex
) -> tuple[MachineRun, ...]:
    """Every run under the runs folder (each experiment's runs and archived campaigns) recorded on a
    machine this experiment's runs used while the campaign ran. The manifests of those runs are
    inputs of the analysis (a run added beside the campaign on its machine can make a comparison
    invalid), so their bytes go into the digest, under their path from this experiment's folder
    (`../other/A1/1/manifest.json`); manifests of other machines or times are read to learn that,
    and left out of it."""
    read = [r for r in runs if layout.MANIFEST not in r.missing]
    machines = {r.manifest.fingerprint_id for r in read} - {None}
    if not machines:
        return ()
    # Only runs that were on the machine while this campaign was (its first start to its last end;
    # no end yet: to now) can overlap one of its runs: a campaign run there later changes nothing,
    # and must not make every earlier analysis on the machine stale.
    times = [(parse_utc(r.manifest.started_utc), parse_utc(r.manifest.ended_utc)) for r in read]
    starts = [s for s, _ in times if s is not None]
    first = min(starts) if starts else None
    last = None if any(e is None for _, e in times) else max((e for _, e in times if e is not None), default=None)

    def during(start: float | None, end: float | None) -> bool:
        if first is None or start is None:
            return first is None  # no times to place either: keep (the check says what it could not place)
        # Strictly: times are whole seconds, and the next campaign often starts the second the last ended.
        return (last is None or start < last) and (end is None or end > first)

    own_manifests = {r.run_dir: r.manifest for r in read}
    out: list[MachineRun] = []
    experiments = index.experiments(exp_dir)
    for name in sorted(experiments):
        other = experiments[name]
        is_self = other == exp_dir
        prefix = "" if is_self else "../" + other.name + "/"
        for p in index.placed(other):
            if is_self and p.path is not None:  # already read (and hashed) as this experiment's run
                manifest = own_manifests.get(p.run_dir)
            else:
                if p.manifest is None or p.machine not in machines or not during(p.start, p.end):
                    continue
                assert p.sha is not None
                reads.sha256[f"{prefix}{p.rel}/{layout.MANIFEST}"] = p.sha
                manifest = p.manifest
            if manifest is not None and manifest.fingerprint_id in machines:
                out.append(MachineRun(other.name, p.rel, p.path, p.run_dir, manifest))
    return tuple(out)

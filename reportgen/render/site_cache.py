"""What the site build keeps between builds, so that a rebuild costs what changed (render stage,
the I/O edge of the site with render/site.py).

An experiment's pages depend on its folder, on a few things outside it (its "vs history" line, the
documentation pages that mention it) and on the code that renders them; nothing else. `scan` reads
an experiment folder once, without decoding its tables: the freshness check (`analysis.json` must be
current, store.freshness) and the digest of every byte its pages are made from, in one pass. The
pages of an experiment whose key (that digest, the outside inputs, the options and `code_digest`) is
in the cache folder are taken from there, drawn charts included; only a changed experiment is loaded
with its tables, rendered and drawn again. An entry also holds the experiment as the site's other
pages read it (its published analysis.json, spec, revisions and report kind), so the home page, the
reports list and the history are made without opening its runs.

Entries live under `pages/` of the cache folder (`store.layout.default_cache()`, never runs/): one
file per experiment and key, written atomically; an entry unused for PRUNE_DAYS is removed by the
build. Keys hold the code's digest, so any change to reportgen renders every page again.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import importlib.metadata
import os
import pickle
import stat
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, TypeVar, cast

from reportgen.analysis.document import SCHEMA_VERSION
from reportgen.errors import UserError
from reportgen.render.html_cache import prune_unused
from reportgen.render.kinds import ReportKind
from reportgen.render.load import PublishedExperiment
from reportgen.store import atomic, layout
from reportgen.store.freshness import stale_reason
from reportgen.store.run_folder import RunsIndex, read_experiment

PRUNE_DAYS = 14
H = TypeVar("H")
# What an experiment's pages read besides the analysis' inputs (store.run_folder's digest): run files
# only the pages show, and experiment files the analysis does not hash.
SHOWN_RUN_FILES = (layout.COMMAND, "recipe.sh", "recipe.argv")
SHOWN_EXPERIMENT_FILES = (layout.ANALYSIS, layout.REVISIONS)
PACKAGES = ("altair", "vl-convert-python", "mkdocs-material")


@functools.cache
def code_digest() -> str:
    """The digest of the code that renders a page: every module of reportgen (a page reads the
    analysis document's models, the vocabulary, the store's) and the chart libraries' versions."""
    root = Path(__file__).resolve().parent.parent
    h = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        h.update(path.relative_to(root).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    for name in PACKAGES:
        try:
            h.update(f"{name}={importlib.metadata.version(name)}".encode())
        except importlib.metadata.PackageNotFoundError:
            h.update(f"{name}=none".encode())
    return h.hexdigest()


@dataclass(frozen=True)
class Scanned:
    """An experiment folder as the build first reads it: the digest of every byte its pages are made
    from (its analysis' inputs, tables hashed, not decoded, and what only the pages show)."""

    path: Path
    digest: str

    @property
    def name(self) -> str:
        return self.path.name


def require_current(exp_dir: Path, runs_root: Path, digest: str | None = None) -> None:
    """Stop the build when an experiment's analysis.json is missing, of another schema or older
    than its runs: the site renders what `reportgen analyze` wrote and never writes runs/ itself.
    `digest`: the analysis' inputs as just read (the scan), so they are not read twice."""
    why = stale_reason(exp_dir, SCHEMA_VERSION, digest=digest)
    if why is not None:
        runs_opt = "" if Path(runs_root).resolve() == Path("runs").resolve() else f" --runs {runs_root}"
        raise UserError(
            f"{exp_dir / layout.ANALYSIS}: {why}; run `reportgen analyze {exp_dir.name}{runs_opt}`, then build again"
        )


def scan(exp_dir: Path, runs_root: Path, index: RunsIndex, memo: ScanMemo | None = None) -> Scanned:
    """One read of an experiment folder: refuse a stale analysis.json (`require_current`) and take
    the digest of what its pages show: the analysis' inputs, analysis.json and revisions.json, and
    per run its command, recipe and provenance/ files and the profiler files its pages copy. With a
    `memo`, a folder whose files (and the runs folder's manifests) are as the memo last saw them
    is not read again: its digest is the one that read found, current then and so now."""
    kept = memo.get(exp_dir) if memo is not None else None
    if kept is not None:
        return Scanned(exp_dir, kept)
    scanned = _scan(exp_dir, runs_root, index)
    if memo is not None:
        memo.put(exp_dir, scanned.digest)
    return scanned


def _scan(exp_dir: Path, runs_root: Path, index: RunsIndex) -> Scanned:
    files = read_experiment(exp_dir, tables=False, index=index)
    require_current(exp_dir, runs_root, files.digest)
    h = hashlib.sha256(files.digest.encode())
    for name in SHOWN_EXPERIMENT_FILES:
        _hash_file(h, exp_dir, exp_dir / name)
    for run in files.runs:
        folder = run.run_dir or exp_dir / run.rel
        for name in SHOWN_RUN_FILES:
            _hash_file(h, exp_dir, folder / name)
        provenance = folder / layout.PROVENANCE
        for f in sorted(provenance.iterdir()) if provenance.is_dir() else ():
            _hash_file(h, exp_dir, f)
        traces = folder / layout.TRACES
        for f in sorted(traces.rglob("*")) if traces.is_dir() else ():
            if f.is_file():  # copied into the site as they are: by size and time, not read (megabytes)
                st = f.stat()
                h.update(f"{f.relative_to(exp_dir).as_posix()}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
    return Scanned(exp_dir, h.hexdigest())


def _stat_line(rel: str, st: os.stat_result) -> bytes:
    return f"{rel}\0{st.st_size}\0{st.st_mtime_ns}\0{st.st_ctime_ns}\0{st.st_ino}\n".encode()


class ScanMemo:
    """Each experiment folder's scan digest, kept by the stat of its files, as git's index keeps a
    file's hash by its stat and hashes it again only when that changed.

    Scanning reads and hashes every file an experiment's pages and analysis come from (30 000
    files at 200 experiments, half of a warm build's time); a folder that did not change gives the
    same digest. A folder's memo key is the size, modification and change time (ctime, which no
    tool sets back) and inode of every file in it, with the same of every run's manifest under the
    runs folder (the overlap check reads them: a run added on the same machine changes every key),
    reportgen's code and the analysis schema. Any difference, as after a fresh clone or a copy,
    scans the folder again by content: the memo only saves reading what was read before. A
    folder holding a symbolic link is always scanned (its target could change unseen). Kept under
    `scans/` of the cache folder, never runs/; entries unused for PRUNE_DAYS are removed."""

    def __init__(self, cache: Path, experiments: Sequence[Path], index: RunsIndex) -> None:
        self.folder = Path(cache) / "scans"
        h = hashlib.sha256(f"{code_digest()}\0{SCHEMA_VERSION}\0".encode())
        for exp in experiments:
            for _, rel, run_dir in index.runs(exp):
                try:
                    h.update(_stat_line(f"{exp.name}/{rel}", (run_dir / layout.MANIFEST).stat()))
                except OSError:
                    h.update(f"{exp.name}/{rel}\0none\n".encode())
        self.around = h.hexdigest()
        self._keys: dict[Path, str | None] = {}

    def key(self, exp_dir: Path) -> str | None:
        """The folder's memo key; None when it cannot be had (a symbolic link, a file gone mid-walk)."""
        if exp_dir not in self._keys:
            self._keys[exp_dir] = self._key(exp_dir)
        return self._keys[exp_dir]

    def _key(self, exp_dir: Path) -> str | None:
        h = hashlib.sha256(f"{self.around}\0{exp_dir.resolve()}\0".encode())
        root = str(exp_dir)
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames.sort()
            rel_dir = os.path.relpath(dirpath, root)
            for name in sorted(filenames + [d for d in dirnames if os.path.islink(os.path.join(dirpath, d))]):
                path = os.path.join(dirpath, name)
                try:
                    st = os.lstat(path)
                except OSError:
                    return None
                if stat.S_ISLNK(st.st_mode):
                    return None
                h.update(_stat_line(os.path.join(rel_dir, name), st))
        return h.hexdigest()

    def _path(self, key: str) -> Path:
        return self.folder / key[:2] / key

    def get(self, exp_dir: Path) -> str | None:
        key = self.key(exp_dir)
        if key is None:
            return None
        path = self._path(key)
        try:
            digest = path.read_text(encoding="utf-8").strip()
        except OSError:
            return None
        if len(digest) != 64:  # damaged: scanned again
            return None
        _touch(path)
        return digest

    def put(self, exp_dir: Path, digest: str) -> None:
        key = self.key(exp_dir)
        if key is not None:
            with contextlib.suppress(OSError):  # a read-only cache: scanned again next time
                atomic.write_text(self._path(key), digest + "\n")

    def prune(self, keep: Iterable[Path], older_than_days: float = PRUNE_DAYS) -> int:
        """Remove entries not of `keep` (experiment folders) and unused for `older_than_days`."""
        kept = {self._path(k) for k in (self.key(p) for p in keep) if k is not None}
        return prune_unused(self.folder, "*/*", kept, older_than_days)


def _hash_file(h: Any, root: Path, path: Path) -> None:
    try:
        data = path.read_bytes()
    except (FileNotFoundError, IsADirectoryError):
        return
    h.update(path.relative_to(root).as_posix().encode() + b"\0" + hashlib.sha256(data).digest())


def entry_key(scanned: Scanned, *, outside: Iterable[object], options: object) -> str:
    """The key of an experiment's pages: its scan digest, what they show from outside its folder
    (the "vs history" line, the documentation that mentions it), the site's options and the code."""
    parts = [scanned.digest, code_digest(), repr(options), *map(repr, outside)]
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()


@dataclass(frozen=True)
class CachedPage:
    """A page as the cache keeps it: its Markdown and files, its charts as drawn files of the
    cache folder (render/chart_svg.Drawn: the rewritten SVG for the page, Vega's for the
    standalone file) and the run files copied next to it."""

    path: str
    title: str
    nav_title: str | None
    markdown: str
    charts: dict[str, tuple[str, str]]  # name -> (inline SVG path, Vega's SVG path)
    files: dict[str, bytes] = field(default_factory=dict)
    copies: dict[str, str] = field(default_factory=dict)

    @property
    def nav(self) -> str:
        return self.nav_title or self.title


@dataclass(frozen=True)
class Entry:
    """One experiment's pages, or the experiment as the other pages read it (no runs)."""

    pages: tuple[CachedPage, ...]
    experiment: PublishedExperiment | None
    # Where it was made, as far as its pages can tell (render/site.py `_valid`): the path shortener's
    # roots (prefix, name) found in the experiment's strings, and every absolute path they held.
    roots: tuple[tuple[str, str], ...] = ()
    paths: tuple[str, ...] = ()


class PageCache:
    """The entries of one cache folder (`pages/`), read and written whole, atomically."""

    def __init__(self, folder: Path) -> None:
        self.folder = Path(folder) / "pages"

    def _path(self, key: str) -> Path:
        return self.folder / key[:2] / f"{key}.pickle"

    def get(self, key: str) -> Entry | None:
        path = self._path(key)
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            return None
        try:
            entry = pickle.loads(data)
        except Exception:  # a damaged entry (an interrupted writer, another version) is made again
            return None
        if not isinstance(entry, Entry) or not all(
            Path(f).is_file() for c in entry.pages for d in c.charts.values() for f in d
        ):
            return None
        _touch(path)
        return entry

    def put(self, key: str, entry: Entry) -> None:
        atomic.write_bytes(self._path(key), pickle.dumps(entry, protocol=pickle.HIGHEST_PROTOCOL))

    def empty(self) -> bool:
        """No entry kept at all (a first build in this cache folder)."""
        return not any(self.folder.glob("*/*.pickle"))

    def history(self, keys: Sequence[str], make: Callable[[], H]) -> H:
        """The history of the experiments of `keys` (their experiment entries' keys), made by `make`
        when none is kept for them: its series and change points change only with an experiment."""
        key = hashlib.sha256("\0".join(["history", code_digest(), *keys]).encode()).hexdigest()
        path = self._path(key)
        try:
            kept = pickle.loads(path.read_bytes())
        except Exception:  # none, or damaged: made again
            kept = None
        if kept is not None:
            _touch(path)
            return cast(H, kept)
        made = make()
        atomic.write_bytes(path, pickle.dumps(made, protocol=pickle.HIGHEST_PROTOCOL))
        return made

    def prune(self, keep: Iterable[str], older_than_days: float = PRUNE_DAYS) -> int:
        """Remove entries not in `keep` and unused for `older_than_days`; returns how many."""
        return prune_unused(self.folder, "*/*.pickle", {self._path(k) for k in keep}, older_than_days)


def _touch(path: Path) -> None:
    with contextlib.suppress(OSError):  # a read-only cache still serves
        os.utime(path)


def light(exp: PublishedExperiment, kind: ReportKind) -> PublishedExperiment:
    """The experiment as the site's other pages read it, without its runs (a cache entry's)."""
    return replace(exp, runs=(), kind=kind)

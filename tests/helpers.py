"""Helpers shared by tests of several packages: waiting on a child process's files, writing an
experiment spec from typed pieces, and writing a run folder without running a workload.

Plain functions, not fixtures: tests/conftest.py keeps the suite's hooks and fixtures, this module
what a test calls."""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from reportgen.store.atomic import write_parquet, write_text
from reportgen.store.layout import EVENTS, EXPERIMENT_SPEC, GPU_PARQUET, HOST_PARQUET, MANIFEST, METRICS, RECIPE_PATCH
from reportgen.store.models import Events, Manifest
from tests import runs_guard

REPO = Path(__file__).resolve().parents[1]


def committed_experiments(repo: Path = REPO) -> list[Path]:
    """The experiment folders under runs/ that the repository commits (their experiment.toml is
    tracked), sorted. `scripts/demo` leaves its own campaign beside them in a working copy; tests
    that check what the repository ships (the GPU showcases, their history, their published
    commands) must not take the demo's runs for committed ones. Outside a git checkout (an
    exported tree), every experiment folder counts."""
    runs = repo / "runs"
    found = sorted(p for p in runs.iterdir() if (p / EXPERIMENT_SPEC).is_file())
    try:
        listed = subprocess.run(
            ["git", "-C", str(repo), "ls-files", "--", f"runs/*/{EXPERIMENT_SPEC}"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.split()
    except (OSError, subprocess.CalledProcessError):
        return found
    tracked = {Path(line).parent.name for line in listed}
    return [p for p in found if p.name in tracked]


def copy_committed_runs(dest: Path, repo: Path = REPO) -> Path:
    """A runs/ folder at `dest` holding copies of the committed experiments only (see
    committed_experiments), for builds that read a whole runs/ tree; returns `dest`."""
    dest.mkdir(parents=True, exist_ok=True)
    for exp in committed_experiments(repo):
        shutil.copytree(exp, dest / exp.name, symlinks=True)
    return dest


runs_guard.allow(committed_experiments, copy_committed_runs)  # the two doors to the repository's runs/


def wait_for(predicate: Callable[[], object], timeout: float, what: str, *, poll: float = 0.1) -> None:
    """Poll `predicate` until it is true; fail after `timeout` seconds naming `what` was awaited.

    For tests that start a runner in a child process and must act at a given point of its run
    (a run started, a step logged): the message says which point never came, and after how long."""
    start = time.monotonic()
    while time.monotonic() - start < timeout:
        if predicate():
            return
        time.sleep(poll)
    raise AssertionError(f"timed out after {timeout:g} s waiting for {what}")


def log_shows(path: Path, text: bytes) -> bool:
    """Whether the log at `path` exists and holds `text` yet (a run's stdout.log as it streams in)."""
    return path.is_file() and text in path.read_bytes()


def write_run_folder(
    run_dir: Path,
    manifest: Mapping[str, Any],
    *,
    metrics: pd.DataFrame | None = None,
    events: Sequence[Mapping[str, Any]] | None = None,
    gpu: pd.DataFrame | None = None,
    host: pd.DataFrame | None = None,
    patch: str | None = None,
) -> Manifest:
    """Write runs/<exp>/<arm>/<repeat>/ as the runner and ingest leave it, for tests that make run
    folders without running a workload (tests/analysis/builder.py, tests/render/site_fixture.py).

    Each JSON file goes through its store model (`Manifest`, `Events`), so a builder's document is
    validated as the runner's is and written the one way; tables and the patch only when given.
    Returns the manifest model, for a test that also needs the run as read (`StoredRun`)."""
    written = Manifest.create(manifest, str(run_dir / MANIFEST))
    written.write(run_dir / MANIFEST)
    if events is not None:
        Events.create({"events": [dict(e) for e in events]}).write(run_dir / EVENTS)
    for table, frame in ((METRICS, metrics), (GPU_PARQUET, gpu), (HOST_PARQUET, host)):
        if frame is not None:
            write_parquet(run_dir / table, frame)
    if patch is not None:
        write_text(run_dir / RECIPE_PATCH, patch)
    return written


def toml_value(value: object) -> str:
    """One TOML value: a string (JSON's escapes are TOML's), a number, a boolean, a list, or a table
    written inline (a recipe's `env`, a candidate's `set`, the analysis' windows)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str | Path):
        return json.dumps(str(value))
    if isinstance(value, Mapping):
        inner = ", ".join(f"{toml_key(k)} = {toml_value(v)}" for k, v in value.items())
        return f"{{ {inner} }}" if inner else "{}"
    if isinstance(value, list | tuple):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    raise TypeError(f"no TOML for {value!r}")


def toml_key(key: str) -> str:
    """A key bare when TOML allows it and it reads as a name; quoted otherwise (a flag: "--lr")."""
    bare = key.replace("_", "").replace("-", "").isalnum() and key.isascii() and not key.startswith("-")
    return key if bare else json.dumps(key)


def spec_text(*, candidates: Sequence[Mapping[str, Any]] = (), **doc: Any) -> str:
    """An experiment spec (docs/formats/spec.md) as TOML, from its parts in the order given: the
    top-level keys (name, title, ...), then each table (`recipe={...}`, `workload={...}`, `run=`,
    `analysis=`; a table inside one is written inline), then one `[[candidates]]` table per candidate.

    The one way tests write a spec whose text is not itself under test: a test states the parts it
    cares about as Python values, and the spec parser (tests/specfile) reads what it would read."""
    lines = [f"{toml_key(k)} = {toml_value(v)}" for k, v in doc.items() if not isinstance(v, Mapping)]
    for table, body in doc.items():
        if isinstance(body, Mapping):
            lines += ["", f"[{table}]", *(f"{toml_key(k)} = {toml_value(v)}" for k, v in body.items())]
    for cand in candidates:
        lines += ["", "[[candidates]]", *(f"{toml_key(k)} = {toml_value(v)}" for k, v in cand.items())]
    return "\n".join(lines) + "\n"


def write_spec(path: Path, *, candidates: Sequence[Mapping[str, Any]] = (), **doc: Any) -> Path:
    """Write `spec_text(...)` to `path` (its folder made); returns the path, to hand to load_spec or the CLI."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(spec_text(candidates=candidates, **doc))
    return path


def repo_clone(tmp_path_factory: Any, dest: Path) -> Path:
    """A fresh clone of this repository at HEAD at `dest`, for a test that writes in it: `git clone`
    once per session (`built_once`, shared by the workers), then `cp -a` of that clone here (a
    quarter of a clone's CPU; the clone's files, index and history as `git clone` left them).
    The shared clone's reportgen/ is byte-compiled once (`__pycache__/`, ignored by git, as a first
    run leaves it): where PYTHONDONTWRITEBYTECODE is set (CI, scripts/_env.sh), the many `python -m
    reportgen` of the tests in the copies would each compile it again.
    Returns `dest`."""
    import sys

    from tests.conftest import built_once

    def clone(folder: Path) -> None:
        subprocess.run(["git", "clone", "-q", str(REPO), str(folder / "repo")], check=True)
        subprocess.run([sys.executable, "-m", "compileall", "-q", "reportgen"], cwd=folder / "repo", check=True)

    shared = built_once(tmp_path_factory, "repo-clone", clone) / "repo"
    dest.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run(["cp", "-a", str(shared), str(dest)], check=True)
    return dest

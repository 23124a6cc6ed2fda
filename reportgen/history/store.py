"""The history's I/O edge: read a runs/ root into points, write and read history.parquet.

Pipeline position: runs/<experiment>/analysis.json -> **history (I/O)** -> runs/history.parquet.
Reads each experiment through `history.experiment.read_experiment` (the reader the site shares),
without its run folders: the history is made from what analysis.json stores (each run's figures,
commit and machine class; each comparison's run-level interval), the spec's text (its name) and
revisions.json; never a run's tables, never logs. Every experiment must have a current
analysis.json (the same rule as the site: a stale one is refused with the command that refreshes it).
"""

from __future__ import annotations

import subprocess
from collections.abc import Sequence
from pathlib import Path

from reportgen.analysis.document import SCHEMA_VERSION as ANALYSIS_SCHEMA
from reportgen.errors import UserError
from reportgen.history import experiment, model, paired, paired_model
from reportgen.history.experiment import LoadedExperiment
from reportgen.history.figures import points
from reportgen.history.model import Point
from reportgen.history.table import Row, TableFormat
from reportgen.store import atomic, layout
from reportgen.store.freshness import stale_reason

HISTORY_FILE = "history.parquet"  # runs/history.parquet, beside the experiments


def read_experiment(exp_dir: Path, runs_root: Path) -> LoadedExperiment:
    """One experiment as the history reads it (the shared reader, without its run folders); a stale
    or missing analysis.json is refused with the command that refreshes it."""
    exp_dir = Path(exp_dir)
    why = stale_reason(exp_dir, ANALYSIS_SCHEMA)
    if why is not None:
        runs_opt = "" if Path(runs_root).resolve() == Path("runs").resolve() else f" --runs {runs_root}"
        raise UserError(f"{exp_dir / layout.ANALYSIS}: {why}; run `reportgen analyze {exp_dir.name}{runs_opt}` first")
    return experiment.read_experiment(exp_dir, needed=(), fix="re-run the stage that writes it", runs=False)


def collect_both(runs_root: Path) -> tuple[list[Point], list[paired_model.PairedPoint]]:
    """Every run's absolute points (the machine's health) and every paired campaign's point
    (a commit against an anchor: the paired history), read once per experiment."""
    runs_root = Path(runs_root)
    if not runs_root.is_dir():
        raise UserError(f"{runs_root}: no runs folder; run `reportgen run SPEC` first or pass --runs")
    health: list[Point] = []
    pairs: list[paired_model.PairedPoint] = []
    for exp_dir in layout.iter_experiments(runs_root):
        exp = read_experiment(exp_dir, runs_root)
        health += points(exp)
        pairs += paired.points(exp)
    return health, pairs


def collect(runs_root: Path) -> list[Point]:
    """Every point under a runs/ root (every experiment, every complete formal run)."""
    runs_root = Path(runs_root)
    if not runs_root.is_dir():
        raise UserError(f"{runs_root}: no runs folder; run `reportgen run SPEC` first or pass --runs")
    out: list[Point] = []
    for exp_dir in layout.iter_experiments(runs_root):
        out += points(read_experiment(exp_dir, runs_root))
    return out


def commit_order(repo: Path) -> dict[str, int]:
    """commit -> position in the repository's history (oldest 0), all branches, topological."""
    try:
        res = subprocess.run(
            ["git", "-C", str(repo), "rev-list", "--topo-order", "--reverse", "--all"],
            capture_output=True,
            text=True,
            check=False,
            timeout=60,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise UserError(f"--git {repo}: cannot run git ({exc.__class__.__name__})") from None
    if res.returncode != 0:
        raise UserError(f"--git {repo}: not a git repository ({res.stderr.strip().splitlines()[-1:] or ['?']})")
    return {line: i for i, line in enumerate(res.stdout.split())}


def _write(path: Path, fmt: TableFormat[Row], rows: Sequence[Row]) -> Path:
    with atomic.replacing(Path(path)) as tmp:
        tmp.write_bytes(fmt.to_parquet(rows))
    return Path(path)


def _read(path: Path, fmt: TableFormat[Row]) -> list[Row]:
    path = Path(path)
    if not path.is_file():
        raise UserError(f"{path}: missing; run `reportgen history` to build it from runs/")
    return fmt.from_parquet(path.read_bytes(), str(path))


def write(path: Path, pts: list[Point]) -> Path:
    """history.parquet, atomically, with its kind and schema version in the file's metadata."""
    return _write(path, model.FORMAT, pts)


def read(path: Path) -> list[Point]:
    """A history.parquet, validated (kind, schema version, every row)."""
    return _read(path, model.FORMAT)


def write_paired(path: Path, pts: list[paired_model.PairedPoint]) -> Path:
    """paired-history.parquet, atomically, with its kind and schema version in the metadata."""
    return _write(path, paired_model.FORMAT, pts)


def read_paired(path: Path) -> list[paired_model.PairedPoint]:
    """A paired-history.parquet, validated (kind, schema version, every row)."""
    return _read(path, paired_model.FORMAT)

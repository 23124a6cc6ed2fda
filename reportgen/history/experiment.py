"""One experiment folder as read: the type the history and the pages share, and its one reader
(history layer, I/O edge).

Pipeline position: runs/<experiment>/ (analysis.json, experiment.toml, experiment.json,
revisions.json, each run through the store's reader) -> **LoadedExperiment** -> the history's
points (history.store, from runs/) and the site's pages (render.load, which publishes what it
read: every string shortened and redacted). Never logs: what a page shows of them comes through
each run's events.json.
"""

from __future__ import annotations

import functools
import json
import re
import tomllib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from reportgen import vocab
from reportgen.analysis.document import AnalysisDocument, parse
from reportgen.errors import UserError
from reportgen.store import layout
from reportgen.store.atomic import read_json
from reportgen.store.experiment import load_experiment_record
from reportgen.store.models import ExperimentRecord, Revisions
from reportgen.store.run import StoredRun
from reportgen.store.run_folder import read_run_folder

DERIVED = re.compile(r"^# Derived by reportgen from .* \(spec ([A-Za-z0-9._-]+)\):")


@functools.lru_cache(maxsize=1024)
def recipe_name(spec_text: str, fallback: str) -> str:
    """The spec's own `name` (a `--name` renames the folder only), else the folder name. A spec
    derived for a campaign of two revisions (pipeline.derive_revision_spec) is named after its
    campaign; its header names the spec it came from, and that is its recipe. Kept per text: the
    history and the site ask it of every experiment several times a build (a TOML parse each, a
    second of a 200-experiment build)."""
    derived = DERIVED.match(spec_text)
    if derived:
        return derived.group(1)
    try:
        name = tomllib.loads(spec_text).get("name")
    except tomllib.TOMLDecodeError:
        return fallback
    return str(name) if isinstance(name, str) and name else fallback


@dataclass(frozen=True)
class LoadedExperiment:
    """One experiment as read from its folder: the analysis document, its runs (each through the
    store's reader), the stored spec's text, experiment.json and the commits its arms ran at."""

    name: str
    path: Path
    analysis: AnalysisDocument
    runs: tuple[StoredRun, ...]
    spec_text: str
    record: ExperimentRecord | None = None  # experiment.json: where the spec ran from (source_path, recipe_dir)
    shas: Mapping[str, str] | None = None  # arm -> the commit it ran at (revisions.json), when arms ran at revisions

    @property
    def recipe(self) -> str:
        """The recipe the experiment measured: the spec's own name, else the folder's."""
        return recipe_name(self.spec_text, self.name)

    def formal_runs(self, arm_id: str | None = None) -> list[StoredRun]:
        return [r for r in self.runs if r.role == vocab.FORMAL and (arm_id is None or r.arm == arm_id)]


def revision_shas(exp_dir: Path) -> dict[str, str] | None:
    """arm -> the commit it ran at, from runs/<experiment>/revisions.json; None: arms not at revisions."""
    record = Revisions.read(Path(exp_dir) / layout.REVISIONS)
    return {arm: r.sha for arm, r in record.arms.items()} if record is not None else None


def _identity(x: Any) -> Any:
    return x


def read_analysis(exp_dir: Path, *, strings: Callable[[Any], Any] = _identity) -> AnalysisDocument:
    """runs/<experiment>/analysis.json, validated; a missing, foreign or other-schema file is one
    UserError line naming `reportgen analyze`. `strings` maps the JSON before it is parsed (the
    pages' shortening and redaction)."""
    exp_dir = Path(exp_dir)
    path = exp_dir / layout.ANALYSIS
    if not path.is_file():
        raise UserError(f"{path}: missing; run `reportgen analyze {exp_dir.name}` (or `reportgen run`) first")
    try:
        data = read_json(path)
    except json.JSONDecodeError as exc:
        raise UserError(f"{path}: not valid JSON (line {exc.lineno}); re-run the stage that writes it") from exc
    return parse(strings(data), str(path), exp_dir.name)


def read_experiment(
    exp_dir: Path,
    *,
    needed: Sequence[str],
    fix: str,
    shown: bool = True,
    strings: Callable[[Any], Any] = _identity,
    runs: bool = True,
    tables: bool = True,
) -> LoadedExperiment:
    """The experiment folder `exp_dir` as read. A run file in `needed` that is there but unreadable
    stops the read, naming it and `fix` (what to re-run); `shown=False` leaves out what only the
    pages show of a run (store.run_folder); `runs=False` reads no run folder at all (the history
    needs only analysis.json, the spec and revisions.json), `tables=False` no run's tables (the
    site's pages of other experiments); `strings` maps analysis.json before it is parsed."""
    exp_dir = Path(exp_dir)
    analysis = read_analysis(exp_dir, strings=strings)
    read = []
    for arm, repeat, path in layout.iter_runs(exp_dir) if runs else []:
        run = read_run_folder(
            path, arm, repeat, shown=shown, tables=tables
        )  # the store's one reader, each file through its model
        for note in run.notes:
            name, _, why = note.partition(": ")
            if name in needed:
                raise UserError(f"{path / name}: {why}; {fix}")
        read.append(run)
    spec = exp_dir / layout.EXPERIMENT_SPEC
    return LoadedExperiment(
        name=exp_dir.name,
        path=exp_dir,
        analysis=analysis,
        runs=tuple(read),
        spec_text=spec.read_text(encoding="utf-8", errors="replace") if spec.is_file() else "",
        record=load_experiment_record(exp_dir),
        shas=revision_shas(exp_dir),
    )

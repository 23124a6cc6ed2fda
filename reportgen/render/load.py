"""Read what the site renders for one experiment (render stage, I/O edge).

Reads an experiment folder through the reader the history shares (`history.experiment`:
`analysis.json`, the stored spec, `experiment.json`, and each run through the store's reader,
`store.run_folder`, with its stored tables, `manifest.json`, `events.json`, `recipe.patch`,
`command.json` and `provenance/` files, as the store's one run type, `StoredRun`). Never the logs:
log excerpts reach the site through events.json. Every string passes through the path shortener
and the credential redaction here (`published`), so nothing downstream sees a machine-specific path.
"""

from __future__ import annotations

import dataclasses
import tomllib
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
import pandas as pd

from reportgen import vocab
from reportgen.analysis.document import AnalysisDocument, ArmResult, Comparison
from reportgen.capture.redact import published_env, recipe_variables, redact_command_text, redact_published
from reportgen.errors import UserError
from reportgen.history.experiment import LoadedExperiment, read_analysis, read_experiment
from reportgen.render.kinds import ReportKind
from reportgen.specfile.load import parse_spec
from reportgen.store import layout
from reportgen.store.experiment import EXPERIMENT_RECORD
from reportgen.store.models import ExperimentRecord, GitProvenance, LogEvent, Manifest, RunCommand, StoreFile
from reportgen.store.run import StoredRun
from reportgen.store.run_folder import GIT_JSON

GpuSeriesKey = tuple[str, str, str]  # run ("A1/1"), gpu.parquet column, how bins reduce ("mean", "max")
M = TypeVar("M", bound=StoreFile)
# Provenance files shown as text; anything bigger than this is cut (with a note), never embedded whole.
MAX_TEXT = 200_000


@dataclass(frozen=True)
class PublishedExperiment(LoadedExperiment):
    """An experiment as the pages may publish it (`load_experiment`: every string shortened and
    redacted), with what only the pages ask of it: an arm or a comparison that must be there, and
    tables computed once and shared by the pages. `kind`: its report kind when known without its
    runs (the site's cache of an unchanged experiment, render/site_cache.py, holds no runs)."""

    kind: ReportKind | None = None

    def arm_ids(self) -> list[str]:
        return self.analysis.arm_ids()

    def arm(self, arm_id: str) -> ArmResult:
        """The arm of a comparison's candidate (the analysis writes one arm per spec arm)."""
        arm = self.analysis.arm(arm_id)
        if arm is None:
            raise UserError(f"{self.path / layout.ANALYSIS}: no arm {arm_id!r}; re-run `reportgen analyze {self.name}`")
        return arm

    def comparison(self, candidate: str) -> Comparison:
        comp = self.analysis.comparison(candidate)
        if comp is None:
            raise UserError(
                f"{self.path / layout.ANALYSIS}: no comparison for {candidate!r}; re-run `reportgen analyze {self.name}`"
            )
        return comp

    @cached_property
    def metrics_long(self) -> pd.DataFrame:
        """All formal runs' metrics in one table: arm, run, step, key, value (one source per step+key)."""
        parts = []
        for r in self.formal_runs():
            m = r.metrics
            if m.empty:
                continue
            if "source" in m:  # console first, TensorBoard where the console lacks the key
                m = m.sort_values("source", kind="stable").drop_duplicates(["step", "key"], keep="first")
            parts.append(
                pd.DataFrame(
                    {
                        "arm": r.arm,
                        "run": r.rel,
                        "step": m["step"].to_numpy(dtype="int64"),
                        "key": m["key"].astype(str).to_numpy(),
                        "value": m["value"].to_numpy(dtype=float),
                    }
                )
            )
        if not parts:
            return pd.DataFrame({"arm": [], "run": [], "step": [], "key": [], "value": []})
        return (
            pd.concat(parts, ignore_index=True)
            .sort_values(["run", "key", "step"], kind="stable")
            .reset_index(drop=True)
        )

    @cached_property
    def metrics_by_key(self) -> dict[str, dict[str, Any]]:
        """`metrics_long` split by key once: key -> arm, run, step, value arrays (in run, step order)."""
        m = self.metrics_long
        if m.empty:
            return {}
        keys = m["key"].to_numpy()
        cols = {c: m[c].to_numpy() for c in ("arm", "run", "step", "value")}
        cols["value"] = cols["value"].astype(float)
        order = np.argsort(keys, kind="stable")
        keys = keys[order]
        cuts = np.flatnonzero(keys[1:] != keys[:-1]) + 1
        out = {}
        for lo, hi in zip(np.r_[0, cuts], np.r_[cuts, len(keys)], strict=False):
            rows = order[lo:hi]
            out[str(keys[lo])] = {c: v[rows] for c, v in cols.items()}
        return out

    @cached_property
    def gpu_series(self) -> dict[GpuSeriesKey, dict[str, np.ndarray] | None]:
        """Per-experiment memo of the charts' binned GPU series (render.charts), shared by the pages
        that draw the same run's series."""
        return {}


def _read_text(path: Path) -> str:
    data = path.read_bytes()[: MAX_TEXT + 1]
    text = data.decode("utf-8", errors="replace")
    if len(data) > MAX_TEXT:
        text = text[:MAX_TEXT] + f"\n[... cut at {MAX_TEXT} bytes; the full file is {path.stat().st_size} bytes]"
    return text


def _cut(text: str) -> str:
    """A text shown whole up to MAX_TEXT bytes, cut there with a note beyond (as `_read_text`)."""
    data = text.encode("utf-8")
    if len(data) <= MAX_TEXT:
        return text
    cut = data[:MAX_TEXT].decode("utf-8", errors="replace")
    return cut + f"\n[... cut at {MAX_TEXT} bytes; the full file is {len(data)} bytes]"


# Files a page cannot do without: one the store's reader could not read stops the build, naming it.
_NEEDED = (layout.MANIFEST, layout.EVENTS, layout.METRICS, layout.GPU_PARQUET)


def published(
    run: StoredRun, shorten: Callable[[Any], Any], own_env: Iterable[str] = (), spec_env: SpecEnv | None = None
) -> StoredRun:
    """The same run with every string mapped through `shorten` (the path shortener and the
    credential redaction) and each model validated again; the patch and provenance texts cut at
    MAX_TEXT; the command's environment cut to what may be published by the rule of today
    (reportgen.capture.redact.published_env), whatever the run's age: a run recorded under an older
    rule may hold more, or a value redacted that is no credential (restored from `spec_env`, what the
    spec set)."""
    folder = run.run_dir or Path(run.rel)
    return dataclasses.replace(
        run,
        manifest=_shortened(run.manifest, Manifest, folder / layout.MANIFEST, shorten) or run.manifest,
        events=tuple(LogEvent.model_validate(shorten(e.to_dict())) for e in run.events),
        patch=shorten(_cut(run.patch)) if run.patch is not None else None,
        git=_shortened(run.git, GitProvenance, folder / GIT_JSON, shorten),
        artifacts=tuple(shorten(list(run.artifacts))),
        command=published_command(run.command, folder, run.arm, own_env, spec_env, shorten),
        provenance={name: shorten(_cut(text)) for name, text in run.provenance.items()},
        notes=tuple(shorten(list(run.notes))),
    )


def _shortened(model: M | None, cls: type[M], path: Path, shorten: Callable[[Any], Any]) -> M | None:
    """A store model with every string mapped (shortened, redacted), validated again."""
    return None if model is None else cls.parse(shorten(model.to_dict()), str(path))


def published_command(
    command: RunCommand | None,
    run_dir: Path,
    arm: str,
    own: Iterable[str] = (),
    spec_env: SpecEnv | None = None,
    shorten: Callable[[Any], Any] = lambda x: x,
) -> RunCommand | None:
    """The run's command.json as it may be published: its environment cut by `published_env` (the
    variables the spec sets or the recipe reads count as the recipe's own), strings shortened."""
    if command is None:
        return None
    recipe = next((run_dir / n for n in ("recipe.sh", "recipe.argv") if (run_dir / n).is_file()), None)
    names = {*own, *recipe_variables(_read_text(recipe) if recipe is not None else "")}
    env = published_env(command.env, names, set_by_spec=(spec_env or SpecEnv()).of(arm))
    total = command.env_total if command.env_total is not None else len(command.env)
    update = {"command": shorten(command.command), "cwd": shorten(command.cwd), "env": shorten(env), "env_total": total}
    return command.model_copy(update=update)


def spec_env_names(spec_text: str) -> set[str]:
    """Variables the spec sets for its recipe: [recipe].env, each candidate's and each profile's."""
    try:
        doc = tomllib.loads(spec_text)
    except tomllib.TOMLDecodeError:
        return set()
    tables = [doc.get("recipe") or {}, *(c for c in doc.get("candidates") or [] if isinstance(c, dict))]
    tables += [(p or {}).get("recipe") or {} for p in (doc.get("profiles") or {}).values() if isinstance(p, dict)]
    tables += [doc.get("profiler") or {}]
    return {str(k) for t in tables if isinstance(t, dict) for k in (t.get("env") or {})}


@dataclass(frozen=True)
class SpecEnv:
    """The environment the spec (the experiment's stored copy, its profile applied) sets for its
    runs: `recipe` for every arm, `profiler` over it for the profile arms (as plan.arms builds them)."""

    recipe: dict[str, str] = field(default_factory=dict)
    profiler: dict[str, str] = field(default_factory=dict)

    def of(self, arm: str) -> dict[str, str]:
        return {**self.recipe, **self.profiler} if vocab.is_profile_arm(arm) else dict(self.recipe)


def read_spec_env(spec: Path, profile: str | None) -> SpecEnv:
    """`SpecEnv` of the stored spec; empty when there is none or it no longer validates (the pages
    then show what command.json holds)."""
    if not spec.is_file():
        return SpecEnv()
    try:
        parsed = parse_spec(_read_text(spec), source=spec, profile=profile, check_files=False)
    except UserError:
        return SpecEnv()
    return SpecEnv(dict(parsed.recipe.env), dict(parsed.profiler.env) if parsed.profiler else {})


def load_analysis(exp_dir: Path, *, deep: Callable[[Any], Any] | None = None) -> AnalysisDocument:
    """runs/<experiment>/analysis.json, validated, as the pages may publish it (the history's
    reader, `history.experiment.read_analysis`); `deep` maps every string (the path shortener)."""
    # Credentials passed as flag values never reach a page (reportgen.capture.redact).
    return read_analysis(exp_dir, strings=lambda data: redact_published(deep(data) if deep else data))


def load_experiment(
    exp_dir: Path, *, shorten: Callable[[Any], Any] | None = None, tables: bool = True
) -> PublishedExperiment:
    """Everything the pages of one experiment need, read by the history's reader
    (`history.experiment.read_experiment`, each run through the store's) and published: every
    string mapped by `shorten` (default: identity) and redacted, each run by `published`.
    `tables=False` leaves the runs' tables out (what the other pages of the site read of it)."""
    exp_dir = Path(exp_dir)
    shorten_deep = getattr(shorten, "deep", None) or (lambda x: x)
    shorten_one = shorten or (lambda x: x)

    # Every string read from runs/ also loses credential flag values (reportgen.capture.redact).
    def deep(x: Any) -> Any:
        return redact_published(shorten_deep(x))

    read = read_experiment(
        exp_dir,
        needed=_NEEDED,
        fix="re-run `reportgen ingest` for this run",
        strings=deep,
        tables=tables,
    )
    record = _shortened(read.record, ExperimentRecord, exp_dir / EXPERIMENT_RECORD, deep)
    spec = exp_dir / layout.EXPERIMENT_SPEC
    own = spec_env_names(read.spec_text)
    spec_env = read_spec_env(spec, record.profile if record is not None else None)
    return PublishedExperiment(
        name=read.name,
        path=read.path,
        analysis=read.analysis,
        runs=tuple(published(r, deep, own, spec_env) for r in read.runs),
        spec_text=redact_command_text(shorten_one(_cut(read.spec_text))),
        record=record,
        shas=read.shas,
    )

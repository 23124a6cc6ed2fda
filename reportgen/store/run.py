"""A run as read: `StoredRun`, the one type of a run folder for every reader of runs/, and the
little a reader needs beside it (store stage; the store's module for readers).

`store.run_folder` fills a `StoredRun` from runs/<experiment>/<arm>/<repeat>/, each file through
its model (`store.models`). The analysis, the history and the site's pages take that object as
it is; what one of them needs differently is this same type, made by a function or derived:

- the analysis' steps table (`steps`, one column per metric key) is derived from the stored long
  table, and the analysis adds its derived metrics with `with_columns`;
- the history takes a run with only the metrics it plots (`dataclasses.replace(run, metrics=...)`);
- the pages take a copy with every string shortened and redacted (`render.load.published`).

The analysis imports nothing else of the store (tests/test_imports.py): what it needs of a
manifest (the `Manifest` model and its sections, `LogEvent`, `parse_utc` for its times) is exported here. Reads no file.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from reportgen import vocab
from reportgen.store.machine_id import class_id
from reportgen.store.models import GitProvenance, LogEvent, Manifest, RunCommand

__all__ = [
    "METRIC_COLUMNS",
    "SOURCE_PRIORITY",
    "GitProvenance",
    "LogEvent",
    "Manifest",
    "RunCommand",
    "StoredRun",
    "empty_metrics",
    "parse_utc",
    "source_rank",
    "wide_table",
]

METRIC_COLUMNS = ("step", "key", "value", "source")
"""The columns of metrics.parquet, the long table: one row per value a source logged."""
SOURCE_PRIORITY = ("console", "tensorboard")
"""Where two sources logged a key at one step, the first of these is the value (`wide_table`)."""


def source_rank(source: str, priority: tuple[str, ...] = SOURCE_PRIORITY) -> int:
    """A source's place in `priority`; a source not listed comes after every listed one."""
    return priority.index(source) if source in priority else len(priority)


def wide_table(long_df: pd.DataFrame, priority: tuple[str, ...] = SOURCE_PRIORITY) -> pd.DataFrame:
    """One row per step (int index, sorted), one float column per key; where sources overlap the
    first source in `priority` wins. Missing values are NaN.

    Built with numpy, not pandas' sort, de-duplication and pivot (the same table, a fifth of the
    time): every run the analysis, the history or a site build reads is turned wide once."""
    if len(long_df) == 0:
        return pd.DataFrame(index=pd.Index([], dtype="int64", name="step"), dtype="float64")
    # Codes in the keys' sorted order; a missing key or source is a value of its own, as pandas' pivot had it.
    key_codes, keys = pd.factorize(long_df["key"], sort=True, use_na_sentinel=False)
    source_codes, sources = pd.factorize(long_df["source"], use_na_sentinel=False)
    rank = np.array([source_rank(s, priority) for s in sources], dtype=np.int64)[source_codes]
    step_all = long_df["step"].to_numpy(dtype=np.int64)
    # Sorted by step, key, then the source's rank (np.lexsort is stable: equal ranks keep row order);
    # the first row of each (step, key) is the one kept.
    order = np.lexsort((rank, key_codes, step_all))
    step, key = step_all[order], key_codes[order]
    first = np.ones(len(order), dtype=bool)
    first[1:] = (step[1:] != step[:-1]) | (key[1:] != key[:-1])
    step, key, values = step[first], key[first], long_df["value"].to_numpy(dtype=np.float64)[order][first]
    index, row = np.unique(step, return_inverse=True)
    grid = np.full((len(index), len(keys)), np.nan)  # every key kept a row: its first
    grid[row, key] = values
    wide = pd.DataFrame(grid, index=pd.Index(index, dtype="int64", name="step"), columns=keys)
    wide.columns.name = None
    return wide


def parse_utc(text: str | None) -> float | None:
    """A manifest's UTC time ("2026-12-01T10:00:00Z", as store.runs.utc_now writes it) in seconds;
    None when absent or unreadable."""
    if not text:
        return None
    try:
        return datetime.fromisoformat(str(text).replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def empty_metrics() -> pd.DataFrame:
    """A long metrics table with no row, typed as metrics.parquet's columns."""
    return pd.DataFrame(
        {
            "step": pd.Series([], dtype="int64"),
            "key": pd.Series([], dtype=str),
            "value": pd.Series([], dtype="float64"),
            "source": pd.Series([], dtype=str),
        }
    )


def _no_manifest() -> Manifest:
    return Manifest.create({})


@dataclass(frozen=True, eq=False)
class StoredRun:
    """One run folder as read (store.run_folder). A file that is missing or unreadable leaves its
    field empty (an empty `Manifest`, a table without rows, None, ()), is named in `missing`, and,
    when it was there but could not be read, in a note. Equality is identity: two runs are never
    compared by their tables."""

    arm: str
    repeat: int
    manifest: Manifest = field(default_factory=_no_manifest)  # empty when manifest.json is missing or unreadable
    metrics: pd.DataFrame = field(
        default_factory=empty_metrics
    )  # metrics.parquet, long (METRIC_COLUMNS); `steps`: wide
    events: tuple[LogEvent, ...] = ()  # events.json: oom, nan, traceback, ... in log order
    gpu: pd.DataFrame = field(default_factory=pd.DataFrame)  # gpu.parquet (1 Hz samples); empty when absent
    host: pd.DataFrame = field(
        default_factory=pd.DataFrame
    )  # host.parquet (CPU load beside the run); empty when absent
    patch: str | None = None  # recipe.patch, decoded (undecodable bytes replaced)
    git: GitProvenance | None = None  # provenance/git.json
    artifacts: tuple[dict[str, Any], ...] = ()  # the manifest's list, else the files under traces/
    traces: bytes | None = None  # traces.parquet (the profiler summary), undecoded: reportgen.traces reads it
    # What only the pages show (read for a run folder on its own, never for the analysis: not in its digest).
    command: RunCommand | None = None  # command.json
    provenance: Mapping[str, str] = field(default_factory=dict)  # provenance/ file name -> text
    notes: tuple[str, ...] = ()  # problems met while reading, "<file name>: why"
    missing: frozenset[str] = frozenset()  # the files above that were missing or unreadable ("metrics.parquet")
    run_dir: Path | None = None  # the folder it was read from (None: a run made in memory)

    @property
    def rel(self) -> str:
        """The run's path under its experiment folder, "A1/1"."""
        return f"{self.arm}/{self.repeat}"

    @property
    def role(self) -> str:
        return vocab.run_role(self.arm, self.manifest.role)

    @property
    def status(self) -> str:
        return str(self.manifest.status or "unknown")

    @property
    def machine(self) -> str | None:
        """The machine the run ran on (its fingerprint id); the runs of one block (one `repeat` of
        the formal arms, a pair) share it, and a campaign's blocks may come from several machines
        of one class. None when the manifest recorded none."""
        return self.manifest.fingerprint_id

    @property
    def machine_host(self) -> str | None:
        """That machine's hostname, as its fingerprint recorded it (None when not recorded)."""
        return self.manifest.fingerprint.hostname or None

    @property
    def machine_class(self) -> str | None:
        """The class of the machine the run ran on (`store.machine_id.class_id` of its fingerprint),
        which the history keys its series on; None when the manifest recorded no fingerprint."""
        fp = self.manifest.fingerprint
        return class_id(fp.to_dict()) if fp else None

    @property
    def argv(self) -> dict[str, Any]:
        return dict(self.manifest.effective_argv or {})

    @cached_property
    def steps(self) -> pd.DataFrame:
        """The metrics wide: index = step (int), one column per key, one value per step and key
        (`wide_table`: the console's where both sources logged it)."""
        return wide_table(self.metrics)

    @cached_property
    def nonfinite(self) -> tuple[tuple[str, int, float], ...]:
        """(key, step, value) of every NaN/inf value logged: the wide table cannot tell a NaN from
        a key that was not logged at that step."""
        m = self.metrics
        if "value" not in m:
            return ()
        bad = m[~np.isfinite(m["value"].astype(float))]
        return tuple((str(k), int(s), float(v)) for k, s, v in zip(bad["key"], bad["step"], bad["value"], strict=False))

    def with_columns(self, columns: Mapping[str, pd.Series]) -> StoredRun:
        """This run with per-step columns computed from its own added to `steps` (the analysis'
        derived metrics, analysis.same_work), in order; the stored tables are unchanged."""
        steps = self.steps.copy()
        for key, values in columns.items():
            steps[key] = values
        out = dataclasses.replace(self)
        out.__dict__["steps"] = steps  # `steps` is a cached_property: this is its value
        return out

    @property
    def steps_completed(self) -> int:
        """Steps that finished: those with a step time (Relax writes perf/step_time once the
        training block of the step is done). A step whose rollout logged but whose training died
        (an OOM in backward), or that only the rollout side logged (a fully-async rollout manager
        running ahead), is not complete. Without that key, the steps with an actor train value
        (its `step N` lines); without those either, steps that logged anything."""
        if self.steps.empty:
            return 0
        if vocab.STEP_TIME in self.steps.columns:
            return int(self.steps[vocab.STEP_TIME].notna().sum())
        actor = [
            c for c in self.steps.columns if str(c).startswith("train/") and not str(c).startswith("train/critic-")
        ]
        if actor:
            return int(self.steps[actor].notna().any(axis=1).sum())
        return int(self.steps.index.nunique())

    @property
    def steps_before(self) -> int:
        """Steps done before this run's log starts: a run resumed from a checkpoint (`--load`)
        starts at step S (its manifest's `ingest.lifecycle`), steps 0..S-1 were trained by the run
        that saved it. 0 for a run that started from scratch."""
        return self.manifest.start_step

    @cached_property
    def _columns(self) -> dict[str, tuple[np.ndarray, np.ndarray] | None]:
        """key -> (its steps, its values): the logged values in step order, filled by `series` as
        keys are asked for. The analysis asks for the same few keys of a run over and over (each
        window, each look, each guardrail; the calibration's campaigns thousands of times): a
        column is sorted once, a window is then two binary searches, not a pass over the table."""
        return {}

    def _window(self, key: str, start: int, end: int) -> np.ndarray:
        """The logged values of `key` for steps start..end inclusive, in step order (a view)."""
        if key not in self._columns:
            if key in self.steps.columns:
                col = self.steps[key].dropna().sort_index()
                self._columns[key] = (col.index.to_numpy(), col.to_numpy(dtype=float))
            else:
                self._columns[key] = None
        found = self._columns[key]
        if found is None:
            return np.empty(0)
        steps, values = found
        return values[np.searchsorted(steps, start, side="left") : np.searchsorted(steps, end, side="right")]

    def series(self, key: str, start: int, end: int) -> list[float]:
        """The values of `key` for steps start..end inclusive, in step order."""
        return [float(v) for v in self._window(key, start, end)]

    def window_means(self, key: str, windows: Sequence[tuple[str, int, int]]) -> tuple[float, ...] | None:
        """The mean of `key`'s finite values in each window (name, first step, last step), whose
        mean is the run's figure of the metric for the analysis (throughput's in
        analysis/evidence.py, a quality metric's in analysis/quality.py); None when a window holds
        no finite value, or there is no window."""
        means = []
        for _, start, end in windows:
            v = self._window(key, start, end)
            v = v[np.isfinite(v)]
            if not len(v):
                return None
            means.append(float(v.mean()))
        return tuple(means) or None


def by_block(reference: Sequence[StoredRun], candidate: Sequence[StoredRun]) -> list[tuple[StoredRun, StoredRun]]:
    """The pairs of runs of the blocks both arms ran (each block's reference run and candidate run,
    matched by repeat number), in block order: the unit of evidence, for the figures the analysis
    makes pair by pair (a quality metric's differences, the warm-up cost, same_maths' first steps)."""
    mates = {r.repeat: r for r in reference}
    return [(mates[c.repeat], c) for c in sorted(candidate, key=lambda r: r.repeat) if c.repeat in mates]

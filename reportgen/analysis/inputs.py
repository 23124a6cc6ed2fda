"""What the analysis reads, as plain data: one `RunData` per run folder.

Part of reportgen.analysis (pure). The I/O edge (reportgen.analyze) fills these from runs/.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from reportgen import vocab
from reportgen.store.models import Manifest


@dataclass(frozen=True)
class RunData:
    arm: str
    repeat: int
    path: str  # relative to the experiment folder, e.g. "A1/1"
    manifest: Manifest  # a plain dict is read through the model (tests, history points)
    steps: pd.DataFrame  # wide: index = step (int), one column per metric key
    events: tuple[dict[str, Any], ...] = ()
    gpu: pd.DataFrame | None = None  # gpu.parquet columns, or None when absent
    host: pd.DataFrame | None = None  # host.parquet (CPU load beside the run), or None when absent
    notes: tuple[str, ...] = field(default_factory=tuple)  # problems met while reading
    # (key, step, value) of every NaN/inf value logged: the wide table cannot tell a NaN from
    # a key that was not logged at that step.
    nonfinite: tuple[tuple[str, int, float], ...] = ()

    def __post_init__(self) -> None:
        if not isinstance(self.manifest, Manifest):
            object.__setattr__(self, "manifest", Manifest.create(self.manifest))

    @property
    def role(self) -> str:
        return vocab.run_role(self.arm, self.manifest.role)

    @property
    def status(self) -> str:
        return str(self.manifest.status or "unknown")

    @property
    def argv(self) -> dict[str, Any]:
        return dict(self.manifest.effective_argv or {})

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

    def series(self, key: str, start: int, end: int) -> list[float]:
        """The values of `key` for steps start..end inclusive, in step order."""
        if key not in self.steps.columns:
            return []
        col = self.steps[key]
        col = col[(col.index >= start) & (col.index <= end)].dropna()
        return [float(v) for v in col.sort_index().to_numpy()]


def argv_value(argv: dict[str, Any], flag: str) -> str | None:
    """Effective value of a flag as one string ("16"; "a b" for several; "true" for a switch)."""
    if flag not in argv:
        return None
    v = argv[flag]
    if v is True or v is None:
        return "true"
    if isinstance(v, (list, tuple)):
        return " ".join(str(x) for x in v)
    return str(v)

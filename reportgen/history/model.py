"""history.parquet: one typed row per run and metric (pure; part of reportgen.history).

One model owns the format: `Point` declares every column once with its meaning; the table is a
list of points with a schema version in the Parquet file's metadata. docs/formats/history.md is
the reference. A reader refuses another version or kind with one line naming the command that
rebuilds the file: the table is derived from runs/, so rebuilding it is always possible and no
migration is offered.
"""

from __future__ import annotations

from typing import Final

from pydantic import BaseModel, ConfigDict, Field

from reportgen.history.table import TableFormat
from reportgen.vocab import PEAK_GPU_MEMORY, STEP_TIME, Direction

SCHEMA_VERSION: Final = 2  # 2: class_id (a version-1 file is rebuilt, not migrated)
KIND: Final = "reportgen.history"
REBUILD = "run `reportgen history` to rebuild it from runs/"

# The metrics a history keeps for every arm: the spec's primary metric (the key varies), step time
# (vocab.STEP_TIME) and peak GPU memory (vocab.PEAK_GPU_MEMORY).


class SeriesBase(BaseModel):
    """Where a figure was measured: the recipe, profile, machine class and setup that place a row of
    either history table (`Point`, paired_model.PairedPoint) in its series. Its fields come first in
    both tables; history/figures.series_of fills them from one experiment."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    recipe: str = Field(description="The spec's `name` in experiment.toml (a `--name` renames the folder, not this).")
    profile: str | None = Field(default=None, description="The spec profile the runs were made with.")
    machine_class: str = Field(
        description='GPU model and count and driver ("1 x NVIDIA H200, driver 580.159.04"), else the CPU model and '
        "cores: points of different classes never share a series."
    )
    class_id: str | None = Field(
        default=None,
        description="The machine's class by its fingerprint (reportgen.capture.fingerprint.class_id: GPU and CPU models "
        "and counts, memory, driver, image; no host or serials): points of different classes never share a series, "
        'and "this baseline vs history" compares only within one. Null: no fingerprint was recorded.',
    )
    setup: str = Field(
        description='Steps and windows the run-level figures are over ("48 steps; windows 8-20, 21-33, 34-47"): '
        "figures over other windows are another quantity, another series."
    )


class Point(SeriesBase):
    """One run's figure of one metric: a row of history.parquet."""

    experiment: str = Field(description="Folder under runs/.")
    arm: str = Field(description='"baseline" or a candidate id.')
    run: str = Field(description='The run, relative to the experiment folder ("baseline/2").')
    commit: str | None = Field(default=None, description="The commit the run names (provenance/git.json).")
    dirty: bool | None = Field(default=None, description="The run's working tree had uncommitted changes.")
    started_utc: str | None = Field(default=None, description="When the run started (ISO 8601, UTC).")
    metric: str = Field(description=f'Metric key: the primary metric, "{STEP_TIME}" or "{PEAK_GPU_MEMORY}".')
    primary: bool = Field(description="This metric is the spec's primary metric.")
    label: str = Field(description='Short name for tables ("response tokens/s").')
    unit: str = Field(default="", description='"tok/s", "s", "MiB"; empty when the metric has none.')
    better: Direction = Field(description="Which direction is better.")
    value: float = Field(description="The run-level figure: mean of the run's window means (peak memory: the max).")
    low: float | None = Field(default=None, description="Lower end of the within-run interval; null: none.")
    high: float | None = Field(default=None, description="Upper end of the within-run interval; null: none.")
    confidence: float | None = Field(default=None, description="Level of that interval (0.95).")
    method: str = Field(default="", description="How the figure and its interval were computed.")
    n: int = Field(default=0, description="Steps (or 1 Hz GPU samples) the figure is over.")


FORMAT: Final = TableFormat(
    Point, kind=KIND, schema_version=SCHEMA_VERSION, what="a reportgen history table", rebuild=REBUILD
)

"""paired-history.parquet: one typed row per paired history point (pure; part of reportgen.history).

A paired history point is one small paired campaign of a commit against an anchor commit on one
machine class: the run-level log ratio commit / anchor of the primary metric, its standard error
and degrees of freedom, read from the campaign's analysis.json (its run-level interval). A bridging
campaign (old anchor against new anchor) is a row like any other: the series chains through it.

One model owns the format: `PairedPoint`, with a schema version in the Parquet file's metadata. A
reader refuses another version or kind with one line naming the command that rebuilds it (the
table is derived from runs/, so rebuilding is always possible; no migration is offered).
docs/formats/paired-history.md is the reference.
"""

from __future__ import annotations

from typing import Final

from pydantic import Field

from reportgen.history.model import REBUILD, SeriesBase  # one command rebuilds both tables
from reportgen.history.table import TableFormat
from reportgen.vocab import Direction

SCHEMA_VERSION: Final = 1
KIND: Final = "reportgen.paired_history"
FILE: Final = "paired-history.parquet"  # runs/paired-history.parquet, beside history.parquet


class PairedPoint(SeriesBase):
    """One paired campaign of `commit` against `anchor`: a row of paired-history.parquet."""

    metric: str = Field(description="The primary metric's key.")
    label: str = Field(description='Short name ("response tokens/s").')
    better: Direction = Field(description="Which direction of the metric is better.")
    experiment: str = Field(description="The campaign's folder under runs/ (its evidence).")
    arm: str = Field(description="The candidate arm whose comparison this is.")
    commit: str = Field(description="Full SHA of the measured commit (the candidate's revision).")
    anchor: str = Field(description="Full SHA of the anchor it was measured against (the baseline's revision).")
    started_utc: str | None = Field(default=None, description="When the campaign's first run started (ISO 8601).")
    log_ratio: float = Field(description="ln(commit / anchor): the run-level estimate (mean of the pairs' log ratios).")
    se: float = Field(description="Standard error of log_ratio, from the run-level interval and its t quantile.")
    df: float = Field(description="Degrees of freedom of that standard error.")
    pairs: int = Field(description="Pairs of runs the estimate is over.")
    verdict: str = Field(default="", description="The campaign's verdict on the commit (accepted, rejected, ...).")
    anchor_value: float | None = Field(
        default=None,
        description="The anchor arm's absolute figure in this campaign (geometric mean of its runs): a health "
        "check of the machine only, never compared across machines or leases.",
    )
    unit: str = Field(default="", description="Unit of anchor_value.")
    method: str = Field(default="", description="How log_ratio and se were read (the analysis' interval method).")


FORMAT: Final = TableFormat(
    PairedPoint, kind=KIND, schema_version=SCHEMA_VERSION, what="a reportgen paired history table", rebuild=REBUILD
)

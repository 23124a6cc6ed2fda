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

import json
from collections.abc import Mapping, Sequence
from typing import Final

import pandas as pd
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from reportgen.errors import UserError, first_problem
from reportgen.vocab import Direction

SCHEMA_VERSION: Final = 1
KIND: Final = "reportgen.paired_history"
META_KEY: Final = b"reportgen.paired_history"  # Parquet key-value metadata: {"kind", "schema_version"}
FILE: Final = "paired-history.parquet"  # runs/paired-history.parquet, beside history.parquet
REBUILD = "run `reportgen history` to rebuild it from runs/"


class PairedPoint(BaseModel):
    """One paired campaign of `commit` against `anchor`: a row of paired-history.parquet."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    recipe: str = Field(description="The spec's `name` in experiment.toml.")
    profile: str | None = Field(default=None, description="The spec profile the campaign was made with.")
    machine_class: str = Field(description="GPU model and count and driver, else the CPU model and cores (in words).")
    class_id: str | None = Field(
        default=None,
        description="The machine's fingerprint class (reportgen.capture.fingerprint.class_id); points of "
        "different classes never share a series. Null: the runs recorded no fingerprint.",
    )
    setup: str = Field(description="Steps and windows the run figures are over: another setup is another series.")
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


COLUMNS: Final = tuple(PairedPoint.model_fields)


def to_frame(points: Sequence[PairedPoint]) -> pd.DataFrame:
    frame = pd.DataFrame([p.model_dump() for p in points], columns=list(COLUMNS))
    for name in ("log_ratio", "se", "df", "anchor_value"):
        frame[name] = frame[name].astype("float64")
    frame["pairs"] = frame["pairs"].astype("int64")
    return frame


def metadata() -> dict[bytes, bytes]:
    return {META_KEY: json.dumps({"kind": KIND, "schema_version": SCHEMA_VERSION}).encode()}


def from_frame(frame: pd.DataFrame, meta: Mapping[bytes, bytes] | None, source: str) -> list[PairedPoint]:
    """Validate a table read back from Parquet: kind, schema version, then every row."""
    raw = (meta or {}).get(META_KEY)
    try:
        head = json.loads(raw) if raw else None
    except ValueError:
        head = None
    if not isinstance(head, dict) or head.get("kind") != KIND:
        raise UserError(f"{source}: not a reportgen paired history table (no {KIND!r} metadata); {REBUILD}")
    if head.get("schema_version") != SCHEMA_VERSION:
        raise UserError(
            f"{source} has schema {head.get('schema_version')}, this reportgen reads {SCHEMA_VERSION}; {REBUILD}"
        )
    missing = [c for c in COLUMNS if c not in frame.columns]
    if missing:
        raise UserError(f"{source}: column(s) {', '.join(missing)} missing; {REBUILD}")
    out = []
    for i, row in enumerate(frame[list(COLUMNS)].to_dict("records")):
        clean = {k: (None if isinstance(v, float) and v != v else v) for k, v in row.items()}
        try:
            out.append(PairedPoint.model_validate(clean))
        except ValidationError as exc:
            raise UserError(f"{source}: row {i}: {first_problem(exc, 'the row')}; {REBUILD}") from None
    return out

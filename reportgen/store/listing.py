"""A flat listing of every run under a runs/ root, for `reportgen ls`."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from reportgen.store.layout import iter_experiments, iter_runs
from reportgen.store.runs import load_manifest


@dataclass(frozen=True)
class RunRow:
    experiment: str
    arm: str
    repeat: int
    role: str
    status: str
    started_utc: str | None
    duration_s: float | None
    steps: int | None  # steps that trained (a step whose rollout logged but whose training died is not one)


def list_runs(root: Path) -> list[RunRow]:
    rows: list[RunRow] = []
    for exp_dir in iter_experiments(root):
        for arm, repeat, path in iter_runs(exp_dir):
            m = load_manifest(path)
            rows.append(
                RunRow(
                    experiment=exp_dir.name,
                    arm=arm,
                    repeat=repeat,
                    role=str(m.role) if m is not None and "role" in m.model_fields_set else "?",
                    status=str(m.status) if m is not None and "status" in m.model_fields_set else "no manifest",
                    started_utc=m.started_utc if m is not None else None,
                    duration_s=m.duration_s if m is not None else None,
                    steps=_trained(m.ingest or {}) if m is not None else None,
                )
            )
    return rows


def _trained(ingest: dict[str, Any]) -> int | None:
    """Steps the run completed, as the report counts them: `train_steps` (ingest's count of steps
    that trained), else the steps logged (a manifest of an older ingest)."""
    value = ingest.get("train_steps", ingest.get("steps"))
    return value if isinstance(value, int) else None

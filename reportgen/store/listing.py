"""A flat listing of every run under a runs/ root, for `reportgen ls`."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

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
                    steps=m.ingest.trained() if m is not None else None,
                )
            )
    return rows

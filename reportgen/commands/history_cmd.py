"""`reportgen history`: build the performance history of a runs/ root (thin; the work is
reportgen.history). Writes runs/history.parquet and prints every change point and, with
--experiment, that experiment's "this baseline vs history" line."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from reportgen.commands.options import RunsOption, optional, runs_root
from reportgen.errors import UserError

if TYPE_CHECKING:  # the history imports pandas and scipy: loaded when the command runs, not for --help
    from reportgen.history.series import Standing


@dataclass(frozen=True)
class HistoryResult:
    path: Path
    lines: list[str]


def history(
    runs: Path, *, out: Path | None = None, git: Path | None = None, experiment: str | None = None
) -> HistoryResult:
    """Collect every point under `runs`, write the table, and describe the series in lines of text."""
    from reportgen.history import series as hs
    from reportgen.history import store
    from reportgen.render.history_page import change_text

    points = store.collect(runs)
    order = store.commit_order(git) if git is not None else None
    built = hs.build(points, commit_order=order)
    if experiment is not None and not any(c.experiment == experiment for s in built for c in s.points):
        raise UserError(f"--experiment {experiment}: no complete run of it under {runs}; see `reportgen ls`")
    path = store.write(out or runs / store.HISTORY_FILE, points)
    lines = [f"history: {path} ({len(points)} points, {len(built)} series)"]
    for s in built:
        for ch in s.changes:
            machine = f"{s.key.machine_class} (class {s.key.class_id[:8] or 'unknown'})"
            where = f"{s.key.recipe} / {s.key.profile or 'no profile'} / {machine} / {s.key.arm}"
            lines.append(f"change point: {where} / {s.label}: {change_text(ch, s)}")
    if len(lines) == 1:
        lines.append("no change point")
    if experiment is not None:
        lines.append(_standing_text(hs.standing(built, experiment)))
    return HistoryResult(path, lines)


def _standing_text(st: Standing | None) -> str:
    from reportgen.render.history_page import standing_sentence, standing_where

    if st is None:
        return "This baseline vs history: no baseline of it in the history."
    return f"This baseline vs history ({standing_where(st)}): {standing_sentence(st)}. A flag, not a verdict."


def register(app: typer.Typer) -> None:
    @app.command("history")
    def history_command(
        runs: RunsOption = None,
        out: Path | None = optional("--out", "FILE", "Where to write the table (default: RUNS/history.parquet)."),
        git: Path | None = optional(
            "--git", "REPO", "Order campaigns by their commit's place in REPO's history, not by when they ran."
        ),
        experiment: str | None = optional(
            "--experiment", "NAME", "Also print this experiment's 'this baseline vs history' line."
        ),
    ) -> None:
        """Build the performance history (every run's figures over commits) and find its change points."""
        for line in history(runs_root(runs), out=out, git=git, experiment=experiment).lines:
            typer.echo(line)

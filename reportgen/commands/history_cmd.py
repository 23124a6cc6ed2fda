"""`reportgen history`: build the paired performance history of a runs/ root (thin; the work is
reportgen.history). Writes runs/paired-history.parquet (the paired series) and runs/history.parquet
(each run's absolute figure: the machine's health), prints every alarm with the `reportgen bisect`
command for its range and, with --experiment, that experiment's "vs history" line."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import typer

from reportgen.commands.options import RunsOption, optional, runs_root
from reportgen.errors import UserError


@dataclass(frozen=True)
class HistoryResult:
    path: Path
    lines: list[str]
    paired_path: Path | None = None


def history(
    runs: Path, *, out: Path | None = None, git: Path | None = None, experiment: str | None = None
) -> HistoryResult:
    """Collect every point under `runs`, write both tables (the paired history and the machine's
    health), and describe the paired series, their alarms and the bisect command for each."""
    from reportgen.history import paired, store
    from reportgen.history import series as hs
    from reportgen.history.paired_model import FILE as PAIRED_FILE
    from reportgen.render.history_page import alarm_text, vs_history_sentence

    health, pairs = store.collect_both(runs)
    order = store.commit_order(git) if git is not None else None
    built = hs.build(health, commit_order=order)
    chained = paired.build(pairs, commit_order=order)
    if experiment is not None and not any(c.experiment == experiment for s in built for c in s.points):
        raise UserError(f"--experiment {experiment}: no complete run of it under {runs}; see `reportgen ls`")
    path = store.write(out or runs / store.HISTORY_FILE, health)
    paired_path = store.write_paired((out.parent if out else runs) / PAIRED_FILE, pairs)
    lines = [
        f"paired history: {paired_path} ({len(pairs)} campaigns, {len(chained)} series)",
        f"machine health: {path} ({len(health)} run figures, {len(built)} series; absolute, not compared across leases)",
    ]
    alarms = 0
    for ps in chained:
        where = f"{ps.key.recipe} / {ps.key.profile or 'no profile'} / {ps.key.machine_class} / {ps.label}"
        lines.append(f"series: {where}: {len(ps.points)} commits against anchor {ps.root[:12]}")
        for a in ps.alarms:
            alarms += 1
            lines.append(f"alarm: {where}: {alarm_text(a, ps)}")
            lines.append(f"  bisect: {a.bisect_command()}")
        for u in ps.unreached:
            lines.append(
                f"unchained: {u.experiment} measured {u.commit[:12]} against {u.anchor[:12]}, which no bridge links to "
                f"{ps.root[:12]}: run `reportgen run --baseline-ref {ps.root[:12]} --candidate-ref {u.anchor[:12]}`"
            )
    if not alarms:
        lines.append("no alarm")
    if experiment is not None:
        commit = next((c.commit for s in built for c in s.points if c.experiment == experiment), None)
        lines.append(vs_history_sentence(paired.vs_history(chained, experiment, commit)))
    return HistoryResult(path, lines, paired_path)


def register(app: typer.Typer) -> None:
    @app.command("history")
    def history_command(
        runs: RunsOption = None,
        out: Path | None = optional("--out", "FILE", "Where to write the table (default: RUNS/history.parquet)."),
        git: Path | None = optional(
            "--git", "REPO", "Order campaigns by their commit's place in REPO's history, not by when they ran."
        ),
        experiment: str | None = optional(
            "--experiment", "NAME", "Also print this experiment's 'vs history' line (its place in the paired history)."
        ),
    ) -> None:
        """Build the paired performance history (commits against an anchor) and find its alarms."""
        for line in history(runs_root(runs), out=out, git=git, experiment=experiment).lines:
            typer.echo(line)

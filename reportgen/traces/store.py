"""Summarise a run folder's profiler outputs into `traces.parquet` (the I/O edge of the package).

Finds the files by Relax's layout under `<run>/traces/<tb_experiment_name>/`:

    train_trace/{target}_rank{g}_dp{d}_tp{t}_pp{p}.{ts}.pt.trace.json.gz   torch.profiler
    sglang_trace/[rollout_<id>/]engine{i}-{ts}-TP-{r}.trace.json.gz         SGLang engines
    memory_snapshot/memory_snapshot_time{t}_rank{g}_..._<suffix>.pickle      CUDA memory snapshots

Everything is read before anything is written; the table is written atomically. A file that
cannot be read, or a snapshot pickle that asks to run code, stops the summary with one line
naming the file (UserError), and nothing is written.
"""

from __future__ import annotations

import re
from pathlib import Path

from reportgen.errors import UserError
from reportgen.store.layout import TRACES
from reportgen.traces import model, snapshot

_RANK = re.compile(r"_rank(\d+)_")
_ENGINE = re.compile(r"engine(\d+)-.*-TP-(\d+)")


def find_files(run_dir: Path) -> list[tuple[str, Path]]:
    """(source, path) of every trace and snapshot under the run's traces/ folder, sorted."""
    root = Path(run_dir) / TRACES
    if not root.is_dir():
        return []
    out: list[tuple[str, Path]] = []
    for p in sorted(root.rglob("*")):
        if not p.is_file():
            continue
        parts = set(p.relative_to(root).parts[:-1])
        name = p.name
        if name.endswith((".trace.json.gz", ".trace.json")):
            out.append(("sglang" if "sglang_trace" in parts or _ENGINE.search(name) else "train", p))
        elif name.endswith(".pickle") and ("memory_snapshot" in parts or "snapshot" in name):
            out.append(("memory", p))
    return out


def summarize(run_dir: Path) -> list[model.TraceRow] | None:
    """Rows for every profiler output of the run; None when it has none."""
    run_dir = Path(run_dir)
    files = find_files(run_dir)
    if not files:
        return None
    # Imported here: the runner imports this module, and a machine without msgspec (a GPU image
    # without the carried wheels) must still run; its summary then fails with a warning.
    from reportgen.traces.breakdown import summarize_trace
    from reportgen.traces.chrome import TraceError

    rows: list[model.TraceRow] = []
    for source, path in files:
        rel = str(path.relative_to(run_dir))
        m = _RANK.search(path.name)
        rank = int(m.group(1)) if m else 0
        if source == "memory":
            try:
                data = snapshot.load(path)
            except snapshot.UnsafePickle as exc:
                raise UserError(
                    f"{path}: refused: this memory snapshot asks to call {exc} when loaded; a snapshot holds only "
                    "builtin containers and numbers, so it was not loaded and nothing was written"
                ) from None
            except Exception as exc:  # truncated or foreign pickles raise assorted types
                raise UserError(f"{path}: not a readable memory snapshot ({type(exc).__name__}: {exc})") from None
            try:
                rows += snapshot.summarize(data, file=rel, rank=rank)
            except snapshot.TooLarge as exc:
                raise UserError(f"{path}: refused: {exc}, far beyond any snapshot torch writes") from None
            continue
        engine = -1
        if source == "sglang":
            e = _ENGINE.search(path.name)
            engine, rank = (int(e.group(1)), int(e.group(2))) if e else (0, rank)
        try:
            rows += summarize_trace(path, source=source, file=rel, rank=rank, engine=engine)
        except TraceError as exc:
            raise UserError(str(exc).splitlines()[0]) from None
    return rows


def summarize_run(run_dir: Path) -> Path | None:
    """Write `<run>/traces.parquet` from the run's profiler outputs; None when there are none."""
    rows = summarize(run_dir)
    if rows is None:
        return None
    return model.write(run_dir, rows)


def summarize_run_noting(run_dir: Path) -> list[str]:
    """`summarize_run` for the runner: a problem becomes a warning line, never a failed run."""
    try:
        summarize_run(run_dir)
    except UserError as exc:
        return [f"traces: {exc}"]
    except Exception as exc:  # a summary must never cost the run it describes
        return [f"traces: summary failed ({type(exc).__name__}: {exc})"]
    return []

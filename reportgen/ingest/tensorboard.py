"""TensorBoard scalars of a run (ingest stage), read with tbparse.

Relax writes `SummaryWriter.add_scalar(key, value, step)` into `$TENSORBOARD_DIR` (the runner
points it at `<run>/tensorboard/`), or into `tensorboard_log/<project>/<experiment>/`: event
files are found at any depth under the folder given. TensorBoard stores scalars as float32, so
its values differ from the console's float64 in the last digits (see metrics.py for the tolerance).
"""

from __future__ import annotations

import warnings
from pathlib import Path

import pandas as pd

COLUMNS = ["step", "key", "value"]


def has_events(event_dir: str | Path) -> bool:
    d = Path(event_dir)
    return d.is_dir() and any(p.is_file() for p in d.rglob("events.out.tfevents.*"))


def read_scalars(event_dir: str | Path) -> pd.DataFrame:
    """All scalars under `event_dir` as a frame [step (int64), key (str), value (float64)].

    When several event files hold the same (step, key), the last written (by wall time) wins.
    An absent or empty folder gives an empty frame."""
    if not has_events(event_dir):
        return empty()
    from tbparse import SummaryReader  # heavy import: only when there are events to read

    with warnings.catch_warnings():  # tbparse's own pandas deprecation notices are not ours to show
        warnings.simplefilter("ignore")
        df = SummaryReader(str(event_dir), extra_columns={"wall_time"}).scalars
    if df is None or df.empty:
        return empty()
    df = df.sort_values("wall_time", kind="stable")
    df = df.drop_duplicates(["step", "tag"], keep="last")
    out = pd.DataFrame(
        {
            "step": df["step"].astype("int64").to_numpy(),
            "key": df["tag"].astype(str).to_numpy(),
            "value": df["value"].astype("float64").to_numpy(),
        }
    )
    return out.sort_values(["step", "key"], kind="stable").reset_index(drop=True)


def empty() -> pd.DataFrame:
    return pd.DataFrame(
        {"step": pd.Series([], dtype="int64"), "key": pd.Series([], dtype=str), "value": pd.Series([], dtype="float64")}
    )

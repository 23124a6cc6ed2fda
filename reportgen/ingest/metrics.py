"""Metrics store: long-form `metrics.parquet` per run, merging console and TensorBoard.

Pipeline position: ingest -> **store** -> analysis. The long table keeps every source's value
(`step`, `key`, `value`, `source`); the store's `wide_table` (store.run) picks one value per
(step, key) by the declared source priority for its readers. Two sources that disagree are
listed, never silently merged.

Equal means: both NaN, the same infinity, or relatively within `REL_TOL` (TensorBoard keeps
float32, the console prints float64: 31.2 comes back as 31.200000762939453).
"""

from __future__ import annotations

import functools
import math
from array import array
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, cast

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from reportgen.ingest.console import Record, flatten
from reportgen.store import atomic
from reportgen.store.layout import METRICS
from reportgen.store.run import SOURCE_PRIORITY, empty_metrics, source_rank

REL_TOL = 1e-6
_FLOAT = {float}
MAX_REPLACED = 1000  # replaced values listed in events.json (all are counted)
ATTEMPT_BITS = 16  # a record's tag: stream number << ATTEMPT_BITS | attempt number (1-based)


def attempt_tag(stream: int, attempt: int) -> int:
    """The tag `ConsoleMetrics.set_tag` takes: which stream and which of its attempts (lifecycle)."""
    return stream << ATTEMPT_BITS | attempt


class ConsoleMetrics:
    """Accumulates records as compact columns (a 10,000-step run has ~10^6 values)."""

    def __init__(self) -> None:
        # Steps run-length coded: record i's step `_run_steps[i]` repeats `_run_lens[i]` times
        # (one append per record instead of one per value; expanded by numpy when read).
        self._run_steps = array("q")
        self._run_lens = array("q")
        self._codes = array("i")
        self._values = array("d")
        self._keys: dict[str, int] = {}
        self._flat: dict[tuple, array] = {}
        # (record ordinal, tag) where the records' attempt changes: few, so no per-record cost.
        self._tags: list[tuple[int, int]] = []
        self.replaced: list[dict[str, Any]] = []  # the first MAX_REPLACED values a later attempt replaced
        self.replaced_total = 0
        self.replaced_by: dict[int, int] = {}  # tag -> how many of its values a later attempt replaced

    def set_tag(self, tag: int) -> None:
        """The records added from now on belong to `tag` (`attempt_tag`): of one stream, a later
        attempt's values at a step replace every earlier attempt's there (`long_rows`)."""
        if not self._tags or self._tags[-1][1] != tag:
            self._tags.append((len(self._run_steps), tag))

    def add(self, rec: Record) -> None:
        values = rec.values
        vals = values.values()
        if not _FLOAT.issuperset(map(type, vals)):
            self._add_slow(rec)
            return
        sig = (rec.kind, tuple(values))
        codes = self._flat.get(sig)
        if codes is None:
            # A flat dict of floats (almost every record): its key layout is coded once, then
            # each record with that layout costs two array extends and two appends.
            codes = self._flat[sig] = array("i", [self._code(k) for k, _ in flatten(values, rec.kind)])
        self._run_steps.append(rec.index)
        self._run_lens.append(len(codes))
        self._codes.extend(codes)
        self._values.extend(vals)

    def _code(self, key: str) -> int:
        code = self._keys.get(key)
        if code is None:
            code = self._keys[key] = len(self._keys)
        return code

    def _add_slow(self, rec: Record) -> None:
        n = 0
        for key, value in flatten(rec.values, rec.kind):
            self._codes.append(self._code(key))
            self._values.append(value)
            n += 1
        self._run_steps.append(rec.index)
        self._run_lens.append(n)

    def _steps(self) -> np.ndarray:
        """The step of each value (int64), in log order."""
        if not len(self._run_steps):
            return np.zeros(0, np.int64)
        return np.repeat(np.frombuffer(self._run_steps, dtype=np.int64), np.frombuffer(self._run_lens, dtype=np.int64))

    def extend(self, records: Iterable[Record]) -> ConsoleMetrics:
        for rec in records:
            self.add(rec)
        return self

    def __len__(self) -> int:
        return len(self._values)

    def frame(self) -> pd.DataFrame:
        """Rows in log order (duplicates kept): [step, key, value]."""
        names = np.array(list(self._keys), dtype=object)
        codes = np.frombuffer(self._codes, dtype=np.int32) if len(self._codes) else np.zeros(0, np.int32)
        return pd.DataFrame(
            {
                "step": self._steps(),
                "key": names[codes] if len(names) else np.array([], dtype=object),
                "value": np.frombuffer(self._values, dtype=np.float64).copy() if len(self._values) else np.zeros(0),
            }
        )

    def _value_tags(self) -> np.ndarray | None:
        """The tag of each value, or None when no stream has more than one attempt (the common
        case: nothing is replaced, nothing to compute)."""
        if not any(tag & ((1 << ATTEMPT_BITS) - 1) > 1 for _, tag in self._tags):
            return None
        n_rec = len(self._run_steps)
        rec_tags = np.zeros(n_rec, dtype=np.int64)
        for i, (at, tag) in enumerate(self._tags):
            stop = self._tags[i + 1][0] if i + 1 < len(self._tags) else n_rec
            rec_tags[at:stop] = tag
        return np.repeat(rec_tags, np.frombuffer(self._run_lens, dtype=np.int64))

    def _drop_replaced(
        self, steps: np.ndarray, codes: np.ndarray, values: np.ndarray, names: list[str]
    ) -> np.ndarray | None:
        """Which values to keep: of each stream and step, the latest attempt's only (a retried job,
        a restart re-running steps from a checkpoint). The others are counted as replaced and the
        first MAX_REPLACED listed with the value that stands now (null when the later attempt did
        not log that key at that step); None when nothing can be replaced."""
        tags = self._value_tags()
        if tags is None:
            return None
        streams, attempts = tags >> ATTEMPT_BITS, tags & ((1 << ATTEMPT_BITS) - 1)
        order = np.lexsort((steps, streams))
        s_att = attempts[order]
        new = np.ones(len(order), dtype=bool)
        new[1:] = (streams[order][1:] != streams[order][:-1]) | (steps[order][1:] != steps[order][:-1])
        latest = np.maximum.reduceat(s_att, np.flatnonzero(new))[np.cumsum(new) - 1]
        keep = np.empty(len(order), dtype=bool)
        keep[order] = s_att == latest
        dropped = np.flatnonzero(~keep)
        self.replaced_total = len(dropped)
        for tag, count in zip(*np.unique(tags[dropped], return_counts=True), strict=True):
            self.replaced_by[int(tag)] = int(count)
        if len(dropped):
            listed = dropped[:MAX_REPLACED]
            width = int(codes.max()) + 1
            kept_at = np.flatnonzero(keep)
            kept_keys = steps[kept_at] * width + codes[kept_at]
            wanted = np.isin(kept_keys, steps[listed] * width + codes[listed])
            now: dict[tuple[int, int], float] = {}
            for i in kept_at[wanted]:  # the value each listed (step, key) keeps: the last in log order
                now[(int(steps[i]), int(codes[i]))] = float(values[i])
            for i in listed:
                step, code = int(steps[i]), int(codes[i])
                self.replaced.append(
                    {
                        "step": step,
                        "key": names[code],
                        "value": _json_float(float(values[i])),
                        "attempt": int(attempts[i]),
                        "now": _json_float(now[(step, code)]) if (step, code) in now else None,
                    }
                )
        return keep

    def long_rows(self) -> tuple[_SortedRows, list[dict[str, Any]]]:
        """`merge_sources(self.frame(), None)` computed on the integer columns (no per-row
        Python objects): the last value of each (step, key) in log order, rows sorted by step
        then key, and the notes on repeated keys that changed value. When a stream holds several
        attempts, a step's values are its latest attempt's (`_drop_replaced`): the values replaced
        are no disagreement, they are counted in `replaced_total`."""
        n = len(self._values)
        if n == 0:
            return _SortedRows(np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0), np.zeros(0, np.int64), []), []
        names = list(self._keys)
        by_name = sorted(range(len(names)), key=names.__getitem__)
        rank = np.empty(len(names), dtype=np.int64)
        rank[by_name] = np.arange(len(names))
        steps = self._steps()
        values = np.frombuffer(self._values, dtype=np.float64)
        codes = np.frombuffer(self._codes, dtype=np.int32)
        kept = self._drop_replaced(steps, codes, values, names)
        if kept is not None and not kept.all():  # every (stream, step) keeps its latest attempt's values
            steps, values, codes = steps[kept], values[kept], codes[kept]
            n = len(values)
        ranks = rank[codes]
        order = np.lexsort((ranks, steps))  # stable: a (step, key)'s values stay in log order
        s_steps, s_ranks = steps[order], ranks[order]
        new_group = np.ones(n, dtype=bool)
        new_group[1:] = (s_steps[1:] != s_steps[:-1]) | (s_ranks[1:] != s_ranks[:-1])
        last = np.ones(n, dtype=bool)
        last[:-1] = new_group[1:]
        notes: list[dict[str, Any]] = []
        starts = np.flatnonzero(new_group)
        sizes = np.diff(np.append(starts, n))
        for g in np.flatnonzero(sizes > 1):
            a, b = int(starts[g]), int(starts[g] + sizes[g])
            v = values[order[a:b]]
            if not _same(v[:-1], np.full(len(v) - 1, v[-1])).all():
                notes.append(
                    {
                        "step": int(s_steps[a]),
                        "key": names[by_name[int(s_ranks[a])]],
                        "chosen": "console",
                        "values": {"console": [_json_float(float(x)) for x in v]},
                    }
                )
        keep = order[last]
        del order, s_steps, s_ranks, new_group, last
        return _SortedRows(steps, ranks, values, keep, [names[i] for i in by_name]), notes

    def long_table(self) -> tuple[pa.Table, list[dict[str, Any]]]:
        """`long_rows` as one Arrow table."""
        rows, notes = self.long_rows()
        return rows.table(), notes


class _SortedRows:
    """The console long table as index arrays into the accumulated columns; rows become Arrow
    (and key strings exist) only one row group at a time, so writing it adds bounded memory."""

    ROW_GROUP = 1 << 16

    def __init__(
        self, steps: np.ndarray, ranks: np.ndarray, values: np.ndarray, keep: np.ndarray, names: list[str]
    ) -> None:
        self._steps, self._ranks, self._values, self._keep = steps, ranks, values, keep
        self._names = pa.array(names, type=pa.large_string())
        self._source = pa.array(["console"], type=pa.large_string())
        self.num_rows = len(keep)

    def _batch(self, a: int, b: int) -> pa.RecordBatch:
        idx = self._keep[a:b]
        return pa.record_batch(
            {
                "step": pa.array(self._steps[idx]),
                "key": self._names.take(pa.array(self._ranks[idx])),
                "value": pa.array(self._values[idx]),
                "source": self._source.take(pa.array(np.zeros(b - a, dtype=np.int32))),
            },
            schema=_pandas_schema(),
        )

    def batches(self) -> Iterator[pa.RecordBatch]:
        for a in range(0, self.num_rows, self.ROW_GROUP):
            yield self._batch(a, min(a + self.ROW_GROUP, self.num_rows))

    def table(self) -> pa.Table:
        return pa.Table.from_batches(list(self.batches()), schema=_pandas_schema())

    def to_parquet(self, path: str | Path, index: bool = False) -> None:
        """Row group by row group; called by `atomic.write_parquet` like `DataFrame.to_parquet`."""
        with pq.ParquetWriter(path, _pandas_schema()) as writer:
            for batch in self.batches():
                writer.write_batch(batch)


@functools.cache
def _pandas_schema() -> pa.Schema:
    """The schema (with pandas metadata) that `write_metrics` gives a non-empty table."""
    one = pd.DataFrame({"step": [0], "key": ["k"], "value": [0.0], "source": ["console"]})
    return pa.Schema.from_pandas(_typed(one), preserve_index=False)


def console_frame(records: Iterable[Record]) -> pd.DataFrame:
    return ConsoleMetrics().extend(records).frame()


def _json_float(v: float) -> float | str:
    return v if math.isfinite(v) else repr(float(v))


def _same(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    both_nan = np.isnan(a) & np.isnan(b)
    with np.errstate(invalid="ignore"):
        close = (a == b) | (np.abs(a - b) <= REL_TOL * np.maximum(np.abs(a), np.abs(b)))
    return both_nan | np.nan_to_num(close, nan=False).astype(bool)


def _dedupe(df: pd.DataFrame, source: str) -> tuple[pd.DataFrame, list[dict[str, Any]]]:
    """Keep the last value of each (step, key) in one source; list those that changed value
    (e.g. the two `perf N` lines of a step both carrying a key, with different numbers)."""
    df = df[["step", "key", "value"]]
    dup = df.duplicated(["step", "key"], keep=False)
    out = df.drop_duplicates(["step", "key"], keep="last")
    notes: list[dict[str, Any]] = []
    if dup.any():
        grp = df[dup].groupby(["step", "key"], sort=True)["value"]
        for group, vals in grp:
            step, key = cast(tuple[int, str], group)
            v = vals.to_numpy(dtype=float)
            if not _same(v[:-1], np.full(len(v) - 1, v[-1])).all():
                notes.append(
                    {
                        "step": int(step),
                        "key": str(key),
                        "chosen": source,
                        "values": {source: [_json_float(x) for x in v]},
                    }
                )
    return out.assign(source=source), notes


def merge_sources(
    console_df: pd.DataFrame, tb_df: pd.DataFrame | None, priority: tuple[str, ...] = SOURCE_PRIORITY
) -> tuple[pd.DataFrame, list[dict[str, Any]]]:
    """Long table of both sources (each de-duplicated) and the list of disagreements.

    A disagreement is `{step, key, chosen, values: {source: value}}`; `chosen` is the source
    the priority picks (the same rule store.run's `wide_table` applies)."""
    frames, notes = [], []
    for name, df in (("console", console_df), ("tensorboard", tb_df)):
        if df is None or len(df) == 0:
            continue
        d, n = _dedupe(df, name)
        frames.append(d)
        notes.extend(n)
    if not frames:
        return empty_metrics(), notes
    long_df = pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0].reset_index(drop=True)
    long_df = _typed(long_df)
    if len(frames) == 2:
        j = frames[0].merge(frames[1], on=["step", "key"], suffixes=("_a", "_b"))
        if len(j):
            a, b = j["value_a"].to_numpy(float), j["value_b"].to_numpy(float)
            bad = j[~_same(a, b)]
            src_a, src_b = frames[0]["source"].iat[0], frames[1]["source"].iat[0]
            chosen = min((src_a, src_b), key=lambda s: source_rank(str(s), priority))
            for step, key, va, vb in zip(bad["step"], bad["key"], bad["value_a"], bad["value_b"], strict=False):
                notes.append(
                    {
                        "step": int(step),
                        "key": str(key),
                        "chosen": chosen,
                        "values": {src_a: _json_float(va), src_b: _json_float(vb)},
                    }
                )
    notes.sort(key=lambda n: (n["step"], n["key"]))
    return long_df.sort_values(["step", "key", "source"], kind="stable").reset_index(drop=True), notes


def _typed(df: pd.DataFrame) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "step": df["step"].astype("int64").to_numpy(),
            "key": df["key"].astype(str).to_numpy(),
            "value": df["value"].astype("float64").to_numpy(),
            "source": df["source"].astype(str).to_numpy(),
        }
    )


def write_metrics(run_dir: str | Path, long_df: pd.DataFrame) -> Path:
    """Write `<run_dir>/metrics.parquet` atomically."""
    df = _typed(long_df) if len(long_df) else empty_metrics()
    return atomic.write_parquet(Path(run_dir) / METRICS, df)


def write_metrics_table(run_dir: str | Path, rows: pa.Table | _SortedRows) -> Path:
    """Write `<run_dir>/metrics.parquet` atomically from `ConsoleMetrics.long_rows()` (or an Arrow
    table of the same schema)."""
    if rows.num_rows == 0:
        return write_metrics(run_dir, empty_metrics())
    if isinstance(rows, pa.Table):
        rows = _TableWriter(rows)
    return atomic.write_parquet(Path(run_dir) / METRICS, rows)


class _TableWriter:
    def __init__(self, table: pa.Table) -> None:
        self.table = table

    def to_parquet(self, path: str | Path, index: bool = False) -> None:
        pq.write_table(self.table, path)


def read_metrics(run_dir: str | Path) -> pd.DataFrame:
    """The long table of a run; an empty table if the run has no metrics.parquet."""
    path = Path(run_dir) / METRICS
    if not path.is_file():
        return empty_metrics()
    df = pd.read_parquet(path)
    return _typed(df) if len(df) else empty_metrics()

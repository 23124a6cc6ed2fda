"""One Chrome trace -> the rows of its time breakdown (per profiled step).

Gathering keeps only compact columns (arrays of ids and floats) of the events that matter,
batch by batch as `chrome.iter_batches` decodes them, so a trace is never held as objects.
Then, per step (`ProfilerStep#N` spans; the whole trace when there are none):

* view `gpu` (the trace has kernels): kernel time by category, memcpy time and bytes by
  direction, GPU idle = step wall time not covered by any kernel/copy/memset of the rank;
  a GPU event belongs to the step in which its launching runtime call ran (`correlation`).
* view `cpu` (no GPU events, e.g. the CPU demo): CPU operators' self time (time not spent in
  a nested operator) by category stands in for kernel time; there is no idle or memcpy row.
* both: host spans - optimizer step (union of `Optimizer.step#...` spans), data movement
  (union of copy/transfer/sync calls), Python overhead (main-thread time outside any operator
  or runtime call) - and the top operators by time.
"""

from __future__ import annotations

import dataclasses
import re
from array import array
from collections import defaultdict
from pathlib import Path

import numpy as np

from reportgen.traces import categories as cats
from reportgen.traces.chrome import TraceEvent, iter_batches
from reportgen.traces.model import WHOLE_TRACE, TraceRow

TOP_OPS = 25
_STEP = re.compile(r"^ProfilerStep#(\d+)$")
_GPU_CATS = {"kernel": 0, "gpu_memcpy": 1, "gpu_memset": 2}
_RUNTIME_CATS = {"cuda_runtime", "cuda_driver"}


@dataclasses.dataclass
class Gathered:
    """Compact columns of one trace's events (ids index `names` / `tids`)."""

    steps: list[tuple[int, float, float, int]] = dataclasses.field(default_factory=list)  # step, ts, end, tid
    optimizer: list[tuple[float, float]] = dataclasses.field(default_factory=list)
    cpu_name: array = dataclasses.field(default_factory=lambda: array("i"))
    cpu_tid: array = dataclasses.field(default_factory=lambda: array("i"))
    cpu_ts: array = dataclasses.field(default_factory=lambda: array("d"))
    cpu_dur: array = dataclasses.field(default_factory=lambda: array("d"))
    rt_name: array = dataclasses.field(default_factory=lambda: array("i"))
    rt_tid: array = dataclasses.field(default_factory=lambda: array("i"))
    rt_ts: array = dataclasses.field(default_factory=lambda: array("d"))
    rt_dur: array = dataclasses.field(default_factory=lambda: array("d"))
    rt_corr: array = dataclasses.field(default_factory=lambda: array("q"))
    gpu_name: array = dataclasses.field(default_factory=lambda: array("i"))
    gpu_kind: array = dataclasses.field(default_factory=lambda: array("b"))
    gpu_ts: array = dataclasses.field(default_factory=lambda: array("d"))
    gpu_dur: array = dataclasses.field(default_factory=lambda: array("d"))
    gpu_corr: array = dataclasses.field(default_factory=lambda: array("q"))
    gpu_bytes: array = dataclasses.field(default_factory=lambda: array("q"))
    t0: float = float("inf")
    t1: float = float("-inf")
    # name / (pid, tid) -> id, in order of first appearance (the id is the size before insertion)
    name_ids: dict[str, int] = dataclasses.field(default_factory=dict)
    tid_ids: dict[tuple[int | str, int | str], int] = dataclasses.field(default_factory=dict)

    @property
    def names(self) -> list[str]:
        return list(self.name_ids)

    def add(self, events: list[TraceEvent]) -> None:
        """Keep the columns of one batch (list comprehensions per category: this is the hot loop)."""
        xs = [e for e in events if e.ph == "X"]
        nid, tids = self.name_ids, self.tid_ids
        cpu = [e for e in xs if e.cat == "cpu_op"]
        self.cpu_name.extend([nid.setdefault(e.name, len(nid)) for e in cpu])
        self.cpu_tid.extend([tids.setdefault((e.pid, e.tid), len(tids)) for e in cpu])
        self.cpu_ts.extend([e.ts for e in cpu])
        self.cpu_dur.extend([e.dur for e in cpu])
        gpu = [e for e in xs if e.cat in _GPU_CATS]
        if gpu:
            self.gpu_name.extend([nid.setdefault(e.name, len(nid)) for e in gpu])
            self.gpu_kind.extend([_GPU_CATS[e.cat] for e in gpu])
            self.gpu_ts.extend([e.ts for e in gpu])
            self.gpu_dur.extend([e.dur for e in gpu])
            self.gpu_corr.extend([_corr(e) for e in gpu])
            self.gpu_bytes.extend([(e.args.bytes or 0) if e.args is not None else 0 for e in gpu])
        rt = [e for e in xs if e.cat in _RUNTIME_CATS]
        if rt:
            self.rt_name.extend([nid.setdefault(e.name, len(nid)) for e in rt])
            self.rt_tid.extend([tids.setdefault((e.pid, e.tid), len(tids)) for e in rt])
            self.rt_ts.extend([e.ts for e in rt])
            self.rt_dur.extend([e.dur for e in rt])
            self.rt_corr.extend([_corr(e) for e in rt])
        for e in xs:
            if e.cat != "user_annotation":
                continue
            m = _STEP.match(e.name)
            if m:
                self.steps.append((int(m.group(1)), e.ts, e.ts + e.dur, tids.setdefault((e.pid, e.tid), len(tids))))
            elif e.name.startswith(cats.OPTIMIZER_SPAN_PREFIX):
                self.optimizer.append((e.ts, e.ts + e.dur))
        for group in (cpu, gpu, rt):
            if group:
                self.t0 = min(self.t0, min(e.ts for e in group))
                self.t1 = max(self.t1, max(e.ts + e.dur for e in group))


def _corr(e: TraceEvent) -> int:
    a = e.args
    return a.correlation if a is not None and a.correlation is not None else -1


def gather(path: Path) -> Gathered:
    g = Gathered()
    for restart, batch in iter_batches(path):
        if restart:
            g = Gathered()
        g.add(batch)
    return g


def _union(starts: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Disjoint sorted intervals covering the given ones."""
    if len(starts) == 0:
        return starts, ends
    order = np.argsort(starts, kind="stable")
    s, e = starts[order], ends[order]
    run_end = np.maximum.accumulate(e)
    new = np.empty(len(s), dtype=bool)
    new[0] = True
    new[1:] = s[1:] > run_end[:-1]
    idx = np.flatnonzero(new)
    last = np.append(idx[1:] - 1, len(s) - 1)
    return s[idx], run_end[last]


def _covered(us: np.ndarray, ue: np.ndarray, a: float, b: float) -> float:
    """Length of [a, b] covered by disjoint sorted intervals (us, ue)."""
    if len(us) == 0 or b <= a:
        return 0.0
    lo = int(np.searchsorted(ue, a, side="right"))
    hi = int(np.searchsorted(us, b, side="left"))
    if hi <= lo:
        return 0.0
    s = np.clip(us[lo:hi], a, b)
    e = np.clip(ue[lo:hi], a, b)
    return float((e - s).sum())


def _self_times(g: Gathered) -> np.ndarray:
    """Each CPU operator's duration minus that of the operators nested in it (same thread)."""
    n = len(g.cpu_ts)
    ts = np.frombuffer(g.cpu_ts, dtype=np.float64)
    dur = np.frombuffer(g.cpu_dur, dtype=np.float64)
    tid = np.frombuffer(g.cpu_tid, dtype=np.int32)
    order = np.lexsort((-dur, ts, tid))
    # walk in (thread, start, longest first) order with plain lists: numpy scalar access is slow
    o_ts = ts[order].tolist()
    o_end = (ts + dur)[order].tolist()
    o_tid = tid[order].tolist()
    child_o = [0.0] * n
    stack: list[int] = []  # positions in the walk order
    cur = -1
    for k in range(n):
        if o_tid[k] != cur:
            stack, cur = [], o_tid[k]
        t, end = o_ts[k], o_end[k]
        while stack and o_end[stack[-1]] <= t:
            stack.pop()
        if stack:
            top_end = o_end[stack[-1]]
            child_o[stack[-1]] += (end if end <= top_end else top_end) - t
        stack.append(k)
    child = np.empty(n)
    child[order] = child_o
    return np.maximum(dur - child, 0.0)


@dataclasses.dataclass(frozen=True)
class Window:
    step: int
    start: float
    end: float


def _windows(g: Gathered) -> tuple[list[Window], int | None]:
    """Profiled steps (and the main thread: the one that records them)."""
    if g.steps:
        steps = sorted(g.steps, key=lambda s: s[1])
        return [Window(s, a, b) for s, a, b, _ in steps], steps[0][3]
    if g.t1 < g.t0:
        return [], None
    return [Window(WHOLE_TRACE, g.t0, g.t1)], None


def _main_tid(g: Gathered, given: int | None) -> int | None:
    if given is not None:
        return given
    if not len(g.cpu_tid):
        return None
    return int(np.bincount(np.frombuffer(g.cpu_tid, dtype=np.int32)).argmax())


def _interval_of(starts: np.ndarray, ends: np.ndarray, t: np.ndarray) -> np.ndarray:
    """For each time, the index of the last interval (sorted by start) that starts at or before it,
    if it has not ended by then; else -1."""
    if not len(starts):
        return np.full(len(t), -1)
    idx = np.searchsorted(starts, t, side="right") - 1
    ok = (idx >= 0) & (t <= ends[np.clip(idx, 0, len(ends) - 1)])
    return np.where(ok, idx, -1)


def breakdown(g: Gathered, *, source: str, file: str, rank: int, engine: int = -1) -> list[TraceRow]:
    """The rows of one trace's breakdown (see `reportgen.traces.model` for the vocabulary)."""
    windows, given_main = _windows(g)
    if not windows:
        return []
    view = "gpu" if len(g.gpu_ts) else "cpu"
    names = g.names
    win_s, win_e = np.asarray([w.start for w in windows]), np.asarray([w.end for w in windows])
    opt_s, opt_e = _union(
        np.asarray([a for a, _ in g.optimizer], dtype=np.float64), np.asarray([b for _, b in g.optimizer])
    )

    def in_optimizer(t: np.ndarray) -> np.ndarray:
        return _interval_of(opt_s, opt_e, t) >= 0

    base = TraceRow(
        source=source, file=file, rank=rank, engine=engine, step=WHOLE_TRACE, view=view, kind="", category=""
    )
    rows: list[TraceRow] = []
    # per step: category -> [time, count, bytes]; name -> [time, count, category]
    comp: list[dict[str, list[float]]] = [defaultdict(lambda: [0.0, 0, 0]) for _ in windows]
    tops: list[dict[int, list]] = [{} for _ in windows]

    def account(
        step: np.ndarray, name_ids: np.ndarray, time: np.ndarray, category: list[str], nbytes: np.ndarray
    ) -> None:
        for k, n, t, c, b in zip(
            step.tolist(), name_ids.tolist(), time.tolist(), category, nbytes.tolist(), strict=True
        ):
            if k < 0:
                continue
            slot = comp[k][c]
            slot[0] += t
            slot[1] += 1
            slot[2] += b
            top = tops[k].get(n)
            if top is None:
                tops[k][n] = [t, 1, c]
            else:
                top[0] += t
                top[1] += 1

    if view == "gpu":
        gts = np.frombuffer(g.gpu_ts, dtype=np.float64)
        gdur = np.frombuffer(g.gpu_dur, dtype=np.float64)
        gkind = np.frombuffer(g.gpu_kind, dtype=np.int8)
        gname = np.frombuffer(g.gpu_name, dtype=np.int32)
        # launch time of each GPU event: its runtime call's ts (by correlation), else its own
        launch = gts.copy()
        if len(g.rt_corr):
            rc = np.frombuffer(g.rt_corr, dtype=np.int64)
            rts = np.frombuffer(g.rt_ts, dtype=np.float64)
            order = np.argsort(rc)
            gc = np.frombuffer(g.gpu_corr, dtype=np.int64)
            pos = np.clip(np.searchsorted(rc[order], gc), 0, len(rc) - 1)
            hit = (rc[order][pos] == gc) & (gc >= 0)
            launch = np.where(hit, rts[order][pos], gts)
        step = _interval_of(win_s, win_e, launch)
        opt = in_optimizer(launch)
        by_kind = {
            0: [cats.kernel_category(n) for n in names],
            1: [cats.memcpy_direction(n) for n in names],
            2: [cats.OTHER] * len(names),
        }
        category = []
        for k, n, o in zip(gkind.tolist(), gname.tolist(), opt.tolist(), strict=True):
            c = by_kind[k][n]
            category.append(cats.OPTIMIZER if o and k != 1 and c != cats.COMMUNICATION else c)
        nbytes = np.where(gkind == 1, np.frombuffer(g.gpu_bytes, dtype=np.int64), 0)  # copies only, not memsets
        account(step, gname, gdur, category, nbytes)
        busy_s, busy_e = _union(gts, gts + gdur)
    else:
        selft = _self_times(g)
        cts = np.frombuffer(g.cpu_ts, dtype=np.float64)
        cname = np.frombuffer(g.cpu_name, dtype=np.int32)
        step = _interval_of(win_s, win_e, cts)
        opt = in_optimizer(cts)
        cat_of = {i: cats.cpu_category(n) for i, n in enumerate(names)}
        category = [
            cats.OPTIMIZER if o and cat_of[n] != cats.COMMUNICATION else cat_of[n]
            for n, o in zip(cname.tolist(), opt.tolist(), strict=True)
        ]
        account(step, cname, selft, category, np.zeros(len(cts), dtype=np.int64))

    # host spans
    main = _main_tid(g, given_main)
    mv_names = {i for i, n in enumerate(names) if cats.is_data_movement(n)}
    host_s = [np.frombuffer(g.cpu_ts, dtype=np.float64), np.frombuffer(g.rt_ts, dtype=np.float64)]
    host_e = [host_s[0] + np.frombuffer(g.cpu_dur, dtype=np.float64), host_s[1] + np.frombuffer(g.rt_dur)]
    host_n = [np.frombuffer(g.cpu_name, dtype=np.int32), np.frombuffer(g.rt_name, dtype=np.int32)]
    host_t = [np.frombuffer(g.cpu_tid, dtype=np.int32), np.frombuffer(g.rt_tid, dtype=np.int32)]
    mv = [np.isin(n, list(mv_names)) for n in host_n]
    mv_s, mv_e = _union(
        np.concatenate([s[m] for s, m in zip(host_s, mv, strict=True)]),
        np.concatenate([e[m] for e, m in zip(host_e, mv, strict=True)]),
    )
    on_main = [t == main for t in host_t]
    op_s, op_e = _union(
        np.concatenate([s[m] for s, m in zip(host_s, on_main, strict=True)]),
        np.concatenate([e[m] for e, m in zip(host_e, on_main, strict=True)]),
    )

    for k, w in enumerate(windows):
        wall = w.end - w.start
        at = dataclasses.replace(base, step=w.step)
        rows.append(dataclasses.replace(at, kind="wall", category="step", time_us=wall, count=1))
        for c in (*cats.COMPUTE_CATEGORIES, *(cats.MEMCPY_DIRECTIONS if view == "gpu" else ())):
            t, n, b = comp[k].get(c, (0.0, 0, 0))
            kind = "memcpy" if c in cats.MEMCPY_DIRECTIONS else "compute"
            rows.append(dataclasses.replace(at, kind=kind, category=c, time_us=float(t), count=int(n), bytes=int(b)))
        if view == "gpu":
            idle = wall - _covered(busy_s, busy_e, w.start, w.end)
            rows.append(dataclasses.replace(at, kind="idle", category="gpu_idle", time_us=max(idle, 0.0)))
        spans = {
            "optimizer_step": _covered(opt_s, opt_e, w.start, w.end),
            "data_movement": _covered(mv_s, mv_e, w.start, w.end),
            "python_overhead": max(wall - _covered(op_s, op_e, w.start, w.end), 0.0) if main is not None else 0.0,
        }
        for c, t in spans.items():
            rows.append(dataclasses.replace(at, kind="cpu_span", category=c, time_us=t))
        ranked = sorted(tops[k].items(), key=lambda kv: -kv[1][0])[:TOP_OPS]
        for n, (t, cnt, c) in ranked:
            rows.append(dataclasses.replace(at, kind="top_op", category=c, name=names[n], time_us=t, count=cnt))
    return rows


def summarize_trace(path: Path, *, source: str, file: str, rank: int, engine: int = -1) -> list[TraceRow]:
    """Read one Chrome trace and return its breakdown rows."""
    return breakdown(gather(path), source=source, file=file, rank=rank, engine=engine)

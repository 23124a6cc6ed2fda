"""Host load beside a run (execute+capture stage): CPU time spent outside the run's processes.

A speed comparison is only as good as the quiet of the machine it ran on: a CPU hog, another
campaign or a build beside a run slows it, and nothing in its own logs says so. The GPU sampler's
thread calls `HostLoad.sample` once a tick; each row says how many cores the whole machine kept
busy (`/proc/stat`), how many of them the run's own processes used, and the difference: load
that is not the run's (`cpu_other`). When that is high enough to matter, the heaviest outside
process is named.

Which processes are the run's: the process tree under `root_pid` (the runner, or the Ray node's
wrapper), every process whose environment carries this run's `REPORTGEN_RUN_DIR` (a Ray cluster
that the recipe started itself, whose daemons left the tree when they detached, passes it on to
its workers), and, when the run uses a live Ray cluster (`RAY_ADDRESS` set), Ray's own processes
and workers (a Relax run's actors are workers of the cluster, not children of the recipe).

Cost: reading every process's `stat` costs about 20-40 us a process (1.5-4 ms for 75-100 processes
on the 2-core machine), too much for every tick on a node with hundreds; so a tick reads
`/proc/stat` and the run's own processes only. The full table is read again every `rescan_s`, and
when load outside the run appears (new processes of the run are then found at once; if it is not
theirs, the read names its source), while it lasts at most every `BUSY_RESCAN_S`. A GPU process
not known yet is placed by a few reads up its parent chain. See docs/provenance.md for the figures.
Linux only: without `/proc/stat` the row is not written and the header says why.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from reportgen.store import atomic

HEADER_KIND = "reportgen.host"
SCHEMA_VERSION = 1
COLUMNS = ("t", "cpu_count", "cpu_busy", "cpu_run", "cpu_other", "top_other")
RAY_DAEMONS = (b"raylet", b"gcs_server")
RESCAN_S = 10.0
BUSY_RESCAN_S = 5.0  # while load outside the run lasts: a full read (to name it) at most this often
# Outside load (cores) from which a tick reads the whole process table to name its source.
NAME_FROM_CORES = 0.25
TOP_NAMED = 3  # outside processes named per full read, heaviest first


@dataclass
class _Proc:
    ppid: int
    start: int  # clock ticks after boot: tells a reused pid from the process before it
    cpu: int  # utime + stime + cutime + cstime, clock ticks: its own and its reaped children's
    comm: str
    own_cpu: int = 0  # utime + stime: its own alone


def _read(path: str, size: int = 4096) -> bytes | None:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        return os.read(fd, size)
    except OSError:
        return None
    finally:
        os.close(fd)


def parse_stat(data: bytes) -> _Proc | None:
    """One /proc/<pid>/stat line (the command name may hold spaces and parentheses)."""
    left, right = data.find(b"("), data.rfind(b")")
    if left < 0 or right < 0:
        return None
    fields = data[right + 2 :].split()
    try:
        return _Proc(
            ppid=int(fields[1]),
            start=int(fields[19]),
            cpu=int(fields[11]) + int(fields[12]) + int(fields[13]) + int(fields[14]),
            comm=data[left + 1 : right].decode("utf-8", "replace"),
            own_cpu=int(fields[11]) + int(fields[12]),
        )
    except (IndexError, ValueError):
        return None


def parse_cpu_line(line: bytes) -> tuple[int, int] | None:
    """(busy, total) clock ticks from /proc/stat's `cpu` line. Busy is all but idle and iowait;
    steal counts as busy: a hypervisor that takes the CPU is a disturbance too."""
    fields = line.split()
    if not fields or fields[0] != b"cpu":
        return None
    try:
        values = [int(v) for v in fields[1:9]]
    except ValueError:
        return None
    values += [0] * (8 - len(values))
    user, nice, system, idle, iowait, irq, softirq, steal = values
    busy = user + nice + system + irq + softirq + steal
    return busy, busy + idle + iowait


class HostLoad:
    """Per-tick CPU load of the machine, split into the run's and everything else's."""

    def __init__(
        self,
        *,
        root_pid: int,
        marker: str | None = None,
        ray: bool = False,
        proc: Path = Path("/proc"),
        rescan_s: float = RESCAN_S,
    ) -> None:
        self.root_pid = root_pid
        self.marker = f"REPORTGEN_RUN_DIR={marker}\0".encode() if marker else None
        self.ray = ray
        self.proc = str(proc)
        self.rescan_s = rescan_s
        self.clk_tck = os.sysconf("SC_CLK_TCK")
        self.cpu_count = os.cpu_count() or 1
        self._own: dict[int, _Proc] = {}  # the run's processes as last read
        self._table: dict[int, _Proc] = {}  # every process, as of the last full read
        self._table_t: float | None = None
        self._marked: dict[tuple[int, int], bool] = {}  # (pid, start) -> environment names this run
        self._busy: int | None = None
        self._t: float | None = None
        self._uptime: int | None = None
        self._busy_before = False  # the last tick saw load outside the run

    def available(self) -> tuple[bool, str | None]:
        data = _read(f"{self.proc}/stat", 256)
        if data is None or parse_cpu_line(data.split(b"\n", 1)[0]) is None:
            return False, f"{self.proc}/stat cannot be read: host load is sampled on Linux only"
        return True, None

    # -- the process table ----------------------------------------------------------------
    def _stat(self, pid: int) -> _Proc | None:
        data = _read(f"{self.proc}/{pid}/stat", 1024)
        return parse_stat(data) if data else None

    def _scan(self) -> dict[int, _Proc]:
        table = {}
        for entry in os.scandir(self.proc):
            if entry.name.isdigit():
                p = self._stat(int(entry.name))
                if p is not None:
                    table[int(entry.name)] = p
        return table

    def _has_marker(self, pid: int, p: _Proc) -> bool:
        key = (pid, p.start)
        if key not in self._marked:
            env = _read(f"{self.proc}/{pid}/environ", 1 << 20)
            self._marked[key] = bool(env and self.marker and (b"\0" + self.marker) in (b"\0" + env))
        return self._marked[key]

    def _own_in(self, table: Mapping[int, _Proc]) -> set[int]:
        """The run's processes in a full table: descendants of the roots (see the module docstring)."""
        roots = {self.root_pid}
        for pid, p in table.items():
            ray_daemon = self.ray and p.comm.encode() in RAY_DAEMONS
            if ray_daemon or (self.marker and self._has_marker(pid, p)):
                roots.add(pid)
        children: dict[int, list[int]] = {}
        for pid, p in table.items():
            children.setdefault(p.ppid, []).append(pid)
        own, todo = set(), [r for r in roots if r in table]
        while todo:
            pid = todo.pop()
            if pid not in own:
                own.add(pid)
                todo.extend(children.get(pid, ()))
        return own

    # -- one tick ---------------------------------------------------------------------------
    def sample(self, t: float, gpu_pids: Iterable[int] = ()) -> dict[str, Any] | None:
        """One row (None on the first tick: load is a difference between two ticks). `gpu_pids` are
        the processes NVML saw on the GPUs: one the run does not know yet forces a full read."""
        data = _read(f"{self.proc}/stat", 512)
        cpu = parse_cpu_line(data.split(b"\n", 1)[0]) if data else None
        if cpu is None:
            return None
        busy, uptime = cpu[0], self._uptime_ticks()
        prev_own, prev_busy, prev_t, since = self._own, self._busy, self._t, self._uptime
        own = {pid: p for pid in prev_own if (p := self._stat(pid)) is not None and p.start == prev_own[pid].start}
        for pid in gpu_pids:  # a GPU process of the run started since the last full read: adopt it now
            if pid not in own:
                self._adopt(pid, own)
        run_ticks = self._run_ticks(own, prev_own, since)
        other = None if prev_busy is None or prev_t is None else (busy - prev_busy - run_ticks) / self._span(t, prev_t)
        top = None
        high = other is not None and other >= NAME_FROM_CORES
        # A full read when the table is old, or load outside the run appears (it may be new processes
        # of the run's; if not, the read names the source); while it lasts, every BUSY_RESCAN_S.
        stale = self._table_t is None or t - self._table_t >= self.rescan_s
        if stale or (high and (not self._busy_before or t - (self._table_t or 0.0) >= BUSY_RESCAN_S)):
            previous_table, previous_t = self._table, self._table_t
            self._table, self._table_t = self._scan(), t
            own = {pid: self._table[pid] for pid in self._own_in(self._table)}
            run_ticks = self._run_ticks(own, prev_own, since)
            if prev_busy is not None and prev_t is not None:
                other = (busy - prev_busy - run_ticks) / self._span(t, prev_t)
                if other >= NAME_FROM_CORES:
                    top = self._top_other(own, previous_table, previous_t, t, uptime)
        self._own, self._busy, self._t, self._uptime = own, busy, t, uptime
        self._busy_before = other is not None and other >= NAME_FROM_CORES
        if prev_busy is None or prev_t is None or other is None:
            return None
        span = self._span(t, prev_t)
        return {
            "t": t,
            "cpu_count": self.cpu_count,
            "cpu_busy": round((busy - prev_busy) / span, 4),
            "cpu_run": round(run_ticks / span, 4),
            "cpu_other": round(max(0.0, other), 4),
            "top_other": top,
        }

    def _adopt(self, pid: int, own: dict[int, _Proc]) -> bool:
        """Whether `pid` (not known as the run's) is: one of its ancestors is, or it carries the
        run's folder, or (on a Ray cluster the run uses) it descends from a Ray daemon. A few
        reads up its parent chain instead of the whole table."""
        chain: list[tuple[int, _Proc]] = []
        at = pid
        for _ in range(64):
            p = self._stat(at)
            if p is None:
                return False
            chain.append((at, p))
            if at in own or at == self.root_pid or (self.ray and p.comm.encode() in RAY_DAEMONS):
                break
            if self.marker and self._has_marker(at, p):
                break
            if p.ppid <= 1:
                return False
            at = p.ppid
        else:
            return False
        own.update(chain)
        return True

    def owns(self, pid: int) -> bool | None:
        """Whether `pid` is the run's; None when this machine's /proc does not show it (another pid namespace)."""
        if pid in self._own:
            return True
        return False if pid in self._table or os.path.exists(f"{self.proc}/{pid}") else None

    def describe(self, pid: int) -> str:
        p = self._table.get(pid) or self._stat(pid)
        return f"pid {pid} {p.comm}" if p is not None else f"pid {pid} (not visible here)"

    def _span(self, t: float, prev_t: float) -> float:
        return max(1e-6, t - prev_t) * self.clk_tck

    def _run_ticks(self, own: Mapping[int, _Proc], prev_own: Mapping[int, _Proc], since: int | None) -> int:
        """CPU ticks the run's processes used since the last tick: a process known then counts its
        increase, one started since (`since`: the uptime then, in clock ticks) counts all of it; a
        child reaped meanwhile is in its parent's count."""
        total = 0
        for pid, p in own.items():
            before = prev_own.get(pid)
            if before is not None and before.start == p.start:
                total += max(0, p.cpu - before.cpu)
            elif since is not None and p.start >= since:
                total += p.cpu
        for pid, before in prev_own.items():
            # Gone since, reaped by a parent of the run's: its whole time has just moved into that
            # parent's children's time, counted above; what was counted of it before is not again.
            if pid not in own and before.ppid in own:
                total -= before.cpu
        return max(0, total)

    def _uptime_ticks(self) -> int | None:
        """Clock ticks since boot now: how /proc dates a process's start."""
        data = _read(f"{self.proc}/uptime", 128)
        try:
            return int(float(data.split()[0]) * self.clk_tck) if data else None
        except (IndexError, ValueError):
            return None

    def _top_other(
        self,
        own: Mapping[int, _Proc],
        before: Mapping[int, _Proc],
        before_t: float | None,
        t: float,
        uptime: int | None,
    ) -> str:
        """ "pid 4242 stress 1.00 cores, cc1plus x12 5.30 cores": the heaviest processes outside the run
        since the full read before, those of one command summed (TOP_NAMED at most); one started since
        counts its whole CPU time over its own age, so a new hog is named at once."""
        if before_t is None or t <= before_t:
            return "not named yet"
        rates: list[tuple[float, int]] = []
        for pid, p in self._table.items():
            if pid in own:
                continue
            old = before.get(pid)
            if old is not None and old.start == p.start:
                cores = (p.own_cpu - old.own_cpu) / ((t - before_t) * self.clk_tck)
            elif uptime is not None and uptime > p.start:
                cores = p.own_cpu / (uptime - p.start)  # started since: its CPU over its own age
            else:
                continue
            if cores >= 0.05:
                rates.append((cores, pid))
        if not rates:
            return "not visible here (another container, or short-lived processes)"
        # Processes of one command together (a build's compilers, a pool of workers): their sum decides.
        groups: dict[str, list[tuple[float, int]]] = {}
        for cores, pid in rates:
            groups.setdefault(self._table[pid].comm, []).append((cores, pid))
        ranked = sorted(groups.items(), key=lambda g: (-sum(c for c, _ in g[1]), g[0]))[:TOP_NAMED]
        return ", ".join(
            f"pid {members[0][1]} {comm} {members[0][0]:.2f} cores"
            if len(members) == 1
            else f"{comm} x{len(members)} {sum(c for c, _ in members):.2f} cores"
            for comm, members in ranked
        )


# -- the file ------------------------------------------------------------------------------------


def header(available: bool, reason: str | None, load: HostLoad | None, interval_s: float, t: float) -> dict[str, Any]:
    return {
        "kind": HEADER_KIND,
        "schema_version": SCHEMA_VERSION,
        "available": available,
        "reason": reason,
        "interval_s": interval_s,
        "t": t,
        "cpu_count": load.cpu_count if load else None,
        "root_pid": load.root_pid if load else None,
        "ray": load.ray if load else None,
    }


def read_records(jsonl_path: Path) -> Iterator[dict[str, Any]]:
    """The JSON objects of a sampler's .jsonl (host.jsonl, gpu.jsonl), headers included, in file
    order; torn or malformed lines (a crash mid-write) are skipped, a missing file gives none."""
    path = Path(jsonl_path)
    if not path.exists():
        return
    with open(path, encoding="utf-8", errors="replace") as fh:
        for line in fh:
            try:
                rec = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(rec, dict):
                yield rec


def read_rows(jsonl_path: Path) -> list[dict[str, Any]]:
    """The samples of a host.jsonl; torn lines (a crash mid-write) are skipped."""
    return [rec for rec in read_records(jsonl_path) if rec.get("kind") != HEADER_KIND and "t" in rec]


def compact_host(jsonl_path: Path, parquet_path: Path) -> int | None:
    """host.jsonl -> host.parquet (columns exactly COLUMNS); None when no host.jsonl was written."""
    import pandas as pd

    if not Path(jsonl_path).exists():
        return None
    rows = read_rows(jsonl_path)
    frame = pd.DataFrame(
        {
            "t": pd.Series([r.get("t") for r in rows], dtype="float64"),
            "cpu_count": pd.Series([r.get("cpu_count") for r in rows], dtype="Int64"),
            **{c: pd.Series([r.get(c) for r in rows], dtype="float64") for c in ("cpu_busy", "cpu_run", "cpu_other")},
            "top_other": pd.Series([r.get("top_other") for r in rows], dtype="string"),
        }
    )
    atomic.write_parquet(Path(parquet_path), frame)
    return len(frame)

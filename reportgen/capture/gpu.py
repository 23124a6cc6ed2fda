"""GPU sampler (execute+capture stage): 1 Hz NVML samples of every GPU into gpu.jsonl.

A daemon *thread* in the runner process, not a helper process: recipes such as Relax's
local.sh run ``pkill -9 python``, which would take a sampler process with them. Each tick
appends one JSON line per GPU and flushes, so a killed runner loses at most the tick in
flight; the file is fsynced every few seconds against a machine crash. Ticks sit on a
monotonic grid (start + k * interval), so they do not drift with the cost of a tick, and a
slow tick skips grid points instead of bunching up.

The first line of every sampler session is a header ``{"kind": "reportgen.gpu", ...}`` that
records availability, the GPU list and which GPUs CUDA_VISIBLE_DEVICES exposes. Without NVML
(no GPU, no driver, no nvidia-ml-py) the header says so once and no samples follow.

Each GPU row also says whether something else had the GPU: its clock-event (throttle) reasons,
and the processes on it that are not the run's (`other_procs`, their memory and names), told
apart with the host sampler's view of the run's processes (reportgen.capture.host). With a
`host_jsonl`, the same tick writes one row of host CPU load there (host.jsonl), so a machine
without a GPU still records what else ran.

`compact` turns gpu.jsonl into gpu.parquet once the run is over (see docs/formats/runs.md).
"""

from __future__ import annotations

import json
import math
import os
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from reportgen.capture import host as hostload
from reportgen.capture.nvml import NvmlReader, nvml_available
from reportgen.store import atomic

__all__ = ["COLUMNS", "GpuSampler", "GpuStatus", "compact", "nvml_available", "read_samples", "visible_filter"]

HEADER_KIND = "reportgen.gpu"
SCHEMA_VERSION = 1
COLUMNS = (
    "t",
    "index",
    "uuid",
    "name",
    "util_gpu",
    "util_mem",
    "mem_used_mib",
    "mem_total_mib",
    "power_w",
    "sm_clock_mhz",
    "temp_c",
    "throttle",  # NVML clock-event reasons, a bitmask (docs/formats/runs.md)
    "other_procs",  # processes on this GPU that are not the run's; null: not known
    "other_mem_mib",
    "other_desc",  # "pid 4242 python 1024 MiB, ...": who they are
)
_FLOAT_COLUMNS = COLUMNS[4:11]

_OTHER_COLUMNS = ("other_procs", "other_mem_mib", "other_desc")

Reader = Callable[[], list[dict[str, Any]]]


@dataclass(frozen=True)
class GpuStatus:
    """What a sampler session did; `to_dict()` goes into the run's manifest as "gpu"."""

    available: bool
    reason: str | None
    gpus: list = field(default_factory=list)
    samples: int = 0  # rows written: one per GPU per tick
    ticks: int = 0
    errors: int = 0  # ticks whose read failed (the sampler carried on)
    last_error: str | None = None
    cpu_s: float = 0.0  # CPU time of the sampler thread (its own cost)
    wall_s: float = 0.0
    host_available: bool = False  # host load rows written to host.jsonl
    host_reason: str | None = None
    host_samples: int = 0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def visible_filter(cuda_visible_devices: str | None) -> Callable[[int, str], bool]:
    """Predicate (index, uuid) -> visible, following CUDA_VISIBLE_DEVICES' rules.

    NVML ignores the variable and reports every GPU, so the sampler records all of them and
    flags the ones the workload can see. Unset: all. Entries are indices or (prefixes of)
    UUIDs; as in CUDA, parsing stops at the first entry that is neither (e.g. "-1" hides all).
    """
    if cuda_visible_devices is None:
        return lambda index, uuid: True
    indices: set[int] = set()
    uuids: list[str] = []
    for entry in (e.strip() for e in cuda_visible_devices.split(",")):
        if entry.isdigit():
            indices.add(int(entry))
        elif entry.startswith(("GPU-", "MIG-")):
            uuids.append(entry)
        else:
            break
    return lambda index, uuid: index in indices or any(uuid.startswith(u) for u in uuids)


class GpuSampler:
    """Samples every GPU each `interval_s` seconds into `jsonl_path` from a daemon thread.

    `reader` is the seam to the hardware: a callable returning one dict per GPU with the keys
    of COLUMNS except "t". Left as None, the sampler uses NVML when it is available.
    """

    def __init__(
        self,
        jsonl_path: Path,
        *,
        interval_s: float = 1.0,
        clock: Callable[[], float] = time.time,
        reader: Reader | None = None,
        env: Mapping[str, str] | None = None,
        fsync_every_s: float = 5.0,
        host_jsonl: Path | None = None,
        host: hostload.HostLoad | None = None,
        root_pid: int | None = None,
    ) -> None:
        if interval_s <= 0:
            raise ValueError("interval_s must be positive")
        self.jsonl_path = Path(jsonl_path)
        self.interval_s = float(interval_s)
        self._clock = clock
        self._reader = reader
        env = os.environ if env is None else env
        self._visible = visible_filter(env.get("CUDA_VISIBLE_DEVICES"))
        # The run's processes: this process's tree, those carrying the run's folder in their
        # environment, and a live Ray cluster's when the run uses one (reportgen.capture.host).
        self.host_jsonl = Path(host_jsonl) if host_jsonl is not None else None
        self._host = host
        if self._host is None and self.host_jsonl is not None:
            self._host = hostload.HostLoad(
                root_pid=root_pid or os.getpid(), marker=env.get("REPORTGEN_RUN_DIR"), ray=bool(env.get("RAY_ADDRESS"))
            )
        self._host_fh: Any = None
        self._gpu_on = False
        self._host_on = False
        self._host_reason: str | None = "not started"
        self._host_samples = 0
        self._fsync_every_s = fsync_every_s
        self._stop = threading.Event()
        self._first_tick = threading.Event()
        self._thread: threading.Thread | None = None
        self._fh: Any = None
        self._available = False
        self._reason: str | None = "not started"
        self._gpus: list[dict[str, Any]] = []
        self._samples = self._ticks = self._errors = 0
        self._last_error: str | None = None
        self._cpu_s = 0.0
        self._t_start = self._t_end = 0.0

    # -- public ---------------------------------------------------------------------------
    def start(self) -> GpuSampler:
        if self._thread is not None:
            raise RuntimeError("GpuSampler already started")
        self.jsonl_path.parent.mkdir(parents=True, exist_ok=True)
        self._fh = open(self.jsonl_path, "a", encoding="utf-8")  # noqa: SIM115 (open until stop())
        self._t_start = time.monotonic()
        self._gpu_on = True
        if self._reader is None:
            ok, reason = nvml_available()
            if ok:
                try:
                    self._reader = NvmlReader()
                except Exception as exc:  # a driver that answers the probe but not the reader
                    ok, reason = False, f"NVML reader failed: {type(exc).__name__}: {exc}"
            if not ok:
                self._gpu_on, self._reason = False, reason
                self._write_header()
                self._close_file()
        if self.host_jsonl is not None and self._host is not None:
            self._host_fh = open(self.host_jsonl, "a", encoding="utf-8")  # noqa: SIM115 (open until stop())
            self._host_on, self._host_reason = self._host.available()
            if not self._host_on:
                self._write_host_header()
                self._close_host_file()
        if not (self._gpu_on or self._host_on):
            self._t_end = time.monotonic()
            return self
        self._thread = threading.Thread(target=self._run, name="reportgen-gpu-sampler", daemon=True)
        self._thread.start()
        # Wait for the first tick so a crash right after start() still leaves one sample.
        self._first_tick.wait(timeout=max(10.0, 2 * self.interval_s))
        return self

    def stop(self) -> GpuStatus:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=max(10.0, 3 * self.interval_s))
        if not self._t_end:
            self._t_end = time.monotonic()
        return self.status

    @property
    def status(self) -> GpuStatus:
        return GpuStatus(
            available=self._available,
            reason=self._reason,
            gpus=[dict(g) for g in self._gpus],
            samples=self._samples,
            ticks=self._ticks,
            errors=self._errors,
            last_error=self._last_error,
            cpu_s=self._cpu_s,
            wall_s=(self._t_end or time.monotonic()) - self._t_start if self._t_start else 0.0,
            host_available=self._host_on,
            host_reason=self._host_reason,
            host_samples=self._host_samples,
        )

    def __enter__(self) -> GpuSampler:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- thread ---------------------------------------------------------------------------
    def _run(self) -> None:
        try:
            rows: list[dict[str, Any]] = []
            if self._gpu_on:
                try:
                    rows = self._read()
                except Exception as exc:
                    self._gpu_on, self._reason = False, f"first GPU read failed: {type(exc).__name__}: {exc}"
                    self._write_header()
                    self._close_file()
            if self._gpu_on:
                self._available, self._reason = True, None
                self._gpus = [
                    {
                        "index": r["index"],
                        "uuid": r["uuid"],
                        "name": r["name"],
                        "mem_total_mib": r.get("mem_total_mib"),
                        "visible": self._visible(r["index"], r["uuid"]),
                    }
                    for r in rows
                ]
                self._write_header()
            if self._host_on:
                self._write_host_header()
            self._write_tick(rows)
            self._first_tick.set()
            self._loop()
        finally:
            self._first_tick.set()
            self._close_file()
            self._close_host_file()
            close = getattr(self._reader, "close", None)
            if callable(close):  # NVML's init is counted: shut down once, here
                close()
            self._cpu_s = time.thread_time()  # this thread's CPU since it began
            self._t_end = time.monotonic()

    def _loop(self) -> None:
        interval = self.interval_s
        next_t = self._t_start + interval
        last_sync = time.monotonic()
        while True:
            delay = next_t - time.monotonic()
            if delay > 0 and self._stop.wait(delay):
                return
            if self._stop.is_set():
                return
            try:
                self._write_tick(self._read() if self._gpu_on else [])
            except Exception as exc:  # a GPU fell off the bus, NVML hiccup: count it, carry on
                self._errors += 1
                self._last_error = f"{type(exc).__name__}: {exc}"
            now = time.monotonic()
            next_t += interval
            if next_t <= now:  # overran: skip the missed grid points rather than bunch up
                next_t += math.ceil((now - next_t) / interval + 1e-9) * interval
            if now - last_sync >= self._fsync_every_s:
                for fh in (self._fh, self._host_fh):
                    if fh is not None:
                        os.fsync(fh.fileno())
                last_sync = now

    def _read(self) -> list[dict[str, Any]]:
        assert self._reader is not None
        return self._reader()

    def _write_tick(self, rows: list[dict[str, Any]]) -> None:
        t = self._clock()
        procs = [r.get("procs") for r in rows]
        host_row = None
        if self._host_on and self._host is not None:
            pids = {pid for listed in procs if listed for pid, _ in listed}
            host_row = self._host.sample(t, pids)
        host = self._host if self._host_on else None
        # NVML and this /proc see the same processes when one of the run's is among those listed.
        same_view = host is not None and any(host.owns(pid) for listed in procs if listed for pid, _ in listed)
        lines = []
        for r, listed in zip(rows, procs, strict=True):
            rec: dict[str, Any] = {"t": t}
            rec.update((c, r.get(c)) for c in COLUMNS[1:] if c not in _OTHER_COLUMNS)
            rec.update(self._others(listed, same_view))
            lines.append(json.dumps(rec, separators=(",", ":")))
        if self._fh is not None:
            if lines:
                self._fh.write("\n".join(lines) + "\n")
            self._fh.flush()  # a killed process loses only the tick in flight
        if host_row is not None and self._host_fh is not None:
            self._host_fh.write(json.dumps(host_row, separators=(",", ":")) + "\n")
            self._host_fh.flush()
            self._host_samples += 1
        self._ticks += 1
        self._samples += len(rows)

    def _others(self, listed: list[tuple[int, float | None]] | None, same_view: bool) -> dict[str, Any]:
        """The GPU's processes that are not the run's: count, memory, names. Unknown (null) without a
        process list, without the host view, or when a process listed is not visible here while none
        of the run's is listed on any GPU (NVML may then speak of another pid namespace: a container)."""
        host = self._host if self._host_on else None
        if listed is None or host is None:
            return dict.fromkeys(_OTHER_COLUMNS)
        owned = {pid: host.owns(pid) for pid, _ in listed}
        if any(v is None for v in owned.values()) and not same_view:
            return dict.fromkeys(_OTHER_COLUMNS)
        others = [(pid, mib) for pid, mib in listed if owned[pid] is not True]
        mem = [m for _, m in others if m is not None]
        desc = ", ".join(
            f"{host.describe(pid)}" + (f" {mib:.0f} MiB" if mib is not None else "") for pid, mib in others
        )
        return {
            "other_procs": len(others),
            "other_mem_mib": round(sum(mem), 1) if mem else (0.0 if not others else None),
            "other_desc": desc or None,
        }

    def _write_header(self) -> None:
        header = {
            "kind": HEADER_KIND,
            "schema_version": SCHEMA_VERSION,
            "available": self._available,
            "reason": self._reason,
            "interval_s": self.interval_s,
            "t": self._clock(),
            "gpus": self._gpus,
        }
        self._fh.write(json.dumps(header, separators=(",", ":")) + "\n")
        self._fh.flush()

    def _write_host_header(self) -> None:
        if self._host_fh is None:
            return
        head = hostload.header(self._host_on, self._host_reason, self._host, self.interval_s, self._clock())
        self._host_fh.write(json.dumps(head, separators=(",", ":")) + "\n")
        self._host_fh.flush()

    def _close_file(self) -> None:
        fh, self._fh = self._fh, None
        if fh is not None:
            try:
                fh.flush()
                os.fsync(fh.fileno())
            finally:
                fh.close()

    def _close_host_file(self) -> None:
        fh, self._host_fh = self._host_fh, None
        if fh is None:
            return
        try:
            fh.flush()
            os.fsync(fh.fileno())
        finally:
            fh.close()


def read_samples(jsonl_path: Path) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(headers, samples) of a gpu.jsonl; torn or malformed lines (a crash mid-write) are skipped."""
    headers: list[dict[str, Any]] = []
    samples: list[dict[str, Any]] = []
    for rec in hostload.read_records(jsonl_path):
        if rec.get("kind") == HEADER_KIND:
            headers.append(rec)
        elif "t" in rec and "index" in rec:
            samples.append(rec)
    return headers, samples


def compact(jsonl_path: Path, parquet_path: Path) -> int:
    """Write gpu.jsonl's samples to gpu.parquet (columns exactly COLUMNS); returns the row count."""
    import pandas as pd  # only the compaction step needs pandas, not the sampler thread

    _, samples = read_samples(jsonl_path)
    frame = pd.DataFrame(
        {
            "t": pd.Series([s.get("t") for s in samples], dtype="float64"),
            "index": pd.Series([s.get("index") for s in samples], dtype="int64"),
            "uuid": pd.Series([s.get("uuid") for s in samples], dtype="string"),
            "name": pd.Series([s.get("name") for s in samples], dtype="string"),
            **{c: pd.Series([s.get(c) for s in samples], dtype="float64") for c in _FLOAT_COLUMNS},
            "throttle": pd.Series([s.get("throttle") for s in samples], dtype="Int64"),
            "other_procs": pd.Series([s.get("other_procs") for s in samples], dtype="Int64"),
            "other_mem_mib": pd.Series([s.get("other_mem_mib") for s in samples], dtype="float64"),
            "other_desc": pd.Series([s.get("other_desc") for s in samples], dtype="string"),
        }
    )
    atomic.write_parquet(Path(parquet_path), frame)
    return len(frame)

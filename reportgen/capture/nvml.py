"""NVML access for capture (execute+capture stage): availability, static GPU facts, samples.

Everything here goes through `pynvml` (the nvidia-ml-py package). A machine without a GPU,
without the driver or without the package is a normal case, reported as ``(False, reason)``
and never raised. NVML's init is reference-counted, so each user pairs init with shutdown.
"""

from __future__ import annotations

import contextlib
from typing import Any

_MIB = 1024 * 1024


def _pynvml() -> Any:
    import pynvml  # nvidia-ml-py; imported late so a report-only install never loads it

    return pynvml


def nvml_available() -> tuple[bool, str | None]:
    """(True, None) when NVML initialises and sees at least one GPU, else (False, why)."""
    try:
        nv = _pynvml()
    except ImportError:
        return False, "nvidia-ml-py (pynvml) is not installed"
    try:
        nv.nvmlInit()
    except Exception as exc:  # NVMLError_LibraryNotFound, DriverNotLoaded, ...: "no GPU"
        return False, f"NVML unavailable: {type(exc).__name__}: {exc}"
    try:
        count = nv.nvmlDeviceGetCount()
    except Exception as exc:
        return False, f"NVML device count failed: {type(exc).__name__}: {exc}"
    finally:
        _shutdown(nv)
    if count == 0:
        return False, "NVML reports no GPU"
    return True, None


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _shutdown(nv: Any) -> None:
    with contextlib.suppress(Exception):
        nv.nvmlShutdown()


def _maybe(fn: Any, *args: Any) -> Any:
    """One NVML query; None when the device does not support it (MIG, some clocks, power)."""
    try:
        return fn(*args)
    except Exception:
        return None


def static_info() -> dict[str, Any] | None:
    """{driver, cuda, gpus: [{index, name, uuid, mem_total_mib}]} from NVML, or None without it."""
    ok, _ = nvml_available()
    if not ok:
        return None
    nv = _pynvml()
    nv.nvmlInit()
    try:
        cuda_int = _maybe(nv.nvmlSystemGetCudaDriverVersion_v2) or _maybe(nv.nvmlSystemGetCudaDriverVersion)
        cuda = f"{cuda_int // 1000}.{(cuda_int % 1000) // 10}" if cuda_int else None
        gpus = []
        for i in range(nv.nvmlDeviceGetCount()):
            h = nv.nvmlDeviceGetHandleByIndex(i)
            mem = _maybe(nv.nvmlDeviceGetMemoryInfo, h)
            gpus.append(
                {
                    "index": i,
                    "name": _text(nv.nvmlDeviceGetName(h)),
                    "uuid": _text(nv.nvmlDeviceGetUUID(h)),
                    "mem_total_mib": round(mem.total / _MIB) if mem is not None else None,
                }
            )
        return {"driver": _text(_maybe(nv.nvmlSystemGetDriverVersion) or "") or None, "cuda": cuda, "gpus": gpus}
    finally:
        _shutdown(nv)


class NvmlReader:
    """The sampler's reader on real GPUs: one call returns one dict per GPU.

    Holds NVML open between calls (init once, handles cached) so a 1 Hz tick costs only the
    queries themselves. Fields a device does not support come back as None.
    """

    def __init__(self) -> None:
        self._nv = _pynvml()
        self._nv.nvmlInit()
        nv = self._nv
        self._devices = []
        # Clock-event reasons (thermal, power, sync boost): the newer name, else the older one.
        self._reasons = (
            getattr(nv, "nvmlDeviceGetCurrentClocksEventReasons", None) or nv.nvmlDeviceGetCurrentClocksThrottleReasons
        )
        for i in range(nv.nvmlDeviceGetCount()):
            h = nv.nvmlDeviceGetHandleByIndex(i)
            self._devices.append((i, h, _text(nv.nvmlDeviceGetUUID(h)), _text(nv.nvmlDeviceGetName(h))))

    def __call__(self) -> list[dict[str, Any]]:
        nv = self._nv
        rows = []
        for index, h, uuid, name in self._devices:
            util = _maybe(nv.nvmlDeviceGetUtilizationRates, h)
            mem = _maybe(nv.nvmlDeviceGetMemoryInfo, h)
            power_mw = _maybe(nv.nvmlDeviceGetPowerUsage, h)
            rows.append(
                {
                    "index": index,
                    "uuid": uuid,
                    "name": name,
                    "util_gpu": util.gpu if util is not None else None,
                    "util_mem": util.memory if util is not None else None,
                    "mem_used_mib": mem.used / _MIB if mem is not None else None,
                    "mem_total_mib": mem.total / _MIB if mem is not None else None,
                    "power_w": power_mw / 1000.0 if power_mw is not None else None,
                    "sm_clock_mhz": _maybe(nv.nvmlDeviceGetClockInfo, h, nv.NVML_CLOCK_SM),
                    "temp_c": _maybe(nv.nvmlDeviceGetTemperature, h, nv.NVML_TEMPERATURE_GPU),
                    "throttle": _maybe(self._reasons, h),
                    "procs": self._processes(h),
                }
            )
        return rows

    def _processes(self, handle: Any) -> list[tuple[int, float | None]] | None:
        """(pid, MiB used) of every process on the device (compute and graphics); None when the
        device cannot list them. The sampler tells the run's processes from the others."""
        nv = self._nv
        found: dict[int, float | None] = {}
        listed = False
        for query in (nv.nvmlDeviceGetComputeRunningProcesses, nv.nvmlDeviceGetGraphicsRunningProcesses):
            procs = _maybe(query, handle)
            if procs is None:
                continue
            listed = True
            for p in procs:
                used = getattr(p, "usedGpuMemory", None)
                found[int(p.pid)] = used / _MIB if isinstance(used, int) else None
        return sorted(found.items()) if listed else None

    def close(self) -> None:
        _shutdown(self._nv)

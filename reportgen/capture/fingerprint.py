"""Machine fingerprint (execute+capture stage): which machine a campaign is pinned to.

`machine_fingerprint` gathers hardware and software facts; `fingerprint_id` hashes only the
fields that identify the machine and stay put between runs (hostname, CPU, memory in GiB,
GPUs, driver, image digest); `class_id` the same less the hostname and the GPUs' UUIDs: machines
that are interchangeable hardware (both in reportgen.store.machine_id, pure, so the analysis can
class a run's machine from its manifest). A campaign's blocks may come from several machines of one class;
each pair of runs is compared within one machine (one fingerprint id).

`$REPORTGEN_HOSTNAME` replaces the hostname the fingerprint records: the machine's identity only,
never its class. For containers that share a host (each its own identity) and for tests that play
two machines on one host; a real second machine differs by its hostname and GPU UUIDs anyway.
"""

from __future__ import annotations

import os
import platform
import shutil
import socket
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from reportgen.capture.nvml import static_info
from reportgen.store.machine_id import class_fields as class_fields
from reportgen.store.machine_id import class_id as class_id
from reportgen.store.machine_id import fingerprint_id as fingerprint_id
from reportgen.store.machine_id import identity_fields as identity_fields

# Environment variables that may carry the container image digest, first one set wins.
IMAGE_DIGEST_ENV = ("REPORTGEN_IMAGE_DIGEST", "CONTAINER_IMAGE_DIGEST", "IMAGE_DIGEST")
# The hostname a fingerprint records, when set (the machine's identity, not its class: module docstring).
HOSTNAME_ENV = "REPORTGEN_HOSTNAME"


def _cpu_model() -> str | None:
    try:
        for line in Path("/proc/cpuinfo").read_text(errors="replace").splitlines():
            if line.lower().startswith(("model name", "hardware", "cpu model")) and ":" in line:
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or None


def _mem_total_bytes() -> int | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return None


def _gpus_from_nvidia_smi() -> dict[str, Any] | None:
    """Fallback when NVML is not importable but the tool is on PATH."""
    exe = shutil.which("nvidia-smi")
    if exe is None:
        return None
    try:
        proc = subprocess.run(
            [exe, "--query-gpu=index,name,uuid,memory.total,driver_version", "--format=csv,noheader,nounits"],
            capture_output=True,
            text=True,
            timeout=30,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    if proc.returncode != 0:
        return None
    gpus, driver = [], None
    for line in proc.stdout.splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) != 5:
            continue
        index, name, uuid, mem, driver = parts
        gpus.append(
            {
                "index": int(index),
                "name": name,
                "uuid": uuid,
                "mem_total_mib": int(float(mem)) if mem.replace(".", "").isdigit() else None,
            }
        )
    return {"driver": driver, "cuda": None, "gpus": gpus}


def machine_fingerprint(env: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Hardware and software facts of this machine; GPU fields are null/empty without a GPU."""
    env = os.environ if env is None else env
    gpu = static_info() or _gpus_from_nvidia_smi() or {"driver": None, "cuda": None, "gpus": []}
    digest_var = next((name for name in IMAGE_DIGEST_ENV if env.get(name)), None)
    uname = platform.uname()
    return {
        "hostname": env.get(HOSTNAME_ENV) or socket.gethostname(),
        "os": uname.system,
        "kernel": uname.release,
        "arch": uname.machine,
        "cpu_model": _cpu_model(),
        "cpu_count": os.cpu_count(),
        "mem_total_bytes": _mem_total_bytes(),
        "gpus": gpu["gpus"],
        "driver": gpu["driver"],
        "cuda": gpu["cuda"],
        "image_digest": env.get(digest_var) if digest_var else None,
        "image_digest_env": digest_var,
        "python": {"version": platform.python_version(), "executable": sys.executable},
    }

"""What identifies a machine and its class, from its fingerprint (store stage; pure).

`fingerprint_id` hashes only the fields of a fingerprint (reportgen.capture.fingerprint) that
identify the machine and stay put between runs (hostname, CPU, memory in GiB, GPUs, driver,
image digest); `class_id` the same less the hostname and the GPUs' UUIDs: machines that are
interchangeable hardware. Here, low in the import graph, because the runner (pinning a campaign),
the analysis (each run's machine class in analysis.json) and the history (its series) all use them.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

_GIB = 1024**3


def identity_fields(fp: Mapping[str, Any]) -> dict[str, Any]:
    """The stable subset of a fingerprint that `fingerprint_id` hashes."""
    mem = fp.get("mem_total_bytes")
    return {
        "hostname": fp.get("hostname"),
        "cpu_model": fp.get("cpu_model"),
        "cpu_count": fp.get("cpu_count"),
        # Rounded: MemTotal moves by a few MiB between boots (kernel reservations).
        "mem_total_gib": round(mem / _GIB) if isinstance(mem, (int, float)) else None,
        "gpus": sorted(((g.get("uuid") or ""), (g.get("name") or "")) for g in fp.get("gpus") or []),
        "driver": fp.get("driver"),
        "image_digest": fp.get("image_digest"),
    }


def fingerprint_id(fp: Mapping[str, Any]) -> str:
    """SHA-256 (hex) of the canonical JSON of `identity_fields(fp)`."""
    canonical = json.dumps(identity_fields(fp), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def class_fields(fp: Mapping[str, Any]) -> dict[str, Any]:
    """What makes machines interchangeable hardware: the identity fields less the hostname, with
    GPUs by name only (no UUIDs)."""
    fields = identity_fields(fp)
    fields.pop("hostname")
    fields["gpus"] = sorted(name for _, name in fields["gpus"])
    return fields


def class_id(fp: Mapping[str, Any]) -> str:
    """SHA-256 of `class_fields(fp)`. Two nodes of one cluster class share it, and so do two leases
    of one machine type: a campaign's blocks may come from any machine of its class (docs/device.md)."""
    canonical = json.dumps(class_fields(fp), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()

"""Machine fingerprint: real facts of this machine, and an id over stable fields only."""

from __future__ import annotations

import os
import shutil
import socket

from reportgen.capture.fingerprint import fingerprint_id, machine_fingerprint
from reportgen.capture.nvml import nvml_available


def test_fingerprint_reads_this_machine():
    fp = machine_fingerprint({})
    assert fp["hostname"] == socket.gethostname()
    assert fp["cpu_count"] == os.cpu_count()
    assert fp["mem_total_bytes"] > 256 * 1024 * 1024
    assert fp["cpu_model"]
    assert fp["python"]["version"].count(".") == 2
    assert fp["image_digest"] is None
    if not nvml_available()[0] and shutil.which("nvidia-smi") is None:
        assert fp["gpus"] == [] and fp["driver"] is None and fp["cuda"] is None
    elif nvml_available()[0]:
        assert fp["gpus"] and all(g["uuid"] for g in fp["gpus"]) and fp["driver"]


def test_image_digest_from_environment():
    fp = machine_fingerprint({"REPORTGEN_IMAGE_DIGEST": "sha256:abc123"})
    assert fp["image_digest"] == "sha256:abc123"
    assert fp["image_digest_env"] == "REPORTGEN_IMAGE_DIGEST"
    assert fingerprint_id(fp) != fingerprint_id(machine_fingerprint({}))


def test_id_ignores_volatile_fields_and_tracks_identity():
    fp = machine_fingerprint({})
    base = fingerprint_id(fp)
    assert fingerprint_id(machine_fingerprint({})) == base
    # Kernel, Python, CUDA runtime and a few MiB of MemTotal do not change the machine.
    moved = {
        **fp,
        "kernel": "other",
        "python": {"version": "0.0.0"},
        "cuda": "99.9",
        "mem_total_bytes": fp["mem_total_bytes"] + 5 * 1024 * 1024,
    }
    assert fingerprint_id(moved) == base
    gpu = {"index": 0, "name": "NVIDIA A100-SXM4-80GB", "uuid": "GPU-1111", "mem_total_mib": 81920}
    assert fingerprint_id({**fp, "gpus": [gpu]}) != base
    assert fingerprint_id({**fp, "gpus": [{**gpu, "uuid": "GPU-2222"}]}) != fingerprint_id({**fp, "gpus": [gpu]})
    assert fingerprint_id({**fp, "hostname": "elsewhere"}) != base
    assert fingerprint_id({**fp, "driver": "580.95.05"}) != base

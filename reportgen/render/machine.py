"""What machine a run used, in words (render stage): "1 x NVIDIA H200", or the CPU and its cores.

Pipeline position: analysis.json + each run's provenance/fingerprint.json -> **render** -> page headers.
The hostname says nothing to a reader of a report (it is often "vm" or a pod name), so it is
shown on the provenance page only.
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

from pydantic import ValidationError

from reportgen.analysis.document import Machine
from reportgen.render.load import PublishedExperiment
from reportgen.store.models import Fingerprint

NO_FINGERPRINT = Fingerprint()


def fingerprint(exp: PublishedExperiment) -> Fingerprint:
    """The first formal run's provenance/fingerprint.json, or an empty one when none was recorded or
    readable."""
    for run in exp.formal_runs():
        text = run.provenance.get("fingerprint.json")
        if text:
            try:
                return Fingerprint.model_validate(json.loads(text))
            except (ValueError, ValidationError):
                continue
    return Fingerprint()


def cpu_text(machine: Machine, fp: Fingerprint = NO_FINGERPRINT) -> str | None:
    """ "Intel(R) Xeon(R) Processor, 16 cores", from the fingerprint or analysis.json's machine."""
    model = fp.cpu_model or machine.cpu_model
    count = fp.cpu_count or machine.cpu_count
    if model:
        return f"{model}, {count} cores" if count else str(model)
    return None


def gpu_list(machine: Machine, fp: Fingerprint = NO_FINGERPRINT) -> list[dict[str, Any]]:
    """The GPUs analysis.json's machine recorded, else those of the first run's fingerprint."""
    return list(machine.gpus or []) or [g.to_dict() for g in fp.gpus]


def summary(machine: Machine, fp: Fingerprint = NO_FINGERPRINT) -> str:
    """GPU model and count ("2 x NVIDIA A100-SXM4-80GB"; mixed models listed each), else the CPU."""
    gpus = gpu_list(machine, fp)
    names = Counter(str(g.get("name") or "unknown GPU") for g in gpus)
    if names:
        return " + ".join(f"{n} x {name}" for name, n in names.items())
    return cpu_text(machine, fp) or "machine unknown"

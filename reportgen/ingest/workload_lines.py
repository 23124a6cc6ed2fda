"""The lines a trainer prints about itself: which workload version made the run, and the warm start
its policy began from (ingest stage).

The embedded GRPO workload (reportgen.workloads.grpo) prints, before its first step,

    workload: grpo-max v2
    warm start: sha256 <64 hex> made in 3.2 s (...): <path>
    warm start: sha256 <64 hex> read from the cache in 0.04 s: <path>
    warm start: none (--warm-start-steps 0): seeded random init

(each behind its logger's prefix). The runs it made before these lines existed (the v1 workload:
random init, no warm start) print neither; the analysis reads their absence as v1
(reportgen.analysis.workload). A Relax log prints none of them. `WorkloadLines` keeps the first of
each kind; `record()` is the manifest's `workload` section, or None when the log had none.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any

from reportgen.store.models import WorkloadRecord

NEEDLES = ("workload: ", "warm start: ")
_WORKLOAD = re.compile(r"\bworkload: (?P<name>[A-Za-z0-9_.-]+) (?P<version>v\d+)\s*$")
_WARM = re.compile(
    r"\bwarm start: sha256 (?P<sha>[0-9a-f]{64}) "
    r"(?:made in (?P<made>[0-9.]+) s|read from the cache in (?P<read>[0-9.]+) s)"
)
_NONE = re.compile(r"\bwarm start: none\b")


@dataclasses.dataclass
class WorkloadLines:
    """The first workload line and the first warm-start line of a log, as they were read."""

    name: str | None = None
    version: str | None = None
    warm_said: bool = False  # a warm-start line was read (a start's hash, or "none": random init)
    warm_start_sha256: str | None = None
    warm_start_made: bool | None = None
    warm_start_seconds: float | None = None

    def push(self, line: str) -> None:
        if self.version is None and (m := _WORKLOAD.search(line)):
            self.name, self.version = m["name"], m["version"]
        elif not self.warm_said and (m := _WARM.search(line)):
            made = m["made"] is not None
            self.warm_said, self.warm_start_sha256, self.warm_start_made = True, m["sha"], made
            self.warm_start_seconds = float(m["made"] if made else m["read"])
        elif not self.warm_said and _NONE.search(line):
            self.warm_said, self.warm_start_made = True, False

    def record(self) -> dict[str, Any] | None:
        """The manifest's `workload` section, through its model (reportgen.store.models.WorkloadRecord),
        or None when the log said neither."""
        if self.version is None and not self.warm_said:
            return None
        return WorkloadRecord(
            name=self.name,
            version=self.version,
            warm_start_sha256=self.warm_start_sha256,
            warm_start_made=self.warm_start_made,
            warm_start_seconds=self.warm_start_seconds,
        ).model_dump(mode="json")

"""The trainer's lines about itself (reportgen.ingest.workload_lines): the embedded workload's version
and warm start, read from a real run's log into the manifest's `workload` section, and described by
the analysis (a log without them is the v1 workload's)."""

from __future__ import annotations

import pytest

from reportgen.analysis.workload import describe
from reportgen.ingest.run_dir import ingest_run
from reportgen.ingest.workload_lines import WorkloadLines
from reportgen.store.models import Manifest
from reportgen.store.run import StoredRun
from tests.workloads.profiled import profiled_run

SHA = "ab" * 32
PREFIX = "[2026-12-06 04:00:00] train.py:147 - "


def _read(*lines: str) -> dict | None:
    found = WorkloadLines()
    for line in lines:
        found.push(line)
    return found.record()


def test_the_lines_a_run_prints_about_itself():
    assert _read(
        PREFIX + "workload: grpo-max v2", PREFIX + f"warm start: sha256 {SHA} made in 3.2 s (50 steps ...): /c/x.pt"
    ) == {
        "name": "grpo-max",
        "version": "v2",
        "warm_start_sha256": SHA,
        "warm_start_made": True,
        "warm_start_seconds": 3.2,
    }
    read = _read(
        PREFIX + f"warm start: sha256 {SHA} read from the cache in 0.04 s: /c/x.pt", PREFIX + "workload: grpo-max v2"
    )
    assert read is not None and read["warm_start_made"] is False and read["warm_start_seconds"] == 0.04
    none = _read(
        PREFIX + "workload: grpo-max v2", PREFIX + "warm start: none (--warm-start-steps 0): seeded random init"
    )
    assert none is not None and none["warm_start_sha256"] is None
    # a log that says neither (Relax, the v1 workload), or says it in passing, records nothing
    assert _read("step 3: {'train/loss': 0.1}", "the workload: big", "warm start: sha256 not-a-hash") is None


@pytest.mark.slow
def test_a_real_runs_log_is_recorded_and_described(tmp_path_factory, tmp_path):
    proc, _ = profiled_run(tmp_path_factory)
    run_dir = tmp_path / "A1" / "1"
    run_dir.mkdir(parents=True)
    (run_dir / "stdout.log").write_text(proc.stdout)
    ingested = ingest_run(run_dir, invariants=[], exit_code=0)
    said = ingested.workload
    assert said is not None and said["version"] == "v2" and said["warm_start_made"] is True
    assert said["warm_start_sha256"] in proc.stdout and len(said["warm_start_sha256"]) == 64
    manifest = Manifest.create(
        {"arm": "baseline", "repeat": 1, **ingested.manifest_fields(), "effective_argv": {"--preset": "cpu-tiny"}}
    )
    info = describe(
        "reportgen.workloads.grpo",
        [StoredRun("baseline", 1, manifest=manifest)],
        steps=4,
        batch_flag="--global-batch-size",
    )
    assert info.version == "v2" and info.warm_start_sha256 == said["warm_start_sha256"]
    assert "grpo-max v2" in (info.name or "") and "warm start" in (info.model or "")


def test_a_run_that_said_nothing_is_the_first_version():
    old = Manifest.create({"arm": "baseline", "repeat": 1, "effective_argv": {"--preset": "gpu-small"}})
    info = describe(
        "reportgen.workloads.grpo", [StoredRun("baseline", 1, manifest=old)], steps=48, batch_flag="--global-batch-size"
    )
    assert info.version == "v1" and info.warm_start_sha256 is None
    assert "grpo-max v1" in (info.name or "") and "random init" in (info.model or "")
    # a trainer reportgen does not know has no version of the embedded workload
    assert (
        describe(
            "relax.train", [StoredRun("baseline", 1, manifest=old)], steps=48, batch_flag="--global-batch-size"
        ).version
        is None
    )

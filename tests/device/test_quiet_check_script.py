"""scripts/device/quiet_check.sh on the CPU (DEVICE=cpu: a CPU hog beside A1 instead of a second
process on the GPU): the campaign runs, the intruder is started and stopped, and what the analysis
flagged lands in $OUT (the GPU run of the same script is the lead's: docs/provenance.md)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

pytestmark = [pytest.mark.slow, pytest.mark.serial]  # it measures the load an intruder adds: alone


def test_quiet_check_flags_the_intruder_beside_a1(tmp_path: Path) -> None:
    out = tmp_path / "out"
    env = {
        **os.environ,
        "OUT": str(out),
        "ROOT": str(tmp_path / "campaign"),  # not the default /tmp folder another checkout's suite may be using
        "DEVICE": "cpu",
        "STEPS": "8",
        "PYTHON": sys.executable,
        "PYTHONPATH": str(REPO),
    }
    proc = subprocess.run(
        ["bash", str(REPO / "scripts" / "device" / "quiet_check.sh")],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    summary = (out / "summary.txt").read_text()
    intruder = re.search(r"intruder: pid (\d+)", summary)
    assert intruder is not None, summary
    doc = json.loads((out / "analysis.json").read_text())
    a1 = next(r for a in doc["arms"] if a["id"] == "A1" for r in a["runs"])
    assert any(d["kind"] == "cpu_load" for d in a1["disturbances"]), summary
    assert "A1/1: complete" in summary and "quiet_machine" in summary

"""scripts/device/run_until.py: stop a campaign cleanly before a device command's deadline."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.execute.conftest import make_experiment

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "scripts" / "device" / "run_until.py"


def _module():
    spec = importlib.util.spec_from_file_location("run_until", SCRIPT)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules["run_until"] = mod
    spec.loader.exec_module(mod)
    return mod


ru = _module()


def _write(exp: Path, arm: str, repeat: int, status: str, duration: float | None, role: str = "formal") -> None:
    d = exp / arm / str(repeat)
    d.mkdir(parents=True, exist_ok=True)
    (d / "manifest.json").write_text(
        json.dumps(
            {"schema_version": 1, "kind": "reportgen.run", "arm": arm, "repeat": repeat, "role": role}
            | {"status": status, "duration_s": duration}
        )
    )


def test_a_run_that_would_end_past_the_deadline_is_stopped_at_its_start(tmp_path: Path) -> None:
    exp = tmp_path / "exp"
    _write(exp, "baseline", 1, "complete", 120.0)
    _write(exp, "A1", 1, "complete", 70.0)
    _write(exp, "A2", 1, "failed", 20.0)
    _write(exp, "profile-baseline", 1, "running", None, role="profile")
    (exp / "archive" / "c1" / "A1-1").mkdir(parents=True)  # an earlier campaign's run: not read
    states = ru.read_states(exp)
    assert set(states) == {"baseline/1", "A1/1", "A2/1", "profile-baseline/1"}
    # Same arm first: A1's second repeat will take about what its first took ...
    assert ru.estimate_s(ru.RunState("A1/2", "A1", "formal", "running", None), states) == 70.0
    # ... an arm not seen yet, the longest run of its role; a role not seen yet, no estimate.
    assert ru.estimate_s(ru.RunState("A3/1", "A3", "formal", "running", None), states) == 120.0
    assert ru.estimate_s(states["profile-baseline/1"], states) is None
    a1 = ru.RunState("A1/2", "A1", "formal", "running", None)
    assert ru.stop_before(a1, states, now=1000.0, deadline=1060.0)  # 70 s needed, 60 left
    assert not ru.stop_before(a1, states, now=1000.0, deadline=1080.0)
    # Without an estimate the run goes on; the hard deadline still holds.
    assert not ru.stop_before(states["profile-baseline/1"], states, now=1000.0, deadline=1001.0)


def test_a_half_written_manifest_is_read_on_the_next_poll(tmp_path: Path) -> None:
    exp = tmp_path / "exp"
    (exp / "baseline" / "1").mkdir(parents=True)
    (exp / "baseline" / "1" / "manifest.json").write_text('{"arm": "base')
    assert ru.read_states(exp) == {}


@pytest.mark.slow
def test_the_deadline_interrupts_a_real_campaign_cleanly(tmp_path: Path) -> None:
    # 50 s a run: cannot end in time. The deadline comes after the first run has started even on a
    # loaded machine (the CLI's start took over 8 s with a load of 10 on 2 cores).
    spec = make_experiment(tmp_path / "r", steps=100, sleep=0.5)
    runs = tmp_path / "runs"
    cmd = [sys.executable, "-m", "reportgen", "run", str(spec), "--runs", str(runs), "--no-analyze"]
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), "--deadline-s", "20", "--experiment", str(runs / "exp"), "--", *cmd],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO,
    )
    assert proc.returncode == 130, proc.stderr[-2000:]
    assert "deadline reached: SIGINT" in proc.stderr
    manifest = json.loads((runs / "exp" / "baseline" / "1" / "manifest.json").read_text())
    assert manifest["status"] == "interrupted"  # marked so: the next `reportgen run` redoes it
    assert not (runs / "exp" / "A1").exists()
    assert "runs: 1 interrupted" in proc.stderr

"""The machine's guardrails end to end on constructed runs/ trees: runs that overlapped another
measurement on the same machine (no_overlap), and runs disturbed by load the sampler recorded
(quiet_machine): warnings, invalid verdicts naming what disturbed which run, and when."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from builder import FakeArm, make_experiment

from reportgen.analysis import quiet
from reportgen.analyze import analyze_experiment


def _analyse(exp: Path) -> dict:
    return json.loads(analyze_experiment(exp).read_text())


def _comp(doc: dict, cand: str = "A1") -> dict:
    return next(c for c in doc["comparisons"] if c["candidate"] == cand)


def _guard(comp: dict, gid: str) -> dict:
    return next(g for g in comp["guardrails"] if g["id"] == gid)


def _run(doc: dict, arm: str, repeat: int = 1) -> dict:
    return next(r for a in doc["arms"] if a["id"] == arm for r in a["runs"] if r["repeat"] == repeat)


def test_runs_overlapping_another_campaign_on_the_machine_make_the_comparison_invalid(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    exp = make_experiment(runs, {"baseline": FakeArm(), "A1": FakeArm(speed=1.3)}, name="mine", repeats=1)
    # Another campaign on the same machine, started at the same time (the --share-machine case) ...
    make_experiment(runs, {"baseline": FakeArm(), "B1": FakeArm()}, name="theirs", seed=2, repeats=1)
    # ... and one on another machine, at the same time too: not the same machine, no overlap.
    make_experiment(
        runs, {"baseline": FakeArm(fingerprint="fp-9"), "C1": FakeArm(fingerprint="fp-9")}, name="elsewhere", repeats=1
    )
    doc = _analyse(exp)
    comp = _comp(doc)
    guard = _guard(comp, "no_overlap")
    assert guard["status"] == "fail" and guard["evidence"] == "baseline/1/manifest.json"
    assert "baseline/1 shared" in guard["reason"] and "with theirs/baseline/1" in guard["reason"]
    assert "A1/1 shared" in guard["reason"] and "with theirs/B1/1" in guard["reason"]
    assert "elsewhere" not in guard["reason"]
    assert comp["verdict"]["status"] == "invalid" and comp["verdict"]["cause"] == guard["reason"]
    step = comp["summary"]["next_step"]
    assert step["action"] == "rerun" and step["command"].endswith("--rerun baseline --rerun A1")
    [other] = [d for d in _run(doc, "A1")["disturbances"] if d["kind"] == "other_run"]
    assert other["detail"] == "theirs/B1/1" and other["in_window"] and other["start_s"] >= 0
    assert other["samples"] is None


def test_runs_one_after_another_do_not_overlap_and_archived_or_running_ones_count(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    exp = make_experiment(runs, {"baseline": FakeArm(), "A1": FakeArm(speed=1.3)}, name="mine")
    doc = _analyse(exp)
    assert _guard(_comp(doc), "no_overlap")["status"] == "pass"
    assert _comp(doc)["verdict"]["status"] == "accepted"
    # A run moved aside by an earlier campaign, recorded as having run during A1/1.
    a1 = json.loads((exp / "A1" / "1" / "manifest.json").read_text())
    old = exp / "archive" / "20261201T000000Z" / "baseline-1"
    old.mkdir(parents=True)
    (old / "manifest.json").write_text(json.dumps({**a1, "arm": "baseline", "status": "interrupted"}))
    reason = _guard(_comp(_analyse(exp)), "no_overlap")["reason"]
    assert "with mine/archive/20261201T000000Z/baseline-1" in reason
    # A run still marked running, without an end: it lasts until its files were last written.
    (old / "manifest.json").unlink()
    live = runs / "live" / "baseline" / "1"
    make_experiment(runs, {"baseline": FakeArm()}, name="live", t0=time.time() - 3600)
    manifest = json.loads((live / "manifest.json").read_text())
    manifest.update(status="running", ended_utc=None)
    (live / "manifest.json").write_text(json.dumps(manifest))
    assert _guard(_comp(_analyse(exp)), "no_overlap")["status"] == "pass"  # mine ran long before
    for name in ("baseline", "A1"):  # now mine ran within the last hour too
        m = json.loads((exp / name / "1" / "manifest.json").read_text())
        t = time.time() - (1800 if name == "baseline" else 900)
        m["started_utc"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))
        m["ended_utc"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t + 600))
        (exp / name / "1" / "manifest.json").write_text(json.dumps(m))
    os.utime(live / "stdout.log" if (live / "stdout.log").exists() else live / "manifest.json")
    reason = _guard(_comp(_analyse(exp)), "no_overlap")["reason"]
    assert "with live/baseline/1 (still running or stopped without an end" in reason


def test_runs_without_a_fingerprint_are_not_checkable(tmp_path: Path) -> None:
    exp = make_experiment(tmp_path / "runs", {"baseline": FakeArm(fingerprint=None), "A1": FakeArm(fingerprint=None)})
    guard = _guard(_comp(_analyse(exp)), "no_overlap")
    assert guard["status"] == "not_applicable" and "no run has a machine fingerprint" in guard["reason"]


def test_a_cpu_hog_during_one_arm_makes_the_comparison_invalid_and_names_it(tmp_path: Path) -> None:
    exp = make_experiment(tmp_path / "runs", {"baseline": FakeArm(), "A1": FakeArm(speed=1.3, disturb="cpu")})
    doc = _analyse(exp)
    comp = _comp(doc)
    guard = _guard(comp, "quiet_machine")
    assert guard["status"] == "fail" and comp["verdict"]["status"] == "invalid"
    assert "A1 was disturbed far more than the other arm" in guard["reason"]
    assert "baseline disturbed in 0%" in guard["reason"] and "A1 in 100%" in guard["reason"]
    assert "pid 4242 stress" in guard["reason"] and guard["evidence"] == "A1/1/host.parquet"
    run = _run(doc, "A1")
    assert run["load"]["flagged"] == ["cpu_load"] and run["load"]["cpu_other_peak"] == 2.5
    [hog] = run["disturbances"]
    assert hog["kind"] == "cpu_load" and hog["start_s"] == 0 and hog["in_window"]
    assert (
        hog["detail"] == f"up to 2.50 cores busy outside the run; heaviest: pid 4242 stress ({hog['samples']} samples)"
    )
    assert hog["end_s"] == hog["samples"]  # 1 Hz: one second per sample
    assert _run(doc, "baseline")["disturbances"] == [] and _run(doc, "baseline")["load"]["disturbed"] == 0
    assert any(
        w.startswith("A1/1 was measured on a busy machine: CPU load outside the run in ") for w in doc["warnings"]
    )
    assert comp["summary"]["evidence"][0]["id"] == "quiet_machine"


def test_both_arms_disturbed_alike_is_a_warning_not_an_invalid_comparison(tmp_path: Path) -> None:
    exp = make_experiment(
        tmp_path / "runs", {"baseline": FakeArm(disturb="throttle"), "A1": FakeArm(speed=1.3, disturb="throttle")}
    )
    doc = _analyse(exp)
    comp = _comp(doc)
    guard = _guard(comp, "quiet_machine")
    assert guard["status"] == "pass" and guard["reason"].startswith("warning: disturbed beyond 10% of their samples")
    assert comp["verdict"]["status"] == "accepted"
    [held] = _run(doc, "A1")["disturbances"]
    assert (
        held["kind"] == "gpu_throttle"
        and held["detail"] == "GPU 0: thermal slowdown (hardware); GPU 1: thermal slowdown (hardware)"
    )
    assert sum("was measured on a busy machine" in w for w in doc["warnings"]) == 6  # every run of both arms


def test_a_kind_that_hits_one_arm_only_is_not_hidden_by_one_both_arms_share(tmp_path: Path) -> None:
    # As measured on an H200 (docs/provenance.md#quiet-machine-on-a-gpu): both arms at the GPU's power
    # limit in every sample, and another process on the candidate's GPU only.
    exp = make_experiment(
        tmp_path / "runs",
        {"baseline": FakeArm(disturb="throttle"), "A1": FakeArm(speed=1.3, disturb="throttle+gpu_process")},
    )
    comp = _comp(_analyse(exp))
    guard = _guard(comp, "quiet_machine")
    assert guard["status"] == "fail" and comp["verdict"]["status"] == "invalid"
    assert "A1 was disturbed by another process on its GPU far more than the other arm" in guard["reason"]
    assert "pid 999 python 2048 MiB" in guard["reason"] and guard["evidence"] == "A1/1/gpu.parquet"
    assert "baseline disturbed in 100%" in guard["reason"] and "A1 in 100%" in guard["reason"]


def test_a_disturbance_outside_the_measured_windows_is_shown_but_not_counted(tmp_path: Path) -> None:
    # The other process holds the GPU during the first 5 % of the run: warm-up, before the windows.
    exp = make_experiment(
        tmp_path / "runs", {"baseline": FakeArm(), "A1": FakeArm(speed=1.3, disturb="gpu_process", disturb_share=0.05)}
    )
    doc = _analyse(exp)
    assert _guard(_comp(doc), "quiet_machine")["status"] == "pass"
    [intruder] = _run(doc, "A1")["disturbances"]
    assert intruder["kind"] == "gpu_process" and not intruder["in_window"]
    assert intruder["detail"] == "GPU 0: pid 999 python 2048 MiB"
    assert _run(doc, "A1")["load"]["disturbed"] == 0 and not doc["warnings"]


def test_runs_without_load_samples_are_not_checkable(tmp_path: Path) -> None:
    exp = make_experiment(tmp_path / "runs", {"baseline": FakeArm(), "A1": FakeArm(speed=1.3)}, gpu=False)
    guard = _guard(_comp(_analyse(exp)), "quiet_machine")
    assert guard["status"] == "not_applicable" and "no load samples for baseline and A1" in guard["reason"]


def test_thresholds_are_documented_values() -> None:
    th = quiet.THRESHOLDS
    assert (th.cpu_cores, th.cpu_machine_share, th.run_share, th.min_samples, th.imbalance) == (0.5, 0.05, 0.1, 2, 0.2)
    assert quiet.throttle_words(0x4 | 0x40) == "power cap, thermal slowdown (hardware)"
    assert quiet.throttle_words(0x1 | 0x2) == "none"  # idle and application clocks hold nothing down


def test_a_runs_load_is_computed_once_per_span_and_forgotten_with_the_run() -> None:
    """One analysis asks for a run's load up to five times (disturbances, each comparison's guardrail,
    the warnings): quiet.load marks its ticks once per run object and span."""
    import gc

    import pandas as pd

    from reportgen.store.run import StoredRun

    host = pd.DataFrame({"t": [0.0, 1.0, 2.0, 3.0], "cpu_other": [0.1, 2.5, 2.5, 0.1], "cpu_count": [8, 8, 8, 8]})
    run = StoredRun(arm="A1", repeat=1, host=host)
    first = quiet.load(run, 6, 59)
    assert quiet.load(run, 6, 59) is first and first.counts() == {"cpu_load": 2}
    assert quiet.load(run, 6, 19) is not first  # another span: marked on its own
    other = StoredRun(arm="A1", repeat=1, host=host)
    assert quiet.load(other, 6, 59) is not first and quiet.load(other, 6, 59).counts() == first.counts()
    before = len(quiet._LOADS)
    del run, other
    gc.collect()
    assert len(quiet._LOADS) == before - 2

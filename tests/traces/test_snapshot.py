"""Memory snapshots: the restricted unpickler refuses code, and the summary of a snapshot in
torch's format (torch/_utils.py `_Snapshot`: segments with blocks, device_traces of actions)."""

from __future__ import annotations

import io
import os
import pickle
from pathlib import Path

import pytest

from reportgen.errors import UserError
from reportgen.traces import snapshot, store
from reportgen.traces.model import FILENAME

MiB = 1 << 20
OPT = [{"filename": "/site-packages/torch/optim/adamw.py", "line": 1, "name": "_init_group"},
       {"filename": "/work/relax/optim.py", "line": 88, "name": "step"}]  # fmt: skip
FWD = [{"filename": "/work/relax/model.py", "line": 12, "name": "forward"}]


class Hostile:
    """Unpickling this would run a shell command that leaves a marker file."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


def snap(oom: bool = False) -> dict:
    trace = [
        {"action": "segment_alloc", "addr": 0x1000, "size": 4 * MiB, "stream": 0, "frames": []},
        {"action": "alloc", "addr": 0x1000, "size": 1 * MiB, "stream": 0, "frames": OPT},
        {"action": "alloc", "addr": 0x101000, "size": 2 * MiB, "stream": 0, "frames": FWD},
        {"action": "free_requested", "addr": 0x101000, "size": 2 * MiB, "stream": 0, "frames": FWD},
        {"action": "free_completed", "addr": 0x101000, "size": 2 * MiB, "stream": 0, "frames": FWD},
    ]
    if oom:
        trace.append({"action": "oom", "size": 8 * MiB, "device_free": 1 * MiB, "stream": 0, "frames": FWD})
    blocks = [
        {"address": 0x1000, "size": 1 * MiB, "requested_size": MiB, "state": "active_allocated", "frames": OPT},
        {"address": 0x101000, "size": 3 * MiB, "requested_size": 0, "state": "inactive", "frames": []},
    ]
    return {
        "segments": [{"device": 0, "address": 0x1000, "total_size": 4 * MiB, "allocated_size": MiB,
                      "active_size": MiB, "stream": 0, "segment_type": "large", "blocks": blocks}],
        "device_traces": [trace],
        "allocator_settings": {"PYTORCH_CUDA_ALLOC_CONF": "", "expandable_segments": False},
    }  # fmt: skip


def _run_with(tmp_path: Path, data: object) -> Path:
    folder = tmp_path / "run" / "traces" / "exp" / "memory_snapshot"
    folder.mkdir(parents=True)
    with open(folder / "memory_snapshot_time1_rank0_dp0_tp0_pp0_snapshot.pickle", "wb") as fh:
        pickle.dump(data, fh)
    return tmp_path / "run"


def test_hostile_pickle_is_refused_and_nothing_runs(tmp_path):
    marker = tmp_path / "pwned"
    run = _run_with(tmp_path, {"segments": [], "x": Hostile(marker)})
    with pytest.raises(UserError) as err:
        store.summarize_run(run)
    msg = str(err.value)
    assert "refused" in msg and "posix.system" in msg and "snapshot.pickle" in msg and "\n" not in msg
    assert not marker.exists()
    assert not (run / FILENAME).exists()
    path = next(run.rglob("*.pickle"))
    with pytest.raises(snapshot.UnsafePickle):
        snapshot.load(path)
    assert not marker.exists()


def test_builtin_containers_load():
    data = {"a": [1, 2.5, None, True], "b": (b"x", "y"), "c": {1, 2}, "d": frozenset({3}), "e": complex(1, 2)}
    for protocol in range(2, pickle.HIGHEST_PROTOCOL + 1):
        assert snapshot._Restricted(io.BytesIO(pickle.dumps(data, protocol=protocol))).load() == data


def test_peak_and_live_at_peak(tmp_path):
    rows = snapshot.summarize(snap(), file="m.pickle", rank=3)
    peak = {r.category: r.bytes for r in rows if r.kind == "mem_peak"}
    assert peak == {"allocated": 3 * MiB, "reserved": 4 * MiB}
    areas = {r.category: r.bytes for r in rows if r.kind == "mem_live" and not r.name}
    assert areas == {"optimizer": MiB, "forward": 2 * MiB}
    frames = [(r.name, r.bytes) for r in rows if r.kind == "mem_live" and r.name]
    assert frames == [("model.py:12 forward", 2 * MiB), ("optim.py:88 step", MiB)]
    assert not [r for r in rows if r.kind == "mem_oom"]
    assert {r.rank for r in rows} == {3}


def test_oom_snapshot_says_what_was_live_at_the_failure():
    rows = snapshot.summarize(snap(oom=True), file="m.pickle", rank=0)
    oom = {(r.category, r.name): r.bytes for r in rows if r.kind == "mem_oom"}
    assert oom == {("requested", ""): 8 * MiB, ("device_free", ""): MiB, ("live", "optim.py:88 step"): MiB}


def test_memory_recorded_before_the_history_counts_as_before_recording():
    s = snap()
    s["device_traces"] = [s["device_traces"][0][2:]]  # the 1 MiB block predates the recording
    rows = snapshot.summarize(s, file="m.pickle", rank=0)
    areas = {r.category: r.bytes for r in rows if r.kind == "mem_live" and not r.name}
    assert areas == {"before_recording": MiB, "forward": 2 * MiB}


def test_cpu_workload_snapshot(tmp_path):
    run = _run_with(tmp_path, {"device": "cpu", "segments": [], "device_traces": [], "peak_rss_kib": 2048})
    store.summarize_run(run)
    from reportgen.traces.model import read

    rows = read(run / FILENAME)
    assert [(r.kind, r.category, r.bytes, r.view) for r in rows] == [("mem_peak", "cpu_peak_rss", 2 * MiB, "cpu")]


def test_a_pickle_that_would_allocate_unboundedly_is_refused():
    # bytearray(2**30) in a 30-byte pickle (1 GiB): the class is not admitted, so nothing is allocated.
    bomb = b"\x80\x02c__builtin__\nbytearray\nJ\x00\x00\x00\x40\x85R."
    with pytest.raises(snapshot.UnsafePickle, match="bytearray"):
        snapshot._Restricted(io.BytesIO(bomb)).load()


def test_a_memo_bomb_of_repeated_entries_is_refused(tmp_path, monkeypatch):
    # One list of entries referenced many times: a small file, a huge flattened history.
    entry = {"action": "alloc", "addr": 1, "size": 1, "frames": []}
    shared = [entry] * 50
    run = _run_with(tmp_path, {"segments": [], "device_traces": [shared] * 50})
    monkeypatch.setattr(snapshot, "MAX_ENTRIES", 1000)
    with pytest.raises(UserError, match=r"refused: more than 1,000 trace entries") as err:
        store.summarize_run(run)
    assert "\n" not in str(err.value)
    assert not (run / FILENAME).exists()

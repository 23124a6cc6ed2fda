"""analysis.machines: each machine's blocks, from the machine every run's manifest names."""

from __future__ import annotations

from reportgen.analysis.machines import machine_blocks
from reportgen.store.run import Manifest, StoredRun


def _run(arm: str, block: int, machine: str | None, host: str | None = None, role: str = "formal") -> StoredRun:
    doc = {"arm": arm, "repeat": block, "role": role, "fingerprint_id": machine}
    if host:
        doc["fingerprint"] = {"hostname": host}
    return StoredRun(arm, block, manifest=Manifest.create(doc))


def test_blocks_are_counted_per_machine_in_the_order_machines_joined() -> None:
    runs = [
        _run("A1", 3, "m-a", "a"),
        _run("baseline", 1, "m-b", "b"),
        _run("A1", 1, "m-b", "b"),
        _run("baseline", 2, "m-a", "a"),
        _run("A1", 2, "m-a", "a"),
        _run("baseline", 3, "m-a", "a"),
        _run("profile-A1", 1, "m-c", "c", role="profile"),  # a profiler run gives no block
    ]
    assert [(m.machine, m.host, m.blocks, m.runs, m.mixed) for m in machine_blocks(runs)] == [
        ("m-b", "b", (1,), 2, ()),
        ("m-a", "a", (2, 3), 4, ()),
    ]


def test_a_block_of_two_machines_is_named_under_each_a_run_without_one_counting_as_another() -> None:
    runs = [_run("baseline", 1, "m-a"), _run("A1", 1, "m-a"), _run("baseline", 2, "m-b"), _run("A1", 2, None)]
    shares = machine_blocks(runs)
    assert [(m.machine, m.blocks, m.runs, m.mixed) for m in shares] == [
        ("m-a", (1,), 2, ()),
        (None, (2,), 1, (2,)),
        ("m-b", (2,), 1, (2,)),
    ]

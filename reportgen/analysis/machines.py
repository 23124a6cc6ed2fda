"""Which machines gave a campaign's blocks, and how many each (analysis stage, pure).

A block is one pair: the formal runs of one repeat, made back to back on one machine. A campaign
may take its blocks from several machines of one class (docs/device.md); the report lists them.
Read from the runs (each manifest records the machine it ran on: `StoredRun.machine`), so an
experiment folder tells its own story whatever campaign.json says.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from reportgen import vocab
from reportgen.store.run import StoredRun


@dataclass(frozen=True)
class MachineBlocks:
    """One machine's share of the campaign."""

    machine: str | None  # fingerprint id; None: runs that recorded none
    host: str | None  # its hostname, as the runs' fingerprint recorded it
    blocks: tuple[int, ...]  # the blocks (repeats) whose formal runs it made, in order
    runs: int  # its formal runs
    mixed: tuple[int, ...] = ()  # blocks it shares with another machine: pairs that cannot be compared


def machine_blocks(runs: Iterable[StoredRun]) -> list[MachineBlocks]:
    """Each machine with the blocks its formal runs belong to, in the order the machines first gave a
    block. A block whose runs name two machines (never made by `reportgen run`; runs copied by hand)
    is listed under each, in `mixed`."""
    formal = [r for r in runs if r.role == vocab.FORMAL]
    by_block: dict[int, set[str | None]] = {}
    for r in formal:
        by_block.setdefault(r.repeat, set()).add(r.machine)
    out: dict[str | None, MachineBlocks] = {}
    for r in sorted(formal, key=lambda r: (r.repeat, r.arm)):
        cur = out.get(r.machine) or MachineBlocks(r.machine, r.machine_host, (), 0)
        blocks = cur.blocks if r.repeat in cur.blocks else (*cur.blocks, r.repeat)
        mixed = tuple(b for b in blocks if len(by_block[b]) > 1)
        out[r.machine] = MachineBlocks(r.machine, cur.host or r.machine_host, blocks, cur.runs + 1, mixed)
    return list(out.values())

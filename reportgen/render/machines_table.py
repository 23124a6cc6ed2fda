"""The machines a campaign's blocks came from, and how many each gave (render stage).

Pipeline position: stored runs (each manifest's machine) -> analysis.machines -> **render** -> the
experiment page's Runs section (shown only when the blocks came from more than one machine: one
machine is the page header's "Machine" already), the provenance page's Machine section (one column
a machine) and the rollback page's evidence, so that every page says what the runs say: a campaign
over two leases is not "one machine" anywhere.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field

from pydantic import ValidationError

from reportgen.analysis.machines import MachineBlocks, machine_blocks
from reportgen.render import safe
from reportgen.render.blocks import table
from reportgen.render.format import fmt_count
from reportgen.render.load import PublishedExperiment
from reportgen.store.models import Fingerprint
from reportgen.vocab import FORMAL


@dataclass(frozen=True)
class MachineRuns:
    """One machine of the campaign: its share of the blocks, its formal runs (`arm/repeat`) and its
    fingerprint as the first of them recorded it (empty when none did)."""

    share: MachineBlocks
    runs: tuple[str, ...]
    fingerprint: Fingerprint = field(default_factory=Fingerprint)

    @property
    def short(self) -> str:
        return (self.share.machine or "not recorded")[:8]


def _fingerprint(exp: PublishedExperiment, machine: str | None) -> Fingerprint:
    """The machine's provenance/fingerprint.json, from the first of its formal runs that has a
    readable one."""
    for run in exp.runs:
        if run.role != FORMAL or run.machine != machine:
            continue
        try:
            return Fingerprint.model_validate(json.loads(run.provenance.get("fingerprint.json") or ""))
        except (ValueError, ValidationError):
            continue
    return Fingerprint()


def machines_of(exp: PublishedExperiment) -> list[MachineRuns]:
    """Every machine that gave the campaign formal runs, in the order it first gave a block."""
    formal = [r for r in exp.runs if r.role == FORMAL]
    return [
        MachineRuns(share, tuple(r.rel for r in formal if r.machine == share.machine), _fingerprint(exp, share.machine))
        for share in machine_blocks(exp.runs)
    ]


def blocks_text(share: MachineBlocks) -> str:
    """ "block 1", "blocks 2, 3"."""
    return f"block{'s' if len(share.blocks) != 1 else ''} {_blocks_text(share.blocks)}"


def where_measured(machines: Sequence[MachineRuns]) -> str:
    """Where the pairs were measured, in words: "one machine, arms back to back", or "2 machines of
    one class: block 1 on dcdf3ff6, blocks 2, 3 on 8fc00ca9; each pair back to back on one machine"."""
    if len(machines) < 2:
        return "one machine, arms back to back"
    parts = "; ".join(f"{blocks_text(m.share)} on {m.short}" for m in machines)
    return f"{len(machines)} machines of one class ({parts}), each pair's runs back to back on one machine"


def _blocks_text(blocks: tuple[int, ...]) -> str:
    return ", ".join(str(b) for b in blocks)


def machines_section(exp: PublishedExperiment) -> str:
    """A table of the machines (fingerprint, host, blocks given, formal runs), or "" for one machine."""
    shares = machine_blocks(exp.runs)
    if len(shares) < 2:
        return ""
    rows = [
        [
            safe.code((m.machine or "not recorded")[:12]),
            safe.text(m.host or "?"),
            safe.text(f"{len(m.blocks)} ({_blocks_text(m.blocks)})"),
            safe.text(str(m.runs)),
        ]
        for m in shares
    ]
    blocks = len({b for m in shares for b in m.blocks})
    md = [
        "### Machines {#machines}\n",
        safe.text(
            f"The campaign's {fmt_count(blocks, 'block')} came from {len(shares)} machines of one class (same GPU "
            "model and count, driver, CPU, memory and image); each block, a pair of runs of every arm it holds, "
            "ran on one machine, and pairs compare runs of one machine only."
        )
        + "\n",
        table(["machine", "host", "blocks given (which)", "formal runs"], rows, ["l", "l", "r", "r"]),
    ]
    mixed = sorted({b for m in shares for b in m.mixed})
    if mixed:
        md.append(
            "\n"
            + safe.text(
                f"Blocks {_blocks_text(tuple(mixed))} hold runs of two machines: reportgen run never makes such a "
                "block (runs copied in by hand?); their pairs compare two machines."
            )
        )
    return "\n".join(md) + "\n"

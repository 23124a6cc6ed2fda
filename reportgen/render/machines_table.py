"""The machines a campaign's blocks came from, and how many each gave (render stage).

Pipeline position: stored runs (each manifest's machine) -> analysis.machines -> **render** -> the
experiment page's Runs section. Shown only when the blocks came from more than one machine (one
machine is the page header's "Machine" already).
"""

from __future__ import annotations

from reportgen.analysis.machines import machine_blocks
from reportgen.render import safe
from reportgen.render.blocks import table
from reportgen.render.format import fmt_count
from reportgen.render.load import PublishedExperiment


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

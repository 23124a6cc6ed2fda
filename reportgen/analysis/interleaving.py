"""Did the runs start in the order the design says? (part of reportgen.analysis, pure)

An interleaved campaign runs one run of each arm per block, in the plan's order in odd blocks and
reversed in even ones (reportgen.specfile.model.interleaved, which the runner follows), so that a drift linear in time moves both
runs of a pair alike over two blocks. The pairs' statistics assume it; nothing else checks that it
happened. This module reads each formal run's recorded start (manifest `started_utc`: to the
millisecond in runs this reportgen makes, whole seconds in older ones) and says, in a warning, where the order
differs: a block whose runs started in another order, or a block started before the one before it
ended its starts (a run redone later with `--rerun`, runs copied in from elsewhere, a runner that
ignored the design). Runs started within the same second when their times hold whole seconds only
are not told apart: their order is not known, so it is not called wrong.
"""

from __future__ import annotations

from collections.abc import Sequence

from reportgen.specfile.model import interleaved
from reportgen.store.run import StoredRun, parse_utc


def _whole_second(text: str | None) -> bool:
    return bool(text) and "." not in str(text)


def warnings(arm_ids: Sequence[str], runs: Sequence[StoredRun]) -> list[str]:
    """One line per block whose runs' recorded starts are not in the design's order, and one per
    block that started before the block before it; nothing when every start agrees (or is unknown).
    `arm_ids`: the formal arms in the plan's order (baseline first); `runs`: the formal runs."""
    blocks: dict[int, list[tuple[float, StoredRun]]] = {}
    for r in runs:
        t = parse_utc(r.manifest.started_utc)
        if t is not None and r.arm in arm_ids:
            blocks.setdefault(r.repeat, []).append((t, r))
    out: list[str] = []
    last_start: tuple[float, StoredRun] | None = None
    for block in sorted(blocks):
        seen = sorted(blocks[block], key=lambda tr: tr[0])
        ran = [r.arm for _, r in seen]
        want = interleaved([a for a in arm_ids if a in ran], block)
        coarse = any(_whole_second(r.manifest.started_utc) for _, r in seen)
        tied = coarse and len({int(t) for t, _ in seen}) < len(seen)
        if ran != want and not tied:
            out.append(
                f"block {block} ran {', '.join(ran)} by the runs' recorded start times; the design's interleaved "
                f"order is {', '.join(want)}: a drift during the block no longer falls on both arms alike"
            )
        first = seen[0]
        if last_start is not None and first[0] < last_start[0] and not (coarse and int(first[0]) == int(last_start[0])):
            out.append(
                f"block {block} started ({first[1].rel}) before block {last_start[1].repeat} had started all its runs "
                f"({last_start[1].rel}): the blocks were not run one after another"
            )
        last_start = seen[-1] if last_start is None or seen[-1][0] > last_start[0] else last_start
    return out

"""Writes reportgen/analysis/t_levels.json: the per-look t levels of the designs met most often,
by the simulation the analysis would otherwise run in every process (design.simulate_t_tail: the
same seed and paths, so each committed level is the very number the simulation gives).

    PYTHONPATH=. nice -n 10 python scripts/t_levels.py        # about two CPU minutes

The designs (confidence 0.95; a design not listed is simulated when met, as before):
- sequential from 2 pairs (the default min_pairs, issue 43) to 3-17 pairs, and from 3 pairs (the
  design before, which the committed campaigns ran) to 4-16, at the analysis' 400 000 paths (a look
  past the maximum widens a design to every look up to it);
- sequential from 2 pairs to 3-40 at the planner's 100 000 paths (`reportgen plan-power` searches
  max_pairs up to power_plan.MAX_PAIRS);
- a fixed design of 2-6 pairs given one more look at 3-12 pairs (a fixed campaign that got more
  pairs than planned, and the pairs-still-needed projection up to 4 x min_pairs), at 400 000 paths.
tests/analysis/test_t_levels.py recomputes a cell and checks the table's seed and method.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from reportgen.analysis import design as dz
from reportgen.analysis import power_plan

ALPHA = 0.05


def designs() -> list[tuple[tuple[int, ...], int]]:
    out: list[tuple[tuple[int, ...], int]] = []
    out += [(tuple(range(2, n + 1)), dz.T_PATHS) for n in range(3, dz.MAX_PAIRS + 2)]
    out += [(tuple(range(3, n + 1)), dz.T_PATHS) for n in range(4, 17)]
    out += [(tuple(range(dz.MIN_PAIRS, n + 1)), power_plan.PATHS) for n in range(3, power_plan.MAX_PAIRS + 1)]
    out += [((r, n), dz.T_PATHS) for r in range(2, 7) for n in range(r + 1, 13)]
    return list(dict.fromkeys(out))


def main() -> None:
    levels: dict[str, float] = {}
    t0 = time.process_time()
    for looks, paths in designs():
        levels[dz.t_level_key(looks, ALPHA, paths)] = dz.simulate_t_tail(looks, ALPHA, paths)
    data = {
        "made_by": "scripts/t_levels.py",
        "seed": dz.T_SEED,
        "method": dz.T_METHOD,
        "levels": levels,
    }
    dz.T_LEVELS.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    print(f"{len(levels)} levels in {time.process_time() - t0:.0f} CPU s -> {dz.T_LEVELS}")


if __name__ == "__main__":
    main()

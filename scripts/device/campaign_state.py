#!/usr/bin/env python3
"""Say where a campaign stands after a device command, in one line a script or a person can act on.

    python3 scripts/device/campaign_state.py runs/NAME [--exit-code N]

Analyses the experiment (a current analysis.json is left as it is: `reportgen analyze` skips it)
and prints, on stdout, one of:

    undecided after N pairs: run again to add pairs
    decided after N pairs: A1 accepted, A3 rejected
    stopped at the design's last look after N pairs: A1 accepted, A2 inconclusive
    campaign finished: every run is done                 (a fixed design, all its runs made)
    unfinished after N pairs: run again to finish the campaign's runs   (a fixed design, stopped)

then one line per machine that gave blocks ("machine gpu-7 (89f82cfeba0a): blocks 1, 2"). N is the
number of finished pairs (blocks). `--exit-code` is the exit code of the `reportgen run` before it:
130 (stopped at a deadline) means runs are still to make even where the analysis has no open
comparison (the profiler runs come after the last pair). Exit code: 0, or 2 when the folder holds
no campaign or cannot be analysed.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from reportgen.analyze import analyze_experiment
from reportgen.errors import UserError
from reportgen.render.load import load_analysis
from reportgen.store.runs import load_campaign
from reportgen.vocab import BASELINE


def state_line(exp_dir: Path, exit_code: int = 0) -> list[str]:
    """The lines this script prints for `exp_dir` (see the module docstring)."""
    campaign = load_campaign(exp_dir)
    if campaign is None:
        raise UserError(f"{exp_dir}: no campaign.json; nothing was run there")
    analyze_experiment(exp_dir)
    doc = load_analysis(exp_dir)
    recorded = campaign.blocks_of()
    pairs = len(recorded) if recorded else doc.campaign.pairs_run.get(BASELINE, 0)
    said = ", ".join(f"{c.candidate} {c.verdict.status}" for c in doc.comparisons)
    stopped = doc.campaign.stopped
    if stopped == "open":
        line = f"undecided after {pairs} pairs: run again to add pairs"
    elif stopped in ("decided", "max_pairs"):
        head = "decided" if stopped == "decided" else "stopped at the design's last look"
        line = f"{head} after {pairs} pairs: {said}"
        if exit_code == 130:
            line += "; stopped before every run was made (the profiler runs): run again to make them"
    elif exit_code == 130:
        line = f"unfinished after {pairs} pairs: run again to finish the campaign's runs"
    else:
        line = "campaign finished: every run is done"
    machines = [
        f"machine {m.hostname or '?'} ({m.fingerprint_id[:12]}): "
        + (f"blocks {', '.join(map(str, m.blocks))}" if m.blocks else "no finished block")
        for m in campaign.machines
    ]
    return [line, *machines]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("experiment", type=Path, help="the experiment folder, runs/NAME")
    p.add_argument("--exit-code", type=int, default=0, help="the exit code of the `reportgen run` before")
    opts = p.parse_args(argv)
    try:
        lines = state_line(opts.experiment, opts.exit_code)
    except UserError as exc:
        print(f"campaign state unknown: {exc.message}", file=sys.stderr)
        return 2
    print("\n".join(lines), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

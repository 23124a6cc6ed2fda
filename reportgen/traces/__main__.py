"""`python -m reportgen.traces RUN_DIR...`: (re)write traces.parquet of runs whose traces exist.

For traces brought back from another machine (e.g. a GPU profile run on a device whose
summary was not made there): copy the run folders, with their `traces/`, under runs/, then
run this on each profiler run folder. Runs are otherwise summarised when they end.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from reportgen.errors import UserError
from reportgen.traces.store import summarize_run


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m reportgen.traces", description=__doc__.splitlines()[0])
    ap.add_argument("runs", nargs="+", type=Path, help="run folders (runs/<experiment>/profile-<arm>/<repeat>)")
    args = ap.parse_args(argv)
    status = 0
    for run in args.runs:
        try:
            if not run.is_dir():
                raise UserError(f"{run}: not a folder; pass a run folder such as runs/<experiment>/profile-A1/1")
            path = summarize_run(run)
        except UserError as exc:
            sys.stderr.write(f"reportgen: error: {exc}\n")
            status = UserError.exit_code
            continue
        print(path if path is not None else f"{run}: no traces/ with profiler output; nothing written")
    return status


if __name__ == "__main__":
    sys.exit(main())

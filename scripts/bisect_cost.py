"""What `reportgen bisect` costs, in runs and minutes, on the embedded CPU workload
(docs/performance-history.md#bisection): a throw-away repository of N commits after GOOD (a copy of
the workload, each commit a code change, one of them sleeping in every training step), then
`reportgen bisect GOOD BAD SPEC --json` as a real subprocess, timed. Prints the culprit found,
whether it is the slow commit, the campaigns, runs and wall minutes. Run it on a quiet machine:

    PYTHONPATH=. python scripts/bisect_cost.py                      # 8 commits, the 5th slow, 2 s a step
    PYTHONPATH=. python scripts/bisect_cost.py --commits 8 --slow-at 2 --pairs 6 --sleep 0.5
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.git_repos import code_history  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--commits", type=int, default=8)
    ap.add_argument("--slow-at", type=int, default=4, help="0-based position of the slow commit")
    ap.add_argument("--sleep", type=float, default=2.0, help="seconds the slow commit sleeps a step")
    ap.add_argument("--pairs", type=int, default=6, help="most pairs a step may spend")
    ap.add_argument("--keep", type=Path, default=None, help="make everything here instead of a temporary folder")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = args.keep or Path(tmp)
        repo = folder / "repo"
        good, shas = code_history(repo, commits=args.commits, slow_at=args.slow_at, sleep_s=args.sleep)
        env = {**os.environ, "REPORTGEN_CACHE": str(folder / "cache"), "PYTHONPATH": str(ROOT)}
        cmd = [sys.executable, "-m", "reportgen", "bisect", good, shas[-1], str(repo / "spec.toml")]
        cmd += ["--repo", str(repo), "--runs", str(folder / "runs"), "--pairs", str(args.pairs), "--json"]
        t0 = time.monotonic()
        res = subprocess.run(cmd, capture_output=True, text=True, env=env)
        wall = (time.monotonic() - t0) / 60
        if res.returncode != 0:
            print(res.stderr[-3000:], file=sys.stderr)
            return res.returncode
        out = json.loads(res.stdout)
        print(f"{args.commits} commits, the slow one at {args.slow_at} ({args.sleep} s a step), --pairs {args.pairs}")
        print(f"culprit {out['culprit']}: {'the slow commit' if out['culprit'] == shas[args.slow_at] else 'WRONG'}")
        print(
            f"{len(out['steps'])} campaigns ({', '.join(str(s['pairs']) for s in out['steps'])} pairs), {out['runs']} runs"
        )
        print(f"{out['minutes']:.1f} minutes in campaigns, {wall:.1f} minutes in all (checkouts, analysis included)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

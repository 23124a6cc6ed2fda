"""Wall time to a decision of one sequential campaign on a loopback Ray cluster of 1 node and of 2.

Each cluster is started here (a head without CPUs and N one-CPU workers on 127.0.0.1, each worker
a machine of its own as reportgen sees it: tests/execute/ray/conftest.py `cluster(own_machines=True)`,
its own hostname through $REPORTGEN_HOSTNAME and, as root, `unshare --uts`). The campaign is a real
`reportgen run` of a spec with `[run] until = "decided"` and the embedded CPU stand-in trainer (tests/execute/conftest.py
make_experiment): the candidate removes the offload flag and is twice as fast, so the campaign is
decided at its first look (`--min-pairs`). With 2 nodes, blocks run two at a time
(reportgen.execute.parallel; docs/ray.md).

Prints, for each cluster size: the command's wall time (start to exit: claims, the blocks, the
analysis), the blocks made, how the campaign stopped and the verdict. Measure on a quiet machine
with at least 4 cores (each node's runs use a core, the runner another); the default settings
take about 5 minutes.

    PYTHONPATH=$PWD python scripts/bench_ray_blocks.py              # 1 node vs 2
    PYTHONPATH=$PWD python scripts/bench_ray_blocks.py --steps 5 --sleep 0.1 --min-pairs 2 --max-pairs 3  # a quick check
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.conftest import env_with_repo_on_path  # noqa: E402
from tests.execute.conftest import make_experiment  # noqa: E402
from tests.execute.ray.conftest import RAY, can_name_hosts, cluster  # noqa: E402


def one(nodes: int, args: argparse.Namespace, root: Path) -> dict[str, object]:
    """One campaign, from nothing, on a fresh cluster of `nodes` workers."""
    spec = make_experiment(
        root / f"recipes-{nodes}",
        name=f"bench{nodes}",
        steps=args.steps,
        sleep=args.sleep,
        order=None,
        repeats=None,
        run={"until": "decided", "min_pairs": args.min_pairs, "max_pairs": args.max_pairs},
    )
    runs = root / f"runs-{nodes}"
    with cluster(head_cpus=0, workers=[f"w{i + 1}" for i in range(nodes)], own_machines=True) as c:
        command = [sys.executable, "-m", "reportgen", "run", str(spec), "--runs", str(runs), "--no-profiler"]
        t0 = time.monotonic()
        done = subprocess.run(
            [*command, "--ray", c.address], env=env_with_repo_on_path(), capture_output=True, text=True
        )
        wall = time.monotonic() - t0
    if done.returncode != 0:
        raise SystemExit(f"reportgen run on {nodes} node(s) exited {done.returncode}:\n{done.stdout}\n{done.stderr}")
    exp = runs / f"bench{nodes}"
    doc = json.loads((exp / "analysis.json").read_text())
    comps = doc["comparisons"]
    return {
        "nodes": nodes,
        "wall_s": wall,
        "blocks": len({p.name for p in exp.glob("baseline/*") if p.name.isdigit()}),
        "stopped": doc["campaign"]["stopped"],
        "verdicts": ", ".join(f"{c['candidate']} {c['verdict']['status']}" for c in comps),
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--steps", type=int, default=8, help="training steps of each run (default 8)")
    p.add_argument("--sleep", type=float, default=1.0, help="seconds per step of the stand-in (default 1.0)")
    p.add_argument("--min-pairs", type=int, default=4, help="the design's first look (default 4)")
    p.add_argument("--max-pairs", type=int, default=8, help="the design's last look (default 8)")
    args = p.parse_args()
    if args.steps < 5:
        raise SystemExit("--steps: at least 5 (the stand-in spec's windows end at step 4)")
    if not RAY.is_file():
        raise SystemExit("the ray extra is not installed (pip install 'reportgen[ray]')")
    if not can_name_hosts():
        print("note: not root, so the nodes' hostnames come from $REPORTGEN_HOSTNAME alone (no `unshare --uts`)")
    with tempfile.TemporaryDirectory(prefix="rg-bench-blocks-") as tmp:
        rows = [one(n, args, Path(tmp)) for n in (1, 2)]
    print(
        f"campaign: stand-in, {args.steps} steps x {args.sleep:g} s, min_pairs {args.min_pairs}, "
        f"max_pairs {args.max_pairs}"
    )
    for r in rows:
        print(
            f"{r['nodes']} node(s): {r['wall_s']:.1f} s to a decision; {r['blocks']} blocks; "
            f"stopped {r['stopped']}; {r['verdicts']}"
        )
    one_node, two_nodes = (float(r["wall_s"]) for r in rows)  # type: ignore[arg-type]
    print(f"2 nodes vs 1: {two_nodes / one_node:.2f}x the wall time")
    if any("invalid" in str(r["verdicts"]) or r["stopped"] != "decided" for r in rows):
        print(
            "warning: a campaign did not end in a valid decision (see its verdict): the wall times do not compare "
            "two decisions"
        )


if __name__ == "__main__":
    main()

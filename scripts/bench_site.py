"""Benchmark the report site: build time and page weight for 1, 10 and 50 experiments.

Each experiment has 4 arms x 200 steps (tests/render/site_fixture.py). For each size, a fresh
project is built twice with `mkdocs build` (cold: empty SVG/bundle cache; warm: cache kept),
and a project with no experiment gives MkDocs' fixed cost. Page weight is the gzipped size of
an experiment page (its charts are inline SVG, part of the page); the charts' standalone SVG files
(downloads, not loaded by the page) are reported apart. Usage:

    PYTHONPATH=. python scripts/bench_site.py [--sizes 1 10 50] [--steps 200]
"""

from __future__ import annotations

import argparse
import gzip
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tests.render import site_fixture  # noqa: E402
from tests.render.conftest import build_env, make_project  # noqa: E402

CPU: list[float] = []  # CPU seconds (user + system) of the last build, next to its wall time


def build(project: Path, cache: Path) -> float:
    before = os.times()
    t = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build"], cwd=project, env=build_env(cache), capture_output=True, text=True
    )
    if proc.returncode:
        raise SystemExit(proc.stderr[-3000:])
    after = os.times()
    CPU[:] = [(after.children_user - before.children_user) + (after.children_system - before.children_system)]
    return time.perf_counter() - t


def gz(path: Path) -> int:
    return len(gzip.compress(path.read_bytes(), 6))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", type=int, nargs="+", default=[1, 10, 50])
    ap.add_argument("--steps", type=int, default=200)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        empty = make_project(tmp / "empty")
        (empty / "runs").mkdir()
        build(empty, tmp / "cache-empty")
        runs = []
        for _ in range(2):
            runs.append((build(empty, tmp / "cache-empty"), CPU[0]))
        fixed, fixed_cpu = min(runs)
        print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
        print(f"fixed cost (no experiment, warm): {fixed:.2f} s wall, {fixed_cpu:.2f} s CPU")
        print(
            "experiments | cold build s | warm build s | warm s/experiment over fixed | warm CPU s | CPU s/experiment over fixed | page gz KB (max) | SVG gz KB/page | load avg"
        )
        for n in args.sizes:
            project = make_project(tmp / f"p{n}")
            for i in range(n):
                site_fixture.build_experiment(project / "runs", f"exp-{i:03d}", steps=args.steps, seed=i)
            cache = tmp / f"cache-{n}"
            cold = build(project, cache)
            warm = build(project, cache)
            warm_cpu = CPU[0]
            site = project / "site" / "reports"
            weights, svgs = [], []
            for exp in sorted(site.glob("exp-*")):
                for page in [exp / "index.html", *exp.glob("*/index.html")]:
                    weights.append(gz(page))
                svgs.append(sum(gz(p) for p in exp.glob("*.svg")))
            print(
                f"{n:11d} | {cold:12.2f} | {warm:12.2f} | {(warm - fixed) / n:28.3f} | {warm_cpu:10.2f} | "
                f"{(warm_cpu - fixed_cpu) / n:27.3f} | {max(weights) / 1024:16.1f} | {max(svgs) / 1024:14.1f} | "
                f"{os.getloadavg()[0]:.2f}",
                flush=True,
            )
            shutil.rmtree(project)


if __name__ == "__main__":
    main()

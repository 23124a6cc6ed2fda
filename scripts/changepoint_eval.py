"""Measure change-point detectors on simulated performance histories (docs/performance-history.md).

A history here is N points in commit order, one per campaign or nightly run, each the true level
times exp(noise x z): noise 3 % or 6 % (this project's run-to-run noise, docs/calibration.md). A/A
histories have no change; the others drop by 5 % or 10 % at point K (a slowdown merged there).

For each detector and cell it reports:
  - false alarms: the share of A/A histories with any change point at the end (all N points), and
    the share that raised one at any time while growing point by point (a nightly rebuild sees
    every prefix);
  - detection: the share of step histories where a change point at exactly point K (the commit
    that made it) was reported by the end, the median delay (points from K, K itself counted, until
    the growing history first shows it) and the share found within 5 points.

Detectors (each runs where its library is installed; they disagree on numpy versions, so use a
separate virtual environment for the last two, see docs/performance-history.md):
  reportgen   reportgen.history.changepoints.detect (ruptures PELT + pooled t filter), as shipped
  ruptures    the same with --penalty/--alpha of your choice (a grid with --grid)
  otava       Apache Otava's compute_change_points (Hunter: windowed E-divisive + t-test merge)
  edivisive   MongoDB's signal-processing-algorithms e_divisive (E-divisive, permutation test)

    PYTHONPATH=. python scripts/changepoint_eval.py --detector reportgen --sims 400
    /tmp/cp-otava/bin/python scripts/changepoint_eval.py --detector otava --sims 400
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import time
from collections.abc import Callable, Sequence

import numpy as np

Detector = Callable[[Sequence[float]], list[int]]


def reportgen_detector(penalty: float | None, alpha: float | None) -> Detector:
    from reportgen.history.changepoints import DetectorConfig, detect

    base = DetectorConfig()
    config = DetectorConfig(
        penalty=base.penalty if penalty is None else penalty,
        alpha=base.alpha if alpha is None else alpha,
        min_size=base.min_size,
        min_points=base.min_points,
    )
    return lambda values: [s.index for s in detect(values, config)]


def otava_detector(pvalue: float, magnitude: float) -> Detector:
    from otava.analysis import compute_change_points

    def run(values: Sequence[float]) -> list[int]:
        cps, _ = compute_change_points(list(values), window_len=50, max_pvalue=pvalue, min_magnitude=magnitude)
        return [int(c.index) for c in cps]

    return run


def edivisive_detector(pvalue: float, permutations: int) -> Detector:
    from signal_processing_algorithms.energy_statistics.energy_statistics import e_divisive

    def run(values: Sequence[float]) -> list[int]:
        return sorted(
            int(i) for i in e_divisive(np.asarray(values, dtype=float), pvalue=pvalue, permutations=permutations)
        )

    return run


def history(rng: np.random.Generator, n: int, noise: float, step: float, at: int) -> np.ndarray:
    level = np.where(np.arange(n) >= at, 1.0 - step, 1.0)
    return 1000.0 * level * np.exp(noise * rng.standard_normal(n))


def evaluate(detect: Detector, *, sims: int, n: int, at: int, noise: float, step: float, seed: int) -> dict:
    rng = np.random.default_rng(seed)
    final_any = ever_any = exact = 0
    delays: list[int] = []
    for _ in range(sims):
        y = history(rng, n, noise, step, at)
        if step == 0:
            final_any += bool(detect(y))
            ever_any += any(detect(y[:m]) for m in range(4, n + 1))
            continue
        exact += at in detect(y)
        for m in range(at + 1, n + 1):
            if at in detect(y[:m]):
                delays.append(m - at)
                break
    if step == 0:
        return {"false_alarm_final": final_any / sims, "false_alarm_ever": ever_any / sims}
    return {
        "found_at_commit": exact / sims,
        "median_delay": statistics.median(delays) if delays else None,
        "within_5": sum(d <= 5 for d in delays) / sims,
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--detector", choices=("reportgen", "ruptures", "otava", "edivisive"), default="reportgen")
    p.add_argument("--sims", type=int, default=400)
    p.add_argument("--points", type=int, default=30, help="history length N")
    p.add_argument("--at", type=int, default=20, help="first point after the step (K)")
    p.add_argument("--seed", type=int, default=20261202)
    p.add_argument("--penalty", type=float, default=None, help="ruptures: penalty x sigma^2 x log n")
    p.add_argument("--alpha", type=float, default=None, help="ruptures: level of the pooled t filter")
    p.add_argument("--grid", action="store_true", help="ruptures: A/A false alarms over a grid of penalty x alpha")
    p.add_argument("--pvalue", type=float, default=0.001, help="otava / edivisive: significance level")
    p.add_argument("--magnitude", type=float, default=0.0, help="otava: min_magnitude")
    p.add_argument("--permutations", type=int, default=100, help="edivisive: permutations")
    p.add_argument("--json", action="store_true", help="print JSON instead of a Markdown table")
    a = p.parse_args(argv)

    if a.grid:
        print("| penalty | alpha | false alarm (final) | ever | 10 % step at commit, 3 % noise |")
        print("|---:|---:|---:|---:|---:|")
        for pen in (1.0, 2.0, 3.0, 4.0):
            for alpha in (0.05, 0.01):
                det = reportgen_detector(pen, alpha)
                aa = evaluate(det, sims=a.sims, n=a.points, at=a.at, noise=0.06, step=0.0, seed=a.seed)
                st = evaluate(det, sims=a.sims, n=a.points, at=a.at, noise=0.03, step=0.10, seed=a.seed)
                print(
                    f"| {pen:g} | {alpha:g} | {aa['false_alarm_final']:.1%} | {aa['false_alarm_ever']:.1%} "
                    f"| {st['found_at_commit']:.1%} |"
                )
        return 0

    if a.detector in ("reportgen", "ruptures"):
        det = reportgen_detector(a.penalty, a.alpha)
        name = "reportgen (ruptures PELT + pooled t)"
        if a.detector == "ruptures" or a.penalty is not None or a.alpha is not None:
            name += f" penalty={a.penalty} alpha={a.alpha}"
    elif a.detector == "otava":
        det = otava_detector(a.pvalue, a.magnitude)
        name = f"otava compute_change_points max_pvalue={a.pvalue:g} min_magnitude={a.magnitude:g}"
    else:
        det = edivisive_detector(a.pvalue, a.permutations)
        name = f"signal-processing-algorithms e_divisive pvalue={a.pvalue:g} permutations={a.permutations}"

    rows = []
    t0 = time.process_time()
    for noise in (0.03, 0.06):
        row: dict = {"noise": noise}
        row.update(evaluate(det, sims=a.sims, n=a.points, at=a.at, noise=noise, step=0.0, seed=a.seed))
        for step in (0.05, 0.10):
            res = evaluate(det, sims=a.sims, n=a.points, at=a.at, noise=noise, step=step, seed=a.seed + 1)
            row.update({f"{k}_{round(step * 100)}": v for k, v in res.items()})
        rows.append(row)
    cpu = time.process_time() - t0
    if a.json:
        print(
            json.dumps({"detector": name, "sims": a.sims, "points": a.points, "at": a.at, "cpu_s": cpu, "rows": rows})
        )
        return 0

    def pct(x: float | None) -> str:
        return "-" if x is None else f"{x:.1%}"

    def num(x: float | None) -> str:
        return "-" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:g}"

    print(f"{name}: {a.sims} histories a cell, N = {a.points}, step at point {a.at}, {cpu:.0f} s CPU")
    print()
    print(
        "| noise | false alarm (final) | false alarm (ever, growing) | 5 % step: at its commit | median delay "
        "| within 5 points | 10 % step: at its commit | median delay | within 5 points |"
    )
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        print(
            f"| {r['noise']:.0%} | {pct(r['false_alarm_final'])} | {pct(r['false_alarm_ever'])} "
            f"| {pct(r['found_at_commit_5'])} | {num(r['median_delay_5'])} | {pct(r['within_5_5'])} "
            f"| {pct(r['found_at_commit_10'])} | {num(r['median_delay_10'])} | {pct(r['within_5_10'])} |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())

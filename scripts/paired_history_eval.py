"""False alarms and detection of the paired history, on A/A series of this project's real noise
(docs/performance-history.md#the-paired-history).

1. The pair-level noise: from every campaign under the given runs/ roots (default: the committed
   runs/), each comparison's pairs' log ratios (analysis.json `run_level.pairs`), centred on their
   own mean (a candidate's true effect drops out); pooled per machine class. What remains is how
   far one pair's log ratio strays: the noise a paired history point averages over.
2. A/A series: `--points` history points, each the mean of `--pairs` pair log ratios resampled
   (with replacement) from those centred residuals, scaled by sqrt(n / (n - 1)) for the centring;
   optionally a bridge to a new anchor at `--bridge-at` (measured with `--bridge-pairs` pairs),
   whose error every later point shares. Step series add ln(1 - step) from point `--at` on.
3. Each series goes through the shipped detector (reportgen.history.paired.build), point by point
   as a nightly rebuild sees it. Printed per machine class: the false-alarm rate (A/A series with
   any alarm at the end; with any alarm at any length), and for the step: detection (an alarm at
   exactly the step's commit by the end), within one point of it, and the median delay (points
   from the step's commit, itself counted, until the growing series first shows it).

    PYTHONPATH=. python scripts/paired_history_eval.py                         # committed runs/
    PYTHONPATH=. python scripts/paired_history_eval.py --runs runs /tmp/cpu-runs --sims 400
    PYTHONPATH=. python scripts/paired_history_eval.py --json                  # one JSON object
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from reportgen.analysis.document import parse
from reportgen.history.figures import machine_class
from reportgen.history.paired import build
from reportgen.history.paired_model import PairedPoint
from reportgen.store import atomic, layout


def residuals(roots: Sequence[Path]) -> dict[str, list[float]]:
    """machine class -> the centred pair log ratios of every comparison with 2+ pairs, each
    scaled by sqrt(n / (n - 1)) so that their variance is one pair's."""
    out: dict[str, list[float]] = {}
    for root in roots:
        for exp in layout.iter_experiments(Path(root)):
            path = exp / layout.ANALYSIS
            if not path.is_file():
                continue
            doc = parse(atomic.read_json(path), str(path), exp.name)
            cls = machine_class(doc.machine)
            for comp in doc.comparisons:
                logs = [math.log(p.ratio) for p in comp.run_level.pairs if p.ratio and p.ratio > 0]
                n = len(logs)
                if n < 2:
                    continue
                mean = sum(logs) / n
                out.setdefault(cls, []).extend((x - mean) * math.sqrt(n / (n - 1)) for x in logs)
    return out


def _ts(i: int) -> str:
    return f"2026-01-01T{i // 3600:02d}:{i // 60 % 60:02d}:{i % 60:02d}"


def _point(i: int, value: float, se: float, anchor: str) -> PairedPoint:
    return PairedPoint(
        recipe="sim",
        machine_class="sim",
        setup="sim",
        metric="m",
        label="m",
        better="higher",
        experiment=f"e{i}",
        arm="c",
        commit=f"c{i:04d}",
        anchor=anchor,
        started_utc=_ts(i),
        log_ratio=value,
        se=se,
        df=3.0,
        pairs=4,
    )


def series(
    rng: np.random.Generator,
    noise: np.ndarray,
    *,
    points: int,
    pairs: int,
    step: float,
    at: int,
    bridge_at: int | None,
    bridge_pairs: int,
) -> list[PairedPoint]:
    """One simulated history as paired points (a bridge is a point of the new anchor vs the old)."""
    out = []
    true_new_anchor = 0.0  # A/A anchors: the new anchor is as fast as the old
    for i in range(points):
        draws = rng.choice(noise, pairs)
        level = math.log(1.0 - step) if i >= at else 0.0
        se = float(draws.std(ddof=1) / math.sqrt(pairs))
        if bridge_at is not None and i >= bridge_at:
            if i == bridge_at:
                b = rng.choice(noise, bridge_pairs)
                se_b = float(b.std(ddof=1) / math.sqrt(bridge_pairs))
                bridge = _point(i, true_new_anchor + float(b.mean()), se_b, "root")
                out.append(bridge.model_copy(update={"commit": "anchor2", "started_utc": _ts(i - 1) + ".5"}))
            out.append(_point(i, level - true_new_anchor + float(draws.mean()), se, "anchor2"))
        else:
            out.append(_point(i, level + float(draws.mean()), se, "root"))
    return out


def _alarms(pts: Sequence[PairedPoint]) -> list[str]:
    s = build(pts)
    return [a.after.commit for x in s for a in x.alarms]


def evaluate(noise: np.ndarray, args: argparse.Namespace, step: float, seed: int) -> dict:
    rng = np.random.default_rng(seed)
    target = f"c{args.at:04d}"
    end_hits = ever = exact = near = 0
    delays: list[int] = []
    for _ in range(args.sims):
        pts = series(
            rng,
            noise,
            points=args.points,
            pairs=args.pairs,
            step=step,
            at=args.at,
            bridge_at=args.bridge_at,
            bridge_pairs=args.bridge_pairs,
        )
        final = _alarms(pts)
        end_hits += bool(final)
        if step == 0:
            # A nightly rebuild sees every prefix: any alarm at any length counts.
            ever += any(_alarms(pts[:k]) for k in range(6, len(pts)))
            continue
        exact += target in final
        near += any(c in final for c in (f"c{args.at - 1:04d}", target, f"c{args.at + 1:04d}"))
        for k in range(args.at + 1, len(pts) + 1):
            if target in _alarms(pts[:k]):
                delays.append(k - args.at)
                break
    n = args.sims
    if step == 0:
        return {"false_alarm_end": end_hits / n, "false_alarm_any_prefix": ever / n, "sims": n}
    return {
        "detected_exact": exact / n,
        "detected_within_1": near / n,
        "median_delay_points": statistics.median(delays) if delays else None,
        "sims": n,
    }


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", nargs="+", type=Path, default=[Path("runs")], help="runs/ roots to read the noise from")
    ap.add_argument("--points", type=int, default=20, help="points per simulated series")
    ap.add_argument("--pairs", type=int, default=4, help="pairs per history point")
    ap.add_argument("--at", type=int, default=12, help="the step's first point")
    ap.add_argument("--step", type=float, default=0.10, help="the slowdown (0.10: 10 %%)")
    ap.add_argument("--bridge-at", type=int, default=None, help="a new anchor from this point on")
    ap.add_argument("--bridge-pairs", type=int, default=8)
    ap.add_argument("--sims", type=int, default=200)
    ap.add_argument("--seed", type=int, default=20261203)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    noise_by_class = residuals(args.runs)
    report = {}
    for cls, res in sorted(noise_by_class.items()):
        noise = np.asarray(res, dtype=float)
        report[cls] = {
            "pair_sd": float(noise.std(ddof=0)),
            "pairs_observed": int(noise.size),
            "point_sd": float(noise.std(ddof=0) / math.sqrt(args.pairs)),
            "aa": evaluate(noise, args, 0.0, args.seed),
            f"step_{args.step:g}": evaluate(noise, args, args.step, args.seed + 1),
        }
    settings = {k: v for k, v in vars(args).items() if k not in ("json", "runs")}
    settings["runs"] = [str(r) for r in args.runs]
    if args.json:
        print(json.dumps({"settings": settings, "classes": report}, indent=1))
        return 0
    print(f"settings: {settings}")
    for cls, r in report.items():
        aa, st = r["aa"], r[f"step_{args.step:g}"]
        print(f"\n{cls}: pair-level sd of the log ratio {r['pair_sd']:.3f} ({r['pairs_observed']} pairs)")
        print(f"  one point ({args.pairs} pairs): sd {r['point_sd']:.3f}")
        print(
            f"  A/A series of {args.points}: false alarm {aa['false_alarm_end']:.1%} at the end, "
            f"{aa['false_alarm_any_prefix']:.1%} at any length"
        )
        delay = st["median_delay_points"]
        print(
            f"  {args.step:.0%} step at point {args.at}: found at its commit {st['detected_exact']:.1%}, "
            f"within one point {st['detected_within_1']:.1%}, median delay {delay} points"
        )
    if not report:
        print("no comparison with 2+ pairs under", ", ".join(map(str, args.runs)), file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Calibration of the shipped decision designs by simulation (docs/calibration.md).

    PYTHONPATH=. python scripts/calibrate.py                      # the tables of docs/calibration.md
    PYTHONPATH=. python scripts/calibrate.py --sims 500 --quick   # a smaller grid, for a look
    PYTHONPATH=. python scripts/calibrate.py --write-equivalents  # also reportgen/analysis/fixed_equivalents.json

Every campaign is simulated through the analysis' own rules (reportgen.analysis.calibration).
Prints Markdown tables: the A/A false-decisive rate (accepted or rejected) of every design in every
cell (AR(1) rho, run offset, drift across the campaign), the power to accept +5, +10 and +20 %
with the expected pairs, and the sequential design's pairs against the fixed design with the same
error rates. `--out FILE` writes every figure as JSON.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import asdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from reportgen.analysis import design as dz
from reportgen.analysis.calibration import (
    Result,
    Scenario,
    fixed_design,
    fixed_equivalent,
    label,
    sequential_design,
    simulate,
)

EFFECTS = (0.0, 0.05, 0.10, 0.20)
SHIPPED_OTHER = ((3, 5),)  # sequential designs shipped besides 3-12: the CPU demo (scripts/recipes/default.toml)


def _cells(quick: bool) -> list[tuple[str, dict[str, float]]]:
    rhos = (0.0, 0.5, 0.8)
    offsets = (0.0, 0.03, 0.06)
    cells = [(f"rho {r}, offset {o:.0%}", {"rho": r, "offset": o}) for r in rhos for o in offsets]
    cells += [
        ("rho 0.5, offset 3%, drift -10%", {"rho": 0.5, "offset": 0.03, "trend": -0.10}),
        ("rho 0.5, offset 3%, drift +10%", {"rho": 0.5, "offset": 0.03, "trend": 0.10}),
    ]
    if quick:
        cells = [c for c in cells if c[1]["rho"] == 0.5 or c[1].get("offset") == 0.06]
    return cells


def _pct(x: float) -> str:
    return f"{x * 100:.1f}%"


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--sims", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=20261201)
    ap.add_argument("--candidates", type=int, default=3, help="candidates per campaign (the default spec has 3)")
    ap.add_argument("--quick", action="store_true", help="fewer cells")
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--write-equivalents", action="store_true")
    a = ap.parse_args()
    t0 = time.perf_counter()
    seq = sequential_design()
    others = [sequential_design(lo, hi) for lo, hi in SHIPPED_OTHER]
    designs = [fixed_design(n) for n in (2, 3, 4, 6, 8)] + [fixed_design(2, min_pairs=2), *others, seq]
    names = [label(d) if not (d.mode == "fixed" and d.min_pairs == 2) else "fixed 2 (if allowed)" for d in designs]
    results: list[dict] = []

    def run(design, cell: dict[str, float], effect: float) -> Result:
        sc = Scenario(**{**cell, "effect": effect, "candidates": a.candidates})  # type: ignore[arg-type]
        r = simulate(design, sc, sims=a.sims, seed=a.seed)
        results.append(
            {
                "design": label(design),
                "min_pairs": design.min_pairs,
                "scenario": asdict(sc),
                "counts": r.counts,
                "sims": r.sims,
                "mean_pairs": r.mean_pairs,
                "mean_runs": r.mean_runs,
            }
        )
        return r

    print(
        f"{a.sims} simulated campaigns per cell, {a.candidates} candidate(s) against the baseline, CV 10 %, "
        f"48 steps, windows 8-20 / 21-33 / 34-47, seed {a.seed}; sequential: pairs 3-12, boundary "
        f"{seq.boundary:.3f} ({seq.look_confidence:.2%} per look), futility {seq.futility:.0%}\n"
    )
    print("### A/A false-decisive rate (accepted or rejected; at most 5 % wanted)\n")
    print("| cell | " + " | ".join(names) + " |")
    print("|---" * (len(names) + 1) + "|")
    cells = _cells(a.quick)
    for title, cell in cells:
        row = []
        for d in designs:
            r = run(d, cell, 0.0)
            row.append(f"{_pct(r.false_decisive)} ± {_pct(r.mc_se('accepted', 'rejected'))}")
        print(f"| {title} | " + " | ".join(row) + " |")
    print("\n### Power to accept, and expected pairs of the first candidate (sequential 3-12)\n")
    print("| cell | accept +5 % | accept +10 % | accept +20 % | pairs at 0 / +5 / +10 / +20 % |")
    print("|---|---|---|---|---|")
    seq_pairs: dict[str, list[float]] = {}
    for title, cell in cells:
        rs = [run(seq, cell, e) for e in EFFECTS]
        seq_pairs[title] = [r.mean_pairs for r in rs]
        print(
            f"| {title} | {_pct(rs[1].power)} | {_pct(rs[2].power)} | {_pct(rs[3].power)} | "
            + " / ".join(f"{r.mean_pairs:.1f}" for r in rs)
            + " |"
        )
    print("\n### Power of the other designs to accept +5 / +10 / +20 % (rho 0.5, offset 3 %)\n")
    print("| design | +5 % | +10 % | +20 % |")
    print("|---|---|---|---|")
    ref = {"rho": 0.5, "offset": 0.03}
    for d, name in zip(designs[:-1], names[:-1], strict=True):
        rs = [run(d, ref, e) for e in EFFECTS[1:]]
        print(f"| {name} | " + " | ".join(_pct(r.power) for r in rs) + " |")
    reference = Scenario(rho=0.5, offset=0.03, candidates=a.candidates)
    n_fixed, s_res, f_res = fixed_equivalent(seq, reference, sims=a.sims, seed=a.seed)
    ref_pairs = seq_pairs.get("rho 0.5, offset 3%") or [run(seq, ref, e).mean_pairs for e in EFFECTS]
    print(
        f"\n### Pairs against the fixed design with the same error rates (rho 0.5, offset 3 %)\n\n"
        f"The sequential design accepts +10 % in {_pct(s_res.power)} of campaigns; the fewest fixed pairs that "
        f"match it: **{n_fixed}** ({_pct(f_res.power)}).\n"
    )
    print("| true effect | 0 | +5 % | +10 % | +20 % | mean |")
    print("|---|---|---|---|---|---|")
    mean = sum(ref_pairs) / len(ref_pairs)
    print("| sequential, expected pairs | " + " | ".join(f"{p:.2f}" for p in ref_pairs) + f" | {mean:.2f} |")
    print(f"| fixed design | {n_fixed} | {n_fixed} | {n_fixed} | {n_fixed} | {n_fixed} |")
    print(
        "| sequential / fixed | " + " | ".join(f"{p / n_fixed:.0%}" for p in ref_pairs) + f" | {mean / n_fixed:.0%} |"
    )
    elapsed = time.perf_counter() - t0
    print(f"\n({elapsed:.0f} s)")
    if a.write_equivalents:
        designs = {
            dz.design_key(seq): {
                "fixed_pairs": n_fixed,
                "sequential_power_at_twice_min_effect": s_res.power,
                "fixed_power_at_twice_min_effect": f_res.power,
            }
        }
        for lo, hi in SHIPPED_OTHER:  # the CPU demo's shorter design
            other = sequential_design(lo, hi)
            n, s2, f2 = fixed_equivalent(other, reference, sims=a.sims, seed=a.seed)
            designs[dz.design_key(other)] = {
                "fixed_pairs": n,
                "sequential_power_at_twice_min_effect": s2.power,
                "fixed_power_at_twice_min_effect": f2.power,
            }
            print(f"sequential {lo}-{hi}: the fixed design with the same error rates has {n} pairs")
        path = dz.FIXED_EQUIVALENTS
        path.write_text(
            json.dumps(
                {
                    "made_by": "scripts/calibrate.py --write-equivalents",
                    "sims": a.sims,
                    "seed": a.seed,
                    "reference": asdict(reference),
                    "designs": designs,
                },
                indent=2,
            )
            + "\n"
        )
        print(f"wrote {path}")
    if a.out:
        a.out.write_text(json.dumps({"seconds": elapsed, "results": results}, indent=2) + "\n")


if __name__ == "__main__":
    main()

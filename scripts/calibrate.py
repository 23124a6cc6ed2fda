"""Calibration of the shipped decision designs by simulation (docs/calibration.md).

    PYTHONPATH=. nice -n 10 python scripts/calibrate.py --sims 4000 --fixed-equivalents   # the tables of the docs
    PYTHONPATH=. python scripts/calibrate.py --quick                                     # a small grid, for a look

Every campaign is simulated through the analysis' own rules (reportgen.analysis.calibration calls
runlevel.look_stats / machine_stats / bounds / outcome and design.py's levels, batched over
simulations). Prints Markdown tables:

1. the A/A false-decision rate (accepted or rejected when nothing changed) of every design in every
   cell of the grid: AR(1) rho 0 / 0.5 / 0.8 x run offsets 0 / 3 / 6 %; a candidate three times
   noisier than the baseline; heavy-tailed (t, 3 df) run offsets; 1, 2 and 3 candidates; drift over
   the campaign; blocks from 2-4 machines with their own offsets and noise levels. Designs: fixed 3
   and 6 pairs, the GPU design (sequential 3-12) on the GPU profile's runs, the CPU demo's design
   (sequential 3-5) on the demo's own runs (16 steps, windows 4-9 / 10-15, two candidates), and the
   GPU design with the opt-in pool (gate 0.5) and with the old gate (0.10);
2. resized campaigns under the old rule (the union of the looks), which `reportgen run` now refuses;
3. the power table: accept +5 / +10 / +20 %, reject -10 / -20 %, expected pairs;
4. a candidate whose gain differs by machine (the machine effect carried into the interval or not);
5. the sequential designs against the fixed design of the same power and error rates
   (`--fixed-equivalents` writes reportgen/analysis/fixed_equivalents.json, which the report reads);
6. with `--quality`: the verdict with both halves (reportgen.analysis.calibration_quality): A/A false
   "worse quality", power to reject a quality loss of twice the margin, the accept rate of a real gain
   whose quality is the same, by the pair spread against the margin; and the throughput cells' A/A
   false decisions with the quality half joined against the speed half alone (same draws).

`--out FILE` writes every figure as JSON.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from reportgen.analysis import design as dz
from reportgen.analysis import document as doc
from reportgen.analysis import runlevel
from reportgen.analysis.calibration import (
    CPU_STEPS,
    CPU_WINDOWS,
    Result,
    Scenario,
    fixed_design,
    fixed_equivalent,
    sequential_design,
    simulate,
)
from reportgen.analysis.calibration_quality import (
    ACCEPTED,
    REJECTED,
    WORSE,
    JointResult,
    QualityScenario,
    simulate_joint,
)
from reportgen.specfile.model import QUALITY_MARGIN_DEFAULT

REF = Scenario(rho=0.5, offset=0.03, candidates=3)  # the reference cell: the GPU showcase's spec has 3 candidates
CPU = {"steps": CPU_STEPS, "windows": CPU_WINDOWS, "candidates": 2}  # the demo: baseline, A1, A3 in 16-step runs
# The quality half's reference cell: the spread (sd) of one pair's difference of the reward figure,
# measured on real runs of the learning workload with a seed per block (docs/calibration.md#training-quality).
QUALITY_SD = 0.014
QUALITY_SPREADS = (QUALITY_SD, 0.02, 0.04, 0.06)  # the measured cell, and harder ones (a noisier reward)
GPU_DESIGN = (3, 12)  # scripts/recipes/default.toml, profiles gpu and gpu2
CPU_DESIGN = (3, 5)  # the CPU demo (the default profile)


def cells_of(quick: bool) -> list[tuple[str, Scenario]]:
    """`cells`, for the tables that take the grid as it is."""
    return cells(quick)


def cells(quick: bool) -> list[tuple[str, Scenario]]:
    """The grid of item 1 of issue 32 (and issue 33's machine cells)."""
    out = [
        (f"rho {r}, offset {o:.0%}", replace(REF, rho=r, offset=o)) for r in (0.0, 0.5, 0.8) for o in (0, 0.03, 0.06)
    ]
    out += [
        ("candidate x3 noisier", replace(REF, spread=3.0)),
        ("candidate x3 noisier, rho 0.8, offset 6%", replace(REF, spread=3.0, rho=0.8, offset=0.06)),
        ("t3 run offsets", replace(REF, tails="t3")),
        ("t3 run offsets, offset 6%", replace(REF, tails="t3", offset=0.06)),
        ("t3 and x3 noisier", replace(REF, tails="t3", spread=3.0)),
        ("1 candidate", replace(REF, candidates=1)),
        ("2 candidates", replace(REF, candidates=2)),
        ("drift -10%", replace(REF, trend=-0.10)),
        ("2 machines, offsets 10%, noise x1-x2", replace(REF, machines=2, machine_offset=0.10, machine_noise=2.0)),
        ("3 machines, offsets 10%, noise x1-x3", replace(REF, machines=3, machine_offset=0.10, machine_noise=3.0)),
        ("4 machines, offsets 10%, noise x1-x3", replace(REF, machines=4, machine_offset=0.10, machine_noise=3.0)),
    ]
    if quick:
        keep = {"rho 0.5, offset 3%", "rho 0.8, offset 6%", "candidate x3 noisier", "t3 run offsets"}
        keep |= {"2 machines, offsets 10%, noise x1-x2"}
        out = [c for c in out if c[0] in keep]
    return out


def _pct(x: float) -> str:
    return f"{x * 100:.1f}%"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--sims", type=int, default=None, help="campaigns per cell (default 4000; 300 with --quick)")
    ap.add_argument("--seed", type=int, default=20261201)
    ap.add_argument("--quick", action="store_true", help="fewer cells and campaigns: a look, and the test's run")
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--fixed-equivalents", "--write-equivalents", dest="equivalents", action="store_true")
    ap.add_argument("--quality", action="store_true", help="only the tables of the verdict with both halves (item 6)")
    a = ap.parse_args(argv)
    if a.quality:
        return quality_tables(sims=a.sims or (300 if a.quick else 4000), seed=a.seed, quick=a.quick, out=a.out)
    sims = a.sims or (300 if a.quick else 4000)
    t0 = time.perf_counter()
    results: list[dict[str, object]] = []

    def run(design: doc.Design, sc: Scenario, name: str, **kw: object) -> Result:
        r = simulate(design, sc, sims=sims, seed=a.seed, **kw)  # type: ignore[arg-type]
        results.append(
            {
                "design": name,
                "scenario": asdict(sc),
                "counts": r.counts,
                "sims": r.sims,
                "mean_pairs": r.mean_pairs,
                "mean_runs": r.mean_runs,
                **({"options": {k: str(v) for k, v in kw.items()}} if kw else {}),
            }
        )
        return r

    gpu = sequential_design(*GPU_DESIGN)
    cpu = sequential_design(*CPU_DESIGN)
    gpu_pool = sequential_design(*GPU_DESIGN, pool=True)

    pooled_cells = {"rho 0.5, offset 3%", "rho 0.8, offset 6%", "candidate x3 noisier", "t3 and x3 noisier"}
    pooled_cells |= {"candidate x3 noisier, rho 0.8, offset 6%", "1 candidate", "2 candidates"}

    def pooled_at(gate: float) -> Callable[[Scenario], Result | None]:
        def go(sc: Scenario) -> Result | None:
            if title_of[sc] not in pooled_cells:  # the pool's fit is slow: only the cells that tell
                return None
            old = runlevel.HETEROGENEITY
            runlevel.HETEROGENEITY = gate
            try:
                return run(gpu_pool, sc, f"sequential 3-12, pool, gate {gate}")
            finally:
                runlevel.HETEROGENEITY = old

        return go

    title_of = {sc: t for t, sc in cells(a.quick)}
    columns: list[tuple[str, Callable[[Scenario], Result | None]]] = [
        ("fixed 3", lambda sc: run(fixed_design(3), sc, "fixed 3")),
        ("fixed 6", lambda sc: run(fixed_design(6), sc, "fixed 6")),
        ("**GPU: sequential 3-12**", lambda sc: run(gpu, sc, "sequential 3-12")),
        ("CPU demo: sequential 3-5, its runs", lambda sc: run(cpu, replace(sc, **CPU), "sequential 3-5 (CPU runs)")),  # type: ignore[arg-type]
        ("3-12 + pool, gate 0.5", pooled_at(0.5)),
        ("3-12 + pool, old gate 0.10", pooled_at(0.10)),
    ]
    print(
        f"{sims} simulated campaigns per cell, seed {a.seed}. Reference cell: CV 10 %, rho 0.5, run offset 3 %, "
        f"3 candidates, 48-step runs, windows 8-20 / 21-33 / 34-47. GPU design: pairs 3-12 at "
        f"{gpu.look_confidence:.2%} per look (exact t level), futility {gpu.futility:.0%}; CPU demo: pairs 3-5 at "
        f"{cpu.look_confidence:.2%}, 16-step runs, windows 4-9 / 10-15, 2 candidates.\n"
    )
    print("### A/A false decisions (accepted or rejected; at most 5 % wanted; ± Monte Carlo standard error)\n")
    print("| cell | " + " | ".join(c[0] for c in columns) + " |")
    print("|---" * (len(columns) + 1) + "|")
    worst: dict[str, tuple[float, str]] = {}
    for title, sc in cells(a.quick):
        row = []
        for name, go in columns:
            r = go(sc)
            if r is None:
                row.append("")
                continue
            fd = r.false_decisive
            row.append(f"{_pct(fd)} ± {_pct(r.mc_se('accepted', 'rejected'))}")
            if fd > worst.get(name, (-1.0, ""))[0]:
                worst[name] = (fd, title)
        print(f"| {title} | " + " | ".join(row) + " |")
    print("\nWorst cell per design: " + "; ".join(f"{n.strip('*')} {_pct(v)} ({t})" for n, (v, t) in worst.items()))

    print("\n### Resized campaigns under the old rule (the union of the looks), now refused by `reportgen run`\n")
    print("| resize | reference cell | rho 0.8, offset 6% |")
    print("|---|---|---|")
    resizes = [
        ("fixed 3, then until = decided (3-12)", fixed_design(3), list(range(3, 13)), True),
        ("fixed 3, then repeats = 6", fixed_design(3), [6], False),
        ("sequential 3-5, then max_pairs = 12", sequential_design(3, 5), list(range(3, 13)), True),
    ]
    for title, old, looks, seq in resizes:
        union = dz.make(
            sequential=seq,
            looks=looks,
            min_pairs=3,
            confidence=0.95,
            min_effect=0.05,
            pool=False,
            interleaved=True,
            prior_looks=old.looks,
        )
        rs = [run(union, sc, f"resized: {title}", before=old) for sc in (REF, replace(REF, rho=0.8, offset=0.06))]
        print(
            f"| {title} | "
            + " | ".join(f"{_pct(r.false_decisive)} ± {_pct(r.mc_se('accepted', 'rejected'))}" for r in rs)
            + " |"
        )

    print("\n### Power: accept a gain, reject a loss (first candidate), and expected pairs\n")
    print(
        "| design, cell | accept +5 % | accept +10 % | reject -10 % | accept +20 % | reject -20 % | pairs at 0 / +10 / -10 / +20 % |"
    )
    print("|---|---|---|---|---|---|---|")
    power_rows = [
        ("GPU 3-12, **reference cell**", gpu, REF),
        ("GPU 3-12, rho 0.8, offset 6%", gpu, replace(REF, rho=0.8, offset=0.06)),
        ("GPU 3-12, candidate x3 noisier", gpu, replace(REF, spread=3.0)),
        ("GPU 3-12, t3 run offsets", gpu, replace(REF, tails="t3")),
        ("GPU 3-12, t3 run offsets, offset 6%", gpu, replace(REF, tails="t3", offset=0.06)),
        ("GPU 3-12, 1 candidate", gpu, replace(REF, candidates=1)),
        (
            "GPU 3-12, 2 machines, gain varies 5% by machine",
            gpu,
            replace(REF, machines=2, machine_offset=0.1, interaction=0.05),
        ),
        ("3-16, rho 0.8, offset 6%", sequential_design(3, 16), replace(REF, rho=0.8, offset=0.06)),
        ("3-16, rho 0.8, offset 6%, t3", sequential_design(3, 16), replace(REF, rho=0.8, offset=0.06, tails="t3")),
        ("CPU demo 3-5, its runs", cpu, replace(REF, **CPU)),  # type: ignore[arg-type]
        ("CPU demo 3-5, its runs, x3 noisier", cpu, replace(REF, spread=3.0, **CPU)),  # type: ignore[arg-type]
        ("3-8 on the CPU demo's runs", sequential_design(3, 8), replace(REF, **CPU)),  # type: ignore[arg-type]
        ("3-12 on the CPU demo's runs", gpu, replace(REF, **CPU)),  # type: ignore[arg-type]
        ("fixed 3", fixed_design(3), REF),
        ("fixed 6", fixed_design(6), REF),
    ]
    if a.quick:
        power_rows = power_rows[:3] + power_rows[9:10]
    for title, d, sc in power_rows:
        r = {e: run(d, replace(sc, effect=e), title) for e in (0.0, 0.05, 0.10, -0.10, 0.20, -0.20)}
        print(
            f"| {title} | {_pct(r[0.05].power)} | {_pct(r[0.10].power)} | {_pct(r[-0.10].reject_power)} | "
            f"{_pct(r[0.20].power)} | {_pct(r[-0.20].reject_power)} | "
            + " / ".join(f"{r[e].mean_pairs:.1f}" for e in (0.0, 0.10, -0.10, 0.20))
            + " |"
        )

    print("\n### A gain that differs by machine, none on average (sd 5 % from machine to machine; GPU 3-12)\n")
    print("| machines | machine effect in the interval | plain paired t |")
    print("|---|---|---|")
    for m in (2, 3, 4) if not a.quick else (2,):
        sc = replace(REF, machines=m, machine_offset=0.10, interaction=0.05)
        on = run(gpu, sc, "interaction, machine model")
        off = run(gpu, sc, "interaction, plain t", machine_model=False)
        print(f"| {m} | {_pct(on.false_decisive)} | {_pct(off.false_decisive)} |")

    print("\n### Pairs against the fixed design of the same power and error rates (reference cell)\n")
    print(
        "| design | power at twice min_effect | fixed pairs, same power | expected pairs at 0 / +5 / +10 / +20 % | mean | sequential / fixed |"
    )
    print("|---|---|---|---|---|---|")
    equivalents: dict[str, dict[str, float | int]] = {}
    for name, d, sc in (("GPU 3-12", gpu, REF), ("CPU demo 3-5, its runs", cpu, replace(REF, **CPU))):  # type: ignore[arg-type]
        n_fixed, s_res, f_res = fixed_equivalent(d, sc, sims=sims, seed=a.seed)
        pairs = [run(d, replace(sc, effect=e), f"{name} pairs").mean_pairs for e in (0.0, 0.05, 0.10, 0.20)]
        mean = sum(pairs) / len(pairs)
        print(
            f"| {name} | {_pct(s_res.power)} | {n_fixed} ({_pct(f_res.power)}) | "
            + " / ".join(f"{p:.2f}" for p in pairs)
            + f" | {mean:.2f} | {' / '.join(f'{p / n_fixed:.0%}' for p in pairs)}; mean {mean / n_fixed:.0%} |"
        )
        equivalents[dz.design_key(d)] = {
            "fixed_pairs": n_fixed,
            "sequential_power_at_twice_min_effect": s_res.power,
            "fixed_power_at_twice_min_effect": f_res.power,
            "sequential_mean_pairs": mean,
        }
    elapsed = time.perf_counter() - t0
    print(f"\n({elapsed:.0f} s)")
    if a.equivalents:
        path = dz.FIXED_EQUIVALENTS
        path.write_text(
            json.dumps(
                {
                    "made_by": "scripts/calibrate.py --fixed-equivalents",
                    "sims": sims,
                    "seed": a.seed,
                    "reference": asdict(REF),
                    "designs": equivalents,
                },
                indent=2,
            )
            + "\n"
        )
        print(f"wrote {path}")
    if a.out:
        a.out.write_text(json.dumps({"seconds": elapsed, "results": results}, indent=2) + "\n")
    return 0


def quality_tables(*, sims: int, seed: int, quick: bool, out: Path | None) -> int:
    """Item 6: the verdict with both halves, on the grid's reference cells (docs/calibration.md#training-quality)."""
    t0 = time.perf_counter()
    rows: list[dict[str, object]] = []
    gpu = sequential_design(*GPU_DESIGN)
    cpu = sequential_design(*CPU_DESIGN)
    m = QUALITY_MARGIN_DEFAULT
    cpu_sc = replace(REF, **CPU)  # type: ignore[arg-type]

    def run(d: doc.Design, sc: Scenario, q: QualityScenario | None, name: str) -> JointResult:
        r = simulate_joint(d, sc, q, sims=sims, seed=seed)
        rows.append(
            {
                "design": name,
                "scenario": asdict(sc),
                "quality": asdict(q) if q else None,
                "counts": r.counts,
                "sims": r.sims,
                "mean_pairs": r.mean_pairs,
            }
        )
        return r

    print(
        f"{sims} simulated campaigns per cell, seed {seed}; the quality half's margin {m:g} (the default), its "
        f"reference spread of one pair's difference {QUALITY_SD:g} (measured, docs/calibration.md#training-quality).\n"
    )
    print("### Training quality: A/A false 'worse', power at twice the margin, and what the half costs a real gain\n")
    print(
        "| design, cell | pair sd | A/A: rejected on quality | loss of 2 x margin, +10 % faster: rejected on quality "
        "| loss of 2 x margin, no speed change: rejected on quality | +10 % faster, same quality: accepted "
        "(speed alone) | pairs at +10 %, same quality (speed alone) |"
    )
    print("|---|---|---|---|---|---|---|")
    spreads = (QUALITY_SD,) if quick else QUALITY_SPREADS
    cells = [("GPU 3-12, reference cell", gpu, REF, "normal"), ("GPU 3-12, t3 pair differences", gpu, REF, "t3")]
    cells += [("CPU demo 3-5, its runs", cpu, cpu_sc, "normal")]
    for title, d, sc, tails in cells:
        for sd in spreads if tails == "normal" else (QUALITY_SD,):
            q0 = QualityScenario(sd=sd, margin=m, tails=tails)
            aa = run(d, sc, q0, f"{title}, A/A")
            loss = QualityScenario(sd=sd, effect=-2 * m, margin=m, tails=tails)
            fast_loss = run(d, replace(sc, effect=0.10), loss, f"{title}, +10%, loss 2m")
            slow_loss = run(d, sc, loss, f"{title}, 0%, loss 2m")
            gain = run(d, replace(sc, effect=0.10), q0, f"{title}, +10%, same quality")
            alone = run(d, replace(sc, effect=0.10), None, f"{title}, +10%, speed alone")
            print(
                f"| {title} | {sd:g} | {_pct(aa.worse)} ± {_pct(aa.mc_se(WORSE))} | {_pct(fast_loss.worse)} | "
                f"{_pct(slow_loss.worse)} | {_pct(gain.rate(ACCEPTED))} ({_pct(alone.rate(ACCEPTED))}) | "
                f"{gain.mean_pairs:.1f} ({alone.mean_pairs:.1f}) |"
            )
    print("\n### Throughput cells with the quality half joined (A/A: accepted or rejected on speed; same draws)\n")
    noisy = QUALITY_SPREADS[-1]
    print(
        f"| cell | GPU 3-12, speed alone | GPU 3-12, both halves | GPU 3-12, both halves, pair sd {noisy:g} "
        "| CPU demo 3-5, speed alone | CPU demo 3-5, both halves |"
    )
    print("|---|---|---|---|---|---|")
    q0 = QualityScenario(sd=QUALITY_SD, margin=m)
    for title, sc in cells_of(quick):
        parts = []
        for d, cell, extra in ((gpu, sc, True), (cpu, replace(sc, **CPU), False)):  # type: ignore[arg-type]
            alone = run(d, cell, None, f"{title}, speed alone")
            both = run(d, cell, q0, f"{title}, both halves")
            parts += [
                f"{_pct(alone.speed_false_decisive)} ± {_pct(alone.mc_se(ACCEPTED, REJECTED))}",
                f"{_pct(both.speed_false_decisive)} (pairs {both.mean_pairs:.2f} vs {alone.mean_pairs:.2f})",
            ]
            if extra:
                wide = run(d, cell, replace(q0, sd=noisy), f"{title}, both halves, sd {noisy:g}")
                parts.append(f"{_pct(wide.speed_false_decisive)} (pairs {wide.mean_pairs:.2f})")
        print(f"| {title} | " + " | ".join(parts) + " |")
    elapsed = time.perf_counter() - t0
    print(f"\n({elapsed:.0f} s)")
    if out:
        out.write_text(json.dumps({"seconds": elapsed, "results": rows}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

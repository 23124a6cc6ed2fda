#!/usr/bin/env python3
"""The task-01 plan's table beside one or more showcases, from their analysis.json files.

    python3 scripts/showcase_table.py runs/showcase-1xh200-grpo-offload-r2 runs/showcase-2xh200-grpo-offload

Prints Markdown for docs/showcase-h200.md and docs/two-gpu.md: one row per figure of the plan's
table (response and total tokens/s, step time mean and p95, actor train time, GPU utilization and
peak memory of every GPU, completed steps), then A1's verdict with its interval, A2 and A3; one
column for the plan (baseline -> optimized, from /work/shared/reference/protocol.md, the digest of
the plan) and one per showcase (baseline -> A1, change). Nothing is typed by hand into the table.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

# The task-01 plan's table (2 x A100-SXM4-80GB, Qwen3-VL-4B, 200 steps): label -> (baseline, optimized, change).
PLAN: dict[str, tuple[str, str, str]] = {
    "response tokens/s": ("250.177", "301.918", "+20.68 %"),
    "total tokens/s": ("430.526", "524.496", "+21.83 %"),
    "step time mean": ("31.989 s", "25.939 s", "-18.91 %"),
    "step time p95": ("36.958 s", "31.136 s", "-15.75 %"),
    "actor train time": ("10.681 s", "4.060 s", "-61.99 %"),
    "GPU utilization mean": ("50.688 %", "66.042 %", "+30.29 %"),
    "peak memory per GPU": ("73 152 MiB", "72 766 MiB", "-0.53 %"),
    "completed steps": ("200", "200", "0"),
}
PLAN_A2 = "OOM at step 9"
PLAN_A3 = "-5.75 % response tokens/s: rejected"
UNITS = {"tok/s": "", "s": " s", "%": " %", "MiB": " MiB", "steps": ""}


def _num(value: Any, unit: str) -> str:
    if not isinstance(value, (int, float)):
        return "n/a" if value is None else str(value)
    digits = 0 if unit in ("MiB", "steps") else (3 if unit == "s" else 1)
    return f"{value:,.{digits}f}".replace(",", " ") + UNITS.get(unit, f" {unit}")


def _change(change: Any) -> str:
    return f"{change:+.2%}".replace("%", " %") if isinstance(change, (int, float)) else ""


def _cell(row: dict[str, Any] | None) -> str:
    if row is None:
        return "n/a"
    unit = str(row.get("unit") or "")
    text = f"{_num(row.get('baseline'), unit)} -> {_num(row.get('candidate'), unit)}"
    ch = _change(row.get("change"))
    return f"{text} ({ch})" if ch else text


def _interval(c: dict[str, Any]) -> str:
    iv = c.get("interval") or {}
    if not isinstance(iv.get("estimate"), (int, float)):
        return ""
    conf = f"{iv.get('confidence', 0.95):.0%}"
    return f"{iv['estimate'] - 1:+.1%}, {conf} interval {iv['low'] - 1:+.1%} to {iv['high'] - 1:+.1%}".replace(
        "%", " %"
    )


def _verdict(c: dict[str, Any] | None) -> str:
    if c is None:
        return "not run"
    v = c.get("verdict") or {}
    status = str(v.get("status", "?"))
    if v.get("cause"):
        return f"{status}: {v['cause']}"
    iv = _interval(c)
    return f"{status} ({iv})" if iv else status


def rows_of(analysis: dict[str, Any]) -> dict[str, str]:
    """Label -> cell for one showcase: A1's headline rows, every GPU's rows, and the verdicts."""
    comps = {c.get("candidate"): c for c in analysis.get("comparisons", [])}
    a1 = comps.get("A1") or {}
    head = {r.get("label"): r for r in a1.get("headline", [])}
    out = {label: _cell(head.get(label)) for label in PLAN if label not in ("peak memory per GPU",)}
    gpus = sorted(str(r["metric"]).split("/")[1] for r in a1.get("headline", []) if "/mem_peak_mib" in str(r["metric"]))
    for i in gpus:
        out[f"GPU {i} utilization mean"] = _cell(head.get(f"GPU {i} utilization mean"))
        out[f"peak memory GPU {i}"] = _cell(head.get(f"peak memory GPU {i}"))
    out["A1 verdict"] = _verdict(comps.get("A1"))
    out["A2 (A1 without recompute)"] = _verdict(comps.get("A2"))
    out["A3 (A1 + a smaller token budget)"] = _verdict(comps.get("A3"))
    return out


def table(named: list[tuple[str, dict[str, Any]]]) -> str:
    """The Markdown table: plan column, then one column per (name, analysis)."""
    per = [rows_of(a) for _, a in named]
    labels: list[str] = []
    for rows in per:
        labels += [label for label in rows if label not in labels]
    plan = {label: f"{b} -> {o} ({c})" for label, (b, o, c) in PLAN.items()}
    plan["A1 verdict"] = "accepted (+20.68 %, every window)"
    plan["A2 (A1 without recompute)"] = PLAN_A2
    plan["A3 (A1 + a smaller token budget)"] = PLAN_A3
    head = ["metric", "plan: baseline -> optimized", *[f"{name}: baseline -> A1" for name, _ in named]]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for label in labels:
        if label.startswith(("GPU ", "peak memory GPU")):
            plan_cell = plan["GPU utilization mean" if "utilization" in label else "peak memory per GPU"]
        else:
            plan_cell = plan.get(label, "")
        lines.append("| " + " | ".join([label, plan_cell, *[rows.get(label, "n/a") for rows in per]]) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("experiments", nargs="+", type=Path, help="experiment folders holding analysis.json")
    opts = p.parse_args(argv)
    named = []
    for exp in opts.experiments:
        path = exp / "analysis.json"
        try:
            named.append((exp.name, json.loads(path.read_text(encoding="utf-8"))))
        except (OSError, ValueError) as exc:
            print(f"error: {path}: {exc}; run `reportgen analyze {exp}` first", file=sys.stderr)
            return 2
    print(table(named))
    return 0


if __name__ == "__main__":
    sys.exit(main())

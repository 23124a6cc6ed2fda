"""Reward curves of GRPO runs: a per-window table, and the curves as an SVG.

    python scripts/reward_curves.py runs/grpo-offload-default --arm baseline --svg docs/img/reward-cpu.svg
    python scripts/reward_curves.py runs/EXP/baseline/1 runs/EXP/A1/1 --windows 8-20,34-47

Each argument is a run folder (holding metrics.parquet) or an experiment folder (its formal runs of
`--arm`, every arm without it). For each run the table gives the mean `rollout/raw_reward` in the
first and last window (the experiment's declared windows, `--windows`, else the first and last
quarter of the steps) and their difference, the share of prompt groups whose rewards were all equal
(`rollout/zero_advantage_groups`: no advantage, nothing learnt from them), the largest
|`train/pg_loss`| (on-policy GRPO with one update per rollout has a policy loss of 0 up to rounding
whatever it learns: the group-normalised advantages sum to 0 at ratio 1), the warm start the run
began from (made or read, seconds) and the run's duration. `--svg` draws the reward per step of
each run, the windows shaded: a figure of docs/workload.md. Reads the run folders through
reportgen's store; writes nothing else.
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
from dataclasses import dataclass
from pathlib import Path
from xml.sax.saxutils import escape

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from reportgen.store import layout
from reportgen.store.experiment import read_spec
from reportgen.store.run import StoredRun
from reportgen.store.run_folder import read_run_folder

REWARD = "rollout/raw_reward"
ZERO = "rollout/zero_advantage_groups"
PG = "train/pg_loss"


@dataclass(frozen=True)
class Curve:
    """One run's reward per step and what the table says of it."""

    label: str
    steps: list[int]
    reward: list[float]
    first: float | None
    last: float | None
    zero_groups: float | None
    pg_max: float | None
    warm_start: str
    duration_s: float | None


def _series(run: StoredRun, key: str) -> list[tuple[int, float]]:
    if key not in run.steps.columns:
        return []
    col = run.steps[key].dropna()
    return [(int(s), float(v)) for s, v in zip(col.index, col.to_numpy(dtype=float), strict=True) if math.isfinite(v)]


def _mean(pairs: list[tuple[int, float]], lo: int, hi: int) -> float | None:
    vals = [v for s, v in pairs if lo <= s <= hi]
    return statistics.fmean(vals) if vals else None


def windows_of(exp_dir: Path | None, steps: int, given: str | None) -> tuple[tuple[int, int], tuple[int, int]]:
    """(first, last) window: `--windows A-B,C-D`, else the experiment's declared ones, else quarters."""
    if given:
        parts = [tuple(int(x) for x in w.split("-")) for w in given.split(",")]
        return (parts[0][0], parts[0][1]), (parts[-1][0], parts[-1][1])
    if exp_dir is not None and (exp_dir / layout.EXPERIMENT_SPEC).is_file():
        w = read_spec(exp_dir).analysis.windows
        if w:
            return (w[0].start, w[0].end), (w[-1].start, w[-1].end)
    q = max(1, steps // 4)
    return (0, q - 1), (steps - q, steps - 1)


def curve(run: StoredRun, label: str, wins: tuple[tuple[int, int], tuple[int, int]]) -> Curve:
    reward = _series(run, REWARD)
    zero = [v for _, v in _series(run, ZERO)]
    pg = [abs(v) for _, v in _series(run, PG)]
    said = run.manifest.workload
    if said is None or said.version is None:
        start = "v1 (random init)"
    elif said.warm_start_sha256 is None:
        start = f"{said.version}, random init"
    else:
        how = "made" if said.warm_start_made else "read"
        start = f"{said.version}, {said.warm_start_sha256[:12]} {how} in {said.warm_start_seconds:.1f} s"
    return Curve(
        label=label,
        steps=[s for s, _ in reward],
        reward=[v for _, v in reward],
        first=_mean(reward, *wins[0]),
        last=_mean(reward, *wins[1]),
        zero_groups=statistics.fmean(zero) if zero else None,
        pg_max=max(pg) if pg else None,
        warm_start=start,
        duration_s=float(run.manifest.duration_s) if run.manifest.duration_s is not None else None,
    )


def _num(v: float | None, fmt: str) -> str:
    return "n/a" if v is None else format(v, fmt)


def table(curves: list[Curve], wins: tuple[tuple[int, int], tuple[int, int]]) -> str:
    (a, b), (c, d) = wins
    head = (
        f"| run | reward, steps {a}-{b} | reward, steps {c}-{d} | rise | groups with no advantage | "
        "max abs pg_loss | warm start | duration |"
    )
    out = [head, "|---|---|---|---|---|---|---|---|"]
    for k in curves:
        rise = k.last - k.first if k.first is not None and k.last is not None else None
        out.append(
            f"| {k.label} | {_num(k.first, '.3f')} | {_num(k.last, '.3f')} | {_num(rise, '+.3f')} | "
            f"{_num(None if k.zero_groups is None else 100 * k.zero_groups, '.0f')} % | {_num(k.pg_max, '.1e')} | "
            f"{k.warm_start} | {_num(k.duration_s, '.0f')} s |"
        )
    return "\n".join(out) + "\n"


COLORS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#17becf", "#7f7f7f")


def svg(curves: list[Curve], wins: tuple[tuple[int, int], tuple[int, int]], title: str) -> str:
    """The reward per step of each run on one chart, the first and last windows shaded."""
    w, h, left, right, top, bottom = 720, 300, 48, 160, 28, 36
    last_step = max((max(k.steps) for k in curves if k.steps), default=1)
    pw, ph = w - left - right, h - top - bottom

    def x(step: float) -> float:
        return left + pw * step / max(1, last_step)

    def y(v: float) -> float:
        return top + ph * (1 - v)

    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {w} {h}" width="{w}" height="{h}" '
        'font-family="sans-serif" font-size="11">',
        f"<title>{escape(title)}</title>",
        f'<text x="{left}" y="16" font-size="13">{escape(title)}</text>',
    ]
    for lo, hi in wins:
        out.append(
            f'<rect x="{x(lo):.1f}" y="{top}" width="{x(hi) - x(lo):.1f}" height="{ph}" fill="#000" opacity="0.06"/>'
        )
    for v in (0.0, 0.25, 0.5, 0.75, 1.0):
        out.append(f'<line x1="{left}" x2="{left + pw}" y1="{y(v):.1f}" y2="{y(v):.1f}" stroke="#ccc"/>')
        out.append(f'<text x="{left - 6}" y="{y(v) + 4:.1f}" text-anchor="end">{v:g}</text>')
    for s in range(0, last_step + 1, max(1, round(last_step / 8))):
        out.append(f'<text x="{x(s):.1f}" y="{top + ph + 16}" text-anchor="middle">{s}</text>')
    out.append(f'<text x="{left + pw / 2:.1f}" y="{h - 4}" text-anchor="middle">step</text>')
    out.append(
        f'<text x="12" y="{top + ph / 2:.1f}" transform="rotate(-90 12 {top + ph / 2:.1f})" '
        'text-anchor="middle">rollout/raw_reward</text>'
    )
    for i, k in enumerate(curves):
        color = COLORS[i % len(COLORS)]
        points = " ".join(f"{x(s):.1f},{y(v):.1f}" for s, v in zip(k.steps, k.reward, strict=True))
        out.append(f'<polyline points="{points}" fill="none" stroke="{color}" stroke-width="1.5"/>')
        ly = top + 14 * i + 8
        out.append(
            f'<line x1="{left + pw + 10}" x2="{left + pw + 28}" y1="{ly}" y2="{ly}" stroke="{color}" stroke-width="2"/>'
        )
        out.append(f'<text x="{left + pw + 32}" y="{ly + 4}">{escape(k.label)}</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def runs_of(path: Path, arm: str | None) -> list[tuple[Path, str, int, Path | None]]:
    """(run folder, arm, repeat, experiment folder) of a run folder or an experiment folder's formal runs."""
    if (path / layout.MANIFEST).is_file():
        return [(path, path.parent.name, int(path.name), path.parent.parent)]
    found = []
    for a, repeat, run_dir in layout.iter_runs(path):
        if (arm is None or a == arm) and not a.startswith("profile-"):
            found.append((run_dir, a, repeat, path))
    return found


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("paths", nargs="+", type=Path, help="run folders or experiment folders")
    p.add_argument("--arm", help="of an experiment folder, this arm's runs only")
    p.add_argument("--windows", help="first and last window, e.g. 4-9,10-15 (default: the experiment's)")
    p.add_argument("--svg", type=Path, help="write the curves here")
    p.add_argument("--title", default="Reward per step")
    args = p.parse_args(argv)
    found = [r for path in args.paths for r in runs_of(path, args.arm)]
    if not found:
        p.error("no run folder found")
    runs = [(read_run_folder(d, a, rep, shown=False), f"{a} {rep}", exp) for d, a, rep, exp in found]
    steps = max((len(_series(r, REWARD)) for r, _, _ in runs), default=0)
    wins = windows_of(runs[0][2], steps, args.windows)
    curves = [curve(r, label, wins) for r, label, _ in runs]
    print(table(curves, wins), end="")
    if args.svg:
        args.svg.parent.mkdir(parents=True, exist_ok=True)
        args.svg.write_text(svg(curves, wins, args.title))
        print(f"wrote {args.svg}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Does the embedded workload learn on this machine? The GPU profile's baseline and A1, one run each.

    python3 scripts/device/learning_check.py OUT [--profile gpu] [--lr LR] [--spec scripts/recipes/default.toml]

Called by scripts/device/learning_check.sh on a GPU machine (the CPU demo with `--profile -`, which
is how it is tested). From the spec's profile it writes a spec of the baseline and A1 only, one
block (the recipe's seeds), no profiler runs, and runs it with `reportgen run` into
runs/learning-check-<profile>; then it prints, per run, the reward in the first and last window,
the share of prompt groups with no advantage, the largest |pg_loss|, the warm start (made or read,
seconds) and the run's duration (scripts/reward_curves.py), makes the warm start once more in a
fresh cache folder to check that this machine makes the same bytes, and writes the table, the curves
(SVG) and the experiment folder (tar.gz) into OUT.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tarfile
import time
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

import reward_curves  # noqa: E402

from reportgen.specfile.derive import toml_text  # noqa: E402
from reportgen.specfile.load import apply_profile  # noqa: E402
from reportgen.store.run_folder import read_run_folder  # noqa: E402

ROUNDING = 1e-6  # a |pg_loss| below this is float rounding of a sum that is 0


def check_spec(spec_path: Path, profile: str | None, name: str, lr: str | None) -> str:
    """The spec's profile cut down to the baseline and A1 in one block, paths absolute, as TOML."""
    raw = tomllib.loads(spec_path.read_text())
    raw = apply_profile(raw, profile, spec_path)
    raw.pop("profiler", None)
    raw["name"] = name
    raw["title"] = f"Learning check: the baseline and A1 of {spec_path.name}" + (f" ({profile})" if profile else "")
    raw["candidates"] = [c for c in raw["candidates"] if c["id"] == "A1"]
    raw["run"] = {**raw.get("run", {}), "until": "fixed", "repeats": 1, "order": "interleaved", "budget_minutes": 0}
    for key in ("min_pairs", "max_pairs"):
        raw["run"].pop(key, None)
    recipe = dict(raw["recipe"])
    recipe["script"] = str((spec_path.parent / recipe["script"]).resolve())
    recipe["workdir"] = str((spec_path.parent / recipe.get("workdir", ".")).resolve())
    if lr is not None:
        recipe["env"] = {**recipe.get("env", {}), "LR": lr}
    raw["recipe"] = recipe
    return toml_text(raw)


def argv_of(mapping: dict) -> list[str]:
    """A run's effective argv (flag -> value, True for a switch) back as arguments."""
    out: list[str] = []
    for flag, value in mapping.items():
        if value is True:
            out.append(flag)
        elif isinstance(value, list):
            out += [flag, *map(str, value)]
        elif value is not None:
            out += [flag, str(value)]
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("out", type=Path)
    p.add_argument("--profile", default="gpu", help="a profile of the spec, or - for none (the CPU demo)")
    p.add_argument("--spec", type=Path, default=ROOT / "scripts" / "recipes" / "default.toml")
    p.add_argument("--lr", help="the RL learning rate instead of the profile's (LR of the recipe)")
    p.add_argument("--runs", type=Path, default=ROOT / "runs")
    args = p.parse_args(argv)
    profile = None if args.profile == "-" else args.profile
    name = f"learning-check-{profile or 'cpu'}"
    args.out.mkdir(parents=True, exist_ok=True)
    spec_file = args.out / f"{name}.toml"
    spec_file.write_text(check_spec(args.spec, profile, name, args.lr))
    t0 = time.monotonic()
    code = subprocess.call(
        [sys.executable, "-m", "reportgen", "run", str(spec_file), "--runs", str(args.runs), "--new-campaign"],
        cwd=ROOT,
    )
    print(f"reportgen run: exit {code} after {time.monotonic() - t0:.0f} s", flush=True)
    exp = args.runs / name
    curves, mapping = [], None
    for arm in ("baseline", "A1"):
        run_dir = exp / arm / "1"
        if not (run_dir / "manifest.json").is_file():
            print(f"{arm}: no run folder", flush=True)
            continue
        run = read_run_folder(run_dir, arm, 1, shown=False)
        mapping = mapping or run.manifest.effective_argv
        steps = len(reward_curves._series(run, reward_curves.REWARD))
        wins = reward_curves.windows_of(exp, steps, None)
        curves.append(reward_curves.curve(run, f"{arm} 1", wins))
    if curves:
        text = reward_curves.table(curves, wins)
        print(text, end="", flush=True)
        (args.out / f"{name}.md").write_text(text)
        (args.out / f"{name}.svg").write_text(reward_curves.svg(curves, wins, f"Reward per step, {name}"))
        for k in curves:
            if k.pg_max is None:
                said = "not logged"
            elif k.pg_max > ROUNDING:
                said = f"non-zero (largest |pg_loss| {k.pg_max:.2e})"
            else:  # on-policy, one update per rollout: the group-normalised advantages sum to 0 at ratio 1
                said = f"zero up to rounding (largest |pg_loss| {k.pg_max:.1e}; 0 by construction on-policy)"
            zero = "n/a" if k.zero_groups is None else f"{100 * k.zero_groups:.0f} %"
            print(f"{k.label}: pg_loss {said}; prompt groups with no advantage {zero}", flush=True)
    if mapping:
        # The same flags into a fresh cache folder: does this machine make the same bytes again?
        fresh = args.out / "fresh-cache"
        t1 = time.monotonic()
        again = subprocess.run(
            [sys.executable, "-m", "reportgen.workloads.grpo.warm_start", *argv_of(dict(mapping))],
            cwd=ROOT,
            env={**os.environ, "REPORTGEN_CACHE": str(fresh)},
            capture_output=True,
            text=True,
        )
        line = next((x for x in (again.stdout + again.stderr).splitlines() if "warm start:" in x), again.stderr[-500:])
        print(f"warm start made again in a fresh cache ({time.monotonic() - t1:.0f} s): {line}", flush=True)
        first = curves[0].warm_start if curves else ""
        sha = line.split("sha256 ", 1)[-1][:12] if "sha256 " in line else None
        print(f"warm start deterministic on this machine: {sha is not None and sha in first}", flush=True)
        shutil.rmtree(fresh, ignore_errors=True)
    if exp.is_dir():
        with tarfile.open(args.out / f"{name}.tar.gz", "w:gz") as tar:
            tar.add(exp, arcname=name)
        print(f"packed {args.out / (name + '.tar.gz')}", flush=True)
    return code


if __name__ == "__main__":
    raise SystemExit(main())

"""The quiet-machine check on a real machine: a small campaign (baseline and A1, the same work) with
an intruder started beside A1 only, then what the analysis flagged, printed and written to a folder.

    PYTHONPATH=. python scripts/device/quiet_check.py --device cuda --out $OUT   # on the GPU machine
    PYTHONPATH=. python scripts/device/quiet_check.py --device cpu --out /tmp/q  # anywhere (a CPU hog)

With `--device cuda` every step of the stand-in trainer is a fixed number of bf16 matrix products
on the GPU, and the intruder is a second process doing the same on the same GPU: NVML lists it
among the GPU's processes (`gpu_process`) and it slows A1's steps down. With `--device cpu` the steps
are a fixed amount of Python arithmetic and the intruder a CPU hog (`cpu_load`). Either way the
intruder runs outside the runner's process tree, as another user's job would. Expected: A1's runs
carry the disturbance with the intruder named, a warning, and the comparison `invalid`
(`quiet_machine`: one arm disturbed far more than the other). The lead's GPU run of this script is
recorded in docs/provenance.md.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path

TRAINER = textwrap.dedent(
    """
    import argparse, time
    p = argparse.ArgumentParser()
    p.add_argument("--num-rollout", type=int, default=12)
    p.add_argument("--global-batch-size", type=int, default=4)
    p.add_argument("--device", default="cpu")
    p.add_argument("--work", type=int, default=40)
    p.add_argument("--optimizer-cpu-offload", action="store_true")  # the flag A1 removes: changes nothing here
    a, _ = p.parse_known_args()
    if a.device == "cuda":
        import torch
        x = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
        def work():
            for _ in range(a.work):
                x @ x
            torch.cuda.synchronize()
    else:
        def work():
            s = 0
            for i in range(a.work * 100_000):
                s += i * i
    work()  # warm-up outside the steps
    for step in range(a.num_rollout):
        t0 = time.perf_counter()
        work()
        st = time.perf_counter() - t0
        tokens = 1024.0
        print(f"[2026-08-05 10:11:12] data.py:1 - perf {step}: {{'perf/step_time': {st}, 'perf/step_resp_token_per_s': {tokens / st}, 'perf/step_token_per_s': {2 * tokens / st}, 'perf/actor_train_time': {st / 2}}}", flush=True)
        print(f"[2026-08-05 10:11:12] data.py:2 - rollout {step}: {{'rollout/raw_reward': 0.5, 'rollout/response_lengths': 256.0, 'rollout/num_samples': {a.global_batch_size}}}", flush=True)
        print(f"[2026-08-05 10:11:12] model.py:3 - step {step}: {{'train/loss': 0.1, 'train/grad_norm': 1.0}}", flush=True)
    """
)

RECIPE = textwrap.dedent(
    """\
    #!/bin/bash
    set -ex
    "${PYTHON}" trainer.py \\
       --num-rollout ${STEPS} \\
       --global-batch-size 4 \\
       --optimizer-cpu-offload \\
       --device ${DEVICE} \\
       --work ${WORK}
    """
)

SPEC = textwrap.dedent(
    """\
    name = "quiet-check-{device}"
    title = "Quiet-machine check: an intruder beside A1 only"
    hypothesis = "A1 does the same work as the baseline; only what runs beside it differs"

    [recipe]
    script = "recipe.sh"
    python = "{python}"
    entrypoint = "trainer.py"
    [recipe.env]
    STEPS = "{steps}"
    DEVICE = "{device}"
    WORK = "{work}"

    [workload]
    flags = ["--num-rollout", "--global-batch-size"]
    steps = {steps}

    [run]
    timeout_s = 600

    [analysis]
    warmup_steps = 2

    [[candidates]]
    id = "A1"
    title = "The same work (the offload flag does nothing here)"
    remove = ["--optimizer-cpu-offload"]
    """
)

INTRUDER = {
    "cuda": (
        "import torch, time\n"
        "x = torch.randn(8192, 8192, device='cuda', dtype=torch.bfloat16)\n"
        "while True:\n    x @ x\n    torch.cuda.synchronize()\n"
    ),
    "cpu": "while True: pass\n",
}


def start_intruder(device: str) -> int:
    """The intruder, outside this process's tree (its shell exits; init adopts it): its pid."""
    code = INTRUDER[device].replace("'", "'\"'\"'")
    out = subprocess.run(
        ["sh", "-c", f"{sys.executable} -c '{code}' >/dev/null 2>&1 & echo $!"],
        capture_output=True,
        text=True,
        check=True,
    )
    return int(out.stdout.strip())


def summary(doc: dict, intruder: int) -> list[str]:
    lines = [f"intruder: pid {intruder}"]
    for arm in doc["arms"]:
        for r in arm["runs"]:
            load = r.get("load") or {}
            lines.append(
                f"{arm['id']}/{r['repeat']}: {r['status']}, load samples {load.get('samples')}, disturbed "
                f"{load.get('disturbed')} {load.get('by_kind')}, flagged {load.get('flagged')}, overall {r['overall']}"
            )
            for d in r.get("disturbances") or []:
                lines.append(
                    f"  {d['kind']} {d['start_s']:.0f}-{d['end_s']:.0f} s (in windows: {d['in_window']}): {d['detail']}"
                )
    for c in doc["comparisons"]:
        quiet = next(g for g in c["guardrails"] if g["id"] == "quiet_machine")
        lines.append(
            f"{c['candidate']}: verdict {c['verdict']['status']}; quiet_machine {quiet['status']}: {quiet['reason']}"
        )
    lines += [f"warning: {w}" for w in doc["warnings"]]
    return lines


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--work", type=int, default=None, help="products (cuda) or 100k-loops (cpu) per step")
    ap.add_argument("--out", type=Path, required=True, help="where analysis.json and summary.txt go")
    ap.add_argument("--root", type=Path, default=Path("/tmp/reportgen-quiet-check"))
    args = ap.parse_args()
    work = args.work or (400 if args.device == "cuda" else 60)

    from reportgen.cli import main as reportgen

    shutil.rmtree(args.root, ignore_errors=True)
    recipes, runs = args.root / "recipe", args.root / "runs"
    recipes.mkdir(parents=True)
    (recipes / "trainer.py").write_text(TRAINER)
    (recipes / "recipe.sh").write_text(RECIPE)
    spec = recipes / "experiment.toml"
    spec.write_text(SPEC.format(device=args.device, python=sys.executable, steps=args.steps, work=work))
    name = f"quiet-check-{args.device}"
    run = subprocess.Popen(
        [sys.executable, "-m", "reportgen", "run", str(spec), "--runs", str(runs), "--no-profiler", "--no-analyze"]
    )
    a1 = runs / name / "A1" / "1" / "manifest.json"
    while not a1.is_file() and run.poll() is None:
        time.sleep(0.2)
    intruder = start_intruder(args.device)
    try:
        while run.poll() is None and json.loads(a1.read_text()).get("status") == "running":
            time.sleep(0.5)
    finally:
        subprocess.run(["kill", "-9", str(intruder)], check=False)
    if run.wait() != 0 or reportgen(["analyze", name, "--runs", str(runs)]) != 0:
        print("the campaign or its analysis failed", file=sys.stderr)
        return 1
    doc = json.loads((runs / name / "analysis.json").read_text())
    lines = summary(doc, intruder)
    print("\n".join(lines))
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "summary.txt").write_text("\n".join(lines) + "\n")
    shutil.copy(runs / name / "analysis.json", args.out / "analysis.json")
    return 0


if __name__ == "__main__":
    sys.exit(main())

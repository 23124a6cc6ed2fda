"""Benchmark how fast the command line answers: `reportgen --help` and each command's `--help`.

Each case starts `python -m reportgen [COMMAND] --help` as a new process (this checkout on
PYTHONPATH), --runs times, and takes the wall time from start to exit; what a user waits for at
the prompt, interpreter start-up included. One untimed start first, so that compiling the .pyc
files is not counted. Reported per case: the median wall time, the fastest and slowest run, whether
the median is within the target, and the median CPU time (user + system) of the process: on a
shared machine the wall time grows with the load beside it, the CPU time hardly. The first row,
`python -c pass`, is the floor: the interpreter's own start on this machine at this load.

Target (issue 31): at most 0.5 s, median of 5 runs. The commands are read from the Typer app, so a
new command is timed without changing this script. Usage:

    PYTHONPATH=. python scripts/bench_cli.py [--runs 5] [--target 0.5]

The machine's load average is printed first: on a shared machine it explains a slow run.
`tests/commands/test_startup.py` checks the cause of a slow start (a heavy library imported for
help) without timing anything.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

import typer.main

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from reportgen.cli import app  # noqa: E402


def time_help(args: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Wall seconds from starting `python -m reportgen ARGS` to its exit (it must succeed), and
    the CPU seconds it used."""
    return time_python(["-m", "reportgen", *args], env)


def time_python(args: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Wall and CPU seconds of `python ARGS`, start to exit."""
    cpu_before = _children_cpu()
    start = time.perf_counter()
    subprocess.run([sys.executable, *args], cwd=REPO, env=env, check=True, capture_output=True)
    return time.perf_counter() - start, _children_cpu() - cpu_before


def _children_cpu() -> float:
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)  # of the children waited for so far
    return ru.ru_utime + ru.ru_stime


def _row(label: str, runs: list[tuple[float, float]], verdict: str) -> None:
    times = [wall for wall, _ in runs]
    cpu = statistics.median(c for _, c in runs)
    print(
        f"{label:<24} {statistics.median(times):>9.3f} {min(times):>7.3f} {max(times):>7.3f}  {verdict:<13} {cpu:>6.3f}"
    )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5, help="starts per case (default 5)")
    ap.add_argument("--target", type=float, default=0.5, help="seconds the median may take (default 0.5)")
    args = ap.parse_args()
    env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    cases = [["--help"]] + [[name, "--help"] for name in sorted(typer.main.get_group(app).commands)]
    time_help(["--help"], env)  # compiles what is not compiled yet
    print(f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())} on {os.cpu_count()} cores")
    print(f"{'command':<24} {'median s':>9} {'min s':>7} {'max s':>7}  {f'within {args.target} s':<13} {'CPU s':>6}")
    floor = [time_python(["-c", "pass"], env) for _ in range(args.runs)]
    _row("python -c pass", floor, "(floor)")
    slow = 0
    for case in cases:
        runs = [time_help(case, env) for _ in range(args.runs)]
        ok = statistics.median(wall for wall, _ in runs) <= args.target
        slow += not ok
        _row("reportgen " + " ".join(case), runs, "yes" if ok else "NO")
    sys.exit(1 if slow else 0)


if __name__ == "__main__":
    main()

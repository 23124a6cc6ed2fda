"""Check that this checkout's ingest writes exactly what another revision's ingest writes.

    PYTHONPATH=. python scripts/check_ingest_same.py [--rev 243ece9] [--steps 10000]

Generates the benchmark log (scripts/bench_ingest.py), runs `ingest_run` of `--rev` (exported with
`git archive` into a temporary folder, run in a subprocess) and of this checkout on copies of it,
then compares metrics.parquet (schema, pandas metadata, every value bit for bit), events.json and
the manifest section byte for byte. Exits 1 on any difference.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq

HERE = Path(__file__).resolve().parent
RUN = """
import json, sys
from pathlib import Path
from reportgen.ingest.run_dir import ingest_run
out = Path(sys.argv[1])
section = ingest_run(out, invariants=["--global-batch-size"], exit_code=1)
section = section if isinstance(section, dict) else section.manifest_fields()  # a dict before IngestedRun
(out / "section.json").write_text(json.dumps(section, sort_keys=True, indent=1))
"""


def ingest(code_root: Path, log: Path, out: Path) -> None:
    out.mkdir(parents=True)
    shutil.copy(log, out / "stdout.log")
    subprocess.run(
        [sys.executable, "-c", RUN, str(out)],
        check=True,
        cwd=code_root,
        env={"PYTHONPATH": str(code_root), "PATH": "/usr/bin:/bin"},
    )


def differences(a: Path, b: Path) -> list[str]:
    out = []
    ta, tb = pq.read_table(a / "metrics.parquet"), pq.read_table(b / "metrics.parquet")
    if not ta.schema.equals(tb.schema, check_metadata=True) or ta.num_rows != tb.num_rows:
        out.append(f"metrics.parquet schema or row count ({ta.num_rows} vs {tb.num_rows})")
    else:
        for col in ta.column_names:
            x, y = ta[col].to_numpy(), tb[col].to_numpy()
            if x.dtype == np.float64:
                x, y = x.view(np.int64), y.view(np.int64)
            if not (x == y).all():
                out.append(f"metrics.parquet column {col}")
    for name in ("events.json", "section.json"):
        if (a / name).read_bytes() != (b / name).read_bytes():
            out.append(name)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rev", default="243ece9", help="revision to compare with (default: before the speed-up)")
    ap.add_argument("--steps", type=int, default=10_000)
    args = ap.parse_args()
    sys.path.insert(0, str(HERE))
    from bench_ingest import generate

    root = HERE.parent
    with tempfile.TemporaryDirectory(prefix="ingest-same-") as tmp:
        work = Path(tmp)
        old = work / "old"
        old.mkdir()
        archive = subprocess.run(
            ["git", "archive", args.rev, "reportgen"], cwd=root, check=True, capture_output=True
        ).stdout
        subprocess.run(["tar", "-x", "-C", str(old)], input=archive, check=True)
        log = work / "stdout.log"
        generate(log, args.steps)
        ingest(old, log, work / "a")
        ingest(root, log, work / "b")
        diff = differences(work / "a", work / "b")
        rows = pq.ParquetFile(work / "a" / "metrics.parquet").metadata.num_rows
        events = len(json.loads((work / "a" / "events.json").read_text())["events"])
    if diff:
        print("DIFFERENT: " + ", ".join(diff))
        sys.exit(1)
    print(f"identical: {args.steps} steps, {rows} metric rows, {events} events (rev {args.rev} vs this checkout)")


if __name__ == "__main__":
    main()

"""docs/examples/relax-qwen3-vl-4b-offload.toml, as docs/relax.md tells a user to use it: the recipe
path from $RELAX_DIR, the task-01 candidates, `--dry-run`, and `reportgen ingest` of hand-made logs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from reportgen.analyze import analyze_experiment
from reportgen.cli import main
from reportgen.errors import UserError
from reportgen.plan.arms import build_plan
from reportgen.plan.bash import effective_command
from reportgen.specfile.load import expand_paths, load_spec
from tests.relax_recipe import recipe

from . import relax_corpus as rc

EXAMPLE = Path(__file__).resolve().parents[2] / "docs" / "examples" / "relax-qwen3-vl-4b-offload.toml"
RECIPE = "scripts/training/multimodal/run-qwen3-vl-4B-2xgpu.sh"

# A stand-in with the recipe's flag layout (relax_sources.md, `recipe-2gpu`): arrays of flags and
# one `ray job submit ... -- python3 -m relax.entrypoints.train` line, output tee'd to a log.
STAND_IN = recipe(tee="log/run.log")


@pytest.fixture
def relax_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    checkout = tmp_path / "Relax"
    (checkout / RECIPE).parent.mkdir(parents=True)
    (checkout / RECIPE).write_text(STAND_IN)
    monkeypatch.setenv("RELAX_DIR", str(checkout))
    return checkout


def test_example_needs_relax_dir(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RELAX_DIR", raising=False)
    with pytest.raises(UserError, match=r"recipe.script uses \$\{RELAX_DIR\}, which is not set; export RELAX_DIR="):
        load_spec(EXAMPLE)
    # A stored copy (its recipe lives elsewhere) keeps the text as written.
    raw = {"recipe": {"script": "${RELAX_DIR}/x.sh"}}
    assert expand_paths(raw, EXAMPLE, strict=False, env={}) == raw
    assert expand_paths(raw, EXAMPLE, env={"RELAX_DIR": "/r"})["recipe"]["script"] == "/r/x.sh"


def test_example_plans_the_task01_candidates(relax_dir: Path) -> None:
    spec = load_spec(EXAMPLE)
    assert spec.recipe.script == f"{relax_dir}/{RECIPE}" and spec.recipe.workdir == str(relax_dir)
    plan = build_plan(spec)
    cmds = {arm.id: effective_command(arm.recipe_text or "") for arm in plan.arms}
    trio = {"--optimizer-cpu-offload", "--overlap-cpu-optimizer-d2h-h2d", "--use-precision-aware-optimizer"}
    recompute = {"--recompute-granularity", "--recompute-method", "--recompute-num-layers"}
    assert trio <= set(cmds["baseline"]) and recompute <= set(cmds["baseline"])
    assert not trio & set(cmds["A1"]) and recompute <= set(cmds["A1"])
    assert not (trio | recompute) & set(cmds["A2"])
    a3 = cmds["A3"]
    assert not trio & set(a3) and a3[a3.index("--max-tokens-per-gpu") + 1] == "8192"
    # The effective command stops before the pipe into tee: no `2>&1`, no `tee`.
    assert "| tee log/run.log" in STAND_IN
    assert cmds["baseline"][-2:] == ["--seed", "1234"] and "tee" not in cmds["baseline"]
    assert set(spec.workload.flags).isdisjoint(trio | recompute | {"--max-tokens-per-gpu"})


def test_example_dry_run(relax_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "--dry-run", str(EXAMPLE), "--runs", str(tmp_path / "runs")]) == 0
    out = capsys.readouterr().out
    assert "== A3: A1 + a smaller token budget per GPU [candidate; edits from: A1 -> A3] ==" in out
    assert "+   --max-tokens-per-gpu 8192" in out and not (tmp_path / "runs").exists()


def test_example_with_hand_made_logs(relax_dir: Path, tmp_path: Path) -> None:
    """docs/relax.md, "Logs made by hand": ingest three pairs of runs, then analyze."""
    runs = tmp_path / "runs"
    for i in (1, 2, 3):
        logs = {
            "baseline": rc.healthy(100, seed=10 * i + 1),
            "A1": rc.healthy(100, seed=10 * i + 2, speed=1.5, offload=False),
        }
        for arm, lines in logs.items():
            log = tmp_path / f"{arm}-{i}.log"
            log.write_text(rc.text(lines))
            args = ["ingest", str(log), "--spec", str(EXAMPLE), "--arm", arm, "--runs", str(runs), "--repeat", str(i)]
            assert main(args) == 0
    doc = json.loads(analyze_experiment(runs / "relax-qwen3-vl-4b-offload").read_text())
    (a1,) = [c for c in doc["comparisons"] if c["candidate"] == "A1"]
    assert a1["verdict"]["status"] == "accepted", a1["verdict"]
    steps = next(g for g in a1["guardrails"] if g["id"] == "steps_completed")
    assert steps["status"] == "pass" and "100/100" in steps["reason"]

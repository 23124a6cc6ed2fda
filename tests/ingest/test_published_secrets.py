"""A credential passed as a flag value (Relax's `--wandb-key`) never reaches anything published:
the dry run, the manifest's effective argv, analysis.json, anything else under runs/, the built site
(pages, search index, downloads); the run's own recipe copy keeps it, so the run stays runnable.
Checked byte-wise. The two tests of a real run share one campaign of the stand-in trainer
(`shared_run`, made once per session); the site test builds from a copy of it."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from reportgen.cli import main
from tests.conftest import built_once, shared_root
from tests.execute.conftest import RECIPE, make_experiment

SECRET = "sk-PLANTED-0123456789abcdef"
TOKEN = "hf_PLANTEDtoken987654321"
RECIPE_WITH_KEY = RECIPE.replace(
    "PERF_ARGS=(\n",
    f"PERF_ARGS=(\n   --wandb-key {SECRET}\n   --hf-token={TOKEN}\n   --input-key prompt\n",
)
assert SECRET in RECIPE_WITH_KEY


def files_holding(root: Path, needles: tuple[str, ...]) -> list[str]:
    found = []
    for p in sorted(root.rglob("*")):
        if p.is_file():
            data = p.read_bytes()
            if any(n.encode() in data for n in needles):
                found.append(str(p.relative_to(root)))
    return found


def run_experiment(root: Path) -> tuple[Path, Path]:
    spec = make_experiment(root / "recipes", recipe=RECIPE_WITH_KEY)
    runs = root / "runs"
    assert main(["run", str(spec), "--runs", str(runs)]) == 0
    return spec, runs


@pytest.fixture
def shared_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The runs/ folder of one real campaign with the planted credentials (baseline and A1, analysed),
    made by the first test that asks; read it, or copy it before writing."""

    def build(root: Path) -> None:
        run_experiment(root)

    return built_once(tmp_path_factory, "published-secrets", build) / "runs"


def test_dry_run_redacts_flag_credentials_and_drops_redirections(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    recipe = RECIPE_WITH_KEY.replace("${PERF_ARGS[@]}", "${PERF_ARGS[@]} > out.log 2>&1")
    spec = make_experiment(tmp_path / "recipes", recipe=recipe)
    assert main(["run", str(spec), "--runs", str(tmp_path / "runs"), "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert SECRET not in out and TOKEN not in out
    assert "--wandb-key <redacted>" in out and "--hf-token=<redacted>" in out and "--input-key prompt" in out
    eff = next(line for line in out.splitlines() if line.startswith("effective command"))
    assert (
        eff.endswith("--step-sleep ${STEP_SLEEP:-0.05}") and "out.log" not in eff and " 1" not in eff.split("0.05}")[-1]
    )
    # The recipe the run would use still has the value: it stays runnable.
    assert SECRET in (tmp_path / "recipes" / "recipe.sh").read_text()


def test_run_keeps_its_recipe_runnable_and_publishes_no_credential(shared_run: Path) -> None:
    runs = shared_run
    exp = runs / "exp"
    for arm in ("baseline", "A1"):
        run = exp / arm / "1"
        assert SECRET in (run / "recipe.sh").read_text()  # the run's own copy, as it ran
        m = json.loads((run / "manifest.json").read_text())
        assert m["effective_argv"]["--wandb-key"] == "<redacted>" and m["effective_argv"]["--hf-token"] == "<redacted>"
        assert m["effective_argv"]["--input-key"] == "prompt"
    analysis = (exp / "analysis.json").read_text()
    assert SECRET not in analysis and TOKEN not in analysis
    # runs/ may be committed: only the recipe copies hold the values (the `set -x` trace in
    # stderr.log, command.json and recipe.patch are scrubbed like the environment's secrets).
    assert files_holding(runs, (SECRET, TOKEN)) == ["exp/A1/1/recipe.sh", "exp/baseline/1/recipe.sh"]
    assert "--wandb-key <redacted>" in (exp / "baseline" / "1" / "stderr.log").read_text()


@pytest.mark.slow
def test_built_site_holds_no_planted_credential(
    tmp_path: Path, tmp_path_factory: pytest.TempPathFactory, shared_run: Path
) -> None:
    from tests.render.conftest import make_project, mkdocs_build

    project = make_project(tmp_path / "project")
    shutil.copytree(shared_run, project / "runs")
    # The recipe diff's context carries the key: the candidate page shows that diff.
    assert "--hf-token=<redacted>" in (project / "runs" / "exp" / "A1" / "1" / "recipe.patch").read_text()
    mkdocs_build(project, shared_root(tmp_path_factory) / "svg-cache")  # the session's chart cache (svg_cache)
    site = project / "site"
    assert (site / "reports" / "exp" / "A1" / "index.html").is_file()
    assert (site / "search" / "search_index.json").is_file()
    assert files_holding(site, (SECRET, TOKEN)) == []
    page = (site / "reports" / "exp" / "A1" / "index.html").read_text()
    assert "--hf-token=&lt;redacted&gt;" in page or "--hf-token=<redacted>" in page

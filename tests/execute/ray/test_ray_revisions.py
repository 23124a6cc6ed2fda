"""Arms at git revisions on a real local Ray cluster (docs/revisions.md): Ray's runtime environment
ships the driver's own `reportgen` package (py_modules) and puts it first on the job's PYTHONPATH;
a workload inside a `reportgen` package at a revision must still import its own checkout's copy. In
a throw-away repository the stand-in trainer of tests/execute/conftest.py lives in the package as
`reportgen.standin` (run as `python -m reportgen.standin`: no torch start-up; the shipped copy has
no such module, so a shadowed checkout fails its runs), and the candidate's commit prints a marker
in every step: only its runs show it. The recipe runs in a subfolder, so that the working folder
(first on `python -m`'s path) holds no copy of the package and PYTHONPATH alone decides which one is
imported."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from reportgen.pipeline import run_revisions
from reportgen.store.atomic import read_json
from tests.execute.conftest import RECIPE, TRAINER, make_experiment
from tests.git_repos import commit, init

MARKER = "revision marker: the candidate's own code"
MODULE = "reportgen/standin/__main__.py"
pytestmark = [
    pytest.mark.ray,
    pytest.mark.slow,
    pytest.mark.xdist_group("ray-2"),
    pytest.mark.skipif(shutil.which("git") is None, reason="needs git"),
]


def test_each_arm_imports_its_own_checkout_on_a_ray_node(tmp_path: Path, ray_cluster: str) -> None:
    repo = init(tmp_path / "repo")
    recipe = RECIPE.replace('"${PYTHON}" trainer.py', '"${PYTHON}" -m reportgen.standin')
    assert recipe != RECIPE, "tests/execute/conftest.py RECIPE changed: update this test"
    spec = make_experiment(repo, name="ray-revs", steps=4, sleep=0.01, order=None, repeats=None, recipe=recipe)
    (repo / "trainer.py").unlink()  # the trainer is the package's module only
    text = spec.read_text().replace('entrypoint = "trainer.py"', 'entrypoint = "reportgen.standin"\nworkdir = "sub"')
    assert 'workdir = "sub"' in text
    good = commit(
        repo,
        "the stand-in trainer as a module of a reportgen package, run from a subfolder",
        {
            spec.name: text,
            "reportgen/__init__.py": "",
            "reportgen/standin/__init__.py": "",
            MODULE: TRAINER,
            "sub/README": "the recipe's working folder\n",
        },
    )
    anchor = "    time.sleep(a.step_sleep)\n"
    assert anchor in TRAINER, "the stand-in trainer changed: update this test"
    marked = commit(
        repo, "print a marker in every step", {MODULE: TRAINER.replace(anchor, anchor + f"    print({MARKER!r})\n", 1)}
    )
    exp = run_revisions(
        repo,
        good,
        marked,
        spec,
        runs_root=tmp_path / "runs",
        pairs=1,
        name="ray-revs",
        cache=tmp_path / "cache",
        executor="ray",
        address=ray_cluster,
    )
    for arm, sha, shows in (("baseline", good, False), ("candidate", marked, True)):
        manifest = read_json(exp / arm / "1" / "manifest.json")
        assert manifest["status"] == "complete" and manifest["executor"]["kind"] == "ray"
        assert manifest["revision"]["sha"] == sha
        stdout = (exp / arm / "1" / "stdout.log").read_text()
        assert "perf 3:" in stdout and (MARKER in stdout) is shows, arm

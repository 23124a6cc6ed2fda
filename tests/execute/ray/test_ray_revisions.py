"""Arms at git revisions on a real local Ray cluster (docs/revisions.md): Ray's runtime environment
ships the driver's own `reportgen` package (py_modules) and puts it first on the job's PYTHONPATH;
the embedded workload at a revision must still import its own checkout's copy. In a throw-away
repository the candidate's commit prints a marker in every step: only its runs show it. The
recipe runs in a subfolder, so that the working folder (first on `python -m`'s path) holds no copy
of the package and PYTHONPATH alone decides which one is imported."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from reportgen.pipeline import run_revisions
from reportgen.store.atomic import read_json
from tests.git_repos import STEP_ANCHOR, TRAIN, commit, workload_repo

MARKER = "revision marker: the candidate's own code"
pytestmark = [
    pytest.mark.ray,
    pytest.mark.slow,
    pytest.mark.xdist_group("ray-2"),
    pytest.mark.skipif(shutil.which("git") is None, reason="needs git"),
]


def test_each_arm_imports_its_own_checkout_on_a_ray_node(tmp_path: Path, ray_cluster: str) -> None:
    repo = tmp_path / "repo"
    workload_repo(repo, steps=4, warmup=1)
    spec = (repo / "spec.toml").read_text().replace('workdir = "."', 'workdir = "sub"')
    good = commit(repo, "run from a subfolder", {"spec.toml": spec, "sub/README": "the recipe's working folder\n"})
    train = (repo / TRAIN).read_text().replace(STEP_ANCHOR, STEP_ANCHOR + f"        print({MARKER!r}, flush=True)\n", 1)
    marked = commit(repo, "print a marker in every step", {str(TRAIN): train})
    exp = run_revisions(
        repo,
        good,
        marked,
        repo / "spec.toml",
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
        assert (MARKER in (exp / arm / "1" / "stdout.log").read_text()) is shows, arm
